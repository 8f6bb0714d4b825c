package gate

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// Status is a gate's or a verdict's outcome.
type Status string

// Statuses. A verdict is FAIL when any gate fails, else INCONCLUSIVE when any
// gate is inconclusive, else PASS.
const (
	Pass         Status = "PASS"
	Fail         Status = "FAIL"
	Inconclusive Status = "INCONCLUSIVE"
)

// Quality claims (Verdict.Claim): the direction of the paired accuracy
// difference when McNemar's exact test rejects "no difference" at
// 1 − confidence (and, with a noise gate, the interval clears the noise).
const (
	ClaimBetter = "better"
	ClaimWorse  = "worse"
	ClaimNone   = "no significant difference"
)

// Result is one gate's outcome. Figure and Interval are in the gate's unit:
// accuracy difference as 0..1 (quality, segments, noise), ratio (cost,
// latency), cases (min_n). Threshold is the bound the gate compares with.
type Result struct {
	Gate      string          `json:"gate"`
	Status    Status          `json:"status"`
	Figure    float64         `json:"figure"`
	Interval  *stats.Interval `json:"interval,omitempty"`
	Threshold float64         `json:"threshold"`
	Reason    string          `json:"reason"`
}

// Verdict is the policy's decision on one candidate.
type Verdict struct {
	PolicyVersion string   `json:"policy_version"`
	Verdict       Status   `json:"verdict"`
	Claim         string   `json:"claim"`
	Gates         []Result `json:"gates"`
	// Plan is the quality gate's error rates and the whole policy's
	// sample-size advice at this run's n and observed discordance and spreads;
	// nil without a quality gate or pairs.
	Plan *Plan `json:"plan,omitempty"`
	// Look is where this run stands in its group-sequential plan (LooksGate);
	// nil for a fixed-n verdict.
	Look *LookPlan `json:"look,omitempty"`
}

// Plan states what the quality gate could and could not see at this run's
// size, each error rate named by verdict kind, never folded:
//
//   - IfEqual: P(PASS | equal), P(FAIL | equal) (a false alarm) and the
//     INCONCLUSIVE share when the candidate is exactly as good;
//   - IfWorse: P(PASS | worse by the effect) (a missed regression),
//     P(FAIL | worse) (the power) and the INCONCLUSIVE share when it is worse
//     by EffectPoints.
//
// With pass/fail grades they are exact (stats.Operating over the trinomial
// distribution of discordant pairs, Tango's test) at PlannedDiscordance, the
// observed discordance raised to the effect + 0.1 point when below it (a drop
// of e needs that many discordant pairs); with judge scores they are normal
// approximations from the observed spread of the per-case differences.
// DetectableDropPoints is the smallest drop FAILed with Power probability at
// this n (the minimum detectable effect). PassN and FailN are the cases the
// whole policy needs (PolicyPlan: quality, cost, p95 latency and segments) for
// Power PASS if equal and Power FAIL if worse by the effect, planned at
// PlannedPower; Policy holds each gate's part and the model. MoreCases is how
// many more cases reach both — with looks, the cases left to the plan's last
// look — 0 when the run already has them.
type Plan struct {
	Test                 string      `json:"test"` // stats.Method*
	N                    int         `json:"n"`
	Discordance          float64     `json:"discordance"`         // observed share of discordant pairs, 0..1
	PlannedDiscordance   float64     `json:"planned_discordance"` // the discordance the error rates and sizes are computed at
	DiffSD               float64     `json:"diff_sd"`             // sd of the per-case differences
	MarginPoints         float64     `json:"margin_points"`
	FailPoints           float64     `json:"fail_points"`
	EffectPoints         float64     `json:"effect_points"`
	Power                float64     `json:"power"`         // asked
	PlannedPower         float64     `json:"planned_power"` // what PassN and FailN are planned at
	IfEqual              stats.OC    `json:"if_equal"`
	IfWorse              stats.OC    `json:"if_worse"`
	DetectableDropPoints float64     `json:"detectable_drop_points"`
	Detectable           bool        `json:"detectable"` // false: no drop up to the discordance is caught at Power
	PassN                int         `json:"pass_n"`
	FailN                int         `json:"fail_n"`
	MoreCases            int         `json:"more_cases"`
	Policy               *PolicyPlan `json:"policy,omitempty"`
}

