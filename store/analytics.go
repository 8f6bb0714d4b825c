package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// Grade filters of TraceSearch.Grade.
const (
	GradePassed = "passed" // some grader passed some run of the request
	GradeFailed = "failed" // some grader (that did not itself fail) failed some run
)

// TraceSearch selects trace summaries with the filters of the web UI's traces
// page. Zero values mean "any". All filters combine with AND; run-level filters
// are satisfied by the request's runs as a whole (see each field).
type TraceSearch struct {
	// TraceFilter holds App, Source, the keyset cursor (Before, BeforeID) and
	// Limit. Its Text matches the request's input OR any run's final output
	// (case-insensitive substring).
	TraceFilter
	Candidate    string    // some candidate run has this pipeline name
	Worker       string    // some step of some run called this worker
	Status       string    // some run has this status
	MinCostUSD   float64   // the runs' summed cost is at least this, USD; 0 = no bound
	MaxCostUSD   float64   // the runs' summed cost is at most this, USD; 0 = no bound
	MinLatencyMs float64   // the slowest run took at least this, ms; 0 = no bound
	MaxLatencyMs float64   // the slowest run took at most this, ms; 0 = no bound
	From         time.Time // received at or after this instant; zero = no bound
	To           time.Time // received strictly before this instant; zero = no bound
	Grade        string    // GradePassed, GradeFailed or "" (any)
	// Segments filters by the request's segment columns.
	Segments SegmentFilter
	// Sort orders by a pair figure (TraceSortCost, TraceSortLatency,
	// TraceSortAgreement, TraceSortJudgment), descending unless Asc, instead
	// of newest first; only the traces that have the figure are listed (a
	// pair, known latencies, both answered ok, a judgment). Before and
	// BeforeID are then ignored: AfterValue and AfterID (the last row's
	// SortValue and RequestID) page by keyset.
	Sort       string
	Asc        bool
	AfterValue float64
	AfterID    string
}

// Validate reports negative bounds, a minimum above its maximum, To not after
// From, and an unknown Grade.
func (q TraceSearch) Validate() error {
	var errs []error
	for _, b := range []struct {
		name     string
		min, max float64
	}{{"cost", q.MinCostUSD, q.MaxCostUSD}, {"latency", q.MinLatencyMs, q.MaxLatencyMs}} {
		if b.min < 0 || b.max < 0 {
			errs = append(errs, fmt.Errorf("store: trace search: %s bounds must not be negative", b.name))
		}
		if b.max > 0 && b.min > b.max {
			errs = append(errs, fmt.Errorf("store: trace search: minimum %s %g is above the maximum %g", b.name, b.min, b.max))
		}
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		errs = append(errs, errors.New("store: trace search: the time range's end must be after its start"))
	}
	if q.Grade != "" && q.Grade != GradePassed && q.Grade != GradeFailed {
		errs = append(errs, fmt.Errorf("store: trace search: grade %q must be %q, %q or empty", q.Grade, GradePassed, GradeFailed))
	}
	errs = append(errs, q.Segments.Validate(), q.validateSort())
	return errors.Join(errs...)
}

