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

// OverviewCharts is what the overview's coverage chart draws; the latency
// histogram comes with the runs' figures (Overview.Latency).
type OverviewCharts struct {
	Coverage []CoveragePoint `json:"coverage"` // by bucket; buckets without requests left out
}

// OverviewChartReader reads the overview's charts beyond the per-pipeline
// series and histogram (Overview). The SQL stores (embedded and server)
// implement it.
type OverviewChartReader interface {
	// OverviewCharts returns the window's coverage per bucket (requests as
	// Overview counts them, shadowed when a candidate run of any start time
	// exists). An invalid q returns its Validate error.
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

// newLatencyBin is the bin-th bin of LatencyEdgesMs (0 below the first
// edge, len(LatencyEdgesMs) at or above the last) holding runs runs.
func newLatencyBin(pipeline, mode string, bin, runs int64) LatencyBin {
	b := LatencyBin{Pipeline: pipeline, Mode: mode, Bin: bin, Runs: runs}
	if bin > 0 {
		b.LowerMs = LatencyEdgesMs[bin-1]
	}
	if int(bin) < len(LatencyEdgesMs) {
		b.UpperMs = LatencyEdgesMs[bin]
	}
	return b
}

// coverageSQL is OverviewCharts' statement. A request of the window is
// shadowed when a candidate run of no suite run exists for it (any start
// time, any version: runs without FINAL). The set it is looked up in holds
// only the window's shadowed requests: the window's request ids (requests
// matching the condition in any version, a superset of those that match in
// their last) are the hash table of a RIGHT SEMI JOIN that the candidate
// runs' request ids probe, so the statement builds a table the size of the
// window rather than a set of every candidate run's request (500,000 at 1M
// runs), and reads no runs at all when the window has no requests.
// %[1]s database, %[2]s request condition, %[3]d bucket seconds, %[4]s
// coverage.
const coverageSQL = `SELECT
    toDateTime64(toStartOfInterval(received_at, INTERVAL %[3]d SECOND), 3, 'UTC') AS bucket,
    count() AS requests, countIf(shadowed_flag = 1) AS shadowed, %[4]s AS coverage
FROM (
    SELECT received_at, request_id IN (
        SELECT w.request_id
        FROM (SELECT request_id FROM %[1]s.runs WHERE mode = 'candidate' AND suite_run_id = '') AS c
        RIGHT SEMI JOIN (SELECT request_id FROM %[1]s.requests WHERE %[2]s) AS w ON c.request_id = w.request_id
    ) AS shadowed_flag
    FROM %[1]s.requests FINAL WHERE %[2]s
)
GROUP BY bucket ORDER BY bucket`

// OverviewCharts implements OverviewChartReader with one statement
// (coverageSQL).
func (s *sqlStore) OverviewCharts(ctx context.Context, q OverviewQuery) (OverviewCharts, error) {
	var oc OverviewCharts
	if err := q.Validate(); err != nil {
		return oc, err
	}
	if err := s.check(ctx); err != nil {
		return oc, fmt.Errorf("store: overview charts: %w", err)
	}
	reqCond, _, p := s.overviewConds(q)
	cov, err := queryRows[CoveragePoint](ctx, s.t, fmt.Sprintf(coverageSQL, s.db, reqCond, q.BucketSeconds, figure.CoverageSQL("shadowed_flag = 1")), p)
	if err != nil {
		return oc, fmt.Errorf("store: overview charts: coverage: %w", err)
	}
	oc.Coverage = nilIfEmpty(cov)
	return oc, nil
}
