package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// RunEvalHistoryContract runs the behaviour every store.EvalHistory must share
// (package store runs it against the embedded engine); each case gets a fresh
// store.
func RunEvalHistoryContract(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	t.Run("EvalHistory", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		eh, ok := st.(store.EvalHistory)
		if !ok {
			t.Fatalf("%T does not implement store.EvalHistory", st)
		}
		contractEvalHistory(t, st, eh)
	})
	t.Run("SuiteRunRunsAndConductorSteps", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		contractSuiteRunRuns(t, st, st.(store.EvalHistory))
	})
	t.Run("SetSources", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		contractSetSources(t, st, st.(store.EvalHistory))
	})
}

func contractSuiteRunRuns(t *testing.T, st store.Store, eh store.EvalHistory) {
	ctx := context.Background()
	f := NewFixture("s9/case-1", T0())
	for i := range f.Runs {
		f.Runs[i].SuiteRunID = "s9"
	}
	other := NewFixture("tap-1", T0()) // not in the suite run
	f.Steps = append(f.Steps, store.Step{RunID: f.Runs[2].RunID, Index: 2, Parent: -1, Role: "conductor", Worker: "conductor",
		Messages: `[{"role":"user","content":"plan"}]`, Status: store.StatusOK, StartedAt: T0(), Attempt: 1})
	other.Steps = append(other.Steps, store.Step{RunID: other.Runs[2].RunID, Index: 2, Parent: -1, Role: "conductor", StartedAt: T0(), Attempt: 1})
	for _, fx := range []Fixture{f, other} {
		if err := st.InsertRuns(ctx, fx.Runs); err != nil {
			t.Fatal(err)
		}
		if err := st.InsertSteps(ctx, fx.Steps); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := eh.ListSuiteRunRuns(ctx, "s9")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].Pipeline != "conductor" || runs[2].Pipeline != "single:qwen3-32b" || runs[0].PlanRaw == "" {
		t.Errorf("ListSuiteRunRuns = %+v", runs)
	}
	steps, err := eh.ListConductorSteps(ctx, "s9")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].RunID != f.Runs[2].RunID || steps[0].Messages != `[{"role":"user","content":"plan"}]` {
		t.Errorf("ListConductorSteps = %+v", steps)
	}
	if runs, err := eh.ListSuiteRunRuns(ctx, "none"); err != nil || runs == nil || len(runs) != 0 {
		t.Errorf("unknown suite run: %v %v", runs, err)
	}
}

func contractSetSources(t *testing.T, st store.Store, eh store.EvalHistory) {
	ctx := context.Background()
	a := NewFixture("tap-a", T0())                        // incumbent ok "4"
	b := NewFixture("tap-b", T0().Add(time.Minute))       // incumbent errored: not a source
	c := NewFixture("suite-x/c", T0().Add(2*time.Minute)) // a suite request: not a source
	d := NewFixture("replay-d", T0().Add(3*time.Minute))  // replay, two incumbent runs: the later answer
	b.Runs[0].Status, b.Runs[0].FinalOutput = store.StatusError, ""
	c.Request.Source = store.SourceSuite
	d.Request.Source = store.SourceReplay
	later := d.Runs[0]
	later.RunID, later.StartedAt, later.FinalOutput, later.Pipeline = "replay-d/inc2", later.StartedAt.Add(time.Second), "four", "incumbent:gpt-5.1"
	d.Runs = append(d.Runs, later)
	for _, fx := range []Fixture{a, b, c, d} {
		if err := st.InsertRequests(ctx, []store.Request{fx.Request}); err != nil {
			t.Fatal(err)
		}
		if err := st.InsertRuns(ctx, fx.Runs); err != nil {
			t.Fatal(err)
		}
	}
	got, err := eh.ListSetSources(ctx, store.SetSourceQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].RequestID != "replay-d" || got[0].IncumbentOutput != "four" || got[0].IncumbentPipeline != "incumbent:gpt-5.1" ||
		got[1].RequestID != "tap-a" || got[1].IncumbentOutput != "4" || got[1].App != "support-bot" || got[1].Metadata["tenant"] != "acme" {
		t.Errorf("ListSetSources = %+v", got)
	}
	got, err = eh.ListSetSources(ctx, store.SetSourceQuery{Since: T0().Add(time.Second), Until: T0().Add(time.Hour), Limit: 5})
	if err != nil || len(got) != 1 || got[0].RequestID != "replay-d" {
		t.Errorf("window: %+v %v", got, err)
	}
	got, err = eh.ListSetSources(ctx, store.SetSourceQuery{Limit: 1})
	if err != nil || len(got) != 1 || got[0].RequestID != "replay-d" {
		t.Errorf("limit 1: %+v %v", got, err)
	}
}

