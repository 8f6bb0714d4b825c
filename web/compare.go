package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Outcomes of a case in a suite-run comparison.
const (
	outcomeBetter  = "better"  // B scored higher than A
	outcomeWorse   = "worse"   // B scored lower than A
	outcomeSame    = "same"    // equal scores
	outcomeMissing = "missing" // one side has no score for the case
)

// planDiffRow compares plan position Index in two runs' workflows.
type planDiffRow struct {
	Index            int
	WorkerA, WorkerB string // "" when that plan has no such step
	AccessA, AccessB string
	SubtaskA         string
	SubtaskB         string
	WorkerChanged    bool
	AccessChanged    bool // the topology changed at this step
}

// runCompareView is the page comparing two runs.
type runCompareView struct {
	Meta           pageMeta
	A, B           store.Run
	StepsA, StepsB int
	Diff           []diffOp
	Inserted       int
	Deleted        int
	Plan           []planDiffRow
	WorkersAdded   []string // workers in B's plan and not in A's
	WorkersRemoved []string // workers in A's plan and not in B's
	Changed        int      // plan rows with any change
}

// newRunCompare compares run a with run b (answers, plans, workers).
func newRunCompare(meta pageMeta, a, b store.Run, stepsA, stepsB []store.Step) runCompareView {
	v := runCompareView{Meta: meta, A: a, B: b, StepsA: len(stepsA), StepsB: len(stepsB)}
	v.Diff, v.Inserted, v.Deleted = diffAnswers(a.FinalOutput, b.FinalOutput)
	pa, _ := parsePlan(a.Plan)
	pb, _ := parsePlan(b.Plan)
	for i := range max(len(pa), len(pb)) {
		r := planDiffRow{Index: i}
		if i < len(pa) {
			r.WorkerA, r.AccessA, r.SubtaskA = pa[i].Worker, pa[i].Access, pa[i].Subtask
		}
		if i < len(pb) {
			r.WorkerB, r.AccessB, r.SubtaskB = pb[i].Worker, pb[i].Access, pb[i].Subtask
		}
		r.WorkerChanged, r.AccessChanged = r.WorkerA != r.WorkerB, r.AccessA != r.AccessB
		if r.WorkerChanged || r.AccessChanged {
			v.Changed++
		}
		v.Plan = append(v.Plan, r)
	}
	workers := func(p []planStep) []string {
		var out []string
		for _, s := range p {
			if !slices.Contains(out, s.Worker) {
				out = append(out, s.Worker)
			}
		}
		slices.Sort(out)
		return out
	}
	wa, wb := workers(pa), workers(pb)
	for _, w := range wb {
		if !slices.Contains(wa, w) {
			v.WorkersAdded = append(v.WorkersAdded, w)
		}
	}
	for _, w := range wa {
		if !slices.Contains(wb, w) {
			v.WorkersRemoved = append(v.WorkersRemoved, w)
		}
	}
	return v
}

// caseCompare is one case of a suite-run comparison: the mean grader value of
// the pipeline's runs on it in A and in B (0..1), -1 when absent.
type caseCompare struct {
	CaseID   string
	A, B     float64
	Outcome  string
	RequestA string // the trace of A's run on the case, "" when absent
	RequestB string
	PassedA  bool
	PassedB  bool
}

// suiteCompareView is the page comparing two suite runs for one pipeline.
type suiteCompareView struct {
	Meta        pageMeta
	A, B        store.SuiteRun
	Pipeline    string   // the pipeline compared
	Pipelines   []string // the choices (pipelines scored in both runs)
	ChangedOnly bool
	Rows        []caseCompare
	Counts      map[string]int // outcome → cases (before the changed-only filter)
	AllURL      string
	ChangedURL  string
}

