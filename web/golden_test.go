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

	"github.com/a-h/templ"

	"github.com/conductor-shadow/conductor-shadow/store"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html from the current output")

// TestGolden renders the page components with fixed data and compares them with
// testdata/<name>.golden.html. Run `go test ./web -run TestGolden -update` after an
// intended change, and review the diff.
func TestGolden(t *testing.T) {
	tr := fixtureTrace()
	sr := fixtureSuiteRun()
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

	tests := []struct {
		name string
		comp templ.Component
	}{
		{"traces_page", tracesPage(tracesView{Meta: meta("Traces", navTraces), Query: q, Rows: rows,
			OlderURL: urls{"/ui"}.tracesWith(older), FirstURL: urls{"/ui"}.tracesWith(first), Sources: traceSources()})},
		{"traces_page_empty", tracesPage(tracesView{Meta: meta("Traces", navTraces), Sources: traceSources()})},
		{"trace_page", tracePage(newTraceView(meta("Trace "+tr.Request.RequestID, navTraces), tr))},
		{"step_row_nested", stepRow(store.Step{RunID: "r", Index: 4, Parent: 1, Depth: 1, Role: "conductor",
			Worker: "conductor-7b", Model: "rl-conductor-7b", Subtask: "correct step 1", Access: "", Status: store.StatusBudgetExceeded,
			Error: "budget: 4096 output tokens", Attempt: 2, LatencyMs: 3.25}, -1)},
		{"suite_runs_page", suiteRunsPage(suiteRunsView{Meta: meta("Suite runs", navSuiteRuns), Rows: []suiteRunRow{
			{Run: sr, Simulated: true},
			{Run: store.SuiteRun{SuiteRunID: "sr-old", SetName: "mmlu-mini", SetVersion: "ab12cd34ef56", Incumbent: "incumbent:gpt-5",
				Candidates: []string{"conductor"}, StartedAt: t0.AddDate(0, 0, -1), Status: "running", Cases: 20}},
		}})},
		{"suite_run_page", suiteRunPage(suiteRunView{Meta: meta("Suite run "+sr.SuiteRunID, navSuiteRuns), Run: sr,
			Simulated: true, ReportHTML: reportHTML})},
		{"error_page", errorPage(errorView{Meta: meta("Not Found", ""), Status: 404, Message: `No trace with id "<x>".`})},
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
