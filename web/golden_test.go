package web

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html from the current output")

// TestGolden renders the page components with fixed data and compares them with
// testdata/<name>.golden.html. Run `go test ./web -run TestGolden -update` after an
// intended change, and review the diff.
func TestGolden(t *testing.T) {
	tr := fixtureTrace()
	sr := fixtureSuiteRun()
	sr.Verdict, sr.GatePolicyVersion, sr.ReportHTML = "FAIL", "gates-v2", "<html><body>report</body></html>"
	meta := func(title, nav string) pageMeta {
		return pageMeta{Title: title, Product: "conductor-shadow", Base: "/ui", Nav: nav}
	}
	reportHTML, err := newMarkdown().render(sr.ReportMarkdown)
	if err != nil {
		t.Fatal(err)
	}
	rows := []store.TraceSummary{
		{RequestID: tr.Request.RequestID, ReceivedAt: t0, Source: "tap", App: "support-bot", Category: "math",
			InputPreview: "A train leaves at 09:40 " + xssImg, Runs: 3, IncumbentMs: 2310, CandidateMs: 30000,
			IncumbentCostUSD: 0.00218, CandidateCostUSD: 0.02384, Statuses: []string{"error", "ok"}},
		{RequestID: "req-00aa", ReceivedAt: t0.Add(-90_000_000), Source: "replay", App: "search",
			InputPreview: "weather in Lyon", Runs: 1, IncumbentMs: 870, IncumbentCostUSD: 0.0011, Statuses: []string{"ok"}},
	}
	q := traceQuery{App: "support-bot", Q: "train", Limit: 2, Before: t0.Add(3_600_000_000_000), BeforeID: "req-zz"}
	older := q
	older.Before, older.BeforeID = rows[1].ReceivedAt, rows[1].RequestID
	first := traceQuery{App: q.App, Q: q.Q, Limit: q.Limit}

	casePipes, caseRows := suiteCases(sr, append(suiteScores(sr.SuiteRunID, "conductor", map[string][]float64{"c1": {1}, "c2": {0}}),
		suiteScores(sr.SuiteRunID, "incumbent:gpt-5", map[string][]float64{"c1": {1}})...))
	nestedDrill := newRunDrill(newMarkdown(), fixtureNestedTrace().Steps)
	tests := []struct {
		name string
		comp templ.Component
	}{
		{"traces_page", tracesPage(tracesView{Meta: meta("Traces", navTraces), Query: q, Rows: rows,
			OlderURL: urls{"/ui"}.tracesWith(older), FirstURL: urls{"/ui"}.tracesWith(first), Sources: traceSources()})},
		{"traces_page_search", tracesPage(tracesView{Meta: meta("Traces", navTraces), Rows: rows[:1], Sources: traceSources(),
			Searchable: true, Statuses: runStatuses(), Query: traceQuery{Q: "train", Candidate: "conductor", Worker: "gpt-5",
				Status: store.StatusOK, Grade: store.GradePassed, MinCost: 0.001, MaxMs: 6000, From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}})},
		{"traces_page_empty", tracesPage(tracesView{Meta: meta("Traces", navTraces), Sources: traceSources()})},
		{"trace_page", tracePage(withPair(t, newTraceView(meta("Trace "+tr.Request.RequestID, navTraces), newMarkdown(), tr)))},
		{"step_row_nested", stepRow(store.Step{RunID: "r", Index: 4, Parent: 1, Depth: 1, Role: "conductor",
			Worker: "conductor-7b", Model: "rl-conductor-7b", Subtask: "correct step 1", Access: "", Status: store.StatusBudgetExceeded,
			Error: "budget: 4096 output tokens", Attempt: 2, LatencyMs: 3.25}, -1)},
		{"suite_runs_page", suiteRunsPage(suiteRunsView{Meta: meta("Suite runs", navSuiteRuns), Rows: []suiteRunRow{
			{Run: sr, Simulated: true},
			{Run: store.SuiteRun{SuiteRunID: "sr-old", SetName: "mmlu-mini", SetVersion: "ab12cd34ef56", Incumbent: "incumbent:gpt-5",
				Candidates: []string{"conductor"}, StartedAt: t0.AddDate(0, 0, -1), Status: "running", Cases: 20}},
			{Run: store.SuiteRun{SuiteRunID: "sr-stopped", SetName: "mmlu-mini", SetVersion: "ab12cd34ef56", Incumbent: "incumbent:gpt-5",
				Candidates: []string{"conductor"}, StartedAt: t0.AddDate(0, 0, -2), Status: "cancelled", Cases: 20,
				Headline: "cancelled after 7 of 20 cases: context canceled"}},
		}})},
		{"suite_run_page", suiteRunPage(suiteRunView{Meta: meta("Suite run "+sr.SuiteRunID, navSuiteRuns), Run: sr,
			Simulated: true, ReportHTML: reportHTML, PrevURL: urls{"/ui"}.compareSuiteRuns("sr-old", sr.SuiteRunID, "", false),
			CasePipelines: casePipes, Cases: caseRows})},
		{"workflow_graph_nested", workflowGraphSVG(nestedDrill.Graph)},
		{"timeline_nested", timelineSVG(nestedDrill.Timeline)},
		{"step_details_nested", stepDetails(nestedDrill.Details[3:5])},
		{"answer_diffs", answerDiffs(newTraceView(meta("t", navTraces), newMarkdown(), tr).Diffs)},
		{"overview_page", overviewPage(goldenOverview(meta("Overview", navOverview)))},
		{"run_compare_page", runComparePage(newRunCompare(meta("Compare runs", navTraces), tr.Runs[0], tr.Runs[1], nil, tr.Steps))},
		{"suite_compare_page", suiteComparePage(suiteCompareView{Meta: meta("Compare suite runs", navSuiteRuns), A: sr, B: sr,
			Pipeline: "conductor", Pipelines: []string{"conductor", "moa:3"}, ChangedOnly: true,
			Rows: []caseCompare{{CaseID: "c2", A: 0.5, B: 1, Outcome: outcomeBetter, RequestA: "req-a", RequestB: "req-b", PassedB: true},
				{CaseID: "c9", A: 1, B: -1, Outcome: outcomeMissing, RequestA: "req-c"}},
			Counts: map[string]int{outcomeBetter: 1, outcomeSame: 4, outcomeMissing: 1},
			AllURL: "/ui/compare/suite-runs?a=x&b=y", ChangedURL: "/ui/compare/suite-runs?a=x&b=y&changed=1"})},
		{"workers_page", workersPage(workersView{Meta: meta("Workers", navWorkers), Pipeline: "conductor",
			Query:     overviewQuery{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)},
			Positions: []string{store.PositionFirst, store.PositionMiddle, store.PositionFinal, store.PositionOnly},
			Rows: newWorkerRows([]store.WorkerUse{{Worker: "gpt-5", Category: "math", Position: store.PositionFinal, Steps: 3, CostUSD: 0.06, LatencyMs: 600},
				{Worker: "<b>qwen</b>", Category: "qa", Position: store.PositionFirst, Steps: 1, CostUSD: 0.02, LatencyMs: 200}})})},
		{"error_page", errorPage(errorView{Meta: meta("Not Found", ""), Status: 404, Message: `No trace with id "<x>".`})},
		{"review_page", reviewPage(goldenReview(meta("Review", navReview), true))},
		{"review_page_name", reviewPage(goldenReview(meta("Review", navReview), false))},
		{"agreement_page", agreementPage(goldenAgreement(meta("Judge–human agreement", navReview)))},
		{"suite_run_judges", suiteRunJudges([]reportJudge{{Candidate: "conductor", Judge: "claude-sonnet-4", Unreliable: true,
			Reasons: []string{"judge claude-sonnet-4: Cohen's κ with human reviewers 0.36 (95% CI 0.19 to 0.53, …); the lower bound 0.19 < 0.60 (judge.min_judge_kappa)"},
			Review:  "judge claude-sonnet-4: Cohen's κ with human reviewers 0.36 (95% CI 0.19 to 0.53, …); the lower bound 0.19 < 0.60 (judge.min_judge_kappa)"}})},
		{"data_flows_page", dataFlowsPage(newDataFlowsView(meta("Data flows", navDataFlows), 7*24*time.Hour, goldenDataFlows()))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.comp.Render(context.Background(), &buf); err != nil {
				t.Fatalf("render: %v", err)
			}
			got := buf.Bytes()
			path := filepath.Join("testdata", tt.name+".golden.html")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the rendered output (run with -update after an intended change):\n%s",
					path, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff describes where two texts first differ, with some context.
func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(0, i-80)
	line := strings.Count(want[:i], "\n") + 1
	return "line " + strconv.Itoa(line) + ":\n want …" + want[lo:min(len(want), i+80)] + "…\n  got …" + got[lo:min(len(got), i+80)] + "…"
}

// goldenDataFlows is a week's record: the simulated pool's workers, a real
// provider, a worker no longer configured, the judge, OTLP with and
// without content, Kafka, and a webhook that got nothing; a host name
// holding markup is escaped.
func goldenDataFlows() dataflow.Record {
	to := t0.Truncate(time.Hour)
	totals := store.FlowTotals{
		Calls: []store.FlowCalls{
			{Kind: dataflow.KindWorker, Name: "conductor", Host: "127.0.0.1:9090", Models: []string{"conductor"}, Calls: 6, Requests: 6, SimulatedCalls: 6, InputTokens: 2400, OutputTokens: 600, SentBytes: 18000, ReceivedBytes: 9000},
			{Kind: dataflow.KindWorker, Name: "gpt-5", Host: "api.openai.com", Models: []string{"gpt-5", "gpt-5-2025-08-07"}, Calls: 9, Requests: 11, SuiteCalls: 4, InputTokens: 5100, OutputTokens: 1200, SentBytes: 41000, ReceivedBytes: 22000},
			{Kind: dataflow.KindWorker, Name: "qwen3-32b", Host: "gw.<b>internal</b>:8000", Calls: 1, Requests: 1, SentBytes: 900, ReceivedBytes: 300},
			{Kind: dataflow.KindJudge, Name: "claude-sonnet-4", Host: "api.anthropic.com", Models: []string{"claude-sonnet-4-20250514"}, Calls: 12, Requests: 12, SuiteCalls: 12, InputTokens: 9000, OutputTokens: 400, SentBytes: 60000, ReceivedBytes: 5000},
		},
		Exports: []store.FlowExportTotal{
			{Kind: dataflow.KindOTLP, Name: "traces", Host: "otel-collector:4318", Items: 48, ContentItems: 12, Requests: 4, SentBytes: 30500},
			{Kind: dataflow.KindKafka, Name: "conductor-shadow.exchanges", Host: "kafka:9092", Items: 5, ContentItems: 5, Requests: 3, SentBytes: 14000, FailedItems: 1},
		},
		PII: []store.FlowPII{
			{Kind: dataflow.KindWorker, Name: "gpt-5", Host: "api.openai.com", PIIKind: "email", Items: 2},
			{Kind: dataflow.KindWorker, Name: "gpt-5", Host: "api.openai.com", PIIKind: "person", Items: 1},
			{Kind: dataflow.KindKafka, Name: "conductor-shadow.exchanges", Host: "kafka:9092", PIIKind: "email", Items: 2},
		},
		UnrecordedCalls: 3,
	}
	s := dataflow.Settings{
		Configured: []dataflow.Configured{
			{Kind: dataflow.KindWorker, Name: "conductor", Host: "127.0.0.1:9090"},
			{Kind: dataflow.KindWorker, Name: "gpt-5", Host: "api.openai.com"},
			{Kind: dataflow.KindWorker, Name: "gemma-3-27b", Host: "127.0.0.1:9090", Models: []string{"gemma-3-27b"}},
			{Kind: dataflow.KindJudge, Name: "claude-sonnet-4", Host: "api.anthropic.com"},
			{Kind: dataflow.KindOTLP, Name: "traces", Host: "otel-collector:4318"},
			{Kind: dataflow.KindKafka, Name: "conductor-shadow.exchanges", Host: "kafka:9092"},
			{Kind: dataflow.KindWebhook, Name: "webhook", Host: "hooks.slack.com"},
		},
		Retention:  store.RetentionConfig{Requests: 90 * 24 * time.Hour, Steps: 90 * 24 * time.Hour, Bodies: 30 * 24 * time.Hour, Work: 7 * 24 * time.Hour},
		PIIEnabled: true, PIIRules: []string{"email", "phone", "person"},
	}
	return dataflow.Assemble(totals, s, to.Add(-7*24*time.Hour), to)
}

// goldenOverview is the overview of the two fixture traces with a PASS verdict.
func goldenOverview(meta pageMeta) overviewView {
	ov := store.Overview{
		Counts: store.OverviewCounts{Requests: 3, TapRequests: 2, IncumbentRuns: 2, ShadowRuns: 3, ErrorRuns: 1, ShadowRequests: 2},
		Totals: []store.PipelinePoint{
			{Pipeline: "incumbent:gpt-5", Mode: store.ModeIncumbent, Runs: 2, CostUSD: 0.004, CostPerRequestUSD: 0.002, P50Ms: 1500, P95Ms: 2200},
			{Pipeline: "conductor", Mode: store.ModeCandidate, Runs: 2, CostUSD: 0.03, CostPerRequestUSD: 0.015, P50Ms: 3800, P95Ms: 4900},
		},
		Agreement: []store.Agreement{{Candidate: "conductor", Pairs: 2, Agree: 1}},
	}
	for i, b := range []time.Duration{0, time.Hour} {
		for _, p := range ov.Totals {
			p.Bucket = t0.Truncate(time.Hour).Add(b)
			p.P95Ms += float64(i) * 100
			ov.Series = append(ov.Series, p)
		}
	}
	sr := fixtureSuiteRun()
	sr.Verdict = "PASS"
	q := overviewQuery{App: "support-bot", From: t0.Truncate(time.Hour).Add(-time.Hour), To: t0.Truncate(time.Hour).Add(2 * time.Hour)}
	// The conductor's live sequence: two judged pairs, a tie and a loss.
	seq, err := gate.NewLiveSequence(gate.NewDefaultPolicy())
	if err != nil {
		panic(err)
	}
	for i, score := range []float64{0, -1} {
		seq.Observe(gate.LiveObs{Kind: gate.LiveJudged, Score: score, InclusionProb: 0.25, At: t0.Add(time.Duration(i) * time.Minute),
			IncumbentUSD: 0.002, CandidateUSD: 0.015, IncumbentMs: 1500, CandidateMs: 3800})
	}
	cov := []gate.CoverageCounts{{Dimension: store.CoverageAll, Recorded: 3, Shadowed: 2, Missing: 1, Answered: 2, Judged: 2},
		{Dimension: store.CoverageLang, Value: "en", Recorded: 2, Shadowed: 2, Answered: 2, Judged: 2}, {Dimension: store.CoverageLang, Value: "ru", Recorded: 1, Missing: 1}}
	lv, _ := eval.LiveLook(gate.NewDefaultPolicy(), seq, []store.JudgeStat{{Pipeline: "conductor", Judge: "judge-x", Canaries: 3}}, gate.ReviewEvidence{}, cov, 48)
	live := &eval.LiveSection{AsOf: q.To, Rule: gate.LiveRule, Verdicts: []eval.LiveCandidate{{Candidate: "conductor", Version: "3f9a0b1c2d3e4f50",
		StartedAt: t0, Through: q.To.Add(-time.Hour), LiveVerdict: lv, Coverage: cov, WindowCoverage: cov}}}
	v := newOverviewView(meta, q, 3600, ov, []store.SuiteRun{sr}, live)
	v.ThisURL = urls{meta.Base}.overviewWith(q)
	return v
}

// withPair sets the pair the trace page opens with, as the handler does.
func withPair(t *testing.T, v traceView) traceView {
	t.Helper()
	var err error
	if v.Pair, v.HasPair, err = newTracePair(v, ""); err != nil {
		t.Fatal(err)
	}
	return v
}
