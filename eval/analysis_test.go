package eval

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// The verdict, the policy version, the noise floor and the case snapshot's
// extra keys reach the stored suite run and its report.
func TestRunSuiteVerdictStored(t *testing.T) {
	ctx := context.Background()
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, cand := reportPipelines()
	// Five cases: a fixed-n verdict (as the first look of a plan of
	// thousands of cases, it would spend almost nothing and decide nothing).
	pol := gate.Policy{Version: "test-7", Confidence: 0.95, Cost: &gate.CostGate{MaxRatio: 1.0},
		Segments: &gate.SegmentsGate{MustNotRegress: []string{"category:mmlu"}}, MaxRunErrorShare: &quarter,
		Looks: &gate.LooksGate{Spending: gate.SpendingNone}}
	rep, err := RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand}, SuiteOptions{
		SuiteRunID: "suite-verdict", Policy: &pol, NoiseRun: true, Seed: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The candidate costs exactly 2× on every resample of these five cases?
	// Not exactly, but its cheapest resample is still above 1.0: cost FAIL.
	if rep.Verdict != "FAIL" || len(rep.Comparisons) != 1 {
		t.Fatalf("verdict %q comparisons %d\n%s", rep.Verdict, len(rep.Comparisons), rep.Markdown())
	}
	cc := rep.Comparisons[0]
	if cc.Candidate != "conductor" || cc.Comparison.Quality.N != 5 || cc.Comparison.Quality.IncumbentOnly != 1 || cc.Comparison.Quality.CandidateOnly != 2 {
		t.Errorf("comparison %+v", cc.Comparison.Quality)
	}
	if want := stats.Wilson(3, 5, stats.ZFor(0.95)); cc.Comparison.Incumbent.AccuracyCI != want {
		t.Errorf("incumbent CI %v, want %v", cc.Comparison.Incumbent.AccuracyCI, want)
	}
	// The A′ run answers exactly as A (same fake), so the noise floor is zero.
	if rep.Noise == nil || rep.Noise.Pipeline != "single:gpt-5#rerun" || rep.Noise.Quality.N != 5 || rep.Noise.Quality.DiscordantRate != 0 {
		t.Errorf("noise %+v", rep.Noise)
	}
	if strings.Contains(rep.Headline, RerunSuffix) {
		t.Errorf("the A′ run is not a candidate: headline %q", rep.Headline)
	}
	if got := inc.calls.Load(); got != 10 {
		t.Errorf("incumbent ran %d times, want 10 (A and A′)", got)
	}
	sr, err := st.GetSuiteRun(ctx, "suite-verdict")
	if err != nil {
		t.Fatal(err)
	}
	if sr.Verdict != "FAIL" || sr.GatePolicyVersion != "test-7" {
		t.Errorf("stored verdict %q policy %q", sr.Verdict, sr.GatePolicyVersion)
	}
	var fromRow Report
	if err := json.Unmarshal([]byte(sr.ReportJSON), &fromRow); err != nil {
		t.Fatal(err)
	}
	if fromRow.Verdict != "FAIL" || fromRow.Policy.Version != "test-7" || len(fromRow.Comparisons) != 1 ||
		fromRow.Comparisons[0].Verdict.Gates[0].Gate != gate.GateRunErrors || fromRow.Comparisons[0].Verdict.Gates[1].Gate != "cost" {
		t.Errorf("report json verdict %q policy %+v", fromRow.Verdict, fromRow.Policy)
	}
	for _, want := range []string{"## Verdict: FAIL", "`test-7`", "Noise floor:", "segment category:mmlu", "Holm (1979)"} {
		if !strings.Contains(sr.ReportMarkdown, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	cases, err := st.(store.EvalHistory).ListCases(ctx, "suite-verdict")
	if err != nil || len(cases) != 5 {
		t.Fatalf("case snapshot: %d cases, want 5: %v", len(cases), err)
	}
	for _, c := range cases {
		var extra map[string]any
		if err := json.Unmarshal([]byte(c.Extra), &extra); err != nil || extra["license"] != "MIT" {
			t.Errorf("case %s extra %q: %v", c.CaseID, c.Extra, err)
		}
	}
}

func TestAnalyzeRejectsBadPolicy(t *testing.T) {
	r := BuildReport(ReportMeta{SuiteRunID: "x", Incumbent: "a"}, nil)
	if err := r.Analyze(AnalysisOptions{Policy: &gate.Policy{}}); err == nil || !strings.Contains(err.Error(), "version is required") {
		t.Errorf("err %v", err)
	}
	if err := r.Analyze(AnalysisOptions{}); err != nil || r.Verdict != "" || r.Policy.Version != gate.NewDefaultPolicy().Version {
		t.Errorf("no candidates: err %v verdict %q", err, r.Verdict)
	}
}