// floatLiteral renders v for SQL.
func floatLiteral(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// searchTracesSQL builds the page query of SearchTraces: requests filtered by
// their own columns, then by IN-subqueries on runs (aggregated with FINAL so a
// re-delivered run counts once), steps and scores (existence only, no FINAL).
//
// floor, when not zero, bounds the scan to requests received at or after it and
// to runs, steps and scores started or created at or after it (they all come
// after their request is received), which SearchTraces uses to look at recent
// data first.
func (s *sqlStore) searchTracesSQL(q TraceSearch, floor time.Time) (string, Params) {
	cond, p := s.searchCond(q, floor)
	if !q.Before.IsZero() {
		if cond == "" {
			cond = "\nWHERE "
		} else {
			cond += "\n  AND "
		}
		cond += keysetCond(p, q.Before, q.BeforeID)
	}
	return fmt.Sprintf(`SELECT
    request_id, received_at, source, app, category, language, has_table, has_code, length_bucket,
    %[4]s AS user_msgs,
    %[5]s AS input_preview
FROM %[1]s.requests FINAL%[2]s
ORDER BY received_at DESC, request_id DESC
LIMIT %[3]d`, s.db, cond, ClampLimit(q.Limit), userMsgsExpr, previewExpr), p
}

// searchCond renders q's filters (not its cursor) as a WHERE clause on the
// requests table ("" for none) with the parameters it binds; floor as in
// searchTracesSQL.
func (s *sqlStore) searchCond(q TraceSearch, floor time.Time) (string, Params) {
	var where []string
	p := Params{}
	runsFloor, stepsFloor, scoresFloor := "", "", ""
	if !floor.IsZero() {
		where = append(where, "received_at >= {floor:DateTime64(3, 'UTC')}")
		// Runs start when their request is received or later (the incumbent's run
		// at ReceivedAt); searchSlack allows for clocks of other writers.
		p.Time("floor", floor).Time("run_floor", floor.Add(-searchSlack))
		const f = "{run_floor:DateTime64(3, 'UTC')}"
		runsFloor, stepsFloor, scoresFloor = " AND started_at >= "+f, " AND started_at >= "+f, " AND created_at >= "+f
	}
	if q.App != "" {
		where = append(where, "app = {app:String}")
		p.Str("app", q.App)
	}
	if q.Source != "" {
		where = append(where, "source = {source:String}")
		p.Str("source", q.Source)
	}
	if !q.From.IsZero() {
		where = append(where, "received_at >= {from:DateTime64(3, 'UTC')}")
		p.Time("from", q.From)
	}
	if !q.To.IsZero() {
		where = append(where, "received_at < {to:DateTime64(3, 'UTC')}")
		p.Time("to", q.To)
	}
	if c := q.Segments.sqlCond(); c != "" {
		where = append(where, c)
	}
	if q.Text != "" {
		p.Str("text", q.Text)
		where = append(where, fmt.Sprintf("(%[3]s OR request_id IN "+
			"(SELECT request_id FROM %[1]s.runs WHERE positionCaseInsensitiveUTF8(final_output, {text:String}) > 0%[2]s))", s.db, runsFloor, inputMatchSQL(p, q.Text)))
	}
	var having []string
	if q.Candidate != "" {
		having = append(having, "countIf(mode = 'candidate' AND pipeline = {candidate:String}) > 0")
		p.Str("candidate", q.Candidate)
	}
	if q.Status != "" {
		having = append(having, "countIf(status = {status:String}) > 0")
		p.Str("status", q.Status)
	}
	for _, b := range []struct {
		v              float64
		name, expr, op string
	}{
		{q.MinCostUSD, "min_cost", "sum(cost_usd)", ">="}, {q.MaxCostUSD, "max_cost", "sum(cost_usd)", "<="},
		{q.MinLatencyMs, "min_latency", "max(latency_ms)", ">="}, {q.MaxLatencyMs, "max_latency", "max(latency_ms)", "<="},
	} {
		if b.v > 0 {
			having = append(having, fmt.Sprintf("%s %s {%s:Float64}", b.expr, b.op, b.name))
			p[b.name] = floatLiteral(b.v)
		}
	}
	if len(having) > 0 {
		where = append(where, fmt.Sprintf("request_id IN (SELECT request_id FROM %s.runs FINAL WHERE 1%s GROUP BY request_id HAVING %s)",
			s.db, runsFloor, strings.Join(having, " AND ")))
	}
	if q.Worker != "" {
		where = append(where, fmt.Sprintf("request_id IN (SELECT request_id FROM %[1]s.runs WHERE run_id IN "+
			"(SELECT run_id FROM %[1]s.steps WHERE worker = {worker:String}%[2]s)%[3]s)", s.db, stepsFloor, runsFloor))
		p.Str("worker", q.Worker)
	}
	if q.Grade != "" {
		passed := "1"
		if q.Grade == GradeFailed {
			passed = "0"
		}
		where = append(where, fmt.Sprintf("request_id IN (SELECT request_id FROM %s.scores WHERE error = '' AND passed = %s%s)", s.db, passed, scoresFloor))
	}
	if len(where) == 0 {
		return "", p
	}
	return "\nWHERE " + strings.Join(where, "\n  AND "), p
}

// searchSlack widens a search window's bound on runs, steps and scores.
const searchSlack = time.Hour

// searchWindows are the look-back spans SearchTraces tries, newest data first,
// before it scans everything.
var searchWindows = []time.Duration{time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour}

// SearchTraces implements TraceReader with two statements: the page
// of requests, then their runs' figures. With filters on runs, steps, scores or
// text, the page is first looked for among requests received in the last hour
// (before the cursor, To, or now), then day, week and month, then in all data:
// a window that fills the page holds the newest matches, because everything
// outside it is older, so the result equals the unbounded query's.
func (s *sqlStore) SearchTraces(ctx context.Context, q TraceSearch) ([]TraceSummary, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: search traces: %w", err)
	}
	if q.Sort != "" {
		page, err := s.sortedTraces(ctx, q)
		if err == nil {
			err = s.fillRunFigures(ctx, page)
		}
		if err != nil {
			return nil, fmt.Errorf("store: search traces: sorted by %s: %w", q.Sort, err)
		}
		return page, nil
	}
	var floors []time.Time
	if q.Text != "" || q.Candidate != "" || q.Worker != "" || q.Status != "" || q.Grade != "" ||
		q.MinCostUSD > 0 || q.MaxCostUSD > 0 || q.MinLatencyMs > 0 || q.MaxLatencyMs > 0 {
		ref := time.Now()
		switch {
		case !q.Before.IsZero():
			ref = q.Before
		case !q.To.IsZero():
			ref = q.To
		}
		for _, w := range searchWindows {
			if f := ref.Add(-w); q.From.IsZero() || f.After(q.From) {
				floors = append(floors, f)
			}
		}
	}
	floors = append(floors, time.Time{}) // finally, everything
	var page []TraceSummary
	for _, floor := range floors {
		var err error
		sql, p := s.searchTracesSQL(q, floor)
		if page, err = queryRows[TraceSummary](ctx, s.t, sql, p); err != nil {
			return nil, fmt.Errorf("store: search traces: %w", err)
		}
		if len(page) >= ClampLimit(q.Limit) {
			break
		}
	}
	if err := s.fillRunFigures(ctx, page); err != nil {
		return nil, fmt.Errorf("store: search traces: runs: %w", err)
	}
	if err := s.fillPairs(ctx, page, q.Candidate); err != nil {
		return nil, fmt.Errorf("store: search traces: pairs: %w", err)
	}
	return page, nil
}

