package web

import (
	"context"
	"net/http"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// The trace page shows each step's finish reason and marks a run whose final
// answer was cut at the token cap.
func TestTracePageShowsTruncation(t *testing.T) {
	st := engine.Open(t)
	tr := fixtureTrace()
	for i := range tr.Steps {
		tr.Steps[i].FinishReason = store.FinishStop
	}
	tr.Steps[2].FinishReason = store.FinishLength
	tr.Steps[0].FinishReason = "" // not reported
	tr.Runs[1].Truncated, tr.Runs[1].TruncatedSteps = true, 1
	seed(t, st, tr)
	rec := get(t, newTestServer(t, st, NewDefaultConfig()), "/traces/"+tr.Request.RequestID)
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	var got []string
	for _, n := range byTestID(doc, "finish-reason") {
		got = append(got, text(n))
	}
	want := []string{"—", "stop", "length (truncated)"}
	if len(got) != len(want) {
		t.Fatalf("finish reasons %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d finish reason %q, want %q", i, got[i], want[i])
		}
	}
	if n := byTestID(doc, "run-truncated"); len(n) != 1 {
		t.Errorf("%d runs marked truncated, want 1 (the conductor run)", len(n))
	}
	if n := byTestID(doc, "run-truncated-steps"); len(n) != 1 || text(n[0]) != "1" {
		t.Errorf("truncated steps cell: %d nodes", len(n))
	}
}

// The suite-run page counts each pipeline's truncated answers from the report.
func TestSuiteRunPageCountsTruncated(t *testing.T) {
	st := engine.Open(t)
	sr := fixtureSuiteRun()
	sr.ReportJSON = `{"simulated":true,"pipelines":[{"pipeline":"incumbent:gpt-5","overall":{"truncated":0}},` +
		`{"pipeline":"conductor","overall":{"truncated":26}}]}`
	if err := st.InsertSuiteRuns(context.Background(), []store.SuiteRun{sr}); err != nil {
		t.Fatal(err)
	}
	rec := get(t, newTestServer(t, st, NewDefaultConfig()), "/suite-runs/"+sr.SuiteRunID)
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	got := map[string]string{}
	for _, n := range byTestID(doc, "truncated-count") {
		got[attr(n, "data-pipeline")] = text(n)
	}
	if got["conductor"] != "conductor: 26" || got["incumbent:gpt-5"] != "incumbent:gpt-5: 0" {
		t.Errorf("truncated counts %q", got)
	}
}
