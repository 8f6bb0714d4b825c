package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

func TestPlanShape(t *testing.T) {
	for _, tc := range []struct{ name, plan, want string }{
		{"the paper's three steps", `{"steps":[{"worker":"qwen3-32b","subtask":"a","access":[]},{"worker":"gpt-5","subtask":"b","access":"all"},` +
			`{"worker":"claude-sonnet-4","subtask":"c","access":[1]}]}`, "qwen3-32b → gpt-5[all] → claude-sonnet-4[1]"},
		{"lists of several steps", `{"steps":[{"worker":"a","access":[]},{"worker":"b","access":[]},{"worker":"c","access":[0,1]}]}`, "a → b → c[0,1]"},
		{"a step named by model id only", `{"steps":[{"worker":"","model_id":3,"access":"all"}]}`, "model 3[all]"},
		{"one step", `{"steps":[{"worker":"gpt-5","subtask":"answer","access":[]}]}`, "gpt-5"},
		{"no plan", ``, ""},
		{"not JSON", `model_id = [1]`, ""},
		{"no steps key", `{"model_id":[1]}`, ""},
		{"empty steps", `{"steps":[]}`, ""},
	} {
		if got := PlanShape(tc.plan); got != tc.want {
			t.Errorf("%s: PlanShape = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPlanShapeSQLMatchesGo reads the shape the engine computed for stored
// plans (runs.plan_shape, migration 0260) and requires PlanShape's text.
func TestPlanShapeSQLMatchesGo(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	plans := []string{
		`{"steps":[{"worker":"qwen3-32b","subtask":"a","access":[]},{"worker":"gpt-5","subtask":"b","access":"all"},{"worker":"claude-sonnet-4","subtask":"c","access":[0,1]}]}`,
		`{"steps":[{"worker":"","model_id":2,"subtask":"a","access":[]},{"worker":"x \"quoted\" → y","subtask":"b","access":[0]}]}`,
		`{"steps":[{"worker":"gpt-5","subtask":"answer","access":[]}]}`,
		``, `not json`, `{"steps":[]}`, `{"other":1}`,
	}
	var runs []Run
	for i, p := range plans {
		runs = append(runs, Run{RunID: fmt.Sprintf("r%d", i), RequestID: "q", Pipeline: "conductor", Mode: ModeCandidate, Plan: p, Status: StatusOK})
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	type row struct {
		RunID string `json:"run_id"`
		Shape string `json:"shape"`
	}
	got, err := queryRows[row](ctx, s.t, fmt.Sprintf("SELECT run_id, plan_shape AS shape FROM %s.runs FINAL ORDER BY run_id", s.db))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(plans) {
		t.Fatalf("%d rows, want %d", len(got), len(plans))
	}
	for i, r := range got {
		if want := PlanShape(plans[i]); r.Shape != want {
			t.Errorf("plan %d %s: SQL shape %q, Go %q", i, plans[i], r.Shape, want)
		}
	}
}

func TestCriticalPath(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	st := func(i int32, startMs, lat float64) Step {
		return Step{RunID: "r", Index: i, StartedAt: t0.Add(time.Duration(startMs * float64(time.Millisecond))), LatencyMs: lat}
	}
	for _, tc := range []struct {
		name  string
		steps []Step
		want  []bool
		own   []float64
		wait  float64
	}{
		{"a chain", []Step{st(0, 0, 100), st(1, 100, 200), st(2, 300, 50)}, []bool{true, true, true}, []float64{100, 200, 50}, 0},
		{"two in parallel, the slower one blocks", []Step{st(0, 0, 100), st(1, 100, 300), st(2, 100, 100), st(3, 400, 50)},
			[]bool{true, true, false, true}, []float64{100, 300, 0, 50}, 0},
		{"a queue wait counts as waiting", []Step{st(0, 0, 100), st(1, 150, 100)}, []bool{true, true}, []float64{100, 100}, 50},
		{"a step starting within the slack of its blocker's end", []Step{st(0, 0, 100.4), st(1, 100, 50)}, []bool{true, true}, []float64{100.4, 49.6}, 0},
		{"a parent enclosing its nested steps is the path", []Step{st(0, 0, 1000), st(1, 100, 200), st(2, 300, 300)},
			[]bool{true, false, false}, []float64{1000, 0, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CriticalPath(tc.steps); !slices.Equal(got, tc.want) {
				t.Errorf("CriticalPath = %v, want %v", got, tc.want)
			}
			const lat = 2000
			own, wait, outside := LatencyParts(t0, lat, tc.steps)
			if !slices.EqualFunc(own, tc.own, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }) || math.Abs(wait-tc.wait) > 1e-9 {
				t.Errorf("own %v wait %v, want %v and %v", own, wait, tc.own, tc.wait)
			}
			var sum float64
			for _, o := range own {
				sum += o
			}
			if math.Abs(sum+wait+outside-lat) > 1e-9 {
				t.Errorf("parts %v + %v + %v do not sum to %v", sum, wait, outside, lat)
			}
		})
	}
}

// randomRuns writes n conductor runs with random step timelines (some
// parallel, some waiting, some nested) and returns them with their steps.
func randomRuns(rng *rand.Rand, n int, t0 time.Time) ([]Run, []Step) {
	var runs []Run
	var steps []Step
	for r := range n {
		start := t0.Add(time.Duration(r) * time.Minute)
		run := Run{RunID: fmt.Sprintf("run-%03d", r), RequestID: fmt.Sprintf("req-%03d", r), Pipeline: "conductor", Mode: ModeCandidate,
			StartedAt: start, Status: StatusOK}
		k := rng.IntN(7)
		at := float64(rng.IntN(20))
		var end float64
		for i := range k {
			if rng.IntN(3) == 0 && i > 0 {
				at -= float64(rng.IntN(300)) // runs beside the previous one
			}
			lat := float64(rng.IntN(800)) + float64(rng.IntN(10))/10
			if rng.IntN(9) == 0 {
				lat = 0
			}
			s := Step{RunID: run.RunID, Index: int32(i), Parent: -1, Role: "worker", Worker: []string{"a", "b", "c"}[rng.IntN(3)],
				StartedAt: start.Add(time.Duration(max(at, 0)) * time.Millisecond), LatencyMs: lat, CostUSD: float64(rng.IntN(1000)) / 1e6}
			steps = append(steps, s)
			at = max(at, 0) + lat + float64(rng.IntN(3)*rng.IntN(40))
			end = max(end, at)
		}
		run.LatencyMs = end + float64(rng.IntN(50))
		runs = append(runs, run)
	}
	return runs, steps
}

// TestCriticalPathSQLMatchesGo splits random runs' latency along the
// critical path in the engine (criticalPartsSQL, the plans page's) and in Go
// (LatencyParts, the trace page's) and requires the same parts.
func TestCriticalPathSQLMatchesGo(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 9))
	runs, steps := randomRuns(rng, 120, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSteps(ctx, steps); err != nil {
		t.Fatal(err)
	}
	type row struct {
		RunID   string   `json:"run_id"`
		Own     []string `json:"own"`
		Wait    float64  `json:"wait"`
		Outside float64  `json:"outside"`
	}
	got, err := queryRows[row](ctx, s.t, fmt.Sprintf(`SELECT run_id, arrayMap(x -> toString(x), lp.1) AS own, lp.2 AS wait, lp.3 AS outside FROM (
    SELECT c.run_id AS run_id, st.steps AS steps, %[2]s AS lp
    FROM (SELECT run_id, latency_ms, toUnixTimestamp64Milli(started_at) AS start_ms FROM %[1]s.runs FINAL) AS c
    LEFT JOIN (%[3]s) AS st ON c.run_id = st.run_id)
ORDER BY run_id`, s.db, criticalPartsSQL("steps", "toFloat64(c.start_ms - st.base)", "c.latency_ms"), stepTimelineSQL(s.db, "1", "worker")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(runs) {
		t.Fatalf("%d rows, want %d", len(got), len(runs))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for i, r := range got {
		var rs []Step
		for _, s := range steps {
			if s.RunID == runs[i].RunID {
				rs = append(rs, s)
			}
		}
		own, wait, outside := LatencyParts(runs[i].StartedAt, runs[i].LatencyMs, rs)
		sqlOwn := make([]float64, len(r.Own))
		for k, o := range r.Own {
			sqlOwn[k], _ = strconv.ParseFloat(o, 64)
		}
		if !slices.EqualFunc(sqlOwn, own, near) || !near(r.Wait, wait) || !near(r.Outside, outside) {
			t.Errorf("%s: SQL own %v wait %v outside %v; Go own %v wait %v outside %v (steps %+v)", r.RunID, r.Own, r.Wait, r.Outside, own, wait, outside, rs)
		}
	}
}

// planFixture is one conductor version's production runs beside the
// production incumbent's: on 7 of 50 requests the conductor plans gpt-5 (and
// pays for it), on the others two cheap steps; one request has no incumbent
// run; a suite run's pair is out of scope; a second version plans some of the
// same requests otherwise.
type planFixture struct {
	runs      []Run
	steps     []Step
	judgments []Judgment
	from, to  time.Time
}

const (
	shapeCheap = "qwen3-32b → qwen3-32b[0]"
	shapeGPT5  = "qwen3-32b → gpt-5[all] → claude-sonnet-4[1]"
)

func newPlanFixture() planFixture {
	t0 := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	f := planFixture{from: t0.Add(-time.Hour), to: t0.Add(72 * time.Hour)}
	cheap := `{"steps":[{"worker":"qwen3-32b","subtask":"a","access":[]},{"worker":"qwen3-32b","subtask":"b","access":[0]}]}`
	gpt5 := `{"steps":[{"worker":"qwen3-32b","subtask":"a","access":[]},{"worker":"gpt-5","subtask":"b","access":"all"},` +
		`{"worker":"claude-sonnet-4","subtask":"c","access":[1]}]}`
	for r := range 50 {
		req := fmt.Sprintf("req-%02d", r)
		at := t0.Add(time.Duration(r) * time.Hour)
		if r != 49 {
			f.runs = append(f.runs, Run{RunID: req + "/inc", RequestID: req, Pipeline: "incumbent:gpt-4-1106-preview", Mode: ModeIncumbent,
				StartedAt: at, LatencyMs: 1000, Status: StatusOK, FinalOutput: "answer 42", CostUSD: 0.002})
		}
		expensive := r%7 == 3 // 7 of 50
		cand := Run{RunID: req + "/v2", RequestID: req, Pipeline: "conductor", PipelineVersion: "v2", Mode: ModeCandidate,
			StartedAt: at, Status: StatusOK, FinalOutput: "answer 42", Plan: cheap}
		// The planning call, then the workflow.
		steps := []Step{{Index: 0, Role: "conductor", Worker: "conductor-7b", CostUSD: 0.0001, StartedAt: at, LatencyMs: 200}}
		if expensive {
			cand.Plan = gpt5
			steps = append(steps,
				Step{Index: 1, Role: "worker", Worker: "qwen3-32b", CostUSD: 0.0002, StartedAt: at.Add(200 * time.Millisecond), LatencyMs: 300},
				Step{Index: 2, Role: "worker", Worker: "gpt-5", CostUSD: 0.02, StartedAt: at.Add(500 * time.Millisecond), LatencyMs: 2500},
				Step{Index: 3, Role: "worker", Worker: "claude-sonnet-4", CostUSD: 0.004, StartedAt: at.Add(3000 * time.Millisecond), LatencyMs: 700})
			cand.FinalOutput = "answer 41"
		} else {
			steps = append(steps,
				Step{Index: 1, Role: "worker", Worker: "qwen3-32b", CostUSD: 0.0002, StartedAt: at.Add(200 * time.Millisecond), LatencyMs: 300},
				Step{Index: 2, Role: "worker", Worker: "qwen3-32b", CostUSD: 0.0003, StartedAt: at.Add(520 * time.Millisecond), LatencyMs: 400})
		}
		var end time.Time
		for i := range steps {
			steps[i].RunID, steps[i].Parent = cand.RunID, -1
			cand.CostUSD += steps[i].CostUSD
			end = steps[i].StartedAt.Add(time.Duration(steps[i].LatencyMs) * time.Millisecond)
		}
		cand.CostUSD += 0.00005 // billed outside the steps
		cand.LatencyMs = float64(end.Sub(at).Milliseconds()) + 10
		f.runs = append(f.runs, cand)
		f.steps = append(f.steps, steps...)
		if r < 20 { // judged: the expensive plans win
			out := JudgmentTie
			if expensive {
				out = JudgmentWin
			}
			f.judgments = append(f.judgments, Judgment{RequestID: req, Pipeline: "conductor", PipelineVersion: "v2", CandidateRunID: cand.RunID,
				IncumbentRunID: req + "/inc", Judge: "judge", JudgedAt: at, Outcome: out, InclusionProb: 0.5})
		}
		if r < 30 { // v1 ran the first 30 requests a week before; it always planned gpt-5
			f.runs = append(f.runs, Run{RunID: req + "/v1", RequestID: req, Pipeline: "conductor", PipelineVersion: "v1", Mode: ModeCandidate,
				StartedAt: at.Add(-7 * 24 * time.Hour), Status: StatusOK, Plan: gpt5, CostUSD: 0.03, LatencyMs: 4000})
		}
	}
	// A suite case: out of the production scope.
	f.runs = append(f.runs,
		Run{RunID: "s/inc", RequestID: "suite-1/case-1", SuiteRunID: "suite-1", Pipeline: "single:gpt-5", Mode: ModeIncumbent, StartedAt: t0, Status: StatusOK, CostUSD: 0.01, LatencyMs: 900},
		Run{RunID: "s/cand", RequestID: "suite-1/case-1", SuiteRunID: "suite-1", Pipeline: "conductor", PipelineVersion: "v2", Mode: ModeCandidate,
			StartedAt: t0, Status: StatusOK, Plan: cheap, CostUSD: 1, LatencyMs: 100})
	return f
}

func seedPlans(t *testing.T, s *sqlStore, f planFixture) {
	t.Helper()
	ctx := context.Background()
	if err := s.InsertRuns(ctx, f.runs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSteps(ctx, f.steps); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJudgments(ctx, f.judgments); err != nil {
		t.Fatal(err)
	}
}

func TestPlanShapesOnTheEngine(t *testing.T) {
	s := openTestStore(t)
	f := newPlanFixture()
	seedPlans(t, s, f)
	q := PlanQuery{Pipeline: "conductor", Version: "v2", From: f.from, To: f.to}
	shapes, err := s.PlanShapes(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) != 2 || shapes[0].Shape != shapeCheap || shapes[1].Shape != shapeGPT5 {
		t.Fatalf("shapes = %+v, want %q then %q", shapes, shapeCheap, shapeGPT5)
	}
	cheap, gpt5 := shapes[0], shapes[1]
	if cheap.Runs != 43 || gpt5.Runs != 7 || gpt5.Steps != 3 || math.Abs(gpt5.Share-7.0/50) > 1e-12 {
		t.Errorf("runs %d and %d (steps %d, share %v), want 43 and 7 (3 steps, share 0.14)", cheap.Runs, gpt5.Runs, gpt5.Steps, gpt5.Share)
	}
	// Figures by store/figure over the shape's runs.
	var lat []float64
	var cost float64
	for _, r := range f.runs {
		if r.RunID[len(r.RunID)-3:] == "/v2" && r.Plan != "" && PlanShape(r.Plan) == shapeGPT5 {
			lat = append(lat, r.LatencyMs)
			cost += r.CostUSD
		}
	}
	if got, want := gpt5.P95Ms, figure.Latency(lat, 95); got != want {
		t.Errorf("p95 %v, want %v", got, want)
	}
	if got, want := gpt5.CostPerRequestUSD, figure.CostPerRequest(cost, 7); math.Abs(got-want) > 1e-12 {
		t.Errorf("cost per request %v, want %v", got, want)
	}
	// Judged: requests 0..19; of them 3, 10, 17 planned gpt-5 and won.
	if gpt5.Judged != 3 || gpt5.Wins != 3 || gpt5.WinRate != 1 || cheap.Judged != 17 || cheap.Wins != 0 || cheap.WinRate != 0 {
		t.Errorf("judged %+v / %+v", gpt5, cheap)
	}
	// Agreement: the cheap plans answer like the incumbent (but request 49 has
	// no incumbent run), the expensive ones do not.
	if cheap.Pairs != 42 || cheap.Agree != 42 || gpt5.Pairs != 7 || gpt5.Agree != 0 {
		t.Errorf("agreement cheap %d/%d, gpt-5 %d/%d; want 42/42 and 0/7", cheap.Agree, cheap.Pairs, gpt5.Agree, gpt5.Pairs)
	}
	if gpt5.ExampleRequestID == "" {
		t.Error("no example request")
	}
	// The suite scope holds only the suite case.
	q.Scope = PlanScopeSuite
	if shapes, err = s.PlanShapes(context.Background(), q); err != nil || len(shapes) != 1 || shapes[0].Runs != 1 {
		t.Errorf("suite scope: %+v, %v", shapes, err)
	}
	if _, err := s.PlanShapes(context.Background(), PlanQuery{From: f.from, To: f.to}); err == nil {
		t.Error("no pipeline: no error")
	}
}

func TestPlanAttributionSumsToTheDifference(t *testing.T) {
	s := openTestStore(t)
	f := newPlanFixture()
	seedPlans(t, s, f)
	a, err := s.PlanAttribution(context.Background(), PlanQuery{Pipeline: "conductor", Version: "v2", From: f.from, To: f.to})
	if err != nil {
		t.Fatal(err)
	}
	// 49 pairs (request 49 has no incumbent run).
	var cand, inc, candMs, incMs float64
	for _, r := range f.runs {
		if strings.HasSuffix(r.RunID, "/v2") && r.RequestID != "req-49" {
			cand += r.CostUSD
			candMs += r.LatencyMs
		}
		if r.Mode == ModeIncumbent && r.SuiteRunID == "" {
			inc += r.CostUSD
			incMs += r.LatencyMs
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*max(1, math.Abs(b)) }
	if a.Pairs != 49 || a.LatencyPairs != 49 || !near(a.CandidateUSD, cand) || !near(a.IncumbentUSD, inc) || !near(a.CostDeltaUSD, cand-inc) {
		t.Fatalf("pairs %d/%d, cand %v inc %v delta %v; want 49, %v %v %v", a.Pairs, a.LatencyPairs, a.CandidateUSD, a.IncumbentUSD, a.CostDeltaUSD, cand, inc, cand-inc)
	}
	if !near(a.LatencyDeltaMs, candMs-incMs) {
		t.Errorf("latency delta %v, want %v", a.LatencyDeltaMs, candMs-incMs)
	}
	if !slices.Equal(a.Incumbents, []string{"incumbent:gpt-4-1106-preview"}) {
		t.Errorf("incumbents %v", a.Incumbents)
	}
	for name, rows := range map[string][]AttributionRow{"by worker": a.ByWorker, "by step": a.ByStep} {
		var c, l float64
		for _, r := range rows {
			c += r.CostUSD
			l += r.LatencyMs
		}
		if !near(c, a.CostDeltaUSD) || !near(l, a.LatencyDeltaMs) {
			t.Errorf("%s: parts sum to %v USD and %v ms, want %v and %v (%+v)", name, c, l, a.CostDeltaUSD, a.LatencyDeltaMs, rows)
		}
	}
	// gpt-5 is chosen on 7 of 49 paired requests and carries most of the extra cost.
	top := a.ByWorker[0]
	if top.Key != "gpt-5" || top.Requests != 7 || top.CostUSD <= 0.5*a.CostDeltaUSD {
		t.Errorf("largest cost part %+v, want gpt-5 on 7 requests with most of %v", top, a.CostDeltaUSD)
	}
	// gpt-5's part: per expensive pair 0.02 · (1 − 0.002 / cand).
	var want float64
	for _, r := range f.runs {
		if strings.HasSuffix(r.RunID, "/v2") && r.Plan != "" && PlanShape(r.Plan) == shapeGPT5 {
			want += 0.02 * (1 - 0.002/r.CostUSD)
		}
	}
	if !near(top.CostUSD, want) {
		t.Errorf("gpt-5 part %v, want %v", top.CostUSD, want)
	}
	var keys []string
	for _, r := range a.ByStep {
		keys = append(keys, r.Key)
	}
	slices.Sort(keys)
	if want := []string{AttributionNotInSteps, AttributionOutside, "plan step 0", "plan step 1", "plan step 2", "planning (conductor)", AttributionWaiting}; !slices.Equal(keys, want) {
		t.Errorf("step rows %v, want %v", keys, want)
	}
}

func TestPlanDriftAndDiff(t *testing.T) {
	s := openTestStore(t)
	f := newPlanFixture()
	seedPlans(t, s, f)
	ctx := context.Background()
	q := PlanQuery{Pipeline: "conductor", From: f.from.Add(-8 * 24 * time.Hour), To: f.to}
	counts, err := s.PlanDrift(ctx, q, 86400, 1)
	if err != nil {
		t.Fatal(err)
	}
	total := map[string]int64{}
	for _, c := range counts {
		total[c.Version+" "+c.Shape] += c.Runs
		if c.Bucket.Hour() != 0 || c.Bucket.IsZero() {
			t.Errorf("bucket %v is not a day", c.Bucket)
		}
	}
	// The top shape over both versions is the cheap one (43 runs against 37);
	// every other shape counts as other.
	if want := map[string]int64{"v2 " + shapeCheap: 43, "v2 " + ShapeOther: 7, "v1 " + ShapeOther: 30}; fmt.Sprint(total) != fmt.Sprint(want) {
		t.Errorf("drift totals %v, want %v", total, want)
	}
	v1, v2 := PlanVersion{"conductor", "v1"}, PlanVersion{"conductor", "v2"}
	d, err := s.PlanDiff(ctx, PlanQuery{Pipeline: "conductor", From: f.from, To: f.to}, v1, v2)
	if err != nil {
		t.Fatal(err)
	}
	// v1 ran requests 0..29, always gpt-5; v2 planned gpt-5 on 3, 10, 17, 24.
	if d.Requests != 30 || d.Changed != 26 || len(d.Transitions) != 2 {
		t.Fatalf("diff %+v, want 30 requests, 26 changed, 2 transitions", d)
	}
	if tr := d.Transitions[0]; tr.From != shapeGPT5 || tr.To != shapeCheap || tr.Requests != 26 || tr.ExampleRequestID != "req-00" {
		t.Errorf("top transition %+v", tr)
	}
	if _, err := s.PlanDiff(ctx, q, v1, v1); err == nil {
		t.Error("the same version twice: no error")
	}
}

// TestPlanAttributionSample: past MaxRuns the attribution reads a sample of
// the requests, says so, and still sums to the sample's difference.
func TestPlanAttributionSample(t *testing.T) {
	s := openTestStore(t)
	f := newPlanFixture()
	seedPlans(t, s, f)
	a, err := s.PlanAttribution(context.Background(), PlanQuery{Pipeline: "conductor", Version: "v2", From: f.from, To: f.to, MaxRuns: 20})
	if err != nil {
		t.Fatal(err)
	}
	if a.SampledFrom != 50 || a.Pairs == 0 || a.Pairs >= 49 {
		t.Fatalf("sampled from %d, %d pairs; want 50 and a sample", a.SampledFrom, a.Pairs)
	}
	var c float64
	for _, r := range a.ByWorker {
		c += r.CostUSD
	}
	if math.Abs(c-a.CostDeltaUSD) > 1e-9 || math.Abs(a.CandidateUSD-a.IncumbentUSD-a.CostDeltaUSD) > 1e-9 {
		t.Errorf("sample parts %v, delta %v (cand %v, inc %v)", c, a.CostDeltaUSD, a.CandidateUSD, a.IncumbentUSD)
	}
}
