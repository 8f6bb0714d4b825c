package gate

import (
	"fmt"
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
}

// Evaluate applies p to c. noise is the incumbent's re-run against itself
// (A′ − A paired figures), nil when no second incumbent run was made.
//
// Gates, in order:
//   - min_n: fewer than MinN paired graded cases → INCONCLUSIVE.
//   - quality (non-inferiority, margin m points): diff CI low ≥ −m → PASS;
//     CI high < −m → FAIL; else INCONCLUSIVE.
//   - cost / latency (ratio ceiling r): CI high ≤ r → PASS; CI low > r → FAIL;
//     else INCONCLUSIVE.
//   - segments: each listed segment FAILs when its accuracy difference is
//     negative with Holm-adjusted McNemar p < 1 − confidence; missing or
//     smaller than segments.min_n → INCONCLUSIVE; else PASS.
//   - noise: without an A′ run → INCONCLUSIVE; candidate diff CI entirely below
//     the A′ − A diff CI → FAIL; otherwise PASS (overlap: within noise).
func Evaluate(p Policy, c stats.Comparison, noise *stats.Paired) Verdict {
	v := Verdict{PolicyVersion: p.Version, Gates: []Result{}}
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
	if g := p.Quality; g != nil {
		m := g.MarginPoints / 100
		r := Result{Gate: "quality", Figure: q.Diff, Interval: ci(q.DiffCI), Threshold: -m}
		switch {
		case q.N == 0:
			r.Status, r.Reason = Inconclusive, "no case was graded on both sides"
		case q.DiffCI.Low >= -m:
			r.Status = Pass
			r.Reason = fmt.Sprintf("non-inferior: %.0f%% lower bound of candidate − incumbent %s ≥ %s", 100*p.Confidence, pts(q.DiffCI.Low), pts(-m))
		case q.DiffCI.High < -m:
			r.Status = Fail
			r.Reason = fmt.Sprintf("worse beyond the margin: upper bound %s < %s", pts(q.DiffCI.High), pts(-m))
		default:
			r.Status = Inconclusive
			r.Reason = fmt.Sprintf("interval [%s, %s] straddles the margin %s; more cases needed (about %d for a %s effect)",
				pts(q.DiffCI.Low), pts(q.DiffCI.High), pts(-m), c.SampleSize.N, pts(c.SampleSize.Effect))
		}
		v.Gates = append(v.Gates, r)
	}
	if g := p.Cost; g != nil {
		v.Gates = append(v.Gates, ratioGate("cost", "cost/request", c.CostRatio, c.CostRatioCI, g.MaxRatio))
	}
	if g := p.Latency; g != nil {
		v.Gates = append(v.Gates, ratioGate("latency", "p95 latency", c.P95Ratio, c.P95RatioCI, g.MaxP95Ratio))
	}
	if g := p.Segments; g != nil {
		bySeg := map[string]stats.Segment{}
		for _, s := range c.Segments {
			bySeg[s.Name] = s
		}
		for _, name := range g.MustNotRegress {
			s, ok := bySeg[name]
			r := Result{Gate: "segment " + name, Figure: s.Quality.Diff, Interval: ci(s.Quality.DiffCI), Threshold: alpha}
			switch {
			case !ok:
				r.Status, r.Interval, r.Reason = Inconclusive, nil, "segment has no cases in this suite"
			case s.Quality.N < max(g.MinN, 1):
				r.Status = Inconclusive
				r.Reason = fmt.Sprintf("only %d paired graded cases, policy needs %d", s.Quality.N, g.MinN)
			case s.Quality.Diff < 0 && s.AdjustedP < alpha:
				r.Status = Fail
				r.Reason = fmt.Sprintf("regressed %s (McNemar p %.4g, Holm-adjusted %.4g < %.4g)", pts(s.Quality.Diff), s.Quality.McNemarP, s.AdjustedP, alpha)
			default:
				r.Status = Pass
				r.Reason = fmt.Sprintf("no significant regression (diff %s, Holm-adjusted p %.4g)", pts(s.Quality.Diff), s.AdjustedP)
			}
			v.Gates = append(v.Gates, r)
		}
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

// pts renders a 0..1 difference as signed accuracy points, e.g. "-1.3 pts".
func pts(f float64) string {
	return fmt.Sprintf("%+.1f pts", 100*f)
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
	return b.String()
}
