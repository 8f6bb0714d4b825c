package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Design is the quality gate's three-way rule on the paired difference θ
// (candidate − incumbent accuracy, 0..1) at two-sided Confidence:
//
//	PASS          lower bound ≥ −Margin           (non-inferior within the margin)
//	FAIL          otherwise, upper bound < −FailAt (significantly worse)
//	INCONCLUSIVE  otherwise.
//
// With the Tango score interval the bounds are read from the score test:
// PASS ⇔ Z(−Margin) ≥ z, FAIL ⇔ Z(−FailAt) < −z, z = Φ⁻¹(1 − α/2). So
// P(PASS | θ = −Margin) and P(FAIL | θ = −FailAt) are each about α/2.
type Design struct {
	Margin     float64 `json:"margin"`     // 0..1, e.g. 0.03 for 3 points
	FailAt     float64 `json:"fail_at"`    // 0..1, 0: any significant drop fails
	Confidence float64 `json:"confidence"` // two-sided, e.g. 0.95
}

// Validate reports margins outside [0, 1) and a confidence outside (0, 1).
func (d Design) Validate() error {
	var errs []error
	if d.Margin < 0 || d.Margin >= 1 {
		errs = append(errs, fmt.Errorf("margin must be in [0, 1), got %g", d.Margin))
	}
	if d.FailAt < 0 || d.FailAt >= 1 {
		errs = append(errs, fmt.Errorf("fail threshold must be in [0, 1), got %g", d.FailAt))
	}
	if d.Confidence <= 0 || d.Confidence >= 1 {
		errs = append(errs, fmt.Errorf("confidence must be in (0, 1), got %g", d.Confidence))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stats: design: %w", err)
	}
	return nil
}

// Decide applies the rule to x pairs only the candidate passed and y only the
// incumbent passed out of n, with Tango's score test. It returns "PASS",
// "FAIL" or "INCONCLUSIVE".
func (d Design) Decide(x, y, n int) string {
	z := ZFor(d.Confidence)
	switch {
	case n == 0:
		return "INCONCLUSIVE"
	case TangoZ(x, y, n, -d.Margin) >= z:
		return "PASS"
	case TangoZ(x, y, n, -d.FailAt) < -z:
		return "FAIL"
	}
	return "INCONCLUSIVE"
}

// Scenario is the truth a plan is computed for: the incumbent's accuracy
// PIncumbent, the share of discordant pairs Discordance and the candidate's
// accuracy difference Effect (negative: worse), all 0..1. Per pair,
// P(candidate only) = (D + E)/2 and P(incumbent only) = (D − E)/2.
type Scenario struct {
	PIncumbent  float64 `json:"p_incumbent"`
	Discordance float64 `json:"discordance"`
	Effect      float64 `json:"effect"`
}

// Validate reports a scenario no paired trial can have: probabilities outside
// [0, 1], |Effect| > Discordance, or discordant cells that do not fit the
// incumbent's accuracy.
func (s Scenario) Validate() error {
	pc, pi := (s.Discordance+s.Effect)/2, (s.Discordance-s.Effect)/2
	switch {
	case s.PIncumbent <= 0 || s.PIncumbent >= 1:
		return fmt.Errorf("stats: scenario: incumbent accuracy must be in (0, 1), got %g", s.PIncumbent)
	case s.Discordance <= 0 || s.Discordance > 1:
		return fmt.Errorf("stats: scenario: discordance must be in (0, 1], got %g", s.Discordance)
	case math.Abs(s.Effect) > s.Discordance:
		return fmt.Errorf("stats: scenario: |effect| %g exceeds the discordance %g (a difference needs discordant pairs)", math.Abs(s.Effect), s.Discordance)
	case pi > s.PIncumbent+1e-12 || pc > 1-s.PIncumbent+1e-12:
		return fmt.Errorf("stats: scenario: discordance %g with effect %+g does not fit an incumbent accuracy of %g", s.Discordance, s.Effect, s.PIncumbent)
	}
	return nil
}

// OC is a design's operating characteristic at one n: the probability of each
// verdict (they sum to 1).
type OC struct {
	N            int     `json:"n"`
	Pass         float64 `json:"pass"`
	Fail         float64 `json:"fail"`
	Inconclusive float64 `json:"inconclusive"`
}

