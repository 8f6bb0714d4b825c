package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestNewRunCompare(t *testing.T) {
	tr := fixtureTrace()
	a := tr.Runs[1] // conductor: qwen3-32b [] → gpt-5 "all" → claude-sonnet-4 [0,1]
	b := a
	b.RunID = "run-cond-2"
	b.FinalOutput = "3 hours 25 minutes."
	b.Plan = `{"steps":[{"worker":"qwen3-32b","subtask":"Plan the solution","access":[]},` +
		`{"worker":"gpt-5","subtask":"Compute","access":[0]},` +
		`{"worker":"gemini-2.5-pro","subtask":"Verify","access":[0,1]},` +
		`{"worker":"gpt-5","subtask":"Answer","access":"all"}]}`
	v := newRunCompare(pageMeta{}, a, b, tr.Steps, nil)
	var changed []bool
	for _, r := range v.Plan {
		changed = append(changed, r.WorkerChanged || r.AccessChanged)
	}
	// Step 1 keeps its worker but reads less (topology), step 2 changes worker, step 3 is new.
	if want := []bool{false, true, true, true}; !slices.Equal(changed, want) {
		t.Errorf("changed rows = %v, want %v", changed, want)
	}
	if !v.Plan[1].AccessChanged || v.Plan[1].WorkerChanged {
		t.Errorf("row 1 = %+v: access changed, worker kept", v.Plan[1])
	}
	if v.Changed != 3 {
		t.Errorf("Changed = %d, want 3", v.Changed)
	}
	if !slices.Equal(v.WorkersAdded, []string{"gemini-2.5-pro"}) || !slices.Equal(v.WorkersRemoved, []string{"claude-sonnet-4"}) {
		t.Errorf("added %v removed %v", v.WorkersAdded, v.WorkersRemoved)
	}
	if v.Deleted == 0 || v.Inserted != 0 {
		t.Errorf("answer diff −%d +%d: B only drops the payload", v.Deleted, v.Inserted)
	}
	if v.StepsA != 3 || v.StepsB != 0 {
		t.Errorf("steps %d / %d", v.StepsA, v.StepsB)
	}
}

// suiteScores builds one suite run's scores for pipeline p from case → grader values.
func suiteScores(sr, p string, values map[string][]float64) []store.Score {
	var out []store.Score
	for c, vs := range values {
		for i, v := range vs {
			out = append(out, store.Score{SuiteRunID: sr, RunID: sr + "/" + c + "/" + p, RequestID: "req-" + sr + "-" + c,
				CaseID: c, Pipeline: p, Grader: "g" + string(rune('0'+i)), Value: v, Passed: v >= 0.5, CreatedAt: t0})
		}
	}
	return out
}

func TestCompareSuiteScores(t *testing.T) {
	a := suiteScores("sr-a", "conductor", map[string][]float64{"c1": {1}, "c2": {0, 1}, "c3": {1}, "c4": {0.5}})
	b := suiteScores("sr-b", "conductor", map[string][]float64{"c1": {1}, "c2": {1, 1}, "c3": {0}, "c5": {1}})
	// A grader error is not a value; another pipeline's scores are ignored.
	b = append(b, store.Score{SuiteRunID: "sr-b", CaseID: "c1", Pipeline: "conductor", Grader: "judge", Value: 0, Error: "timeout"},
		store.Score{SuiteRunID: "sr-b", CaseID: "c4", Pipeline: "moa:3", Grader: "g0", Value: 1})
	got := compareSuiteScores(a, b, "conductor")
	var outcomes []string
	for _, c := range got {
		outcomes = append(outcomes, c.CaseID+":"+c.Outcome)
	}
	want := []string{"c1:same", "c2:better", "c3:worse", "c4:missing", "c5:missing"}
	if !slices.Equal(outcomes, want) {
		t.Errorf("outcomes = %q, want %q", outcomes, want)
	}
	if got[1].A != 0.5 || got[1].B != 1 || got[1].PassedA {
		t.Errorf("c2 = %+v: mean 0.5 → 1, A not passed by every grader", got[1])
	}
}