// OverviewQuery selects the overview's window: production requests
// (LiveSources: not suite cases, not generated rows) received in [From, To)
// and their runs started in it (suite runs' runs are left out: the suite-run
// pages show those), optionally of one App. BucketSeconds is the width of
// the series' time buckets (aligned to the Unix epoch); it must divide a day.
type OverviewQuery struct {
	App           string
	From, To      time.Time
	BucketSeconds int
	// Segments limits the window to requests (and their runs) with these
	// segment values.
	Segments SegmentFilter
	// Generated selects the generated load-test rows (SourceGenerated)
	// instead of production traffic: what `loadtest generate` measures.
	Generated bool
}

// Validate reports an empty or inverted window and a bucket width that is not a
// positive divisor of 86400 s.
func (q OverviewQuery) Validate() error {
	var errs []error
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		errs = append(errs, errors.New("store: overview: the window needs a start before its end"))
	}
	if q.BucketSeconds <= 0 || 86400%q.BucketSeconds != 0 {
		errs = append(errs, fmt.Errorf("store: overview: bucket of %d s must divide a day", q.BucketSeconds))
	}
	errs = append(errs, q.Segments.Validate())
	return errors.Join(errs...)
}

// OverviewCounts are the window's totals. Drops are not here: the tap counts
// them in process (ingest stats), not in the store.
type OverviewCounts struct {
	Requests       int64 `json:"requests"`        // requests received
	TapRequests    int64 `json:"tap_requests"`    // of which tapped from production (source tap)
	IncumbentRuns  int64 `json:"incumbent_runs"`  // incumbent runs started
	ShadowRuns     int64 `json:"shadow_runs"`     // candidate runs started
	ErrorRuns      int64 `json:"error_runs"`      // runs of either mode whose status is neither ok nor cancelled (a stop is not a failure)
	ShadowRequests int64 `json:"shadow_requests"` // distinct requests with a candidate run
	// InputReducedRuns are the candidate runs that answered without part of
	// the request's input (Run.InputReduced): a media part none of their
	// workers takes, or a conversation the tap could not rebuild.
	InputReducedRuns int64 `json:"input_reduced_runs"`
}

