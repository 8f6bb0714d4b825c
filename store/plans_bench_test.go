package store

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPlansPageQueries prints what the plans page and the sorted traces
// list cost on the embedded engine over generated traffic (Generate: one
// incumbent and one conductor run per request; BENCH_PLAN_REQUESTS requests,
// default 100,000, over a week): each statement the plans page makes for the
// default window, and a page of traces sorted by each pair figure.
func BenchmarkPlansPageQueries(b *testing.B) {
	n := 100_000
	if v := os.Getenv("BENCH_PLAN_REQUESTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("BENCH_PLAN_REQUESTS=%q must be a positive number", v)
		}
	}
	s := openTestStore(b)
	ctx := context.Background()
	to := time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC)
	if _, err := Generate(ctx, s, GenerateSpec{Requests: n, From: to.Add(-7 * 24 * time.Hour), To: to}); err != nil {
		b.Fatal(err)
	}
	pp, err := s.PlanPipelines(ctx, "")
	if err != nil || len(pp) == 0 {
		b.Fatalf("plan pipelines: %v %v", pp, err)
	}
	q := PlanQuery{Pipeline: pp[0].Pipeline, Version: pp[0].Version, From: to.Add(-7 * 24 * time.Hour), To: to}
	all := q
	all.Version = ""
	b.ReportMetric(float64(n), "requests")
	bench := func(name string, f func() error) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	bench("pipelines", func() error { _, err := s.PlanPipelines(ctx, ""); return err })
	bench("shapes", func() error { _, err := s.PlanShapes(ctx, q); return err })
	bench("attribution", func() error { _, err := s.PlanAttribution(ctx, q); return err })
	small := q
	small.MaxRuns = MaxAttributionRuns / 4
	bench("attribution/quarter-sample", func() error { _, err := s.PlanAttribution(ctx, small); return err })
	bench("drift", func() error { _, err := s.PlanDrift(ctx, all, 86400, 5); return err })
	bench("traces/newest", func() error { _, err := s.SearchTraces(ctx, TraceSearch{}); return err })
	for _, k := range TraceSortKeys() {
		bench("traces/sorted/"+k, func() error { _, err := s.SearchTraces(ctx, TraceSearch{Sort: k}); return err })
	}
}