// Operating returns the exact probabilities of PASS, FAIL and INCONCLUSIVE of
// the design's Tango rule with n pairs under the scenario, summing over the
// trinomial distribution of (candidate-only, incumbent-only) counts: K ~
// Binomial(n, D) discordant pairs, of which X ~ Binomial(K, (D+E)/2D) favour
// the candidate. Terms beyond 9 standard deviations (mass < 1e-18) are
// skipped.
func Operating(n int, s Scenario, d Design) (OC, error) {
	if err := s.Validate(); err != nil {
		return OC{}, err
	}
	if err := d.Validate(); err != nil {
		return OC{}, err
	}
	if n <= 0 {
		return OC{N: n, Inconclusive: 1}, nil
	}
	pi := (s.Discordance + s.Effect) / (2 * s.Discordance)
	oc := OC{N: n}
	z := ZFor(d.Confidence)
	kLo, kHi := window(n, s.Discordance)
	kDist := distuv.Binomial{N: float64(n), P: s.Discordance}
	// The thresholds move by a step or two from one k to the next, and so
	// do the binomial CDFs read at them: both are tracked, not recomputed.
	passOK := func(k int) func(int) bool {
		return func(x int) bool { return TangoZ(x, k-x, n, -d.Margin) >= z }
	}
	failOK := func(k int) func(int) bool {
		return func(x int) bool { return !(TangoZ(x, k-x, n, -d.FailAt) < -z) }
	}
	xPass, xFailFirst := -1, -1
	var below, fail *binomTracker
	lf := newLogFactorials(kHi)
	for k := kLo; k <= kHi; k++ {
		// For fixed k, Tango's Z rises with x (more pairs for the candidate), so
		// PASS is x ≥ xPass and FAIL is x ≤ xFail (and not PASS).
		xPass = nearX(k, xPass, passOK(k))
		xFailFirst = nearX(k, xFailFirst, failOK(k))
		xFail := min(xFailFirst-1, xPass-1)
		pk := kDist.Prob(float64(k))
		if pk == 0 {
			continue
		}
		switch {
		case pi <= 0:
			oc.Pass += pk * b2f(xPass <= 0)
			oc.Fail += pk * b2f(xFail >= 0)
			continue
		case pi >= 1:
			oc.Pass += pk * b2f(xPass <= k)
			oc.Fail += pk * b2f(xFail >= k)
			continue
		}
		if below == nil {
			below, fail = newBinomTracker(k, xPass-1, pi, lf), newBinomTracker(k, xFail, pi, lf)
		} else {
			below.step(k, xPass-1)
			fail.step(k, xFail)
		}
		oc.Pass += pk * (1 - below.f)
		oc.Fail += pk * fail.f
	}
	oc.Inconclusive = math.Max(0, 1-oc.Pass-oc.Fail)
	return oc, nil
}

// nearX is firstX(k, ok) found by stepping from start (the answer for a
// neighbouring k) when start ≥ 0, by bisection otherwise.
func nearX(k, start int, ok func(int) bool) int {
	if start < 0 || start > k+1 {
		return firstX(k, ok)
	}
	x := start
	if x <= k && ok(x) {
		for x > 0 && ok(x-1) {
			x--
		}
		return x
	}
	for x <= k && !ok(x) {
		x++
	}
	return x
}

// binomTracker holds f = P(Bin(k, p) ≤ x) for 0 < p < 1 as k and x move:
// P(Bin(k+1) ≤ x) = P(Bin(k) ≤ x) − p·P(Bin(k) = x) and
// P(Bin(k) ≤ x+1) = P(Bin(k) ≤ x) + P(Bin(k) = x+1), re-read exactly every
// 64 steps so rounding cannot build up.
type binomTracker struct {
	k, x   int
	f, p   float64
	lp, lq float64
	steps  int
	lf     logFactorials
}

func newBinomTracker(k, x int, p float64, lf logFactorials) *binomTracker {
	b := &binomTracker{p: p, lp: math.Log(p), lq: math.Log1p(-p), lf: lf}
	b.exact(k, x)
	return b
}

func (b *binomTracker) exact(k, x int) {
	b.k, b.x, b.steps = k, x, 0
	switch {
	case x < 0:
		b.f = 0
	case x >= k:
		b.f = 1
	default:
		b.f = distuv.Binomial{N: float64(k), P: b.p}.CDF(float64(x))
	}
}

