package ingest

import (
	"context"
	"fmt"
	"math"
	"testing"
)

func TestSampledIsDeterministicAndNearTheRate(t *testing.T) {
	for _, rate := range []float64{0, 0.01, 0.25, 0.5, 0.9, 1} {
		n, kept := 20000, 0
		for i := range n {
			id := fmt.Sprintf("req-%d", i)
			k := Sampled(id, rate)
			if k != Sampled(id, rate) {
				t.Fatalf("rate %v: %s sampled differently twice", rate, id)
			}
			if k {
				kept++
			}
		}
		got := float64(kept) / float64(n)
		// Binomial standard deviation at n=20000 is at most 0.0036; allow 4 of them.
		if math.Abs(got-rate) > 0.015 {
			t.Errorf("rate %v: kept %.4f of requests", rate, got)
		}
	}
	// A lower rate keeps a subset of what a higher rate keeps (hash below threshold).
	for i := range 2000 {
		id := fmt.Sprintf("r%d", i)
		if Sampled(id, 0.1) && !Sampled(id, 0.5) {
			t.Fatalf("%s kept at 10%% but not at 50%%", id)
		}
	}
}

func TestSamplerRates(t *testing.T) {
	s := NewSampler(SamplingConfig{Rate: 0.5, Rates: map[string]float64{"tutor": 0.1, "tutor /v1/responses": 1}})
	tests := []struct {
		app, route string
		want       float64
	}{
		{"other", "", 0.5},
		{"tutor", "", 0.1},
		{"tutor", "/v1/chat/completions", 0.1},
		{"tutor", "/v1/responses", 1},
	}
	for _, tt := range tests {
		if got := s.RateFor(tt.app, tt.route); got != tt.want {
			t.Errorf("RateFor(%q, %q) = %v, want %v", tt.app, tt.route, got, tt.want)
		}
	}
}

func TestSamplingConfigValidate(t *testing.T) {
	bad := SamplingConfig{Rate: 1.5, Rates: map[string]float64{"x": -0.1}, ShadowRunsPerMinute: -1}
	if err := bad.Validate(); err == nil {
		t.Fatal("want errors")
	}
	if err := (SamplingConfig{Rate: 0.3, ShadowRunsPerMinute: 60}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestTapSamplingAndCap: unsampled copies are answered 200, counted by reason and
// never queued; the per-minute cap admits a minute's burst and counts the rest.
func TestTapSamplingAndCap(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig()
	cfg.Sampling = SamplingConfig{Rate: 1, Rates: map[string]float64{"muted": 0}, ShadowRunsPerMinute: 5}
	q := NewMemoryQueue(100)
	stats := NewStats()
	tap, err := NewTap(cfg, q, stats, WithPIISecret(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	muted := exchange("m-1", "hello")
	muted.App = "muted"
	if code, resp := tap.Offer(ctx, muted); code != 200 || resp.Status != "unsampled" || resp.Reason != ReasonSampledOut {
		t.Fatalf("muted app: %d %+v", code, resp)
	}
	queued := 0
	for i := range 8 {
		code, resp := tap.Offer(ctx, exchange(fmt.Sprintf("c-%d", i), "hi"))
		switch {
		case code == 202:
			queued++
		case resp.Reason != ReasonRateCap:
			t.Fatalf("copy %d: %d %+v", i, code, resp)
		}
	}
	if queued != 5 || q.Len() != 5 {
		t.Fatalf("queued %d (queue %d), want the cap of 5", queued, q.Len())
	}
	snap := stats.Snapshot(q.Len())
	if snap.Unsampled[ReasonSampledOut] != 1 || snap.Unsampled[ReasonRateCap] != 3 || snap.Accepted != 5 {
		t.Fatalf("stats %+v", snap)
	}
	// A capped copy was not remembered as seen: once admitted later it gets through
	// rather than being answered as a duplicate.
	if _, resp := tap.Offer(ctx, exchange("c-7", "hi")); resp.Status == "duplicate" {
		t.Fatal("a capped copy must not count as seen")
	}
}