// PipelinePoint is one pipeline's figures over one time bucket (or the whole
// window when Bucket is zero). Cost per request and the latency percentiles
// are store/figure's definitions, computed in SQL by figure.CostPerRequestSQL
// and figure.LatencySQL: the one definition reports, gates, load commands and
// dashboards use.
type PipelinePoint struct {
	Pipeline string    `json:"pipeline"`
	Mode     string    `json:"mode"`
	Bucket   time.Time `json:"bucket"` // bucket start, UTC
	Runs     int64     `json:"runs"`
	Errors   int64     `json:"errors"`   // runs whose status is neither ok nor cancelled
	CostUSD  float64   `json:"cost_usd"` // summed cost of the runs
	// InputReduced counts the runs that answered without part of the
	// request's input (Run.InputReduced).
	InputReduced int64 `json:"input_reduced"`
	// CostPerRequestUSD is cost per request (USD, figure.CostPerRequest):
	// CostUSD / the pipeline's distinct request_ids.
	CostPerRequestUSD float64 `json:"cost_per_request_usd"`
	// P50Ms and P95Ms are latency percentiles (ms, figure.Latency: nearest
	// rank over the runs with a known latency; 0 means unknown and is left
	// out rather than counted as instant).
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
}

// Agreement counts, for one candidate pipeline, the requests where both it and
// the incumbent answered (status ok) and how many of those answers are equal
// after NormalizeAnswer.
type Agreement struct {
	Candidate string `json:"candidate"`
	Pairs     int64  `json:"pairs"`
	Agree     int64  `json:"agree"`
}

// Overview is the overview page's data for one window.
type Overview struct {
	Counts    OverviewCounts  `json:"counts"`
	Totals    []PipelinePoint `json:"totals"` // per pipeline over the whole window (Bucket zero), incumbent first
	Series    []PipelinePoint `json:"series"` // per pipeline and bucket, by pipeline then bucket
	Agreement []Agreement     `json:"agreement"`
	// Latency is the runs' latency histogram: by pipeline (incumbent
	// first), then bin; runs of unknown latency and empty bins left out.
	Latency []LatencyBin `json:"latency"`
}

// OverviewAnalytics computes the overview page. The SQL stores
// (embedded and server) implement it.
type OverviewAnalytics interface {
	// Overview returns the window's counts, per-pipeline totals, series and
	// latency histogram and the candidates' agreement with the incumbent. An
	// invalid q returns its Validate error.
	Overview(ctx context.Context, q OverviewQuery) (Overview, error)
}

var _ OverviewAnalytics = (*sqlStore)(nil)

// normalizeSQL is NormalizeAnswer in SQL (RE2 in both); %[1]s is the answer.
const normalizeSQL = `replaceRegexpAll(replaceRegexpAll(replaceRegexpAll(multiIf(` +
	`notEmpty(extractAll(lowerUTF8(%[1]s), '\\\\boxed\\{([^{}]*)\\}')), ` +
	`arrayElement(extractAll(lowerUTF8(%[1]s), '\\\\boxed\\{([^{}]*)\\}'), -1), ` +
	`notEmpty(extractAll(lowerUTF8(%[1]s), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)')), ` +
	`arrayElement(extractAll(lowerUTF8(%[1]s), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)'), -1), ` +
	`lowerUTF8(%[1]s)), '[,$]', ''), '^\\s+|[\\s.]+$', ''), '\\s+', ' ')`