// pmf is P(Bin(k, p) = x), 0 outside [0, k].
func (b *binomTracker) pmf(k, x int) float64 {
	if x < 0 || x > k {
		return 0
	}
	return math.Exp(b.lf.of(k) - b.lf.of(x) - b.lf.of(k-x) + float64(x)*b.lp + float64(k-x)*b.lq)
}

// logFactorials memoizes ln(i!) = Lgamma(i+1) for 0 ≤ i ≤ n, each computed
// on first use: a tracker's steps read the same few hundred values over and
// over (the same figures as calling Lgamma each time, bit for bit).
type logFactorials []float64

func newLogFactorials(n int) logFactorials {
	lf := make(logFactorials, n+1)
	for i := range lf {
		lf[i] = math.NaN()
	}
	return lf
}

func (lf logFactorials) of(i int) float64 {
	if v := lf[i]; !math.IsNaN(v) {
		return v
	}
	v, _ := math.Lgamma(float64(i + 1))
	lf[i] = v
	return v
}

// step moves the tracker to (k, x), k one above the last.
func (b *binomTracker) step(k, x int) {
	if k != b.k+1 || b.steps >= 64 {
		b.exact(k, x)
		return
	}
	b.f -= b.p * b.pmf(b.k, b.x)
	b.k = k
	for b.x < x {
		b.x++
		b.f += b.pmf(b.k, b.x)
	}
	for b.x > x {
		b.f -= b.pmf(b.k, b.x)
		b.x--
	}
	b.f = math.Max(0, math.Min(1, b.f))
	b.steps++
}

