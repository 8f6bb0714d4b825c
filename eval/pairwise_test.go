package eval

import (
	"fmt"
	"math"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestPairOutcome(t *testing.T) {
	inc, cand, tie := store.VerdictIncumbent, store.VerdictCandidate, store.VerdictTie
	for _, tt := range []struct{ v1, v2, want string }{
		{cand, cand, store.JudgmentWin},
		{inc, inc, store.JudgmentLoss},
		{tie, tie, store.JudgmentTie},
		{inc, cand, store.JudgmentInconsistent}, // position bias: always the first shown
		{cand, inc, store.JudgmentInconsistent},
		{cand, tie, store.JudgmentInconsistent}, // never a win
		{tie, inc, store.JudgmentInconsistent},
		{"", cand, store.JudgmentError},
		{cand, "", store.JudgmentError},
	} {
		if got := PairOutcome(tt.v1, tt.v2); got != tt.want {
			t.Errorf("PairOutcome(%q, %q) = %q, want %q", tt.v1, tt.v2, got, tt.want)
		}
	}
}

// Pairwise outcomes map onto the paired test's pairs: a win is a case only
// the candidate passed, a loss one only the incumbent passed, ties and
// inconsistent pairs are concordant, errors and excluded pairs leave the
// test; so the quality interval is Tango's on P(win) − P(loss), the same
// test the pass/fail gate uses. Ties are not passes.
func TestAnalyzePairwiseIsWinsAgainstLosses(t *testing.T) {
	var outs []Outcome
	add := func(n int, outcome string) {
		for range n {
			id := fmt.Sprintf("c%d", len(outs)/2)
			outs = append(outs,
				Outcome{CaseID: id, Category: "qa", Pipeline: "inc", Mode: store.ModeIncumbent, Status: store.StatusOK, LatencyMs: 100, CostUSD: 0.001, Pairwise: PairReference},
				Outcome{CaseID: id, Category: "qa", Pipeline: "cand", Mode: store.ModeCandidate, Status: store.StatusOK, LatencyMs: 100, CostUSD: 0.001,
					Pairwise: outcome, Value: pairValue(outcome), Passed: outcome == store.JudgmentWin, Judge: &JudgeUsage{Worker: "j", Model: "claude-sonnet-4", Calls: 2}})
		}
	}
	add(50, store.JudgmentWin)
	add(20, store.JudgmentLoss)
	add(40, store.JudgmentTie)
	add(10, store.JudgmentInconsistent)
	add(3, store.JudgmentError)
	add(2, PairExcluded)
	rep := BuildReport(ReportMeta{SuiteRunID: "s", SetName: "set", Incumbent: "inc", Candidates: []string{"cand"}}, outs)
	if err := rep.Analyze(AnalysisOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	q := rep.Comparisons[0].Comparison.Quality
	if q.N != 120 || q.CandidateOnly != 50 || q.IncumbentOnly != 20 || q.Both != 0 || q.Neither != 50 || q.Method != stats.MethodTango {
		t.Errorf("paired counts %+v, want 120 judged: 50 wins, 20 losses, 50 concordant", q)
	}
	if want := stats.TangoInterval(50, 20, 120, stats.ZFor(0.95)); q.DiffCI != want || math.Abs(q.Diff-30.0/120) > 1e-12 {
		t.Errorf("interval %v diff %v, want Tango %v and (50 − 20)/120", q.DiffCI, q.Diff, want)
	}
	// The pipeline table counts pairs, not accuracy, for pairwise cases.
	pc := rep.Pipelines[1].Overall.Pairwise
	if pc == nil || pc.Judged != 123 || pc.Wins != 50 || pc.Losses != 20 || pc.Ties != 40 || pc.Inconsistent != 10 || pc.Errors != 3 || pc.Excluded != 2 ||
		math.Abs(pc.PositionConsistency-110.0/120) > 1e-12 || rep.Pipelines[1].Overall.Graded != 0 || rep.Pipelines[0].Overall.Pairwise.Reference != 125 {
		t.Errorf("pair counts %+v, graded %d", pc, rep.Pipelines[1].Overall.Graded)
	}
	jr := rep.Judging[0]
	if jr.IncumbentErrors.Errors != 3 || jr.CandidateErrors.Errors != 3 || jr.IncumbentErrors.Total != 123 || len(jr.ErrorCases) != 3 || jr.Family != "anthropic" {
		t.Errorf("judge report %+v", jr)
	}
}

func TestRubricScale(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want RubricScale
		ok   bool
		err  bool
	}{
		{[]any{1.0, 10.0}, RubricScale{1, 10}, true, false},
		{[]any{0.0, 100.0}, RubricScale{0, 100}, true, false},
		{nil, RubricScale{}, false, false},
		{[]any{1.5, 10.0}, RubricScale{}, true, true},
		{[]any{1.0}, RubricScale{}, true, true},
		{"1-10", RubricScale{}, true, true},
		{[]any{5.0, 5.0}, RubricScale{}, true, true},
		{[]any{-1.0, 10.0}, RubricScale{}, true, true},
		{[]any{1.0, 1000.0}, RubricScale{}, true, true},
	} {
		c := Case{}
		if tt.v != nil {
			c.Extra = map[string]any{"rubric_scale": tt.v}
		}
		got, ok, err := c.RubricScale()
		if got != tt.want || ok != tt.ok || (err != nil) != tt.err {
			t.Errorf("RubricScale(%v) = %v, %v, %v", tt.v, got, ok, err)
		}
	}
	if v := (RubricScale{1, 10}).Value(8); v != 0.8 {
		t.Errorf("8 on 1..10 is %v, want 0.8", v)
	}
}