// overviewConds returns the overview window's conditions on requests
// (received in the window: production traffic, or the generated rows when
// q.Generated) and on runs (started in it, not of a suite run, of the same
// requests), with App and Segments applied to both, and their parameters.
func (s *sqlStore) overviewConds(q OverviewQuery) (reqCond, runCond string, p Params) {
	p = Params{}.Time("from", q.From).Time("to", q.To)
	reqCond = "received_at >= {from:DateTime64(3, 'UTC')} AND received_at < {to:DateTime64(3, 'UTC')} AND " + liveRequests(q.Generated)
	runCond = "started_at >= {from:DateTime64(3, 'UTC')} AND started_at < {to:DateTime64(3, 'UTC')} AND " + liveRunSQL(q.Generated)
	if q.App != "" {
		p.Str("app", q.App)
		reqCond += " AND app = {app:String}"
		runCond += fmt.Sprintf(" AND request_id IN (SELECT request_id FROM %s.requests WHERE app = {app:String})", s.db)
	}
	if c := q.Segments.sqlCond(); c != "" {
		reqCond += " AND " + c
		runCond += fmt.Sprintf(" AND request_id IN (SELECT request_id FROM %s.requests WHERE %s)", s.db, c)
	}
	return reqCond, runCond, p
}

// overviewRow is one row of Overview's scan, in one of its grouping sets
// (told by grouping(bucket), 1 when the set leaves the bucket out): a
// pipeline's totals with its latency histogram, agreement and share of the
// window's counts, or one bucket of its series; the window's request counts
// are on every row.
type overviewRow struct {
	Pipeline          string    `json:"pipeline"`
	Mode              string    `json:"mode"`
	Bucket            time.Time `json:"bucket"`
	NoBucket          int64     `json:"no_bucket"`
	Runs              int64     `json:"runs"`
	Errors            int64     `json:"errors"`
	CostUSD           float64   `json:"cost_usd"`
	InputReduced      int64     `json:"input_reduced"`
	CostPerRequestUSD float64   `json:"cost_per_request_usd"`
	P50Ms             float64   `json:"p50_ms"`
	P95Ms             float64   `json:"p95_ms"`
	Bins              string    `json:"bins"` // runs of known latency per bin of LatencyEdgesMs, comma-separated
	Pairs             int64     `json:"pairs"`
	Agree             int64     `json:"agree"`
	// The pipeline's share of the window's counts (summed over the
	// pipelines): its incumbent and candidate runs, the requests whose first
	// candidate run (in the request's runs) is of this pipeline, and its
	// candidate runs with a reduced input.
	IncumbentRuns    int64 `json:"incumbent_runs"`
	ShadowRuns       int64 `json:"shadow_runs"`
	ShadowRequests   int64 `json:"shadow_requests"`
	InputReducedRuns int64 `json:"input_reduced_runs"`
	Requests         int64 `json:"window_requests"`
	TapRequests      int64 `json:"window_tap_requests"`
}

// point is r's pipeline figures.
func (r overviewRow) point() PipelinePoint {
	return PipelinePoint{Pipeline: r.Pipeline, Mode: r.Mode, Bucket: r.Bucket, Runs: r.Runs, Errors: r.Errors,
		CostUSD: r.CostUSD, InputReduced: r.InputReduced, CostPerRequestUSD: r.CostPerRequestUSD, P50Ms: r.P50Ms, P95Ms: r.P95Ms}
}

// overviewBinsSQL counts the runs of known latency (figure.KnownLatency) in
// each bin of LatencyEdgesMs (x_bin of overviewSQL: the number of edges at or
// below the latency), comma-separated in bin order.
func overviewBinsSQL() string {
	return fmt.Sprintf("arrayStringConcat(arrayMap(b -> toString(countEqual(groupArrayIf(x_bin, x_latency > 0), b)), range(%d)), ',')",
		len(LatencyEdgesMs)+1)
}

