package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// answer is a fake pipeline's canned run on one case.
type answer struct {
	output    string
	latencyMs float64
	costUSD   float64
	tokensIn  int64
	tokensOut int64
	calls     int32
	status    string // default ok
}

// fakePipeline answers each case (by the case id after the "/" of the request
// id) with a canned answer and records one step per call.
type fakePipeline struct {
	name      string
	simulated bool
	answers   map[string]answer
	truncated map[string]bool // cases whose final answer is cut at the token cap
	errMsg    string          // a failed run's error; default "worker timeout"
	calls     atomic.Int64
}

func (p *fakePipeline) Name() string    { return p.name }
func (p *fakePipeline) Version() string { return "v1" }

func (p *fakePipeline) Run(_ context.Context, req shadow.Request, mode string) shadow.Result {
	p.calls.Add(1)
	caseID := req.RequestID[strings.Index(req.RequestID, "/")+1:]
	a, ok := p.answers[caseID]
	if !ok {
		a = answer{status: store.StatusError}
	}
	status := a.status
	if status == "" {
		status = store.StatusOK
	}
	run := store.Run{
		RunID: req.RequestID + "#" + p.name, RequestID: req.RequestID, SuiteRunID: req.SuiteRunID,
		Pipeline: p.name, PipelineVersion: "v1", Mode: mode, StartedAt: time.Unix(1700000000, 0).UTC(),
		LatencyMs: a.latencyMs, Status: status, FinalOutput: a.output, TokensIn: a.tokensIn,
		TokensOut: a.tokensOut, CostUSD: a.costUSD, Calls: a.calls, Simulated: p.simulated,
	}
	if status != store.StatusOK {
		run.Error = "worker timeout"
		if p.errMsg != "" {
			run.Error = p.errMsg
		}
	}
	var steps []store.Step
	for i := range a.calls {
		steps = append(steps, store.Step{RunID: run.RunID, Index: i, Parent: -1, Role: "worker", Status: store.StatusOK})
	}
	if p.truncated[caseID] {
		run.Truncated, run.TruncatedSteps = true, 1
		steps[len(steps)-1].FinishReason = store.FinishLength
	}
	return shadow.Result{Run: run, Steps: steps}
}

// The fixed figures of report-mini.jsonl (gsm8k-test-0..2: 18, 3, 70000;
// mmlu-abstract_algebra-20: A, -37: B).
func reportPipelines() (*fakePipeline, *fakePipeline) {
	inc := &fakePipeline{name: "single:gpt-5", answers: map[string]answer{
		"gsm8k-test-0":             {`The final answer is \boxed{18}`, 1000, 0.002, 100, 50, 1, ""},
		"gsm8k-test-1":             {"3", 2000, 0.001, 100, 60, 1, ""},
		"gsm8k-test-2":             {"7000", 3000, 0.003, 100, 70, 1, ""},      // wrong
		"mmlu-abstract_algebra-20": {"Answer: B", 500, 0.0005, 100, 80, 1, ""}, // wrong
		"mmlu-abstract_algebra-37": {"B", 4000, 0.0015, 100, 90, 1, ""},
	}}
	cand := &fakePipeline{name: "conductor", simulated: true, answers: map[string]answer{
		"gsm8k-test-0":             {`\boxed{18}`, 3000, 0.004, 300, 100, 3, ""},
		"gsm8k-test-1":             {"", 9000, 0.001, 200, 0, 2, store.StatusError}, // failed run
		"gsm8k-test-2":             {"$70,000", 5000, 0.006, 300, 200, 3, ""},
		"mmlu-abstract_algebra-20": {"**A**", 1500, 0.002, 100, 20, 1, ""},
		"mmlu-abstract_algebra-37": {"(B)", 2500, 0.003, 200, 30, 2, ""},
	}}
	return inc, cand
}

