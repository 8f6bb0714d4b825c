package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sources of an offered count (OfferedCount.Source).
const (
	OfferedProxy = "proxy" // the mirroring proxy: every exchange it forwarded on a mirrored route
	OfferedTap   = "tap"   // POST /v1/tap and /v1/tap/batch: every valid copy answered 202 or 200
)

// OfferedCount is one tap process's count of the production exchanges it was
// offered in one minute on one route of one app (table tap_offered). A tap
// rewrites its row as the minute's count grows: the last write of a key
// (WindowStart, TapID, Source, Route, App) counts.
type OfferedCount struct {
	WindowStart time.Time `json:"window_start"` // the minute, UTC
	TapID       string    `json:"tap_id"`       // one per tap process life
	Source      string    `json:"source"`       // OfferedProxy or OfferedTap
	Route       string    `json:"route"`
	App         string    `json:"app"`
	Offered     int64     `json:"offered"`
	// RecordDropped are the offered exchanges whose record the tap could not
	// hand to the store (its record buffers full, or a stop): no request row.
	RecordDropped int64 `json:"record_dropped"`
}

// CoverageWriter stores the tap's offered counts.
type CoverageWriter interface {
	// InsertOffered stores counts, keyed by (WindowStart, TapID, Source,
	// Route, App); a later write replaces an earlier one.
	InsertOffered(ctx context.Context, counts []OfferedCount) error
}

// CoverageQuery selects the production exchanges (sources tap and replay)
// received in [From, To), optionally of one App, in windows of BucketSeconds
// (aligned to the Unix epoch, dividing a day; 0: the whole span is one window
// starting at From).
type CoverageQuery struct {
	From, To      time.Time
	App           string
	BucketSeconds int
}

// Validate reports an empty window or a bucket that does not divide a day.
func (q CoverageQuery) Validate() error {
	var errs []error
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		errs = append(errs, errors.New("store: coverage: the window needs a start before its end"))
	}
	if q.BucketSeconds < 0 || q.BucketSeconds > 0 && 86400%q.BucketSeconds != 0 {
		errs = append(errs, fmt.Errorf("store: coverage: bucket of %d s must be 0 or divide a day", q.BucketSeconds))
	}
	return errors.Join(errs...)
}

// CoverageStage counts what became of production exchanges, each stage within
// the one before: Offered ⊇ Recorded ⊇ Shadowed ⊇ Judged.
type CoverageStage struct {
	// Offered are the exchanges the tap counted (tap_offered); 0 where no tap
	// counted them (a replayed file, rows older than the count). Segments have
	// no Offered: an exchange not recorded has no segment.
	Offered int64 `json:"offered"`
	// RecordDropped are offered exchanges the tap counted as left without a
	// row; Offered − Recorded can exceed it while rows are on their way.
	RecordDropped int64 `json:"record_dropped"`
	// Recorded are request rows: every exchange that left a row, shadowed or
	// not, with its text or as a metadata row.
	Recorded int64 `json:"recorded"`
	// NotShadowed are recorded rows whose not_shadowed names a reason.
	NotShadowed int64 `json:"not_shadowed"`
	// BodyOmitted are recorded rows stored without their text (metadata rows).
	BodyOmitted int64 `json:"body_omitted"`
	// Shadowed have a live candidate run (any candidate) that was neither
	// cancelled nor skipped by the daily cap; failed runs count.
	Shadowed int64 `json:"shadowed"`
	// Judged have a live pairwise judgment with a verdict (win, tie, loss,
	// inconsistent), canaries left out.
	Judged int64 `json:"judged"`
}

// CoverageWindow is one window's coverage of one route of one app.
type CoverageWindow struct {
	Window time.Time `json:"window"` // the window's start, UTC
	Route  string    `json:"route"`
	App    string    `json:"app"`
	CoverageStage
}

// CoverageSegment is the coverage of one segment cell over the whole query
// window: Dimension is a requests segment column (language, length_bucket,
// has_table, has_code), Value its value ("yes"/"no" for the flags; a metadata
// row's segments are SegmentUnknown). Offered and RecordDropped are 0.
type CoverageSegment struct {
	Dimension string `json:"dimension"`
	Value     string `json:"value"`
	CoverageStage
}

// RecordCoverage is what became of the production exchanges of a query window:
// per window, route and app (by window, route, app), per segment cell (by
// dimension, value), the totals, and why rows were not shadowed
// (NotShadowed) or kept without their text (BodyOmitted), most first.
type RecordCoverage struct {
	Total       CoverageStage     `json:"total"`
	Windows     []CoverageWindow  `json:"windows"`
	Segments    []CoverageSegment `json:"segments"`
	NotShadowed []ReasonCount     `json:"not_shadowed"`
	BodyOmitted []ReasonCount     `json:"body_omitted"`
}