// PlanPower is the power the Plan's sample sizes and detectable drop are for;
// PassN and FailN are planned stats.PlanMargin above it (PlannedPower).
const PlanPower = 0.8

// ModelOf is the whole-policy plan's model read from a comparison: the
// incumbent's accuracy and the observed discordance (pass/fail grades) or the
// spread of the score differences (judge scores), the observed cost and p95
// ratios with their per-case spreads, and each segment's share and
// discordance.
func ModelOf(c stats.Comparison) PolicyModel {
	q := c.Quality
	m := PolicyModel{PIncumbent: c.Incumbent.Accuracy, Discordance: q.DiscordantRate,
		CostRatio: c.CostTest.Ratio, CostSpread: c.CostTest.SpreadPerCase(),
		LatencyRatio: c.P95Test.Ratio, LatencySpread: c.P95Test.SpreadPerCase(),
		Segments: map[string]SegmentModel{}}
	if ScoreUnits(q.Method) {
		m.ScoreSD = math.Max(q.DiffSD, 0.01)
	}
	for _, s := range c.Segments {
		if q.N > 0 {
			m.Segments[s.Name] = SegmentModel{Share: float64(s.Quality.N) / float64(q.N), Discordance: s.Quality.DiscordantRate}
		}
	}
	return m
}

// planFor computes the Plan for p at c's n: the error rates at p's
// confidence (this look's level), the whole policy's sample sizes at
// planConf (the policy's own level: that of the plan's last look).
func planFor(p Policy, c stats.Comparison, look *LookPlan, planConf float64) *Plan {
	g, q := p.Quality, c.Quality
	if g == nil || q.N == 0 {
		return nil
	}
	d := g.Design(p.Confidence)
	e := g.Effect() / 100
	pl := &Plan{Test: q.Method, N: q.N, Discordance: q.DiscordantRate, DiffSD: q.DiffSD,
		MarginPoints: g.MarginPoints, FailPoints: g.Fail(), EffectPoints: g.Effect(), Power: PlanPower, PlannedPower: PlannedPower(PlanPower)}
	if q.Method == stats.MethodTango {
		eq, worse := PlanScenarios(c.Incumbent.Accuracy, q.DiscordantRate, e)
		pl.PlannedDiscordance = eq.Discordance
		pl.IfEqual, _ = stats.Operating(q.N, eq, d)
		pl.IfWorse, _ = stats.Operating(q.N, worse, d)
		pl.DetectableDropPoints, pl.Detectable, _ = stats.DetectableDrop(q.N, eq.PIncumbent, eq.Discordance, d, PlanPower)
		pl.DetectableDropPoints *= 100
	} else {
		sd := math.Max(q.DiffSD, 0.01)
		pl.IfEqual = stats.NormalOperating(q.N, sd, 0, d)
		pl.IfWorse = stats.NormalOperating(q.N, sd, -e, d)
		z := stats.ZFor(p.Confidence) + stats.ZFor(2*PlanPower-1)
		pl.DetectableDropPoints = 100 * (d.FailAt + z*sd/math.Sqrt(float64(q.N)))
		pl.Detectable = pl.DetectableDropPoints <= 100
	}
	if pp, err := PlanPolicy(p, ModelOf(c), PlanPower, stats.ZFor(planConf)); err == nil {
		pl.Policy = &pp
		pl.PassN, pl.FailN = pp.PassN, pp.FailN
	}
	target := max(pl.PassN, pl.FailN)
	if look != nil {
		target = look.MaxCases
	}
	pl.MoreCases = max(0, target-q.N)
	return pl
}