// quarter is a max_run_error_share that lets reportPipelines' one failed
// candidate run of 5 through.
var quarter = 0.25

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestRunSuiteReport(t *testing.T) {
	ctx := context.Background()
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, cand := reportPipelines()
	var progress bytes.Buffer
	// The candidate's one failed run of 5 (20%) stays within the policy's
	// run-error share, so the figures make the headline and a verdict is drawn.
	pol := gate.NewDefaultPolicy()
	pol.MaxRunErrorShare = &quarter
	rep, err := RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand}, SuiteOptions{
		SuiteRunID: "suite-test", Concurrency: 3, Progress: &progress, Policy: &pol,
	})
	if err != nil {
		t.Fatal(err)
	}

	wantHeadline := "report-mini (5 cases, SIMULATED workers): conductor 80.0% vs single:gpt-5 60.0% accuracy; " +
		"cost/request $0.0032 vs $0.0016 (2.00×); p95 9.0 s vs 4.0 s"
	if rep.Headline != wantHeadline {
		t.Errorf("headline\n got %s\nwant %s", rep.Headline, wantHeadline)
	}
	if !rep.Simulated || rep.Cases != 5 || len(rep.Pipelines) != 2 || len(rep.Outcomes) != 10 {
		t.Fatalf("report: simulated=%v cases=%d pipelines=%d outcomes=%d", rep.Simulated, rep.Cases, len(rep.Pipelines), len(rep.Outcomes))
	}

	// Hand-computed figures. Latency percentiles are nearest-rank.
	type figures struct {
		n, passed, errs             int
		acc, costReq, costTot       float64
		p50, p95, tin, tout, ncalls float64
		simulated                   bool
	}
	check := func(label string, s Stats, w figures) {
		t.Helper()
		if s.N != w.n || s.Passed != w.passed || s.Errors != w.errs || s.Graded != w.n || s.GraderErrors != 0 ||
			!near(s.Accuracy, w.acc) || !near(s.CostPerRequestUSD, w.costReq) || !near(s.TotalCostUSD, w.costTot) ||
			s.P50LatencyMs != w.p50 || s.P95LatencyMs != w.p95 || !near(s.MeanTokensIn, w.tin) ||
			!near(s.MeanTokensOut, w.tout) || !near(s.MeanCalls, w.ncalls) || s.Simulated != w.simulated {
			t.Errorf("%s: got %+v\nwant %+v", label, s, w)
		}
	}
	pi, pc := rep.Pipelines[0], rep.Pipelines[1]
	if pi.Pipeline != "single:gpt-5" || pi.Mode != store.ModeIncumbent || pc.Pipeline != "conductor" || pc.Mode != store.ModeCandidate {
		t.Fatalf("pipeline order/modes: %s/%s, %s/%s", pi.Pipeline, pi.Mode, pc.Pipeline, pc.Mode)
	}
	// incumbent latencies 500,1000,2000,3000,4000: p50 rank ceil(2.5)=3, p95 rank ceil(4.75)=5.
	check("incumbent", pi.Overall, figures{5, 3, 0, 0.6, 0.0016, 0.008, 2000, 4000, 100, 70, 1, false})
	// candidate latencies 1500,2500,3000,5000,9000.
	check("candidate", pc.Overall, figures{5, 4, 1, 0.8, 0.0032, 0.016, 3000, 9000, 220, 70, 2.2, true})
	if len(pi.Categories) != 2 || pi.Categories[0].Category != "math_word_problem" || pi.Categories[1].Category != "mmlu" {
		t.Fatalf("incumbent categories %+v", pi.Categories)
	}
	check("incumbent/math", pi.Categories[0].Stats, figures{3, 2, 0, 2.0 / 3, 0.002, 0.006, 2000, 3000, 100, 60, 1, false})
	check("incumbent/mmlu", pi.Categories[1].Stats, figures{2, 1, 0, 0.5, 0.001, 0.002, 500, 4000, 100, 85, 1, false})
	check("candidate/math", pc.Categories[0].Stats, figures{3, 2, 1, 2.0 / 3, 0.011 / 3, 0.011, 5000, 9000, 800.0 / 3, 100, 8.0 / 3, true})
	check("candidate/mmlu", pc.Categories[1].Stats, figures{2, 2, 0, 1, 0.0025, 0.005, 1500, 2500, 150, 25, 1.5, true})

	// What was stored.
	counts := storetest.MustCountRows(t, st)
	if counts != (storetest.Counts{Requests: 5, Runs: 10, Steps: 16, Scores: 10, SuiteRuns: 1, Cases: 5}) {
		t.Errorf("stored %+v", counts)
	}
	sr, err := st.GetSuiteRun(ctx, "suite-test")
	if err != nil {
		t.Fatal(err)
	}
	if sr.Status != SuiteStatusDone || sr.Headline != wantHeadline || sr.ReportMarkdown != rep.Markdown() ||
		sr.SetVersion != set.Version || sr.Incumbent != "single:gpt-5" || len(sr.Candidates) != 1 || sr.Cases != 5 {
		t.Errorf("suite run row %+v", sr)
	}
	var fromRow Report
	if err := json.Unmarshal([]byte(sr.ReportJSON), &fromRow); err != nil || fromRow.Headline != wantHeadline {
		t.Errorf("report json in row: %v %q", err, fromRow.Headline)
	}
	tr, err := st.GetTrace(ctx, "suite-test/mmlu-abstract_algebra-20")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Request.Source != store.SourceSuite || tr.Request.Category != "mmlu" || !strings.Contains(tr.Request.Input, "Answer with the letter.") {
		t.Errorf("request %+v", tr.Request)
	}
	if len(tr.Runs) != 2 || tr.Runs[0].Mode != store.ModeIncumbent || tr.Runs[0].SuiteRunID != "suite-test" {
		t.Errorf("runs %+v", tr.Runs)
	}
	passed := map[string]bool{}
	for _, s := range tr.Scores {
		if s.Grader != GraderChoice || s.CaseID != "mmlu-abstract_algebra-20" || s.SuiteRunID != "suite-test" {
			t.Errorf("score %+v", s)
		}
		passed[s.Pipeline] = s.Passed
	}
	if passed["single:gpt-5"] || !passed["conductor"] {
		t.Errorf("scores passed %v", passed)
	}

	// Five cases: every case crosses a new 10% step.
	if lines := strings.Count(progress.String(), "\n"); lines != 5 || !strings.Contains(progress.String(), "5/5 cases (100%)") {
		t.Errorf("progress:\n%s", progress.String())
	}

	// Golden Markdown with fixed times.
	rep.StartedAt = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	rep.FinishedAt = rep.StartedAt.Add(42 * time.Second)
	if rep.Live == nil {
		t.Fatal("the report has no live section, though the store reads live verdicts")
	}
	rep.Live.AsOf = rep.FinishedAt // the live look is at the run's finish
	checkGolden(t, "testdata/report.golden.md", []byte(rep.Markdown()))

	dir := t.TempDir()
	md, js, err := WriteReport(filepath.Join(dir, "reports"), rep)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(md) != "suite-test.md" || filepath.Base(js) != "suite-test.json" {
		t.Errorf("paths %s %s", md, js)
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"suite_run_id": "suite-test"`, `"cost_per_request_usd"`, `"p95_latency_ms": 9000`, `"grader_errors"`, `"set_version"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("report JSON lacks %s", key)
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", path, got)
	}
}