// CoverageReader reads the stored coverage: the overview's coverage block,
// and what the live verdict's coverage check reads of recording (offered
// against recorded).
type CoverageReader interface {
	// TapCoverage counts what became of the production exchanges received
	// in q's window. An invalid q returns its Validate error.
	TapCoverage(ctx context.Context, q CoverageQuery) (RecordCoverage, error)
}

// InsertOffered implements CoverageWriter.
func (s *sqlStore) InsertOffered(ctx context.Context, counts []OfferedCount) error {
	return insert(ctx, s, "tap_offered", counts)
}

// coverageParams binds q's window and app.
func coverageParams(q CoverageQuery) Params {
	return Params{}.Time("from", q.From).Time("to", q.To).Str("app", q.App)
}

// coverageWindowExpr is the window a time column falls in: its bucket, or
// the query's start when the whole span is one window.
func coverageWindowExpr(q CoverageQuery, col string) string {
	if q.BucketSeconds == 0 {
		return "{from:DateTime64(3, 'UTC')}"
	}
	return fmt.Sprintf("toDateTime64(toStartOfInterval(%s, INTERVAL %d SECOND), 3, 'UTC')", col, q.BucketSeconds) // validated: divides a day
}

// coverageCond is the condition of the production requests of q's window
// (and app), their columns prefixed with prefix: recordedCond, the live
// verdict's coverage condition, and the app.
func coverageCond(prefix string) string {
	return recordedCond(prefix) + fmt.Sprintf(" AND ({app:String} = '' OR %sapp = {app:String})", prefix)
}

// coverageRequests is a subquery with one row per production request of q's
// window: its window, route, app, segments and flags (not_shadowed,
// body_omitted, shadowed, judged). Shadowed and judged are the live
// coverage's definitions (LiveCoverage): a live candidate run whose status is
// not in notObserved, a live judgment with one of decidedOutcomes.
func (s *sqlStore) coverageRequests(q CoverageQuery) string {
	return fmt.Sprintf(`SELECT %[2]s AS window, q.route AS route, q.app AS app,
        q.language AS language, q.length_bucket AS length_bucket, q.has_table AS has_table, q.has_code AS has_code,
        q.not_shadowed != '' AS is_not_shadowed, q.body_omitted != '' AS is_omitted,
        r.observed > 0 AS is_shadowed, j.judged > 0 AS is_judged
    FROM %[1]s.requests AS q FINAL
    LEFT JOIN (
        SELECT request_id, countIf(status NOT IN %[4]s) AS observed
        FROM %[1]s.runs FINAL
        WHERE mode = '%[5]s' AND suite_run_id = '' AND request_id IN (SELECT request_id FROM %[1]s.requests WHERE %[3]s)
        GROUP BY request_id
    ) AS r ON q.request_id = r.request_id
    LEFT JOIN (
        SELECT request_id, countIf(outcome IN %[6]s) AS judged
        FROM %[1]s.judgments FINAL
        WHERE suite_run_id = '' AND canary = '' AND request_id IN (SELECT request_id FROM %[1]s.requests WHERE %[3]s)
        GROUP BY request_id
    ) AS j ON q.request_id = j.request_id
    WHERE %[7]s`, s.db, coverageWindowExpr(q, "q.received_at"), coverageCond(""), notObserved, ModeCandidate,
		decidedOutcomes, coverageCond("q."))
}

// stageSums are the aggregate columns of CoverageStage over coverageRequests.
const stageSums = `count() AS recorded, countIf(is_not_shadowed) AS not_shadowed, countIf(is_omitted) AS body_omitted,
    countIf(is_shadowed) AS shadowed, countIf(is_judged) AS judged`