// Evaluate applies p to c. noise is the incumbent's re-run against itself
// (A′ − A paired figures), nil when no second incumbent run was made.
//
// Gates, in order:
//   - min_n: fewer than MinN paired graded cases → INCONCLUSIVE.
//   - quality (margin m, fail threshold f points; the interval is the
//     comparison's Method: Tango's score interval for pass/fail grades, the
//     stratified restricted-variance score interval for judge scores): CI low ≥ −m →
//     PASS; else CI high < −f → FAIL; else INCONCLUSIVE, with the advice of
//     Verdict.Plan.
//   - cost / latency (ratio ceiling r; the delta-method and Bahadur Wald
//     intervals of stats.CostRatioTest and stats.QuantileRatioTest): CI high
//     ≤ r → PASS; CI low > r → FAIL; else INCONCLUSIVE.
//   - segments: the listed family, each PASS only when non-inferior on its
//     own, FAIL when significantly worse after Holm over the list,
//     INCONCLUSIVE otherwise (SegmentResults).
//   - noise: without an A′ run → INCONCLUSIVE; candidate diff CI entirely below
//     the A′ − A diff CI → FAIL; otherwise PASS (overlap: within noise).
//
// It is a fixed-n verdict: the run is its own test (EvaluateLook analyses it
// as a look of a group-sequential plan).
func Evaluate(p Policy, c stats.Comparison, noise *stats.Paired) Verdict {
	return evaluate(p, c, noise, nil, true)
}

// Decide is Evaluate without Verdict.Plan (the plan's exact error rates cost
// milliseconds; simulations of thousands of suites need only the verdicts).
func Decide(p Policy, c stats.Comparison, noise *stats.Paired) Verdict {
	return evaluate(p, c, noise, nil, false)
}

// SequentialConfig is the quality gate of p as an anytime-valid sequential
// test (stats.Sequential) looking after every lookEvery cases: the same
// margin, FAIL threshold, planned effect, confidence and min_n. ok is false
// without a quality gate.
func SequentialConfig(p Policy, lookEvery int) (cfg stats.SequentialConfig, ok bool) {
	g := p.Quality
	if g == nil {
		return cfg, false
	}
	return stats.SequentialConfig{Margin: g.MarginPoints / 100, FailAt: g.Fail() / 100, Effect: g.Effect() / 100,
		Confidence: p.Confidence, MinN: p.MinN, LookEvery: lookEvery}, true
}