// overviewSQL is Overview's one statement. The window's runs are read once
// (runs FINAL: a re-written run counts once, as its last write) and grouped
// by request, which numbers the requests densely (req_no: distinct requests
// are then counted on an integer, exactly) and gives each candidate run its
// request's incumbent answer (answer_normalized: NormalizeAnswer, stored
// with the row by migration 0290); then the runs are aggregated in two
// grouping sets: (pipeline) for the totals, histogram, agreement and the
// window's counts (summed over the pipelines in Go: each request is counted
// once, at its first candidate run), (pipeline, bucket) for the series. The
// window's two request counts come from one scan of requests FINAL (a tuple).
// %[1]s database, %[2]d bucket seconds, %[3]s run condition, %[4]s request
// condition, %[5]s histogram, %[6]s cost per request, %[7]s p50, %[8]s p95,
// %[9]s the latency edges, %[10]d overviewBlockRows.
const overviewSQL = `SELECT pipeline, any(x_mode) AS mode,
    toDateTime64(toStartOfInterval(x_started, INTERVAL %[2]d SECOND), 3, 'UTC') AS bucket,
    grouping(bucket) AS no_bucket,
    count() AS runs,
    countIf(x_status NOT IN ('ok', 'cancelled')) AS errors, sum(x_cost) AS cost_usd,
    countIf(x_reduced) AS input_reduced,
    %[6]s AS cost_per_request_usd,
    %[7]s AS p50_ms,
    %[8]s AS p95_ms,
    %[5]s AS bins,
    countIf(x_paired) AS pairs, countIf(x_agreed) AS agree,
    countIf(x_mode = 'incumbent') AS incumbent_runs,
    countIf(x_mode = 'candidate') AS shadow_runs,
    countIf(x_first_candidate) AS shadow_requests,
    countIf(x_mode = 'candidate' AND x_reduced) AS input_reduced_runs,
    (SELECT (count(), countIf(source = 'tap')) FROM %[1]s.requests FINAL WHERE %[4]s) AS window_counts,
    window_counts.1 AS window_requests, window_counts.2 AS window_tap_requests
FROM (
    SELECT req_no, r.1 AS pipeline, r.2 AS x_mode, r.3 AS x_status, r.4 AS x_latency, r.5 AS x_cost,
        r.6 AS x_reduced, r.7 AS x_started, arrayCount(e -> e <= x_latency, %[9]s) AS x_bin,
        has_inc AND x_mode = 'candidate' AND x_status = 'ok' AS x_paired,
        x_paired AND r.8 = inc AS x_agreed,
        x_mode = 'candidate' AND run_no = indexOf(arrayMap(t -> t.2, rs), 'candidate') AS x_first_candidate
    FROM (
        SELECT rowNumberInAllBlocks() AS req_no, inc, has_inc, rs FROM (
            SELECT request_id,
                anyIf(answer_normalized, mode = 'incumbent' AND status = 'ok') AS inc,
                countIf(mode = 'incumbent' AND status = 'ok') > 0 AS has_inc,
                groupArray((pipeline, mode, status, latency_ms, cost_usd, input_reduced, started_at, answer_normalized)) AS rs
            FROM %[1]s.runs FINAL WHERE %[3]s
            GROUP BY request_id
        )
    )
    ARRAY JOIN rs AS r, arrayEnumerate(rs) AS run_no
)
GROUP BY GROUPING SETS ((pipeline), (pipeline, bucket))
ORDER BY mode != 'incumbent', pipeline, bucket
SETTINGS max_block_size = %[10]d`

// overviewBlockRows is the most rows per block of overviewSQL (the engine's
// default is 65,409). The request grouping hands its result on in blocks, and
// each block's runs are aggregated by one thread: at the default a day of 1M
// runs (71,329 requests) left a block of 65,409 requests for one thread and
// 5,920 for the other; in blocks of 8,192 rows the engine's threads share the
// grouping-set aggregation evenly (same CPU time, about half the wall time of
// that stage on two cores).
const overviewBlockRows = 8192