// compareSuiteScores pairs two suite runs' scores of pipeline by case.
func compareSuiteScores(a, b []store.Score, pipeline string) []caseCompare {
	type agg struct {
		sum     float64
		n       int
		passed  bool
		request string
	}
	collect := func(scores []store.Score) map[string]*agg {
		out := map[string]*agg{}
		for _, s := range scores {
			if s.Pipeline != pipeline || s.Error != "" {
				continue
			}
			g := out[s.CaseID]
			if g == nil {
				g = &agg{passed: true, request: s.RequestID}
				out[s.CaseID] = g
			}
			g.sum += s.Value
			g.n++
			g.passed = g.passed && s.Passed
		}
		return out
	}
	ga, gb := collect(a), collect(b)
	var ids []string
	for id := range ga {
		ids = append(ids, id)
	}
	for id := range gb {
		if _, ok := ga[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []caseCompare
	for _, id := range ids {
		c := caseCompare{CaseID: id, A: -1, B: -1}
		if g := ga[id]; g != nil {
			c.A, c.PassedA, c.RequestA = g.sum/float64(g.n), g.passed, g.request
		}
		if g := gb[id]; g != nil {
			c.B, c.PassedB, c.RequestB = g.sum/float64(g.n), g.passed, g.request
		}
		switch {
		case c.A < 0 || c.B < 0:
			c.Outcome = outcomeMissing
		case c.B > c.A:
			c.Outcome = outcomeBetter
		case c.B < c.A:
			c.Outcome = outcomeWorse
		default:
			c.Outcome = outcomeSame
		}
		out = append(out, c)
	}
	return out
}

func (u urls) compareRuns(a, b string) string {
	return u.base + "/compare/runs?" + url.Values{"a": {a}, "b": {b}}.Encode()
}

func (u urls) compareSuiteRuns(a, b, pipeline string, changedOnly bool) string {
	v := url.Values{"a": {a}, "b": {b}}
	if pipeline != "" {
		v.Set("pipeline", pipeline)
	}
	if changedOnly {
		v.Set("changed", "1")
	}
	return u.base + "/compare/suite-runs?" + v.Encode()
}

// compareRuns serves GET /compare/runs?a=RUN&b=RUN.
func (s *server) compareRuns(c *gin.Context) {
	a, b := strings.TrimSpace(c.Query("a")), strings.TrimSpace(c.Query("b"))
	if a == "" || b == "" {
		s.fail(c, http.StatusBadRequest, "Give two run ids: a and b.", nil)
		return
	}
	cs := s.read.Runs
	runA, stepsA, err := cs.GetRun(c.Request.Context(), a)
	if err != nil {
		s.storeFailed(c, "run", a, err)
		return
	}
	runB, stepsB, err := cs.GetRun(c.Request.Context(), b)
	if err != nil {
		s.storeFailed(c, "run", b, err)
		return
	}
	s.render(c, http.StatusOK, runComparePage(newRunCompare(s.meta("Compare runs", navTraces), runA, runB, stepsA, stepsB)))
}

// compareSuiteRuns serves GET /compare/suite-runs?a=SR&b=SR[&pipeline=P][&changed=1].
func (s *server) compareSuiteRuns(c *gin.Context) {
	a, b := strings.TrimSpace(c.Query("a")), strings.TrimSpace(c.Query("b"))
	if a == "" || b == "" {
		s.fail(c, http.StatusBadRequest, "Give two suite run ids: a and b.", nil)
		return
	}
	changedOnly := c.Query("changed") == "1"
	cs, sr := s.read.Runs, s.read.Suites
	ctx := c.Request.Context()
	var runs [2]store.SuiteRun
	var scores [2][]store.Score
	for i, id := range []string{a, b} {
		var err error
		if runs[i], err = sr.GetSuiteRun(ctx, id); err != nil {
			s.storeFailed(c, "suite run", id, err)
			return
		}
		if scores[i], err = cs.ListScores(ctx, id); err != nil {
			s.storeFailed(c, "suite run scores", id, err)
			return
		}
	}
	v := suiteCompareView{Meta: s.meta("Compare suite runs", navSuiteRuns), A: runs[0], B: runs[1], ChangedOnly: changedOnly,
		Counts: map[string]int{}}
	inA := map[string]bool{}
	for _, sc := range scores[0] {
		inA[sc.Pipeline] = true
	}
	for _, sc := range scores[1] {
		if inA[sc.Pipeline] && !slices.Contains(v.Pipelines, sc.Pipeline) {
			v.Pipelines = append(v.Pipelines, sc.Pipeline)
		}
	}
	slices.Sort(v.Pipelines)
	v.Pipeline = strings.TrimSpace(c.Query("pipeline"))
	if v.Pipeline == "" && len(v.Pipelines) > 0 {
		v.Pipeline = v.Pipelines[0]
		for _, cand := range runs[1].Candidates {
			if slices.Contains(v.Pipelines, cand) {
				v.Pipeline = cand
				break
			}
		}
	}
	if v.Pipeline != "" && !slices.Contains(v.Pipelines, v.Pipeline) {
		s.fail(c, http.StatusBadRequest, fmt.Sprintf("Pipeline %q was not scored in both suite runs.", v.Pipeline), nil)
		return
	}
	for _, r := range compareSuiteScores(scores[0], scores[1], v.Pipeline) {
		v.Counts[r.Outcome]++
		if !changedOnly || r.Outcome != outcomeSame {
			v.Rows = append(v.Rows, r)
		}
	}
	v.AllURL = s.urls().compareSuiteRuns(a, b, v.Pipeline, false)
	v.ChangedURL = s.urls().compareSuiteRuns(a, b, v.Pipeline, true)
	s.render(c, http.StatusOK, suiteComparePage(v))
}

// previousSuiteRun returns the newest finished suite run of the same set started
// before run, for the "compare with previous" link; ok is false when none.
func previousSuiteRun(runs []store.SuiteRun, run store.SuiteRun) (store.SuiteRun, bool) {
	var best store.SuiteRun
	found := false
	for _, r := range runs {
		if r.SuiteRunID == run.SuiteRunID || r.SetName != run.SetName || !r.StartedAt.Before(run.StartedAt) {
			continue
		}
		if !found || r.StartedAt.After(best.StartedAt) {
			best, found = r, true
		}
	}
	return best, found
}

// fmtCaseScore renders a case's mean value, "—" when absent.
func fmtCaseScore(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmtScore(v)
}

// outcomeClass maps an outcome to a status CSS class.
func outcomeClass(o string) string {
	return cmp.Or(map[string]string{
		outcomeBetter: statusClass(store.StatusOK),
		outcomeWorse:  statusClass(store.StatusError),
	}[o], statusClass(store.StatusSkipped))
}

// joinComma joins names with ", ".
func joinComma(names []string) string { return strings.Join(names, ", ") }

// suiteCaseCell is one pipeline's outcome on one case of a suite run.
type suiteCaseCell struct {
	Present   bool
	Value     float64 // mean over graders that did not fail, 0..1
	Passed    bool    // every such grader passed
	RequestID string  // the trace of the run on the case
}

// suiteCaseRow is one case of a suite run with every pipeline's outcome.
type suiteCaseRow struct {
	CaseID string
	Cells  []suiteCaseCell // in the order of suiteRunView.CasePipelines
}

// suiteCases lays out a suite run's scores as one row per case and one column per
// pipeline (the incumbent, then the candidates, then any other scored pipeline).
func suiteCases(run store.SuiteRun, scores []store.Score) (pipelines []string, rows []suiteCaseRow) {
	pipelines = append([]string{run.Incumbent}, run.Candidates...)
	for _, s := range scores {
		if !slices.Contains(pipelines, s.Pipeline) {
			pipelines = append(pipelines, s.Pipeline)
		}
	}
	for _, p := range pipelines {
		for _, c := range compareSuiteScores(nil, scores, p) {
			i := slices.IndexFunc(rows, func(r suiteCaseRow) bool { return r.CaseID == c.CaseID })
			if i < 0 {
				rows = append(rows, suiteCaseRow{CaseID: c.CaseID, Cells: make([]suiteCaseCell, len(pipelines))})
				i = len(rows) - 1
			}
			rows[i].Cells[slices.Index(pipelines, p)] = suiteCaseCell{Present: true, Value: c.B, Passed: c.PassedB, RequestID: c.RequestB}
		}
	}
	slices.SortFunc(rows, func(a, b suiteCaseRow) int { return strings.Compare(a.CaseID, b.CaseID) })
	return pipelines, rows
}