func evaluate(p Policy, c stats.Comparison, noise *stats.Paired, look *LookPlan, plan bool) Verdict {
	levels := look.levels(p.Confidence)
	planConf := p.Confidence
	if look != nil && !look.Blocked {
		// The deciding intervals of c are at the look's level (the caller
		// computed them there, stats.Options.DecisionConfidence); claims and
		// the error rates at this n follow, the sample sizes stay planned at
		// the policy's level (the plan's last look).
		p.Confidence = look.This.Confidence
	}
	v := Verdict{PolicyVersion: p.Version, Gates: []Result{}, Look: look}
	alpha := 1 - p.Confidence
	q := c.Quality
	ci := func(iv stats.Interval) *stats.Interval { return &iv }

	if p.MinN > 0 {
		r := Result{Gate: "min_n", Figure: float64(q.N), Threshold: float64(p.MinN), Status: Pass,
			Reason: fmt.Sprintf("%d paired graded cases ≥ %d", q.N, p.MinN)}
		if q.N < p.MinN {
			r.Status = Inconclusive
			r.Reason = fmt.Sprintf("only %d paired graded cases, policy needs %d", q.N, p.MinN)
		}
		v.Gates = append(v.Gates, r)
	}
	if plan {
		v.Plan = planFor(p, c, look, planConf)
	}
	if g := p.Quality; g != nil {
		m, f := g.MarginPoints/100, g.Fail()/100
		r := Result{Gate: "quality", Figure: q.Diff, Interval: ci(q.DiffCI), Threshold: -m}
		test := MethodName(q.Method)
		u := func(x float64) string { return DiffText(q.Method, x) }
		switch {
		case q.N == 0:
			r.Status, r.Reason = Inconclusive, "no case was graded on both sides"
		case q.DiffCI.Low >= -m:
			r.Status = Pass
			r.Reason = fmt.Sprintf("non-inferior: %s lower bound of candidate − incumbent %s ≥ %s (%s)", LevelText(cmp.Or(c.DecisionConfidence, p.Confidence)), u(q.DiffCI.Low), u(-m), test)
		case q.DiffCI.High < -f:
			r.Status = Fail
			r.Threshold = -f
			r.Reason = fmt.Sprintf("worse: upper bound %s < %s (%s)", u(q.DiffCI.High), u(-f), test)
		default:
			r.Status = Inconclusive
			r.Reason = fmt.Sprintf("interval [%s, %s] (%s) neither clears the margin %s nor lies below %s", u(q.DiffCI.Low), u(q.DiffCI.High), test, u(-m), u(-f))
			if pl := v.Plan; pl != nil && pl.MoreCases > 0 {
				r.Reason += "; " + pl.moreText()
			}
		}
		v.Gates = append(v.Gates, r)
	}
	if g := p.Cost; g != nil {
		v.Gates = append(v.Gates, ratioGate("cost", "cost/request", c.CostRatio, c.CostRatioCI, g.MaxRatio))
	}
	if g := p.Latency; g != nil {
		r := ratioGate("latency", "p95 latency", c.P95Ratio, c.P95RatioCI, g.MaxP95Ratio)
		if c.P95Test.LogSE < 0 {
			r.Reason = fmt.Sprintf("only %d runs with a known latency on a side, the p95 test needs %d", c.P95Test.N, stats.MinQuantileN)
		}
		v.Gates = append(v.Gates, r)
	}
	if p.Segments != nil {
		v.Gates = append(v.Gates, segmentResults(p, c, levels)...)
	}
	if look != nil && look.Blocked {
		blockGates(v.Gates, look.Text())
	}
	beyondNoise := true
	if g := p.Noise; g != nil && g.RequireAboveNoise {
		r := Result{Gate: "noise", Figure: q.Diff, Interval: ci(q.DiffCI)}
		switch {
		case noise == nil:
			r.Status, r.Reason = Inconclusive, "policy requires an A′ (second incumbent) run and none was made"
			beyondNoise = false
		default:
			r.Threshold = noise.DiffCI.Low
			beyondNoise = q.DiffCI.High < noise.DiffCI.Low || q.DiffCI.Low > noise.DiffCI.High
			if q.DiffCI.High < noise.DiffCI.Low {
				r.Status = Fail
				r.Reason = fmt.Sprintf("candidate − incumbent [%s, %s] lies below incumbent run-to-run noise [%s, %s]",
					pts(q.DiffCI.Low), pts(q.DiffCI.High), pts(noise.DiffCI.Low), pts(noise.DiffCI.High))
			} else {
				r.Status = Pass
				r.Reason = fmt.Sprintf("not below the noise: A′ − A [%s, %s], A′ disagrees with A on %.1f%% of cases, the candidate on %.1f%%",
					pts(noise.DiffCI.Low), pts(noise.DiffCI.High), 100*noise.DiscordantRate, 100*q.DiscordantRate)
			}
		}
		v.Gates = append(v.Gates, r)
	}

	v.Claim = ClaimNone
	if q.McNemarP < alpha && beyondNoise {
		if q.Diff > 0 {
			v.Claim = ClaimBetter
		} else if q.Diff < 0 {
			v.Claim = ClaimWorse
		}
	}
	v.Verdict = Pass
	for _, r := range v.Gates {
		if r.Status == Fail {
			v.Verdict = Fail
			break
		}
		if r.Status == Inconclusive {
			v.Verdict = Inconclusive
		}
	}
	return v
}

func ratioGate(name, what string, fig float64, iv stats.Interval, ceiling float64) Result {
	r := Result{Gate: name, Figure: fig, Interval: &iv, Threshold: ceiling}
	switch {
	case iv.High <= ceiling:
		r.Status = Pass
		r.Reason = fmt.Sprintf("%s ratio %.3f, upper bound %.3f ≤ %.3f", what, fig, iv.High, ceiling)
	case iv.Low > ceiling:
		r.Status = Fail
		r.Reason = fmt.Sprintf("%s ratio %.3f, lower bound %.3f > %.3f", what, fig, iv.Low, ceiling)
	default:
		r.Status = Inconclusive
		r.Reason = fmt.Sprintf("%s ratio %.3f, interval [%.3f, %.3f] straddles %.3f", what, fig, iv.Low, iv.High, ceiling)
	}
	return r
}

