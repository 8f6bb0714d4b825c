package storetest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// RunAnalyticsContract runs the behaviour every store.TraceReader must keep
// (package store runs it against the embedded engine). newStore's stores must
// implement store.TraceReader; each case gets a fresh one.
func RunAnalyticsContract(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	t.Run("SearchTraces", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		an, ok := st.(store.TraceReader)
		if !ok {
			t.Fatalf("%T does not implement store.TraceReader", st)
		}
		contractSearchTraces(t, st, an)
	})
	t.Run("Overview", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		an, ok := st.(store.OverviewAnalytics)
		if !ok {
			t.Fatalf("%T does not implement store.OverviewAnalytics", st)
		}
		contractOverview(t, st, an)
	})
	t.Run("OverviewCancelledIsNotAnError", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		an, ok := st.(store.OverviewAnalytics)
		if !ok {
			t.Fatalf("%T does not implement store.OverviewAnalytics", st)
		}
		contractCancelledNotError(t, st, an)
	})
	t.Run("Comparisons", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		an, ok := st.(store.RunComparer)
		if !ok {
			t.Fatalf("%T does not implement store.RunComparer", st)
		}
		contractComparisons(t, st, an)
	})
	t.Run("Segments", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		if _, ok := st.(store.SegmentReader); !ok {
			t.Fatalf("%T does not implement store.SegmentReader", st)
		}
		contractSegments(t, st)
	})
	t.Run("WorkerUsage", func(t *testing.T) {
		st := newStore(t)
		defer st.Close()
		an, ok := st.(store.WorkerReader)
		if !ok {
			t.Fatalf("%T does not implement store.WorkerReader", st)
		}
		contractWorkerUsage(t, st, an)
	})
}

// searchFixtures: A (support-bot, an erroring single-model candidate, the
// incumbent graded failed and the conductor passed, 0.0066 USD, slowest 1520 ms),
// B one minute later (search, outputs "Paris", 0.003 USD, slowest 100 ms, worker
// w9, all passed) and C two minutes later (billing, no runs).
func searchFixtures() (a, b Fixture, c store.Request) {
	a = NewFixture("req-a", T0())
	b = NewFixture("req-b", T0().Add(time.Minute))
	b.Request.App = "search"
	for i := range b.Runs {
		b.Runs[i].FinalOutput, b.Runs[i].CostUSD, b.Runs[i].LatencyMs = "It is Paris.", 0.001, 100
		b.Runs[i].Status, b.Runs[i].Error = store.StatusOK, ""
	}
	b.Runs[1].Pipeline = "moa:3"
	for i := range b.Steps {
		b.Steps[i].Worker = "w9"
	}
	for i := range b.Scores {
		b.Scores[i].Passed, b.Scores[i].Value = true, 1
	}
	c = store.Request{RequestID: "req-c", ReceivedAt: T0().Add(2 * time.Minute), Source: store.SourceReplay,
		App: "billing", Input: `[{"role":"user","content":"Refund please"}]`}
	return a, b, c
}

