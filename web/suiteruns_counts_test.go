package web

import (
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