// failingGrader fails to judge one case.
type failingGrader struct {
	Grader
	caseID string
}

func (g failingGrader) Grade(ctx context.Context, c Case, out string) Grade {
	if c.ID == g.caseID {
		return gradeErr("judge unavailable")
	}
	return g.Grader.Grade(ctx, c, out)
}

func TestRunSuiteGraderError(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, _ := reportPipelines()
	rep, err := RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(st)), set, inc, nil, SuiteOptions{
		SuiteRunID: "suite-ge",
		Graders: func(name string) (Grader, error) {
			g, err := GraderFor(name)
			return failingGrader{Grader: g, caseID: "gsm8k-test-0"}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Pipelines[0].Overall
	// gsm8k-test-0 (a pass) is not judged: 2 passed of 4 graded.
	if s.GraderErrors != 1 || s.Graded != 4 || s.Passed != 2 || !near(s.Accuracy, 0.5) {
		t.Errorf("stats %+v", s)
	}
	if !strings.Contains(rep.Headline, "1 grader errors") || strings.Contains(rep.Headline, "SIMULATED") {
		t.Errorf("headline %q", rep.Headline)
	}
	tr, err := st.GetTrace(context.Background(), "suite-ge/gsm8k-test-0")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Scores) != 1 || !strings.Contains(tr.Scores[0].Error, "judge unavailable") || tr.Scores[0].Passed {
		t.Errorf("scores %+v", tr.Scores)
	}
}

// blockingPipeline waits for cancellation.
type blockingPipeline struct{ started chan struct{} }

func (p *blockingPipeline) Name() string    { return "slow" }
func (p *blockingPipeline) Version() string { return "v1" }
func (p *blockingPipeline) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	select {
	case p.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return shadow.Result{Run: store.Run{RunID: req.RequestID, Status: store.StatusError, Error: ctx.Err().Error()}}
}

func TestRunSuiteCancel(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	p := &blockingPipeline{started: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-p.started; cancel() }()
	_, err = RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, p, nil, SuiteOptions{SuiteRunID: "suite-cancel", Concurrency: 2})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	sr, err := st.GetSuiteRun(context.Background(), "suite-cancel")
	if err != nil {
		t.Fatal(err)
	}
	if sr.Status != SuiteStatusCancelled || !strings.Contains(sr.Headline, "canceled") {
		t.Errorf("suite run %+v", sr)
	}
	if c := storetest.MustCountRows(t, st); c.Runs != 0 || c.Scores != 0 {
		t.Errorf("cancelled cases stored: %+v", c)
	}
}