func TestComparePages(t *testing.T) {
	st := engine.Open(t)
	tr := fixtureTrace()
	seed(t, st, tr)
	ctx := context.Background()
	older, newer := fixtureSuiteRun(), fixtureSuiteRun()
	older.SuiteRunID, older.StartedAt = "sr-old", older.StartedAt.Add(-24*time.Hour)
	if err := st.InsertSuiteRuns(ctx, []store.SuiteRun{older, newer}); err != nil {
		t.Fatal(err)
	}
	scores := append(suiteScores("sr-old", "conductor", map[string][]float64{"c1": {1}, "c2": {0}, "c3": {1}}),
		suiteScores(newer.SuiteRunID, "conductor", map[string][]float64{"c1": {1}, "c2": {1}, "c3": {0}})...)
	scores = append(scores, suiteScores(newer.SuiteRunID, "moa:3", map[string][]float64{"c1": {1}})...)
	if err := st.InsertScores(ctx, scores); err != nil {
		t.Fatal(err)
	}
	h := newTestServer(t, st, NewDefaultConfig())
	u := urls{}

	t.Run("suite runs case by case", func(t *testing.T) {
		rec := get(t, h, u.compareSuiteRuns("sr-old", newer.SuiteRunID, "", false))
		mustStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		var rows []string
		for _, r := range byTestID(doc, "case-row") {
			rows = append(rows, attr(r, "data-case-id")+":"+attr(r, "data-outcome"))
		}
		if want := []string{"c1:same", "c2:better", "c3:worse"}; !slices.Equal(rows, want) {
			t.Errorf("rows = %q, want %q (moa:3 was scored in one run only, so conductor is compared)", rows, want)
		}
		rec = get(t, h, u.compareSuiteRuns("sr-old", newer.SuiteRunID, "conductor", true))
		rows = nil
		for _, r := range byTestID(parseHTML(t, rec.Body.String()), "case-row") {
			rows = append(rows, attr(r, "data-case-id"))
		}
		if want := []string{"c2", "c3"}; !slices.Equal(rows, want) {
			t.Errorf("changed only = %q, want %q", rows, want)
		}
	})
	t.Run("the suite run page links to the previous run's comparison and every case's traces", func(t *testing.T) {
		doc := parseHTML(t, get(t, h, u.suiteRun(newer.SuiteRunID)).Body.String())
		if n := len(byTestID(doc, "case-trace-link")); n != 4 {
			t.Errorf("case trace links = %d, want 4 (three conductor cases, one moa:3)", n)
		}
		links := byTestID(doc, "compare-previous-link")
		if len(links) != 1 || attr(links[0], "href") != u.compareSuiteRuns("sr-old", newer.SuiteRunID, "", false) {
			t.Errorf("compare links = %d", len(links))
		}
	})
	t.Run("runs side by side, linked from the trace", func(t *testing.T) {
		doc := parseHTML(t, get(t, h, u.trace(tr.Request.RequestID)).Body.String())
		links := byTestID(doc, "compare-link")
		if len(links) != 2 {
			t.Fatalf("compare links = %d, want one per candidate", len(links))
		}
		rec := get(t, h, attr(links[0], "href"))
		mustStatus(t, rec, http.StatusOK)
		doc = parseHTML(t, rec.Body.String())
		if n := len(byTestID(doc, "plan-diff-row")); n != 3 {
			t.Errorf("plan diff rows = %d, want 3 (the incumbent has no plan)", n)
		}
	})
	for _, tt := range []struct {
		target string
		want   int
	}{
		{"/compare/runs?a=run-inc-1", http.StatusBadRequest},
		{"/compare/runs?a=run-inc-1&b=nope", http.StatusNotFound},
		{u.compareSuiteRuns("sr-old", "nope", "", false), http.StatusNotFound},
		{u.compareSuiteRuns("sr-old", newer.SuiteRunID, "moa:3", false), http.StatusBadRequest},
	} {
		mustStatus(t, get(t, h, tt.target), tt.want)
	}
	t.Run("the HTML report is served sandboxed", func(t *testing.T) {
		mustStatus(t, get(t, h, u.suiteRun(newer.SuiteRunID)+"/report.html"), http.StatusNotFound) // none stored
		withHTML := newer
		withHTML.ReportHTML = "<html><body>report</body></html>"
		if err := st.InsertSuiteRuns(ctx, []store.SuiteRun{withHTML}); err != nil {
			t.Fatal(err)
		}
		rec := get(t, h, u.suiteRun(newer.SuiteRunID)+"/report.html")
		mustStatus(t, rec, http.StatusOK)
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox;") || strings.Contains(csp, "script") {
			t.Errorf("CSP = %q, want a sandbox without scripts", csp)
		}
		doc := parseHTML(t, get(t, h, u.suiteRun(newer.SuiteRunID)).Body.String())
		if len(byTestID(doc, "report-html-link")) != 1 {
			t.Error("the suite run page does not link the HTML report")
		}
	})
	mustUnsupported(t, get(t, newTestServer(t, basicStore{st}, NewDefaultConfig()), "/compare/runs?a=x&b=y"), "store.RunComparer")
}

func TestSuiteCases(t *testing.T) {
	run := fixtureSuiteRun() // incumbent:gpt-5; candidates conductor, moa:3
	scores := append(suiteScores(run.SuiteRunID, "conductor", map[string][]float64{"c2": {1, 0}, "c1": {1}}),
		suiteScores(run.SuiteRunID, "incumbent:gpt-5", map[string][]float64{"c1": {0}})...)
	scores = append(scores, suiteScores(run.SuiteRunID, "judge-only", map[string][]float64{"c3": {1}})...)
	pipes, rows := suiteCases(run, scores)
	if want := []string{"incumbent:gpt-5", "conductor", "moa:3", "judge-only"}; !slices.Equal(pipes, want) {
		t.Errorf("pipelines = %q, want %q", pipes, want)
	}
	var got []string
	for _, r := range rows {
		for i, c := range r.Cells {
			if c.Present {
				got = append(got, r.CaseID+"/"+pipes[i]+"/"+fmtScore(c.Value)+"/"+c.RequestID)
			}
		}
	}
	want := []string{"c1/incumbent:gpt-5/0.000/req-" + run.SuiteRunID + "-c1", "c1/conductor/1.000/req-" + run.SuiteRunID + "-c1",
		"c2/conductor/0.500/req-" + run.SuiteRunID + "-c2", "c3/judge-only/1.000/req-" + run.SuiteRunID + "-c3"}
	if !slices.Equal(got, want) {
		t.Errorf("cells = %q, want %q", got, want)
	}
}
