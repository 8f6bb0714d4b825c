package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// LatencyEdgesMs are the upper bounds (ms, exclusive) of the overview's
// latency histogram bins; the last bin holds everything at or above the last
// edge. Roughly logarithmic (1-2-5 per decade) so a 50 ms model call and a
// 30 s plan share one chart.
var LatencyEdgesMs = []float64{10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}

// LatencyBin counts one pipeline's runs of known latency (figure.KnownLatency)
// in [LowerMs, UpperMs); UpperMs is 0 for the open last bin.
type LatencyBin struct {
	Pipeline string  `json:"pipeline"`
	Mode     string  `json:"mode"`
	Bin      int64   `json:"bin"` // 0-based index into the bins LatencyEdgesMs bound
	LowerMs  float64 `json:"lower_ms"`
	UpperMs  float64 `json:"upper_ms"`
	Runs     int64   `json:"runs"`
}

// CoveragePoint is one time bucket's coverage: of the traffic requests
// received in it, how many have a candidate run (figure.Coverage).
type CoveragePoint struct {
	Bucket   time.Time `json:"bucket"` // bucket start, UTC
	Requests int64     `json:"requests"`
	Shadowed int64     `json:"shadowed"`
	Coverage float64   `json:"coverage"` // 0..1
}

// OverviewCharts is what the overview's histogram and coverage charts draw.
type OverviewCharts struct {
	Latency  []LatencyBin    `json:"latency"`  // by pipeline (incumbent first), then bin; empty bins left out
	Coverage []CoveragePoint `json:"coverage"` // by bucket; buckets without requests left out
}

// OverviewChartReader reads the overview's charts beyond the per-pipeline
// series (Overview). The SQL stores (embedded and server) implement it.
type OverviewChartReader interface {
	// OverviewCharts returns the window's latency histogram per pipeline
	// (runs as Overview selects them) and its coverage per bucket (requests
	// as Overview counts them, shadowed when a candidate run of any start
	// time exists). An invalid q returns its Validate error.
	OverviewCharts(ctx context.Context, q OverviewQuery) (OverviewCharts, error)
}

var _ OverviewChartReader = (*sqlStore)(nil)

// latencyEdgesSQL renders LatencyEdgesMs as a ClickHouse array literal.
func latencyEdgesSQL() string {
	parts := make([]string, len(LatencyEdgesMs))
	for i, e := range LatencyEdgesMs {
		parts[i] = strconv.FormatFloat(e, 'f', -1, 64)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// OverviewCharts implements OverviewChartReader with two statements.
func (s *sqlStore) OverviewCharts(ctx context.Context, q OverviewQuery) (OverviewCharts, error) {
	var oc OverviewCharts
	if err := q.Validate(); err != nil {
		return oc, err
	}
	if err := s.check(ctx); err != nil {
		return oc, fmt.Errorf("store: overview charts: %w", err)
	}
	reqCond, runCond, p := s.overviewConds(q)
	edges := latencyEdgesSQL()
	// bin = number of edges at or below the latency (0 below the first edge).
	bins, err := queryRows[LatencyBin](ctx, s.t, fmt.Sprintf(`SELECT pipeline, any(mode) AS mode,
    toInt64(arrayCount(e -> e <= latency_ms, %[3]s)) AS bin, count() AS runs
FROM %[1]s.runs FINAL WHERE %[2]s AND latency_ms > 0
GROUP BY pipeline, bin
ORDER BY mode != 'incumbent', pipeline, bin`, s.db, runCond, edges), p)
	if err != nil {
		return oc, fmt.Errorf("store: overview charts: latency histogram: %w", err)
	}
	for i := range bins {
		b := &bins[i]
		if b.Bin > 0 {
			b.LowerMs = LatencyEdgesMs[b.Bin-1]
		}
		if int(b.Bin) < len(LatencyEdgesMs) {
			b.UpperMs = LatencyEdgesMs[b.Bin]
		}
	}
	oc.Latency = nilIfEmpty(bins)
	cov, err := queryRows[CoveragePoint](ctx, s.t, fmt.Sprintf(`SELECT
    toDateTime64(toStartOfInterval(received_at, INTERVAL %[3]d SECOND), 3, 'UTC') AS bucket,
    count() AS requests, countIf(shadowed_flag = 1) AS shadowed, %[4]s AS coverage
FROM (
    SELECT received_at, request_id IN (SELECT request_id FROM %[1]s.runs WHERE mode = 'candidate' AND suite_run_id = '') AS shadowed_flag
    FROM %[1]s.requests FINAL WHERE %[2]s
)
GROUP BY bucket ORDER BY bucket`, s.db, reqCond, q.BucketSeconds, figure.CoverageSQL("shadowed_flag = 1")), p)
	if err != nil {
		return oc, fmt.Errorf("store: overview charts: coverage: %w", err)
	}
	oc.Coverage = nilIfEmpty(cov)
	return oc, nil
}
