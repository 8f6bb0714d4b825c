package stats

import (
	"fmt"
	"math"
)

// Anytime-valid tests for the cost and latency gates of a verdict that is
// read whenever a page is opened (live traffic): each keeps its error rate
// however often it is looked at, like Sequential and BettingCS for quality.

// CostRatioSequence is an anytime-valid test of "cost per request of the
// candidate ≤ Ceiling × the incumbent's" on paired requests, each run's cost
// bounded by MaxUSD (a run budget). Each pair gives x = (c − Ceiling·i)/MaxUSD
// ∈ [−Ceiling, 1], whose mean is ≤ 0 exactly when the ratio of mean costs is
// ≤ Ceiling; a BettingCS tests "mean ≥ 0" (PASS when rejected: the ratio is
// shown within the ceiling) and "mean ≤ 0" (FAIL when rejected), each at α/2.
// MaxUSD must bound every cost: a larger one is counted (OutOfBounds) and
// the test then stays INCONCLUSIVE for good, since clamping it could favour
// either claim.
type CostRatioSequence struct {
	Ceiling, MaxUSD float64
	// OutOfBounds counts the costs above MaxUSD or below 0 seen so far.
	OutOfBounds int
	cs          *BettingCS
}

// NewCostRatioSequence starts the test; it reports a ceiling or bound ≤ 0 or a
// confidence outside (0, 1).
func NewCostRatioSequence(ceiling, maxUSD, confidence float64) (*CostRatioSequence, error) {
	if !(ceiling > 0) || !(maxUSD > 0) || math.IsInf(ceiling, 0) || math.IsInf(maxUSD, 0) {
		return nil, fmt.Errorf("stats: cost ratio sequence: ceiling and max USD must be finite and > 0, got %g and %g", ceiling, maxUSD)
	}
	zero := 0.0
	cs, err := NewBettingCS(BettingCSConfig{Lo: -ceiling, Hi: 1, Confidence: confidence, Points: []float64{0}, PriorMean: &zero, Grid: 2})
	if err != nil {
		return nil, fmt.Errorf("stats: cost ratio sequence: %w", err)
	}
	return &CostRatioSequence{Ceiling: ceiling, MaxUSD: maxUSD, cs: cs}, nil
}

// Observe takes one request's incumbent and candidate cost (USD).
func (s *CostRatioSequence) Observe(incumbentUSD, candidateUSD float64) {
	for _, v := range []float64{incumbentUSD, candidateUSD} {
		if !(v >= 0 && v <= s.MaxUSD) {
			s.OutOfBounds++
			return
		}
	}
	s.cs.Observe((candidateUSD - s.Ceiling*incumbentUSD) / s.MaxUSD)
}

// N is the pairs seen.
func (s *CostRatioSequence) N() int { return s.cs.N() }

// Decide is "PASS" once the ratio is shown ≤ Ceiling, "FAIL" once shown above
// it, else "INCONCLUSIVE" (always after a cost out of bounds).
func (s *CostRatioSequence) Decide() string {
	switch {
	case s.OutOfBounds > 0:
		return "INCONCLUSIVE"
	case s.cs.Below(0):
		return "PASS"
	case s.cs.Above(0):
		return "FAIL"
	}
	return "INCONCLUSIVE"
}

// QuantileCS is an anytime-valid confidence sequence for the p-th quantile of
// a stream of latencies (ms), after Howard & Ramdas (2022), "Sequential
// estimation of quantiles with applications to A/B-testing and best-arm
// identification", Bernoulli 28(3):1704–1728, Theorem 1: with B_i =
// 1{X_i ≤ q_p} the count of observations at or below the true quantile is
// tp + S_t, S_t a centred Bernoulli(p) walk, so whenever |S_t| < u_t the
// order statistics X_(⌊tp − u_t⌋) ≤ q_p < X_(⌈tp + u_t⌉). The boundary u_t is
// Robbins' normal mixture for a sub-Gaussian walk (Howard, Ramdas, McAuliffe
// & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
// sequences", Ann. Statist. 49(2):1055–1080),
//
//	u_t = √((V_t + ρ)·log((V_t + ρ)/(ρ a²))),  V_t = σ²_p·t,
//
// with σ²_p = (1 − 2p)/(2 log((1 − p)/p)) the optimal sub-Gaussian variance of
// a Bernoulli(p) (Kearns & Saul 1998) and ρ tuned for t = RhoAt; P(∃t:
// |S_t| ≥ u_t) ≤ a. Latencies are kept in log-spaced bins of 1% (from
// 0.1 ms; the bounds are rounded outwards to bin edges), so memory is fixed
// however long the stream runs. For a continuous latency distribution.
type QuantileCS struct {
	p, a   float64
	rho    float64
	counts []int64
	n      int64
}

// Quantile-sequence bins: edge k is quantileBinMinMs·(1 + quantileBinWidth)^k.
const (
	quantileBinMinMs = 0.1
	quantileBinWidth = 0.01
	quantileBins     = 2400 // up to about 2.3e9 ms
	// RhoAt is the number of observations the quantile boundary is tightest
	// around.
	RhoAt = 2000
)