// firstX returns the smallest x in [0, k] with ok(x), k+1 when none; ok must
// be monotone (false then true).
func firstX(k int, ok func(int) bool) int {
	lo, hi := 0, k+1
	for lo < hi {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// window is the range of a Binomial(n, p) count within 9 standard deviations.
func window(n int, p float64) (lo, hi int) {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	mu := float64(n) * p
	return max(0, int(math.Floor(mu-9*sd-1))), min(n, int(math.Ceil(mu+9*sd+1)))
}

// Target is the verdict a plan aims for under its scenario: FAIL when the
// effect is below −FailAt (worse than the FAIL threshold), else PASS.
func (d Design) Target(s Scenario) string {
	if s.Effect < -d.FailAt {
		return "FAIL"
	}
	return "PASS"
}

// MaxPlanN bounds the sample sizes Plan searches.
const MaxPlanN = 2_000_000

// Plan returns the smallest n (at least minN) at which the design reaches its
// Target verdict with probability ≥ power under s (exact, Operating), found by
// doubling then bisection on n (power rises with n up to the small sawtooth of
// a discrete test). It returns an error when the target cannot be reached: a
// PASS target with Effect ≤ −Margin, or no n up to MaxPlanN.
func Plan(s Scenario, d Design, power float64, minN int) (int, error) {
	if power <= 0 || power >= 1 {
		return 0, fmt.Errorf("stats: plan: power must be in (0, 1), got %g", power)
	}
	if err := s.Validate(); err != nil {
		return 0, err
	}
	if err := d.Validate(); err != nil {
		return 0, err
	}
	target := d.Target(s)
	if target == "PASS" && s.Effect <= -d.Margin {
		return 0, fmt.Errorf("stats: plan: a candidate worse by %.1f pts cannot be shown within the %.1f-point margin", -100*s.Effect, 100*d.Margin)
	}
	reach := func(n int) (bool, error) {
		oc, err := Operating(n, s, d)
		if err != nil {
			return false, err
		}
		if target == "FAIL" {
			return oc.Fail >= power, nil
		}
		return oc.Pass >= power, nil
	}
	var rerr error
	n, ok := SmallestN(func(n int) bool {
		r, err := reach(n)
		if err != nil {
			rerr = err
			return true
		}
		return r
	}, max(1, minN))
	switch {
	case rerr != nil:
		return 0, rerr
	case !ok:
		return 0, fmt.Errorf("stats: plan: more than %d cases needed", MaxPlanN)
	}
	return n, nil
}

// SmallestN is the smallest n ≥ lo with ok(n), by doubling then bisection:
// ok is assumed to turn true and stay true as n grows (up to the small
// sawtooth of a discrete test, which the search may land either side of);
// false when none up to MaxPlanN.
func SmallestN(ok func(int) bool, lo int) (int, bool) {
	hi := lo
	for !ok(hi) {
		if hi >= MaxPlanN {
			return 0, false
		}
		lo, hi = hi, min(MaxPlanN, hi*2)
	}
	for lo < hi { // invariant: ok(hi)
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi, true
}

// PlanMargin is the power Recommend adds above the asked power (capped at half
// the way to 1). The exact operating characteristic is the verdict's own
// distribution, but the realised gate is a discrete test whose FAIL rate near
// the first n reaching the power sits within a point of it either way
// (simulated at P = 0.85, D = 0.20, a 5-point drop: 0.797–0.805 over 2,000
// suites at analytic power 0.8006); planning 5 points higher keeps the
// recommended n on the right side of the asked power (0.85 analytic: n = 709,
// 1.08× the exact McNemar minimum of 658).
const PlanMargin = 0.05

// Recommend returns the sample size to advise for reaching d's target verdict
// with probability power under s: Plan at power + PlanMargin (at most
// (1 + power)/2), so the gate reaches the asked power at the advised n with room
// to spare. Errors as Plan.
func Recommend(s Scenario, d Design, power float64, minN int) (int, error) {
	if power <= 0 || power >= 1 {
		return 0, fmt.Errorf("stats: plan: power must be in (0, 1), got %g", power)
	}
	return Plan(s, d, math.Min(power+PlanMargin, (1+power)/2), minN)
}

// DetectableDrop returns the smallest accuracy drop (0..1, positive) the
// design FAILs with probability ≥ power at n pairs with discordance D (exact,
// Operating; bisection to 0.1 point): the minimum detectable effect of a run
// of that size. ok is false when even a drop of D (every discordant pair
// against the candidate) is not detected.
func DetectableDrop(n int, pIncumbent, discordance float64, d Design, power float64) (drop float64, ok bool, err error) {
	fail := func(e float64) (float64, error) {
		oc, err := Operating(n, Scenario{PIncumbent: pIncumbent, Discordance: discordance, Effect: -e}, d)
		return oc.Fail, err
	}
	hiE := math.Min(discordance, pIncumbent)
	f, err := fail(hiE)
	if err != nil {
		return 0, false, err
	}
	if f < power {
		return hiE, false, nil
	}
	lo, hi := d.FailAt, hiE
	for hi-lo > 0.001 {
		mid := (lo + hi) / 2
		f, err := fail(mid)
		if err != nil {
			return 0, false, err
		}
		if f >= power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true, nil
}

// NormalPlan is the paired-t sample size for a continuous per-case difference
// with standard deviation sd to move a mean by delta (0..1) past a one-sided
// bound at level α/2 with the given power: n = ⌈((z₁₋α/₂ + z_power)·sd/delta)²⌉
// (e.g. Chow, Shao & Wang 2008, "Sample Size Calculations in Clinical
// Research", §3.2).
func NormalPlan(sd, delta, confidence, power float64) (int, error) {
	if sd < 0 || delta <= 0 || confidence <= 0 || confidence >= 1 || power <= 0 || power >= 1 {
		return 0, fmt.Errorf("stats: normal plan: need sd ≥ 0, delta > 0, confidence and power in (0, 1); got %g, %g, %g, %g", sd, delta, confidence, power)
	}
	z := ZFor(confidence) + ZFor(2*power-1)
	return max(2, int(math.Ceil(z*z*sd*sd/(delta*delta)))), nil
}

// NormalOperating approximates the design's verdict probabilities for a
// continuous per-case difference with standard deviation sd, true mean theta
// and n cases, the estimate θ̂ ~ Normal(θ, se²), se = sd/√n:
// P(PASS) = P(θ̂ ≥ −m + z·se), P(FAIL) = P(θ̂ < min(−f − z·se, −m + z·se)).
func NormalOperating(n int, sd, theta float64, d Design) OC {
	if n <= 1 || sd <= 0 {
		return OC{N: n, Inconclusive: 1}
	}
	se := sd / math.Sqrt(float64(n))
	z := ZFor(d.Confidence)
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	passAt := -d.Margin + z*se
	pass := 1 - phi((passAt-theta)/se)
	fail := phi((math.Min(-d.FailAt-z*se, passAt) - theta) / se)
	return OC{N: n, Pass: pass, Fail: fail, Inconclusive: math.Max(0, 1-pass-fail)}
}