func contractSearchTraces(t *testing.T, st store.Store, an store.TraceReader) {
	ctx := context.Background()
	a, b, c := searchFixtures()
	mustInsert(t, st, a)
	mustInsert(t, st, b)
	if err := st.InsertRequests(ctx, []store.Request{c}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return T0().Add(d) }
	tests := []struct {
		name string
		q    store.TraceSearch
		want []string
	}{
		{"no filter: newest first", store.TraceSearch{}, []string{"req-c", "req-b", "req-a"}},
		{"text in an output", store.TraceSearch{TraceFilter: store.TraceFilter{Text: "PARIS"}}, []string{"req-b"}},
		{"text in the input", store.TraceSearch{TraceFilter: store.TraceFilter{Text: "refund"}}, []string{"req-c"}},
		{"app", store.TraceSearch{TraceFilter: store.TraceFilter{App: "search"}}, []string{"req-b"}},
		{"candidate", store.TraceSearch{Candidate: "single:qwen3-32b"}, []string{"req-a"}},
		{"the incumbent is no candidate", store.TraceSearch{Candidate: "incumbent:gpt-5"}, nil},
		{"worker", store.TraceSearch{Worker: "w9"}, []string{"req-b"}},
		{"status", store.TraceSearch{Status: store.StatusError}, []string{"req-a"}},
		{"min cost", store.TraceSearch{MinCostUSD: 0.005}, []string{"req-a"}},
		{"max cost", store.TraceSearch{MaxCostUSD: 0.005}, []string{"req-b"}},
		{"min latency", store.TraceSearch{MinLatencyMs: 1000}, []string{"req-a"}},
		{"max latency", store.TraceSearch{MaxLatencyMs: 500}, []string{"req-b"}},
		{"from", store.TraceSearch{From: at(30 * time.Second)}, []string{"req-c", "req-b"}},
		{"to (exclusive)", store.TraceSearch{To: at(time.Minute)}, []string{"req-a"}},
		{"grade failed", store.TraceSearch{Grade: store.GradeFailed}, []string{"req-a"}},
		{"grade passed", store.TraceSearch{Grade: store.GradePassed}, []string{"req-b", "req-a"}},
		{"filters combine", store.TraceSearch{TraceFilter: store.TraceFilter{App: "support-bot"}, Grade: store.GradePassed, MaxLatencyMs: 2000},
			[]string{"req-a"}},
		{"keyset page", store.TraceSearch{TraceFilter: store.TraceFilter{Before: b.Request.ReceivedAt, BeforeID: b.Request.RequestID, Limit: 5}},
			[]string{"req-a"}},
		{"limit", store.TraceSearch{TraceFilter: store.TraceFilter{Limit: 2}}, []string{"req-c", "req-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := an.SearchTraces(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.RequestID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("ids = %q, want %q", ids, tt.want)
			}
		})
	}
	t.Run("recent data: pages across look-back windows", func(t *testing.T) {
		// Matches received 10 min, 2 h and 3 days ago (and the fixtures of 2026-03):
		// pages must be the newest matches whatever window a store looks in first.
		now := time.Now().UTC().Truncate(time.Millisecond)
		var ids []string
		for i, ago := range []time.Duration{10 * time.Minute, 2 * time.Hour, 72 * time.Hour} {
			f := NewFixture("req-recent-"+strconv.Itoa(i), now.Add(-ago))
			f.Runs[0].Status = "budget_exceeded"
			mustInsert(t, st, f)
			ids = append(ids, f.Request.RequestID)
		}
		for limit := 1; limit <= 4; limit++ {
			got, err := an.SearchTraces(ctx, store.TraceSearch{Status: "budget_exceeded", TraceFilter: store.TraceFilter{Limit: limit}})
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, s := range got {
				gotIDs = append(gotIDs, s.RequestID)
			}
			if want := ids[:min(limit, len(ids))]; !slices.Equal(gotIDs, want) {
				t.Errorf("limit %d: %q, want %q", limit, gotIDs, want)
			}
		}
		// From a cursor: the next page starts after the 2 h old match.
		got, err := an.SearchTraces(ctx, store.TraceSearch{Status: "budget_exceeded",
			TraceFilter: store.TraceFilter{Limit: 5, Before: now.Add(-2 * time.Hour), BeforeID: ids[1]}})
		if err != nil || len(got) != 1 || got[0].RequestID != ids[2] {
			t.Errorf("after the cursor: %+v, %v; want %s", got, err, ids[2])
		}
	})
	t.Run("invalid search", func(t *testing.T) {
		for _, q := range []store.TraceSearch{{MinCostUSD: 2, MaxCostUSD: 1}, {Grade: "maybe"}, {MinLatencyMs: -1},
			{From: at(time.Hour), To: at(0)}} {
			if _, err := an.SearchTraces(ctx, q); err == nil {
				t.Errorf("%+v: no error", q)
			}
		}
	})
	t.Run("hostile text is data", func(t *testing.T) {
		for _, s := range HostileStrings() {
			if _, err := an.SearchTraces(ctx, store.TraceSearch{TraceFilter: store.TraceFilter{Text: s, App: s},
				Candidate: s, Worker: s, Status: s}); err != nil {
				t.Errorf("%q: %v", s, err)
			}
		}
	})
}

