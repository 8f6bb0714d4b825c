package gate

import (
	"fmt"
	"math"
	"slices"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// SegmentTest is the evidence on one must-not-regress segment that the
// segment rule (SegmentResults) decides on, whatever test produced it: a
// suite's paired comparison (SegmentTestOf) or a live confidence sequence
// (anytime-valid p-values).
type SegmentTest struct {
	Name string
	// Present is false when the run (or the live window) has no case of the
	// segment.
	Present bool
	// N is the segment's paired graded cases.
	N int
	// Diff is candidate − incumbent (0..1) and Interval its interval at the
	// verdict's level (nil when there is none to show).
	Diff     float64
	Interval *stats.Interval
	// PassP is the one-sided p-value of "worse by the segment margin or
	// more" (θ ≤ −margin), FailP that of "no worse than the FAIL threshold"
	// (θ ≥ −fail); both 1 without evidence.
	PassP, FailP float64
	// Method names the test (stats.Method*), for the units of Diff.
	Method string
}

// SegmentTestOf is the segment test of a suite comparison's segment s: its
// score statistic's one-sided p-values at −margin and −fail (0..1 units).
func SegmentTestOf(name string, s stats.Segment, ok bool, margin, fail float64) SegmentTest {
	if !ok {
		return SegmentTest{Name: name, PassP: 1, FailP: 1}
	}
	iv := s.Quality.DiffCI
	return SegmentTest{Name: name, Present: true, N: s.Quality.N, Diff: s.Quality.Diff, Interval: &iv,
		PassP: s.Quality.PassP(-margin), FailP: s.Quality.FailP(-fail), Method: s.Quality.Method}
}

// SegmentLevels are the one-sided levels the segment rule compares p-values
// with: Pass for every segment's non-inferiority (α/2 at a fixed n, the
// look's level in a group-sequential plan) and Fail(j), the level of the j-th
// step (1-based) of Holm's step-down over a family of K segments:
// α/2/(K − j + 1) at a fixed n.
type SegmentLevels struct {
	Pass float64
	Fail func(j, k int) float64
}

// FixedLevels are SegmentLevels of a fixed-n test at two-sided confidence
// conf.
func FixedLevels(conf float64) SegmentLevels {
	a := (1 - conf) / 2
	return SegmentLevels{Pass: a, Fail: func(j, k int) float64 { return a / float64(k-j+1) }}
}

// SegmentResults is the segment rule, written once for suite and live
// verdicts. The family is g.MustNotRegress, fixed by the policy before any
// data is seen, so it cannot grow with what a run happens to contain.
//
//   - PASS: the segment shows non-inferiority on its own, PassP ≤ levels.Pass
//     ("θ ≤ −margin" rejected). The verdict PASSes only when every gate does,
//     an intersection–union test, so no correction is needed for the PASS
//     claims to hold the family-wise level (Berger 1982, "Multiparameter
//     hypothesis testing and acceptance sampling", Technometrics 24(4)).
//   - FAIL: the segment is significantly worse than −fail after Holm's (1979)
//     step-down over the whole family: sorted by FailP, the j-th is rejected
//     while FailP ≤ levels.Fail(j, K); a segment missing or below min_n takes
//     part with FailP = 1, so K is always the listed count. Any one FAIL
//     fails the verdict, so this side needs the correction.
//   - INCONCLUSIVE otherwise: missing, fewer than g.MinN pairs, or too small
//     or too close to show either — a small segment that drops by 40 points
//     is FAIL if that is significant, INCONCLUSIVE if not, never PASS.
//
// margin and fail are in points (0..100), tests are keyed by name.
func SegmentResults(g SegmentsGate, margin, fail float64, levels SegmentLevels, tests map[string]SegmentTest) []Result {
	k := len(g.MustNotRegress)
	out := make([]Result, k)
	order := make([]int, k)
	fp := make([]float64, k)
	for i, name := range g.MustNotRegress {
		order[i] = i
		t, ok := tests[name]
		if !ok {
			t = SegmentTest{Name: name, PassP: 1, FailP: 1}
		}
		fp[i] = t.FailP
		if !t.Present || t.N < max(g.MinN, 1) {
			fp[i] = 1
		}
		out[i] = Result{Gate: "segment " + name, Figure: t.Diff, Interval: t.Interval, Threshold: -margin / 100}
	}
	// Holm's step-down over the whole family on the FAIL side.
	slices.SortStableFunc(order, func(a, b int) int { return cmpF(fp[a], fp[b]) })
	failed := make([]bool, k)
	for j, i := range order {
		if fp[i] > levels.Fail(j+1, k) {
			break
		}
		failed[i] = true
	}
	for i, name := range g.MustNotRegress {
		t, ok := tests[name]
		r := &out[i]
		unit := func(f float64) string { return DiffText(t.Method, f) }
		switch {
		case !ok || !t.Present:
			r.Status, r.Interval, r.Reason = Inconclusive, nil, "segment has no cases in this run"
		case t.N < max(g.MinN, 1):
			r.Status = Inconclusive
			r.Reason = fmt.Sprintf("only %d paired graded cases, policy needs %d", t.N, g.MinN)
		case t.PassP <= levels.Pass:
			r.Status = Pass
			r.Reason = fmt.Sprintf("non-inferior on its own: diff %s, one-sided p %.3g of worse by %s or more ≤ %.3g", unit(t.Diff), t.PassP, MarginText(t.Method, margin), levels.Pass)
		case failed[i]:
			r.Status, r.Threshold = Fail, -fail/100
			r.Reason = fmt.Sprintf("worse: diff %s, one-sided p %.3g of no worse than %s, within Holm's step-down over the %d listed segments", unit(t.Diff), t.FailP, unit(-fail/100), k)
		default:
			r.Status = Inconclusive
			r.Reason = fmt.Sprintf("diff %s on %d pairs shows neither non-inferiority within %s (p %.3g > %.3g) nor a drop below %s after Holm over the %d listed segments",
				unit(t.Diff), t.N, MarginText(t.Method, margin), t.PassP, levels.Pass, unit(-fail/100), k)
		}
	}
	return out
}

// segmentResults is SegmentResults for a suite comparison at levels.
func segmentResults(p Policy, c stats.Comparison, levels SegmentLevels) []Result {
	m, f := p.SegmentMargin(), p.SegmentFail()
	bySeg := map[string]stats.Segment{}
	for _, s := range c.Segments {
		bySeg[s.Name] = s
	}
	tests := map[string]SegmentTest{}
	for _, name := range p.Segments.MustNotRegress {
		s, ok := bySeg[name]
		tests[name] = SegmentTestOf(name, s, ok, m/100, f/100)
	}
	return SegmentResults(*p.Segments, m, f, levels, tests)
}

func cmpF(a, b float64) int {
	switch {
	case a < b, math.IsNaN(b) && !math.IsNaN(a):
		return -1
	case a > b:
		return 1
	}
	return 0
}