// stallingPipeline answers the first cases it is given and waits for
// cancellation on the others.
type stallingPipeline struct {
	answer  *fakePipeline
	answers int // cases answered before stalling
	n       atomic.Int64
	stalled chan struct{}
	once    sync.Once // several cases can stall at once (the runner runs cases in parallel)
}

func (p *stallingPipeline) Name() string    { return p.answer.Name() }
func (p *stallingPipeline) Version() string { return p.answer.Version() }
func (p *stallingPipeline) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	if p.n.Add(1) <= int64(p.answers) {
		return p.answer.Run(ctx, req, mode)
	}
	p.once.Do(func() { close(p.stalled) })
	<-ctx.Done()
	return shadow.Result{Run: store.Run{RunID: req.RequestID, Status: store.StatusError, Error: ctx.Err().Error()}}
}

// Cases finished before a stop are stored (they wait in the write buffer
// until then); the cancelled case is not.
func TestRunSuiteCancelStoresFinishedCases(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, _ := reportPipelines()
	p := &stallingPipeline{answer: inc, answers: 2, stalled: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-p.stalled; cancel() }()
	_, err = RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, p, nil, SuiteOptions{SuiteRunID: "suite-stop", Concurrency: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if c := storetest.MustCountRows(t, st); c.Requests != 2 || c.Runs != 2 || c.Scores != 2 || c.Cases != 5 || c.SuiteRuns != 1 {
		t.Errorf("stored %+v, want the 2 finished cases' request, run and score", c)
	}
	for _, id := range []string{"gsm8k-test-0", "gsm8k-test-1"} {
		if tr, err := st.GetTrace(context.Background(), "suite-stop/"+id); err != nil || len(tr.Runs) != 1 || len(tr.Scores) != 1 {
			t.Errorf("finished case %s: %v %+v", id, err, tr)
		}
	}
	sr, err := st.GetSuiteRun(context.Background(), "suite-stop")
	if err != nil || sr.Status != SuiteStatusCancelled || !strings.HasPrefix(sr.Headline, "cancelled after 2 of 5 cases") {
		t.Errorf("suite run %+v: %v", sr, err)
	}
}

// suiteStore is the roles of the engine's store the suite runner takes.
type suiteStore interface {
	store.Store
	store.EvalHistory
	store.OverviewReader
}

// failingStore is the engine's store whose InsertRuns fails.
type failingStore struct{ suiteStore }

func (failingStore) InsertRuns(context.Context, []store.Run) error { return errors.New("disk full") }

func TestRunSuiteStoreError(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, cand := reportPipelines()
	_, err = RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(failingStore{st.(suiteStore)})), set, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: "suite-fail"})
	if err == nil || !strings.Contains(err.Error(), "insert runs: disk full") {
		t.Fatalf("err %v", err)
	}
	sr, err := st.GetSuiteRun(context.Background(), "suite-fail")
	if err != nil {
		t.Fatal(err)
	}
	if sr.Status != SuiteStatusError || !strings.Contains(sr.Headline, "disk full") {
		t.Errorf("suite run %+v", sr)
	}
}

func TestRunSuiteLimitAndDefaults(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, cand := reportPipelines()
	rep, err := RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand}, SuiteOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.SuiteRunID, "suite-") || rep.Cases != 2 {
		t.Errorf("id %q cases %d", rep.SuiteRunID, rep.Cases)
	}
	if got := inc.calls.Load(); got != 2 {
		t.Errorf("incumbent ran %d times, want 2", got)
	}
	if c := storetest.MustCountRows(t, st); c.Requests != 2 || c.Cases != 2 || c.Scores != 4 {
		t.Errorf("stored %+v", c)
	}
}

