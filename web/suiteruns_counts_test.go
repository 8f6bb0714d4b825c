package web

import (
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// The suite runs page counts runs per status; a cancelled run (a stop) is
// counted apart from the failed ones.
func TestSuiteRunStatusCounts(t *testing.T) {
	rows := func(statuses ...string) suiteRunsView {
		var v suiteRunsView
		for _, s := range statuses {
			v.Rows = append(v.Rows, suiteRunRow{Run: store.SuiteRun{Status: s}})
		}
		return v
	}
	for _, tc := range []struct {
		v    suiteRunsView
		want string
	}{
		{rows("cancelled", "done", "error", "done", "running"), "5 suite runs: 2 done, 1 error, 1 cancelled, 1 running"},
		{rows("cancelled"), "1 suite run: 1 cancelled"},
		{rows("weird", "done"), "2 suite runs: 1 done, 1 weird"},
	} {
		if got := tc.v.StatusCounts(); got != tc.want {
			t.Errorf("StatusCounts = %q, want %q", got, tc.want)
		}
	}
}

// A suite run without a report says why: still running, cancelled by a stop,
// or failed.
func TestSuiteRunPageSaysWhyThereIsNoReport(t *testing.T) {
	for _, tc := range []struct{ status, want string }{
		{"running", "No report stored yet."},
		{store.StatusCancelled, "No report: the run was cancelled before it finished"},
		{"error", "No report: the run failed before it finished"},
	} {
		var b strings.Builder
		v := suiteRunView{Run: store.SuiteRun{SuiteRunID: "s-1", Status: tc.status}}
		if err := suiteRunPage(v).Render(t.Context(), &b); err != nil {
			t.Fatal(err)
		}
		got := byTestID(parseHTML(t, b.String()), "no-report")
		if len(got) != 1 || !strings.HasPrefix(text(got[0]), tc.want) {
			t.Errorf("status %s: no-report says %v, want %q", tc.status, got, tc.want)
		}
	}
}
