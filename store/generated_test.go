package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// TestGeneratedRowsAreNotProduction: rows of `loadtest generate` carry
// source 'generated', and nothing that speaks of production counts them —
// the overview, shift's segment mix, set building — while the overview shows them alone when asked and the traces
// list filters on them.
func TestGeneratedRowsAreNotProduction(t *testing.T) {
	st := store.OpenTestStore(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Minute)
	live := storetest.NewFixture("live-1", now.Add(-time.Hour))
	if err := live.Insert(ctx, st); err != nil {
		t.Fatal(err)
	}
	var progress []int64
	res, err := store.Generate(ctx, st, store.GenerateSpec{Requests: 30, From: now.Add(-2 * time.Hour), To: now, Chunk: 12,
		Progress: func(n int64) { progress = append(progress, n) }})
	if err != nil || res.Requests != 30 || res.Runs != 60 || res.Steps != 300 {
		t.Fatalf("generate: %+v, %v", res, err)
	}
	if !slices.Equal(progress, []int64{12, 24, 30}) {
		t.Errorf("progress %v, want one call per chunk of 12", progress)
	}
	roles := store.NewRoles(st)
	window := store.OverviewQuery{From: now.Add(-3 * time.Hour), To: now.Add(time.Minute), BucketSeconds: 3600}
	ov, err := roles.OverviewReader.Overview(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	if c := ov.Counts; c.Requests != 1 || c.TapRequests != 1 || c.IncumbentRuns != 1 || c.ShadowRuns != 2 || c.ShadowRequests != 1 {
		t.Errorf("overview counts %+v, want the one live request and its 3 runs", c)
	}
	for _, p := range ov.Totals {
		if p.Runs != 1 {
			t.Errorf("overview total of %s counts %d runs, want 1 (the live one)", p.Pipeline, p.Runs)
		}
	}
	gen := window
	gen.Generated = true
	if ov, err = roles.OverviewReader.Overview(ctx, gen); err != nil {
		t.Fatal(err)
	}
	if c := ov.Counts; c.Requests != 30 || c.TapRequests != 0 || c.IncumbentRuns != 30 || c.ShadowRuns != 30 {
		t.Errorf("overview of the generated rows %+v, want 30 requests and 60 runs", c)
	}
	mix, err := roles.SegmentReader.SegmentMix(ctx, store.SegmentMixQuery{From: window.From, To: window.To})
	if err != nil {
		t.Fatal(err)
	}
	var requests int64
	for _, m := range mix {
		requests += m.Requests
	}
	if requests != 1 {
		t.Errorf("shift's live mix counts %d requests, want 1: %+v", requests, mix)
	}
	src, err := roles.EvalHistory.ListSetSources(ctx, store.SetSourceQuery{})
	if err != nil || len(src) != 1 {
		t.Errorf("set sources %d (%v), want the live request only", len(src), err)
	}
	page, err := roles.TraceReader.SearchTraces(ctx, store.TraceSearch{TraceFilter: store.TraceFilter{Source: store.SourceGenerated, Limit: 100}})
	if err != nil || len(page) != 30 {
		t.Fatalf("traces of source generated: %d, %v", len(page), err)
	}
}