// TapCoverage implements CoverageReader with four statements: the windows
// (offered counts and request rows), the segment cells, and the two reason
// lists.
func (s *sqlStore) TapCoverage(ctx context.Context, q CoverageQuery) (RecordCoverage, error) {
	var cov RecordCoverage
	if err := q.Validate(); err != nil {
		return cov, err
	}
	if err := s.check(ctx); err != nil {
		return cov, fmt.Errorf("store: coverage: %w", err)
	}
	p := coverageParams(q)
	windows, err := queryRows[coverageRow](ctx, s.t, fmt.Sprintf(`SELECT window, route, app,
    sum(offered) AS offered, sum(record_dropped) AS record_dropped, sum(recorded) AS recorded,
    sum(not_shadowed) AS not_shadowed, sum(body_omitted) AS body_omitted, sum(shadowed) AS shadowed, sum(judged) AS judged
FROM (
    SELECT %[2]s AS window, route, app, sum(offered) AS offered, sum(record_dropped) AS record_dropped,
        toUInt64(0) AS recorded, toUInt64(0) AS not_shadowed, toUInt64(0) AS body_omitted, toUInt64(0) AS shadowed, toUInt64(0) AS judged
    FROM %[1]s.tap_offered FINAL
    WHERE window_start >= {from:DateTime64(3, 'UTC')} AND window_start < {to:DateTime64(3, 'UTC')}
        AND ({app:String} = '' OR app = {app:String})
    GROUP BY window, route, app
    UNION ALL
    SELECT window, route, app, toInt64(0) AS offered, toInt64(0) AS record_dropped, %[4]s
    FROM (%[3]s)
    GROUP BY window, route, app
)
GROUP BY window, route, app
ORDER BY window, route, app`, s.db, coverageWindowExpr(q, "window_start"), s.coverageRequests(q), stageSums), p)
	if err != nil {
		return cov, fmt.Errorf("store: coverage: windows: %w", err)
	}
	segments, err := queryRows[coverageRow](ctx, s.t, fmt.Sprintf(`SELECT cell.1 AS dimension, cell.2 AS value, %[2]s
FROM (%[1]s)
ARRAY JOIN [('language', if(is_omitted, '%[3]s', language)), ('length_bucket', if(is_omitted, '%[3]s', length_bucket)),
    ('has_table', if(is_omitted, '%[3]s', if(has_table, '%[4]s', '%[5]s'))),
    ('has_code', if(is_omitted, '%[3]s', if(has_code, '%[4]s', '%[5]s')))] AS cell
GROUP BY dimension, value
ORDER BY dimension, value`, s.coverageRequests(q), stageSums, SegmentUnknown, SegmentYes, SegmentNo), p)
	if err != nil {
		return cov, fmt.Errorf("store: coverage: segments: %w", err)
	}
	reasons := func(col string) ([]ReasonCount, error) {
		rows, err := queryRows[ReasonCount](ctx, s.t, fmt.Sprintf(`SELECT %[2]s AS reason, count() AS count
FROM %[1]s.requests FINAL
WHERE %[3]s AND %[2]s != ''
GROUP BY reason
ORDER BY count DESC, reason`, s.db, col, coverageCond("")), p)
		if err != nil {
			return nil, fmt.Errorf("store: coverage: %s: %w", col, err)
		}
		return nilIfEmpty(rows), nil
	}
	if cov.NotShadowed, err = reasons("not_shadowed"); err != nil {
		return cov, err
	}
	if cov.BodyOmitted, err = reasons("body_omitted"); err != nil {
		return cov, err
	}
	for _, w := range windows {
		cov.Windows = append(cov.Windows, CoverageWindow{Window: w.Window, Route: w.Route, App: w.App, CoverageStage: w.stage()})
		cov.Total.add(w.stage())
	}
	for _, c := range segments {
		cov.Segments = append(cov.Segments, CoverageSegment{Dimension: c.Dimension, Value: c.Value, CoverageStage: c.stage()})
	}
	return cov, nil
}

// coverageRow is one row of the windows or segments statement, flat as the
// row codec reads it.
type coverageRow struct {
	Window        time.Time `json:"window"`
	Route         string    `json:"route"`
	App           string    `json:"app"`
	Dimension     string    `json:"dimension"`
	Value         string    `json:"value"`
	Offered       int64     `json:"offered"`
	RecordDropped int64     `json:"record_dropped"`
	Recorded      int64     `json:"recorded"`
	NotShadowed   int64     `json:"not_shadowed"`
	BodyOmitted   int64     `json:"body_omitted"`
	Shadowed      int64     `json:"shadowed"`
	Judged        int64     `json:"judged"`
}

func (r coverageRow) stage() CoverageStage {
	return CoverageStage{Offered: r.Offered, RecordDropped: r.RecordDropped, Recorded: r.Recorded, NotShadowed: r.NotShadowed,
		BodyOmitted: r.BodyOmitted, Shadowed: r.Shadowed, Judged: r.Judged}
}

func (c *CoverageStage) add(o CoverageStage) {
	c.Offered += o.Offered
	c.RecordDropped += o.RecordDropped
	c.Recorded += o.Recorded
	c.NotShadowed += o.NotShadowed
	c.BodyOmitted += o.BodyOmitted
	c.Shadowed += o.Shadowed
	c.Judged += o.Judged
}