// NewQuantileCS starts a sequence for quantile p (0 < p < 1, e.g. 0.95)
// failing with probability at most a (0 < a < 1, both ends together).
func NewQuantileCS(p, a float64) (*QuantileCS, error) {
	if !(p > 0 && p < 1) || !(a > 0 && a < 1) {
		return nil, fmt.Errorf("stats: quantile CS: p and a must be in (0, 1), got %g and %g", p, a)
	}
	return &QuantileCS{p: p, a: a, rho: bernoulliSubGaussian(p) * RhoAt, counts: make([]int64, quantileBins)}, nil
}

// bernoulliSubGaussian is the optimal sub-Gaussian variance proxy of a centred
// Bernoulli(p): (1 − 2p)/(2 log((1 − p)/p)), ¼ at p = ½.
func bernoulliSubGaussian(p float64) float64 {
	if math.Abs(p-0.5) < 1e-9 {
		return 0.25
	}
	return (1 - 2*p) / (2 * math.Log((1-p)/p))
}

func binOf(ms float64) int {
	if ms < quantileBinMinMs {
		return 0
	}
	k := int(math.Log(ms/quantileBinMinMs)/math.Log1p(quantileBinWidth)) + 1
	return min(k, quantileBins-1)
}

// binUpper is the upper edge of bin k (bin 0 holds everything below
// quantileBinMinMs); +Inf for the last.
func binUpper(k int) float64 {
	if k >= quantileBins-1 {
		return math.Inf(1)
	}
	return quantileBinMinMs * math.Pow(1+quantileBinWidth, float64(k))
}

func binLower(k int) float64 {
	if k == 0 {
		return 0
	}
	return binUpper(k - 1)
}

// Observe takes one latency (ms; 0 or less is unknown and ignored, as in
// figure.Latency).
func (q *QuantileCS) Observe(ms float64) {
	if !(ms > 0) {
		return
	}
	q.counts[binOf(ms)]++
	q.n++
}

// N is the latencies seen.
func (q *QuantileCS) N() int64 { return q.n }

// Bounds is the confidence sequence for the quantile now, in ms: [0, +Inf)
// ends where the order statistic does not exist yet.
func (q *QuantileCS) Bounds() Interval {
	t := float64(q.n)
	v := bernoulliSubGaussian(q.p) * t
	u := math.Sqrt((v + q.rho) * math.Log((v+q.rho)/(q.rho*q.a*q.a)))
	lo, hi := math.Floor(t*q.p-u), math.Ceil(t*q.p+u)
	iv := Interval{Low: 0, High: math.Inf(1)}
	var cum int64
	for k, c := range q.counts {
		if c == 0 {
			continue
		}
		prev := cum
		cum += c
		if lo >= 1 && prev < int64(lo) && cum >= int64(lo) {
			iv.Low = binLower(k)
		}
		if hi <= t && prev < int64(hi) && cum >= int64(hi) {
			iv.High = binUpper(k)
			break
		}
	}
	return iv
}

// QuantileRatioSequence is an anytime-valid test of "the candidate's p-th
// latency quantile ≤ Ceiling × the incumbent's" (the p95 gate on a stream):
// a QuantileCS per side at a = α/4, so both hold at once with probability
// ≥ 1 − α/2; PASS when the candidate's upper bound ≤ Ceiling × the
// incumbent's lower bound, FAIL when the candidate's lower bound > Ceiling ×
// the incumbent's upper bound. Each wrong verdict has probability at most
// α/2 whenever it is read.
type QuantileRatioSequence struct {
	Ceiling         float64
	Incumbent, Cand *QuantileCS
}

// NewQuantileRatioSequence starts the test for quantile p at two-sided
// confidence conf.
func NewQuantileRatioSequence(p, ceiling, confidence float64) (*QuantileRatioSequence, error) {
	if !(ceiling > 0) || math.IsInf(ceiling, 0) || !(confidence > 0 && confidence < 1) {
		return nil, fmt.Errorf("stats: quantile ratio sequence: need a finite ceiling > 0 and confidence in (0, 1), got %g and %g", ceiling, confidence)
	}
	a := (1 - confidence) / 4
	inc, err := NewQuantileCS(p, a)
	if err != nil {
		return nil, err
	}
	cand, _ := NewQuantileCS(p, a)
	return &QuantileRatioSequence{Ceiling: ceiling, Incumbent: inc, Cand: cand}, nil
}

// Observe takes one request's incumbent and candidate latency (ms; 0 =
// unknown, left out).
func (s *QuantileRatioSequence) Observe(incumbentMs, candidateMs float64) {
	s.Incumbent.Observe(incumbentMs)
	s.Cand.Observe(candidateMs)
}

// Decide is "PASS", "FAIL" or "INCONCLUSIVE" as described on the type.
func (s *QuantileRatioSequence) Decide() string {
	i, c := s.Incumbent.Bounds(), s.Cand.Bounds()
	switch {
	case !math.IsInf(c.High, 1) && c.High <= s.Ceiling*i.Low:
		return "PASS"
	case !math.IsInf(i.High, 1) && c.Low > s.Ceiling*i.High:
		return "FAIL"
	}
	return "INCONCLUSIVE"
}