func contractOverview(t *testing.T, st store.Store, an store.OverviewAnalytics) {
	ctx := context.Background()
	a, b, c := searchFixtures()
	// B's conductor says the incumbent's answer in other spacing and case (agrees);
	// moa:3 answers something else (disagrees). A's single model failed (no pair).
	b.Runs[2].FinalOutput = "  it is   PARIS "
	b.Runs[1].FinalOutput = "It is Lyon."
	mustInsert(t, st, a)
	mustInsert(t, st, b)
	if err := st.InsertRequests(ctx, []store.Request{c}); err != nil {
		t.Fatal(err)
	}
	window := store.OverviewQuery{From: T0().Add(-time.Hour), To: T0().Add(time.Hour), BucketSeconds: 60}
	ov, err := an.Overview(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "counts", ov.Counts, store.OverviewCounts{Requests: 3, TapRequests: 2, IncumbentRuns: 2,
		ShadowRuns: 4, ErrorRuns: 1, ShadowRequests: 2})
	assertEqual(t, "agreement", ov.Agreement, []store.Agreement{{Candidate: "conductor", Pairs: 2, Agree: 2},
		{Candidate: "moa:3", Pairs: 1, Agree: 0}})
	if lr, ok := st.(store.LiveReader); ok {
		// The live sequence's observations: one per request with a candidate
		// run, failures included, with its incumbent's run.
		obs, err := lr.LiveObservations(ctx, store.LiveQuery{Pipeline: "conductor", PipelineVersion: "v3", From: T0().Add(-time.Hour), To: T0().Add(time.Hour)}, store.LivePage{})
		if err != nil {
			t.Fatalf("live observations: %v", err)
		}
		for i, o := range obs {
			if i > 0 && o.StartedAt.Before(obs[i-1].StartedAt) {
				t.Errorf("observation %d out of time order: %+v after %+v", i, o, obs[i-1])
			}
			if !o.IncumbentFound || o.IncumbentStatus != store.StatusOK {
				t.Errorf("observation %s lacks its incumbent run: %+v", o.RequestID, o)
			}
		}
		if len(obs) != 2 {
			t.Errorf("live observations of conductor = %d, want 2 (one per request): %+v", len(obs), obs)
		}
		if _, err := lr.LiveObservations(ctx, store.LiveQuery{}, store.LivePage{}); err == nil {
			t.Error("live observations without a candidate and a window: want error")
		}
	} else {
		t.Errorf("%T does not implement store.LiveReader", st)
	}
	var names []string
	for _, p := range ov.Totals {
		names = append(names, p.Pipeline)
		if !p.Bucket.IsZero() {
			t.Errorf("total of %s has bucket %v, want zero", p.Pipeline, p.Bucket)
		}
	}
	assertEqual(t, "totals' pipelines", names, []string{"incumbent:gpt-5", "conductor", "moa:3", "single:qwen3-32b"})
	inc, cond := ov.Totals[0], ov.Totals[1]
	// Nearest rank over two latencies: p50 is rank ⌈1⌉ = 1, p95 rank ⌈1.9⌉ = 2.
	// Incumbent 100 and 812.5 ms, conductor 100 and 1520 ms.
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"incumbent p50", inc.P50Ms, 100}, {"incumbent p95", inc.P95Ms, 812.5},
		{"incumbent cost", inc.CostUSD, 0.0031}, {"incumbent cost/request", inc.CostPerRequestUSD, 0.00155},
		{"conductor p50", cond.P50Ms, 100}, {"conductor p95", cond.P95Ms, 1520},
		{"conductor cost/request", cond.CostPerRequestUSD, 0.0026},
	} {
		if !near(f.got, f.want) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if inc.Runs != 2 || inc.Mode != store.ModeIncumbent || ov.Totals[3].Errors != 1 {
		t.Errorf("totals: incumbent %+v, single %+v", inc, ov.Totals[3])
	}
	var incBuckets []time.Time
	for _, p := range ov.Series {
		if p.Pipeline == "incumbent:gpt-5" {
			incBuckets = append(incBuckets, p.Bucket)
			if p.Runs != 1 {
				t.Errorf("incumbent bucket %v: %d runs, want 1", p.Bucket, p.Runs)
			}
		}
	}
	minute := T0().Truncate(time.Minute)
	assertEqual(t, "incumbent buckets", incBuckets, []time.Time{minute, minute.Add(time.Minute)})

	t.Run("suite cases are not traffic and unknown latencies are not percentiles", func(t *testing.T) {
		suite := NewFixture("suite-run-1/case-1", T0())
		suite.Request.Source = store.SourceSuite
		for i := range suite.Runs {
			suite.Runs[i].RunID += "-suite"
			suite.Runs[i].SuiteRunID = "suite-run-1"
		}
		for i := range suite.Steps {
			suite.Steps[i].RunID += "-suite"
		}
		suite.Scores = nil
		mustInsert(t, st, suite)
		// A recorded exchange without a latency (0 = unknown) counts as a run but
		// not in the percentiles.
		unknown := NewFixture("no-latency", T0())
		unknown.Runs = unknown.Runs[:1]
		unknown.Runs[0].RunID, unknown.Runs[0].LatencyMs = "no-latency-incumbent", 0
		unknown.Steps, unknown.Scores = nil, nil
		mustInsert(t, st, unknown)
		if unknown.Runs[0].Mode != store.ModeIncumbent {
			t.Fatalf("fixture's first run is %s, want the incumbent", unknown.Runs[0].Mode)
		}
		again, err := an.Overview(ctx, window)
		if err != nil {
			t.Fatal(err)
		}
		want := ov.Counts
		want.Requests, want.TapRequests, want.IncumbentRuns = want.Requests+1, want.TapRequests+1, want.IncumbentRuns+1
		assertEqual(t, "counts with a suite case and an unknown latency stored", again.Counts, want)
		if again.Totals[0].Runs != ov.Totals[0].Runs+1 || again.Totals[0].P50Ms != ov.Totals[0].P50Ms || again.Totals[0].P95Ms != ov.Totals[0].P95Ms {
			t.Errorf("incumbent totals %+v, want one more run and the same percentiles as %+v", again.Totals[0], ov.Totals[0])
		}
		assertEqual(t, "agreement with a suite case stored", again.Agreement, ov.Agreement)
	})
	t.Run("app and window narrow everything", func(t *testing.T) {
		q := window
		q.App = "search"
		ov, err := an.Overview(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		assertEqual(t, "counts", ov.Counts, store.OverviewCounts{Requests: 1, TapRequests: 1, IncumbentRuns: 1,
			ShadowRuns: 2, ShadowRequests: 1})
		q = window
		q.From = T0().Add(30 * time.Second)
		if ov, err = an.Overview(ctx, q); err != nil {
			t.Fatal(err)
		}
		assertEqual(t, "counts from +30 s", ov.Counts, store.OverviewCounts{Requests: 2, TapRequests: 1, IncumbentRuns: 1,
			ShadowRuns: 2, ShadowRequests: 1})
		q.From, q.To = T0().Add(24*time.Hour), T0().Add(25*time.Hour)
		if ov, err = an.Overview(ctx, q); err != nil {
			t.Fatal(err)
		}
		if ov.Counts != (store.OverviewCounts{}) || len(ov.Totals)+len(ov.Series)+len(ov.Agreement) != 0 {
			t.Errorf("empty window = %+v", ov)
		}
	})
	t.Run("invalid window", func(t *testing.T) {
		for _, q := range []store.OverviewQuery{{}, {From: T0(), To: T0(), BucketSeconds: 60},
			{From: T0(), To: T0().Add(time.Hour), BucketSeconds: 7}} {
			if _, err := an.Overview(ctx, q); err == nil {
				t.Errorf("%+v: no error", q)
			}
		}
	})
}

func contractComparisons(t *testing.T, st store.Store, an store.RunComparer) {
	ctx := context.Background()
	f := NewFixture("req-cmp", T0())
	for i := range f.Scores {
		f.Scores[i].SuiteRunID, f.Scores[i].CaseID = "sr-1", "case-"+string(rune('b'-i))
	}
	f.Steps[0], f.Steps[1] = f.Steps[1], f.Steps[0] // written out of order
	mustInsert(t, st, f)
	run, steps, err := an.GetRun(ctx, f.Runs[1].RunID)
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "run", run, f.Runs[1])
	var idx []int32
	for _, s := range steps {
		if s.RunID != run.RunID {
			t.Errorf("step of run %q returned", s.RunID)
		}
		idx = append(idx, s.Index)
	}
	assertEqual(t, "step order", idx, []int32{0, 1})
	if _, _, err := an.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v, want ErrNotFound", err)
	}
	scores, err := an.ListScores(ctx, "sr-1")
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, s := range scores {
		cases = append(cases, s.CaseID)
	}
	assertEqual(t, "score order", cases, []string{"case-a", "case-b"})
	if none, err := an.ListScores(ctx, "sr-none"); err != nil || len(none) != 0 {
		t.Errorf("unknown suite run: %v, %v", none, err)
	}
}