func contractEvalHistory(t *testing.T, st store.Store, eh store.EvalHistory) {
	ctx := context.Background()
	run := func(id, set string, cands []string, status string, start time.Time) store.SuiteRun {
		return store.SuiteRun{SuiteRunID: id, SetName: set, SetVersion: "v", Incumbent: "inc", Candidates: cands,
			StartedAt: start, FinishedAt: start.Add(time.Minute), Status: status, Cases: 2,
			Verdict: "PASS", GatePolicyVersion: "p1", ReportHTML: "<html>" + id + "</html>"}
	}
	runs := []store.SuiteRun{
		run("s1", "gsm", []string{"conductor"}, "done", T0()),
		run("s2", "gsm", []string{"conductor", "moa"}, "done", T0().Add(time.Hour)),
		run("s3", "gsm", []string{"conductor"}, "error", T0().Add(2*time.Hour)),
		run("s4", "mmlu", []string{"conductor"}, "done", T0().Add(3*time.Hour)),
		run("s5", "gsm", []string{"moa"}, "done", T0().Add(4*time.Hour)),
	}
	if err := st.InsertSuiteRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	cases := []store.Case{
		{SuiteRunID: "s2", SetName: "gsm", SetVersion: "v", CaseID: "b", Category: "math", Input: "2+2", Reference: "4", Grader: "numeric", Extra: `{"app":"x"}`},
		{SuiteRunID: "s2", SetName: "gsm", SetVersion: "v", CaseID: "a", Category: "math", Input: "1+1", Reference: "2", Grader: "numeric"},
		{SuiteRunID: "s1", SetName: "gsm", SetVersion: "v", CaseID: "a", Category: "math", Input: "1+1", Reference: "2", Grader: "numeric"},
	}
	if err := st.InsertCases(ctx, cases); err != nil {
		t.Fatal(err)
	}
	scores := []store.Score{
		{SuiteRunID: "s2", RunID: "r2", RequestID: "s2/a", CaseID: "a", Pipeline: "inc", Grader: "numeric", Passed: true, Value: 1, CreatedAt: T0()},
		{SuiteRunID: "s2", RunID: "r1", RequestID: "s2/a", CaseID: "a", Pipeline: "conductor", Grader: "numeric", CreatedAt: T0()},
		{SuiteRunID: "s1", RunID: "r9", RequestID: "s1/a", CaseID: "a", Pipeline: "inc", Grader: "numeric", CreatedAt: T0()},
	}
	if err := st.InsertScores(ctx, scores); err != nil {
		t.Fatal(err)
	}

	got, err := eh.ListCases(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].CaseID != "a" || got[1].CaseID != "b" || got[1].Extra != `{"app":"x"}` {
		t.Errorf("ListCases(s2) = %+v", got)
	}
	if got, err := eh.ListCases(ctx, "nope"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ListCases(nope) = %v, %v; want empty", got, err)
	}
	sc, err := eh.ListSuiteScores(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc) != 2 || sc[0].Pipeline != "conductor" || sc[1].Pipeline != "inc" || !sc[1].Passed {
		t.Errorf("ListSuiteScores(s2) = %+v", sc)
	}

	tests := []struct {
		set, cand string
		before    time.Time
		want      string // "" = ErrNotFound
	}{
		{"gsm", "conductor", T0().Add(5 * time.Hour), "s2"}, // s3 errored, s5 lacks conductor
		{"gsm", "conductor", T0().Add(time.Hour), "s1"},     // strictly before
		{"gsm", "conductor", T0(), ""},
		{"gsm", "moa", T0().Add(5 * time.Hour), "s5"},
		{"mmlu", "moa", T0().Add(5 * time.Hour), ""},
	}
	for _, tc := range tests {
		sr, err := eh.PreviousSuiteRun(ctx, tc.set, tc.cand, tc.before)
		if tc.want == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("PreviousSuiteRun(%s, %s, %v): %v, %v; want ErrNotFound", tc.set, tc.cand, tc.before, sr.SuiteRunID, err)
			}
			continue
		}
		if err != nil || sr.SuiteRunID != tc.want {
			t.Errorf("PreviousSuiteRun(%s, %s, %v) = %q, %v; want %q", tc.set, tc.cand, tc.before, sr.SuiteRunID, err, tc.want)
		}
		if err == nil && (sr.Verdict != "PASS" || sr.GatePolicyVersion != "p1" || sr.ReportHTML != "<html>"+tc.want+"</html>") {
			t.Errorf("new columns did not round-trip: %+v", sr)
		}
	}
}
