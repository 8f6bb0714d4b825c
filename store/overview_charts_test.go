package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// TestOverviewCharts computes the latency histogram and coverage on the
// real engine and checks them against the same counts made in Go: bins by
// LatencyEdgesMs with unknown latency (0) left out, suite runs left out, a
// request shadowed only when a candidate run exists.
func TestOverviewCharts(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	lat := []float64{0, 5, 10, 19, 20, 49, 120, 999, 1000, 60000}
	var reqs []Request
	var runs []Run
	wantBins := map[string]map[int64]int64{"incumbent:gpt-4": {}, "conductor": {}}
	var shadowed [2]int // per hour bucket
	for i, l := range lat {
		id := fmt.Sprint("r", i)
		recv := at.Add(time.Duration(i%2) * time.Hour)
		reqs = append(reqs, Request{RequestID: id, ReceivedAt: recv, Source: SourceTap, App: "a", Input: "[]"})
		runs = append(runs, Run{RunID: id + "-inc", RequestID: id, Pipeline: "incumbent:gpt-4", Mode: ModeIncumbent,
			StartedAt: recv, Status: StatusOK, LatencyMs: l})
		if i%3 != 0 {
			runs = append(runs, Run{RunID: id + "-c", RequestID: id, Pipeline: "conductor", Mode: ModeCandidate,
				StartedAt: recv.Add(time.Minute), Status: StatusOK, LatencyMs: 2 * l})
			shadowed[i%2]++
		}
		for _, r := range runs[len(runs)-1-btoi(i%3 != 0):] {
			if figure.KnownLatency(r.LatencyMs) {
				var bin int64
				for _, e := range LatencyEdgesMs {
					if e <= r.LatencyMs {
						bin++
					}
				}
				wantBins[r.Pipeline][bin]++
			}
		}
	}
	// A suite run and its request count nowhere.
	reqs = append(reqs, Request{RequestID: "s", ReceivedAt: at, Source: SourceSuite, App: "a", Input: "[]"})
	runs = append(runs, Run{RunID: "s-c", RequestID: "s", Pipeline: "conductor", Mode: ModeCandidate, SuiteRunID: "sr",
		StartedAt: at, Status: StatusOK, LatencyMs: 30})
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	oc, err := s.OverviewCharts(ctx, OverviewQuery{From: at, To: at.Add(3 * time.Hour), BucketSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := s.Overview(ctx, OverviewQuery{From: at, To: at.Add(3 * time.Hour), BucketSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[int64]int64{"incumbent:gpt-4": {}, "conductor": {}}
	for i, b := range ov.Latency {
		got[b.Pipeline][b.Bin] = b.Runs
		if b.UpperMs != 0 && b.UpperMs <= b.LowerMs {
			t.Errorf("bin %d: [%g, %g) is empty", b.Bin, b.LowerMs, b.UpperMs)
		}
		if i == 0 && b.Mode != ModeIncumbent {
			t.Errorf("the incumbent's bins come first, got %+v", b)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(wantBins) {
		t.Errorf("latency bins\n got %v\nwant %v", got, wantBins)
	}
	if len(oc.Coverage) != 2 {
		t.Fatalf("coverage buckets = %+v, want 2", oc.Coverage)
	}
	for k, c := range oc.Coverage {
		if c.Requests != 5 || c.Shadowed != int64(shadowed[k]) || c.Coverage != figure.Coverage(int64(shadowed[k]), 5) {
			t.Errorf("bucket %d: %+v, want 5 requests, %d shadowed, coverage %g", k, c, shadowed[k], figure.Coverage(int64(shadowed[k]), 5))
		}
	}
	if _, err := s.OverviewCharts(ctx, OverviewQuery{From: at, To: at, BucketSeconds: 3600}); err == nil {
		t.Error("an empty window must be an error")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