// Overview implements OverviewAnalytics with one statement (overviewSQL):
// the window's runs are read once for the counts, totals, series, latency
// histogram and agreement, so the live or generated request set and the
// FINAL merge of runs are paid once per page. A window without runs is
// answered by a second statement counting its requests.
func (s *sqlStore) Overview(ctx context.Context, q OverviewQuery) (Overview, error) {
	var ov Overview
	if err := q.Validate(); err != nil {
		return ov, err
	}
	if err := s.check(ctx); err != nil {
		return ov, fmt.Errorf("store: overview: %w", err)
	}
	reqCond, runCond, p := s.overviewConds(q)
	rows, err := queryRows[overviewRow](ctx, s.t, fmt.Sprintf(overviewSQL, s.db, q.BucketSeconds, runCond, reqCond, overviewBinsSQL(),
		figure.CostPerRequestSQL("x_cost", "req_no"), figure.LatencySQL("x_latency", 50), figure.LatencySQL("x_latency", 95), latencyEdgesSQL(),
		overviewBlockRows), p)
	if err != nil {
		return ov, fmt.Errorf("store: overview: %w", err)
	}
	if len(rows) == 0 { // no run in the window: the request counts alone
		counts, err := queryRows[OverviewCounts](ctx, s.t, fmt.Sprintf(`SELECT count() AS requests, countIf(source = 'tap') AS tap_requests
FROM %[1]s.requests FINAL WHERE %[2]s`, s.db, reqCond), p)
		if err != nil {
			return ov, fmt.Errorf("store: overview: counts: %w", err)
		}
		if len(counts) > 0 {
			ov.Counts = counts[0]
		}
	}
	for _, r := range rows {
		if r.NoBucket == 0 { // (pipeline, bucket)
			ov.Series = append(ov.Series, r.point())
			continue
		}
		// (pipeline)
		c := &ov.Counts
		c.Requests, c.TapRequests = r.Requests, r.TapRequests
		c.IncumbentRuns += r.IncumbentRuns
		c.ShadowRuns += r.ShadowRuns
		c.ErrorRuns += r.Errors
		c.ShadowRequests += r.ShadowRequests
		c.InputReducedRuns += r.InputReducedRuns
		pt := r.point()
		pt.Bucket = time.Time{}
		ov.Totals = append(ov.Totals, pt)
		for bin, v := range strings.Split(r.Bins, ",") {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return ov, fmt.Errorf("store: overview: latency bins %q of %s: %w", r.Bins, r.Pipeline, err)
			}
			if n > 0 {
				ov.Latency = append(ov.Latency, newLatencyBin(r.Pipeline, r.Mode, int64(bin), n))
			}
		}
		if r.Pairs > 0 {
			ov.Agreement = append(ov.Agreement, Agreement{Candidate: r.Pipeline, Pairs: r.Pairs, Agree: r.Agree})
		}
	}
	slices.SortFunc(ov.Agreement, func(a, b Agreement) int { return strings.Compare(a.Candidate, b.Candidate) })
	if ov.Agreement == nil {
		ov.Agreement = []Agreement{} // "no pairs" is an empty list, not null
	}
	return ov, nil
}

// RunComparer reads what the web UI's comparison pages and a suite run's
// cases put side by side. The SQL stores (embedded and server) implement it.
type RunComparer interface {
	// GetRun returns one run and its steps ordered by Index. ErrNotFound when no
	// run has that id.
	GetRun(ctx context.Context, runID string) (Run, []Step, error)
	// ListScores returns a suite run's grader scores ordered by (CaseID,
	// Pipeline, Grader, RunID); empty for an unknown suite run.
	ListScores(ctx context.Context, suiteRunID string) ([]Score, error)
}

// GetRun implements RunComparer.
func (s *sqlStore) GetRun(ctx context.Context, runID string) (Run, []Step, error) {
	if err := s.check(ctx); err != nil {
		return Run{}, nil, fmt.Errorf("store: get run: %w", err)
	}
	id := Params{}.Str("id", runID)
	runs, err := queryRows[Run](ctx, s.t, fmt.Sprintf("SELECT %s FROM %s.runs FINAL WHERE run_id = {id:String} LIMIT 1",
		selectList[Run](), s.db), id)
	if err != nil {
		return Run{}, nil, fmt.Errorf("store: get run %q: %w", runID, err)
	}
	if len(runs) == 0 {
		return Run{}, nil, fmt.Errorf("store: get run %q: %w", runID, ErrNotFound)
	}
	steps, err := queryRows[Step](ctx, s.t, fmt.Sprintf("SELECT %s FROM %s.steps FINAL WHERE run_id = {id:String} ORDER BY `index`",
		selectList[Step](), s.db), id)
	if err != nil {
		return Run{}, nil, fmt.Errorf("store: get run %q: steps: %w", runID, err)
	}
	return runs[0], nilIfEmpty(steps), nil
}

// ListScores implements RunComparer.
func (s *sqlStore) ListScores(ctx context.Context, suiteRunID string) ([]Score, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list scores: %w", err)
	}
	scores, err := queryRows[Score](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.scores FINAL WHERE suite_run_id = {id:String} ORDER BY case_id, pipeline, grader, run_id",
		selectList[Score](), s.db), Params{}.Str("id", suiteRunID))
	if err != nil {
		return nil, fmt.Errorf("store: list scores of suite run %q: %w", suiteRunID, err)
	}
	return nilIfEmpty(scores), nil
}

