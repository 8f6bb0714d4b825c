package store

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// Judgments round-trip with every column, a judgment written twice counts
// once, and JudgeStats' position consistency (figure.PositionConsistencySQL
// in the engine) equals figure.PositionConsistency over the same rows, with
// canaries and errors in neither count.
func TestJudgmentsRoundTripAndStats(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	outcomes := []string{JudgmentWin, JudgmentTie, JudgmentLoss, JudgmentInconsistent, JudgmentInconsistent, JudgmentError, JudgmentWin, JudgmentTie, JudgmentLoss, JudgmentWin}
	var js []Judgment
	consistent, judged := 0, 0
	for i, o := range outcomes {
		j := Judgment{RequestID: fmt.Sprintf("suite-1/case-%d", i), SuiteRunID: "suite-1", CaseID: fmt.Sprintf("case-%d", i),
			Pipeline: "conductor", PipelineVersion: "v1", CandidateRunID: fmt.Sprintf("cand-%d", i), IncumbentPipeline: "single:gpt-5",
			IncumbentRunID: fmt.Sprintf("inc-%d", i), Judge: "claude-sonnet-4", JudgeWorker: "claude-sonnet-4", PromptVersion: "judge-pairwise-v2",
			Labels: "A/B", JudgedAt: at, Outcome: o, Verdict1: VerdictCandidate, Raw1: "WINNER: B\x00 and bytes \xff kept", Verdict2: VerdictIncumbent, Raw2: "[[A]]",
			InclusionProb: 1, TokensIn: 200, TokensOut: 20, CostUSD: 0.001, Error: map[bool]string{true: "order 1: no verdict"}[o == JudgmentError]}
		js = append(js, j)
		if o != JudgmentError {
			judged++
			if o != JudgmentInconsistent {
				consistent++
			}
		}
	}
	// Canaries: one passed, one failed; they never enter the consistency.
	js = append(js,
		Judgment{RequestID: "suite-1/case-0", SuiteRunID: "suite-1", Pipeline: "conductor", CandidateRunID: "inc-0", Judge: "claude-sonnet-4",
			Canary: "identical", CanaryPassed: true, Outcome: JudgmentInconsistent, JudgedAt: at, InclusionProb: 1, CostUSD: 0.001},
		Judgment{RequestID: "suite-1/case-1", SuiteRunID: "suite-1", Pipeline: "conductor", CandidateRunID: "inc-1", Judge: "claude-sonnet-4",
			Canary: "padded", CanaryPassed: false, Outcome: JudgmentWin, JudgedAt: at, InclusionProb: 1, CostUSD: 0.001},
		// Another suite run and a live judgment stay out of suite-1's figures.
		Judgment{RequestID: "suite-2/case-0", SuiteRunID: "suite-2", Pipeline: "conductor", CandidateRunID: "x", Judge: "claude-sonnet-4", Outcome: JudgmentInconsistent, JudgedAt: at},
		Judgment{RequestID: "req-live", Pipeline: "conductor", CandidateRunID: "y", Judge: "claude-sonnet-4", Outcome: JudgmentInconsistent, JudgedAt: at, InclusionProb: 0.25},
	)
	if err := s.InsertJudgments(ctx, js); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJudgments(ctx, js[:3]); err != nil { // re-delivered
		t.Fatal(err)
	}
	got, err := s.ListJudgments(ctx, JudgmentQuery{SuiteRunID: "suite-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(outcomes)+2 {
		t.Fatalf("suite-1: %d judgments, want %d", len(got), len(outcomes)+2)
	}
	one, err := s.ListJudgments(ctx, JudgmentQuery{RequestID: "suite-1/case-0"})
	if err != nil || len(one) != 2 {
		t.Fatalf("one request: %d judgments (real and canary), err %v", len(one), err)
	}
	var real Judgment
	for _, j := range one {
		if j.Canary == "" {
			real = j
		}
	}
	if real != js[0] {
		t.Errorf("round trip:\n got %+v\nwant %+v", real, js[0])
	}
	live, err := s.ListJudgments(ctx, JudgmentQuery{RequestID: "req-live"})
	if err != nil || len(live) != 1 || live[0].InclusionProb != 0.25 || live[0].SuiteRunID != "" {
		t.Errorf("live judgment: %+v, %v", live, err)
	}

	stats, err := s.JudgeStats(ctx, JudgmentQuery{SuiteRunID: "suite-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 {
		t.Fatalf("stats: %+v", stats)
	}
	st := stats[0]
	want := figure.PositionConsistency(consistent, judged)
	if math.Abs(st.PositionConsistency-want) > 1e-12 || want != 7.0/9 {
		t.Errorf("position consistency %v, want %v (7 of 9)", st.PositionConsistency, want)
	}
	if st.Wins != 3 || st.Ties != 2 || st.Losses != 2 || st.Inconsistent != 2 || st.Errors != 1 || st.Canaries != 2 || st.CanariesFailed != 1 {
		t.Errorf("counts: %+v", st)
	}
	if math.Abs(st.CostUSD-0.012) > 1e-9 {
		t.Errorf("cost %v, want 0.012 (10 pairs and 2 canaries)", st.CostUSD)
	}

	if _, err := s.ListJudgments(ctx, JudgmentQuery{}); err == nil || !strings.Contains(err.Error(), "name a request or a suite run") {
		t.Errorf("empty query: %v", err)
	}
	if r := NewRoles(s); r.JudgmentReader == nil || r.JudgmentWriter == nil {
		t.Errorf("roles of the SQL store: reader %v, writer %v", r.JudgmentReader, r.JudgmentWriter)
	}
	if NewRoles(nil).JudgmentWriter != nil {
		t.Error("roles of no store: want no JudgmentWriter")
	}
	var ns struct{ Store }
	if NewRoles(ns).JudgmentReader != nil {
		t.Error("a store without the role: want no JudgmentReader")
	}
}

// LiveJudged finds a live row of the pair's key and judge worker, whatever
// its outcome and however often it was written, and nothing else: not a
// suite run's row, not a canary, not another worker's, run's or pipeline's.
func TestLiveJudged(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	row := func(req, suite, canary, run, worker, outcome string) Judgment {
		return Judgment{RequestID: req, SuiteRunID: suite, Canary: canary, Pipeline: "conductor", CandidateRunID: run,
			Judge: "claude-sonnet-4", JudgeWorker: worker, Outcome: outcome, JudgedAt: at, InclusionProb: 0.5}
	}
	js := []Judgment{
		row("live-1", "", "", "run-1", "judge-a", JudgmentWin),
		row("live-2", "", "", "run-2", "judge-a", JudgmentUnjudged),
		row("suite-only", "suite-1", "", "run-3", "judge-a", JudgmentWin),
		row("canary-only", "", "identical", "run-4", "judge-a", JudgmentTie),
	}
	for range 2 { // a re-delivered row is still one pair judged
		if err := s.InsertJudgments(ctx, js); err != nil {
			t.Fatal(err)
		}
	}
	key := func(req, pipeline, run, worker string) LivePairKey {
		return LivePairKey{RequestID: req, Pipeline: pipeline, CandidateRunID: run, JudgeWorker: worker}
	}
	for _, tt := range []struct {
		name string
		k    LivePairKey
		want bool
	}{
		{"judged", key("live-1", "conductor", "run-1", "judge-a"), true},
		{"unjudged row", key("live-2", "conductor", "run-2", "judge-a"), true},
		{"another judge worker", key("live-1", "conductor", "run-1", "judge-b"), false},
		{"another candidate run", key("live-1", "conductor", "run-9", "judge-a"), false},
		{"another pipeline", key("live-1", "router", "run-1", "judge-a"), false},
		{"a suite run's row", key("suite-only", "conductor", "run-3", "judge-a"), false},
		{"a canary's row", key("canary-only", "conductor", "run-4", "judge-a"), false},
		{"no row", key("live-9", "conductor", "run-1", "judge-a"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.LiveJudged(ctx, tt.k)
			if err != nil || got != tt.want {
				t.Errorf("LiveJudged(%+v) = %v, %v; want %v", tt.k, got, err, tt.want)
			}
		})
	}
	if _, err := s.LiveJudged(ctx, key("live-1", "conductor", "", "judge-a")); err == nil {
		t.Error("a key without its candidate run: want an error")
	}
}