func contractWorkerUsage(t *testing.T, st store.Store, an store.WorkerReader) {
	ctx := context.Background()
	// A: both candidate runs have steps w0 (#0) and w1 (#1). B: the conductor
	// run gets a planning call, three workflow steps and a nested step that do
	// not count; its category is "qa".
	a, b, _ := searchFixtures()
	b.Request.Category = "qa"
	cond := b.Runs[2].RunID
	var steps []store.Step
	for _, s := range b.Steps {
		if s.RunID != cond {
			steps = append(steps, s)
		}
	}
	mk := func(i int32, role, worker string, depth int32, cost float64) store.Step {
		return store.Step{RunID: cond, Index: i, Parent: -1, Depth: depth, Role: role, Worker: worker,
			CostUSD: cost, LatencyMs: 10 * float64(i+1), StartedAt: b.Request.ReceivedAt, Status: store.StatusOK, Attempt: 1}
	}
	steps = append(steps, mk(0, "conductor", "planner", 0, 0.5), mk(1, "worker", "w0", 0, 0.25),
		mk(2, "worker", "w9", 0, 0.125), mk(3, "worker", "w9", 1, 1), mk(4, "worker", "w0", 0, 0.0625))
	b.Steps = steps
	mustInsert(t, st, a)
	mustInsert(t, st, b)
	q := store.WorkerQuery{From: T0().Add(-time.Hour), To: T0().Add(time.Hour)}
	got, err := an.WorkerUsage(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, u := range got {
		rows = append(rows, u.Worker+"/"+u.Category+"/"+u.Position+"/"+strconv.FormatInt(u.Steps, 10))
	}
	// B's moa:3 run keeps its two w9 steps (first, final); the conductor run's
	// workflow is w0 (first), w9 (middle), w0 (final).
	want := []string{"w0/math/first/2", "w0/qa/final/1", "w0/qa/first/1", "w1/math/final/2", "w9/qa/final/1", "w9/qa/first/1", "w9/qa/middle/1"}
	assertEqual(t, "usage", rows, want)
	for _, u := range got {
		if u.Worker == "w0" && u.Category == "qa" && u.Position == store.PositionFinal && (!near(u.CostUSD, 0.0625) || !near(u.LatencyMs, 50)) {
			t.Errorf("w0 final on qa = %+v, want 0.0625 USD and 50 ms", u)
		}
	}
	q.Pipeline = "single:qwen3-32b"
	if got, err = an.WorkerUsage(ctx, q); err != nil || len(got) != 2 {
		t.Errorf("one pipeline: %+v, %v; want w0 first and w1 final", got, err)
	}
	q.Pipeline, q.App = "", "billing"
	if got, err = an.WorkerUsage(ctx, q); err != nil || len(got) != 0 {
		t.Errorf("an app without runs: %+v, %v", got, err)
	}
	if _, err := an.WorkerUsage(ctx, store.WorkerQuery{}); err == nil {
		t.Error("empty window: no error")
	}
}

// contractCancelledNotError: a run stopped by a shutdown ("cancelled") is not
// counted among the error runs of the overview; a real error is.
func contractCancelledNotError(t *testing.T, st store.Store, an store.OverviewAnalytics) {
	ctx := context.Background()
	req := store.Request{RequestID: "cx", ReceivedAt: T0(), Source: store.SourceTap, Input: "[]"}
	if err := st.InsertRequests(ctx, []store.Request{req}); err != nil {
		t.Fatal(err)
	}
	run := func(id, pipeline, status string) store.Run {
		return store.Run{RunID: id, RequestID: "cx", Pipeline: pipeline, PipelineVersion: "v1", Mode: store.ModeCandidate,
			StartedAt: T0(), LatencyMs: 10, Status: status}
	}
	if err := st.InsertRuns(ctx, []store.Run{run("cx/a", "conductor", store.StatusCancelled), run("cx/b", "single:gpt-5", store.StatusError)}); err != nil {
		t.Fatal(err)
	}
	ov, err := an.Overview(ctx, store.OverviewQuery{From: T0().Add(-time.Hour), To: T0().Add(time.Hour), BucketSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if ov.Counts.ErrorRuns != 1 {
		t.Errorf("error runs = %d; want 1 (the cancelled run is not an error)", ov.Counts.ErrorRuns)
	}
	for _, p := range ov.Totals {
		if want := map[string]int64{"conductor": 0, "single:gpt-5": 1}[p.Pipeline]; p.Errors != want {
			t.Errorf("%s errors = %d; want %d", p.Pipeline, p.Errors, want)
		}
	}
}