// Positions of a workflow step in its plan, for WorkerUse.Position.
const (
	PositionOnly   = "only"   // the plan has one step
	PositionFirst  = "first"  // the plan's first step
	PositionMiddle = "middle" // neither first nor last
	PositionFinal  = "final"  // the plan's last step (its output is the answer)
)

// WorkerQuery selects the candidate runs whose top-level workflow steps
// WorkerUsage counts: started in [From, To), of App's requests when set, of
// Pipeline when set.
type WorkerQuery struct {
	App      string
	Pipeline string
	From, To time.Time
}

// WorkerUse is how often one worker ran at one plan position on one request
// category, with the summed cost (USD) and latency (ms) of those steps.
type WorkerUse struct {
	Worker    string  `json:"worker"`
	Category  string  `json:"category"`
	Position  string  `json:"position"` // PositionOnly, PositionFirst, PositionMiddle or PositionFinal
	Steps     int64   `json:"steps"`
	CostUSD   float64 `json:"cost_usd"`
	LatencyMs float64 `json:"latency_ms"`
}

// WorkerReader is the worker-usage read of the web UI's workers page. The SQL
// stores (embedded and server) implement it.
type WorkerReader interface {
	// WorkerUsage counts the top-level workflow steps (role "worker", depth 0) of
	// the selected candidate runs by worker, request category and plan position
	// (by Step.Index among the run's such steps). Ordered by worker, category,
	// position. An empty or inverted window is an error.
	WorkerUsage(ctx context.Context, q WorkerQuery) ([]WorkerUse, error)
}

// WorkerUsage implements WorkerReader with one statement (window functions
// find each run's first and last workflow step).
func (s *sqlStore) WorkerUsage(ctx context.Context, q WorkerQuery) ([]WorkerUse, error) {
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		return nil, errors.New("store: worker usage: the window needs a start before its end")
	}
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: worker usage: %w", err)
	}
	p := Params{}.Time("from", q.From).Time("to", q.To)
	runCond := "r.mode = 'candidate' AND r.started_at >= {from:DateTime64(3, 'UTC')} AND r.started_at < {to:DateTime64(3, 'UTC')}"
	if q.Pipeline != "" {
		runCond += " AND r.pipeline = {pipeline:String}"
		p.Str("pipeline", q.Pipeline)
	}
	if q.App != "" {
		runCond += " AND q.app = {app:String}"
		p.Str("app", q.App)
	}
	rows, err := queryRows[WorkerUse](ctx, s.t, fmt.Sprintf(`SELECT worker, category, position, count() AS steps,
    sum(cost_usd) AS cost_usd, sum(latency_ms) AS latency_ms
FROM (
    SELECT s.worker AS worker, c.category AS category, s.cost_usd AS cost_usd, s.latency_ms AS latency_ms,
        multiIf(first_idx = last_idx, 'only', s.index = first_idx, 'first', s.index = last_idx, 'final', 'middle') AS position
    FROM (
        SELECT run_id, worker, cost_usd, latency_ms, `+"`index`"+` AS index,
            min(`+"`index`"+`) OVER (PARTITION BY run_id) AS first_idx,
            max(`+"`index`"+`) OVER (PARTITION BY run_id) AS last_idx
        FROM %[1]s.steps FINAL
        WHERE role = 'worker' AND depth = 0 AND run_id IN (
            SELECT r.run_id FROM %[1]s.runs AS r
            INNER JOIN %[1]s.requests AS q ON r.request_id = q.request_id
            WHERE %[2]s)
    ) AS s
    INNER JOIN (
        SELECT r.run_id AS run_id, q.category AS category
        FROM %[1]s.runs AS r FINAL
        INNER JOIN %[1]s.requests AS q FINAL ON r.request_id = q.request_id
        WHERE %[2]s
    ) AS c ON s.run_id = c.run_id
)
GROUP BY worker, category, position
ORDER BY worker, category, position`, s.db, runCond), p)
	if err != nil {
		return nil, fmt.Errorf("store: worker usage: %w", err)
	}
	return nilIfEmpty(rows), nil
}