// MethodName describes a stats.Method* in words.
func MethodName(m string) string {
	switch m {
	case stats.MethodTango:
		return "Tango score interval, paired pass/fail"
	case stats.MethodMeanScoreStratified:
		return "restricted-variance score interval on judge scores, stratified by category"
	case stats.MethodMeanScore:
		return "restricted-variance score interval on judge scores"
	case stats.MethodPairedTStratified:
		return "paired t on judge scores, stratified by category"
	case stats.MethodPairedT:
		return "paired t on judge scores"
	}
	return m
}

// pts renders a 0..1 difference as signed accuracy points, e.g. "-1.3 pts".
func pts(f float64) string { return DiffText(stats.MethodTango, f) }

// LevelText names a two-sided confidence level: "95%", "99.85%" at a look,
// "1 − 1.3e-15" when it rounds to 100%.
func LevelText(conf float64) string {
	if conf > 0.9999 {
		return "1 − " + strconv.FormatFloat(1-conf, 'g', 2, 64)
	}
	return strconv.FormatFloat(100*conf, 'g', 4, 64) + "%"
}

// Markdown renders the verdict as a heading line and a gate table.
func (v Verdict) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Verdict: %s** (policy `%s`; quality: %s)\n\n", v.Verdict, v.PolicyVersion, v.Claim)
	b.WriteString("| gate | status | figure | interval | threshold | reason |\n|---|---|--:|---|--:|---|\n")
	for _, r := range v.Gates {
		iv := "-"
		if r.Interval != nil {
			iv = fmt.Sprintf("[%.4f, %.4f]", r.Interval.Low, r.Interval.High)
		}
		fmt.Fprintf(&b, "| %s | %s | %.4f | %s | %.4f | %s |\n", r.Gate, r.Status, r.Figure, iv, r.Threshold,
			strings.ReplaceAll(r.Reason, "|", `\|`))
	}
	if lp := v.Look; lp != nil {
		fmt.Fprintf(&b, "\nThis run is %s.\n", lp.Text())
	}
	if pl := v.Plan; pl != nil {
		b.WriteString("\n" + pl.Markdown())
	}
	return b.String()
}

// Markdown renders the plan: the test, the error rates by verdict kind at
// this n, the detectable drop and the whole policy's sample sizes, with the
// discordance and power they were computed at.
func (pl Plan) Markdown() string {
	var b strings.Builder
	b.WriteString(pl.Heading() + ":\n\n")
	b.WriteString("| truth | P(PASS) | P(FAIL) | P(INCONCLUSIVE) |\n|---|--:|--:|--:|\n")
	fmt.Fprintf(&b, "| as good as the incumbent | %.1f%% | %.1f%% (false alarm) | %.1f%% |\n", 100*pl.IfEqual.Pass, 100*pl.IfEqual.Fail, 100*pl.IfEqual.Inconclusive)
	fmt.Fprintf(&b, "| worse by %s | %.1f%% (missed regression) | %.1f%% (power) | %.1f%% |\n\n", pl.EffectText(), 100*pl.IfWorse.Pass, 100*pl.IfWorse.Fail, 100*pl.IfWorse.Inconclusive)
	b.WriteString(pl.Summary() + "\n")
	return b.String()
}

// Heading names the test, the pairs, the observed discordance and, when the
// error rates were computed at another one, that discordance and why.
func (pl Plan) Heading() string {
	u := func(x float64) string { return DiffText(pl.Test, x) }
	s := fmt.Sprintf("Quality test: %s; %d pairs, %.1f%% discordant. Error rates at this n (PASS if the lower bound ≥ %s, FAIL if the upper bound < %s",
		MethodName(pl.Test), pl.N, 100*pl.Discordance, u(-pl.MarginPoints/100), u(-pl.FailPoints/100))
	if pl.PlannedDiscordance > 0 && math.Abs(pl.PlannedDiscordance-pl.Discordance) > 1e-9 {
		s += fmt.Sprintf("; computed at %.1f%% discordance, the observed %.1f%% raised to the effect + 0.1 point: a %s drop needs at least that many discordant pairs",
			100*pl.PlannedDiscordance, 100*pl.Discordance, pl.EffectText())
	}
	return s + ")"
}