func TestRunSuiteBadArguments(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	inc, cand := reportPipelines()
	dup := &fakePipeline{name: inc.name}
	tests := []struct {
		name  string
		set   *Set
		cands []shadow.Pipeline
		opts  SuiteOptions
		want  string
	}{
		{"nil set", nil, nil, SuiteOptions{}, "empty regression set"},
		{"duplicate name", set, []shadow.Pipeline{cand, dup}, SuiteOptions{}, `"single:gpt-5" used twice`},
		{"nil candidate", set, []shadow.Pipeline{nil}, SuiteOptions{}, "candidate 0 is nil"},
		{"negative limit", set, nil, SuiteOptions{Limit: -1}, "limit must be >= 0"},
		{"unknown grader", set, nil, SuiteOptions{Graders: func(n string) (Grader, error) { return nil, fmt.Errorf("no grader %s", n) }}, "no grader numeric"},
		{"invalid policy", set, nil, SuiteOptions{Policy: &gate.Policy{Confidence: 0.95, Quality: &gate.QualityGate{}}}, "version is required"},
	}
	// Every row is refused before anything is stored, so they share one store
	// that must stay empty.
	st := engine.Open(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(st)), tt.set, inc, tt.cands, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if c := storetest.MustCountRows(t, st); c != (storetest.Counts{}) {
				t.Errorf("wrote before validating: %+v", c)
			}
		})
	}
}

func TestNearestRank(t *testing.T) {
	v := []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	for _, tt := range []struct{ p, want float64 }{{50, 50}, {95, 100}, {90, 90}, {10, 10}, {1, 10}, {100, 100}} {
		if got := NearestRank(v, tt.p); got != tt.want {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	if NearestRank(nil, 50) != 0 {
		t.Error("empty")
	}
}

// A truncated run whose cut answer still grades right counts as the gate
// policy's truncation rule says: failed (default), excluded from accuracy, or
// as graded; every rule counts it in Stats.Truncated and the headline.
func TestRunSuiteTruncationRule(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	for _, tt := range []struct {
		rule                 string
		passed, graded, excl int
		explain              string
	}{
		{"", 3, 5, 0, "counts as failed (truncation: fail)"},
		{gate.TruncationFail, 3, 5, 0, "counts as failed"},
		{gate.TruncationExclude, 3, 4, 1, "excluded from accuracy"},
		{gate.TruncationIgnore, 4, 5, 0, "graded as is"},
	} {
		t.Run("rule="+tt.rule, func(t *testing.T) {
			inc, cand := reportPipelines()
			cand.truncated = map[string]bool{"gsm8k-test-0": true} // \boxed{18}: right, but cut
			pol := gate.NewDefaultPolicy()
			pol.Truncation = tt.rule
			// A set and suite run of its own per rule: no row is another's previous run.
			rowSet := *set
			rowSet.Name += "-rule-" + tt.rule
			id := "suite-trunc-" + tt.rule
			rep, err := RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(st)), &rowSet, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: id, Policy: &pol})
			if err != nil {
				t.Fatal(err)
			}
			s := rep.Pipelines[1].Overall
			if s.Truncated != 1 || s.Passed != tt.passed || s.Graded != tt.graded || s.Excluded != tt.excl {
				t.Errorf("truncated %d passed %d graded %d excluded %d; want 1 %d %d %d", s.Truncated, s.Passed, s.Graded, s.Excluded, tt.passed, tt.graded, tt.excl)
			}
			if rep.Pipelines[0].Overall.Truncated != 0 {
				t.Errorf("incumbent counts %d truncated runs", rep.Pipelines[0].Overall.Truncated)
			}
			if !strings.Contains(rep.Headline, "1 truncated answers") || !strings.Contains(rep.Markdown(), "| truncated |") {
				t.Errorf("headline %q / markdown do not count the truncated run", rep.Headline)
			}
			scores, err := st.(store.EvalHistory).ListSuiteScores(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, sc := range scores {
				if sc.Pipeline == "conductor" && sc.CaseID == "gsm8k-test-0" {
					found = true
					if !strings.Contains(sc.Explanation, tt.explain) {
						t.Errorf("score explanation %q lacks %q", sc.Explanation, tt.explain)
					}
				}
			}
			if !found {
				t.Error("no stored score for the truncated run")
			}
		})
	}
	bad := gate.NewDefaultPolicy()
	bad.Truncation = "drop"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "truncation must be fail, exclude or ignore") {
		t.Errorf("truncation: drop accepted: %v", err)
	}
}

// basicStore has only the roles every store.Store has: no suite-run history,
// no overview.
type basicStore struct{ store.Store }

// A store without a role the suite run needs is refused before anything is
// stored, naming the role.
func TestRunSuiteNeedsItsRoles(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, cand := reportPipelines()
	_, err = RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(basicStore{st})), set, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: "suite-basic"})
	if !errors.Is(err, store.ErrNotSupported) || !strings.Contains(err.Error(), "store.EvalHistory") {
		t.Fatalf("err %v, want ErrNotSupported naming store.EvalHistory", err)
	}
	if c := storetest.MustCountRows(t, st); c != (storetest.Counts{}) {
		t.Errorf("stored %+v before refusing", c)
	}
}