// EffectText is the planned drop in the test's unit ("5 pts", "0.5 points on
// 1–10").
func (pl Plan) EffectText() string { return MarginText(pl.Test, pl.EffectPoints) }

// Summary is the plan's text after its error-rate table: the detectable drop,
// the whole policy's sample sizes and the cases still missing.
func (pl Plan) Summary() string {
	var b strings.Builder
	if pl.Detectable {
		fmt.Fprintf(&b, "Smallest drop this run FAILs with %.0f%% probability: %s. ", 100*pl.Power, MarginText(pl.Test, pl.DetectableDropPoints))
	} else {
		fmt.Fprintf(&b, "No drop up to %s is FAILed with %.0f%% probability at this n. ", MarginText(pl.Test, pl.DetectableDropPoints), 100*pl.Power)
	}
	if pp := pl.Policy; pp != nil {
		b.WriteString(strings.TrimSpace(pp.Markdown()))
	}
	if pl.MoreCases > 0 {
		fmt.Fprintf(&b, " %s.", pl.moreText())
	}
	return b.String()
}

// moreText is the plan's "N more cases" in words, with the powers it is
// planned at.
func (pl Plan) moreText() string {
	pass := fmt.Sprintf("%.0f%% PASS if equal (%d)", 100*pl.Power, pl.PassN)
	if pl.PassN == 0 {
		pass = "PASS if equal (cannot be planned)"
	}
	return fmt.Sprintf("%d more cases for the whole policy's %s and %.0f%% FAIL if %s worse (%d), planned at %.0f%%",
		pl.MoreCases, pass, 100*pl.Power, MarginText(pl.Test, pl.EffectPoints), pl.FailN, 100*pl.PlannedPower)
}

// Advice is the sample-size advice in words: "N more cases, or about D days
// of shadow traffic at the current sampling rate (R shadowed cases/day)".
// perDay ≤ 0 (no recent shadow traffic) leaves the days out; more ≤ 0 says
// the run already has enough cases.
func Advice(more int, perDay float64) string {
	switch {
	case more <= 0:
		return "enough cases for the planned error rates"
	case perDay <= 0:
		return fmt.Sprintf("%d more cases (no recent shadow traffic to estimate days)", more)
	}
	days := float64(more) / perDay
	var d string
	switch {
	case days < 1.0/24:
		d = "less than an hour"
	case days < 1:
		d = fmt.Sprintf("%.0f hours", math.Ceil(days*24))
	default:
		d = fmt.Sprintf("%.1f days", days)
	}
	return fmt.Sprintf("%d more cases, or about %s of shadow traffic at the current sampling rate (%.0f shadowed cases/day)", more, d, perDay)
}

// RunningVerdict states a sequential test's state in one line: the running
// verdict, how far each test is on its way to deciding and the projection.
func RunningVerdict(st stats.SequentialState) string { return RunningVerdictIn(stats.MethodTango, st) }

// RunningVerdictIn is RunningVerdict with the differences in the unit of the
// quality test method (points on 1–10 for judge scores).
func RunningVerdictIn(method string, st stats.SequentialState) string {
	u := func(f float64) string { return DiffText(method, f) }
	if st.Verdict != string(Inconclusive) {
		return fmt.Sprintf("%s after %d cases (anytime-valid; confidence sequence [%s, %s])", st.Verdict, st.DecidedAt, u(st.CS.Low), u(st.CS.High))
	}
	s := fmt.Sprintf("undecided after %d cases: PASS evidence %.0f%%, FAIL evidence %.0f%% of the way (confidence sequence [%s, %s])",
		st.N, 100*st.PassProgress, 100*st.FailProgress, u(st.CS.Low), u(st.CS.High))
	if st.Config.PassOnly {
		s = fmt.Sprintf("undecided after %d cases: PASS evidence %.0f%% of the way (lower confidence bound %s)", st.N, 100*st.PassProgress, u(st.CS.Low))
	}
	if st.MoreCases > 0 {
		s += fmt.Sprintf("; at the evidence's growth so far, about %d more cases", st.MoreCases)
	}
	return s
}
