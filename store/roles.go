package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotSupported: the store does not have a role a consumer needs (see
// NotSupported); a page or command that needs it says so instead of showing
// less.
var ErrNotSupported = errors.New("store: not supported")

// The roles below are the narrow interfaces each consumer takes, in the manner
// of Jaeger's spanstore.Reader and spanstore.Writer: the batched Writer and
// ingest's StoreWriter take a TraceWriter, the store-first queue a WorkStore,
// the suite runner a TraceWriter, a SuiteWriter, an EvalHistory and an
// OverviewReader, each web page the readers it shows, the console a Console.
// NewRoles resolves them. Times are UTC, durations ms, money USD, tokens counts,
// as in the record types (model.go).

// TraceWriter writes what a trace holds. Every call is synchronous and
// idempotent on the record's key; a failed INSERT returns the transport's
// error wrapped with the table ("store: insert runs: …"), ErrClosed after Close.
type TraceWriter interface {
	// InsertRequests stores tapped or suite requests, keyed by RequestID.
	InsertRequests(ctx context.Context, reqs []Request) error
	// InsertRuns stores runs, keyed by RunID.
	InsertRuns(ctx context.Context, runs []Run) error
	// InsertSteps stores steps, keyed by (RunID, Index).
	InsertSteps(ctx context.Context, steps []Step) error
	// InsertScores stores grader scores, keyed by (SuiteRunID, RunID, Grader).
	InsertScores(ctx context.Context, scores []Score) error
	// InsertWork stores shadow work rows, keyed by (RequestID, Pipeline,
	// PipelineVersion); a later write replaces the state (pending → done).
	InsertWork(ctx context.Context, work []Work) error
}

// WorkReader reads back the shadow work the store-first queue owes.
type WorkReader interface {
	// StoredRequests returns which of ids already have a request row (any order).
	StoredRequests(ctx context.Context, ids []string) ([]string, error)
	// PendingWork returns up to limit requests (oldest received first, after
	// cursor) that still owe a candidate run: a pending Work row with no stored
	// run of that candidate version other than a cancelled one. Requests whose
	// row is missing are left out.
	PendingWork(ctx context.Context, after WorkCursor, limit int) ([]PendingRequest, error)
}

// RunLookup tells a shadow worker of an at-least-once transport (Kafka) what a
// re-delivered request already has, so no candidate version is run (paid for)
// twice.
type RunLookup interface {
	// FinishedRuns returns the candidate versions (pipeline, version) that have
	// a stored live run of requestID other than a cancelled one, sorted; none
	// when the request has none.
	FinishedRuns(ctx context.Context, requestID string) ([]WorkKey, error)
}

// WorkStore is the store-first queue's role: it writes records and reads back
// the work still owed.
type WorkStore interface {
	TraceWriter
	WorkReader
}

// SuiteWriter writes suite runs and their case snapshots.
type SuiteWriter interface {
	// InsertSuiteRuns stores suite runs, keyed by SuiteRunID; a later write
	// with the same id replaces the earlier one (status updates).
	InsertSuiteRuns(ctx context.Context, runs []SuiteRun) error
	// InsertCases stores a suite run's case snapshot, keyed by (SuiteRunID, CaseID).
	InsertCases(ctx context.Context, cases []Case) error
}

// TraceReader reads traces: the search with its filters and one trace with
// everything recorded for it.
type TraceReader interface {
	// SearchTraces returns trace summaries, newest first by (ReceivedAt,
	// RequestID), filtered by q and paginated by keyset (q.Before,
	// q.BeforeID), at most ClampLimit(q.Limit). An invalid q returns its
	// Validate error.
	SearchTraces(ctx context.Context, q TraceSearch) ([]TraceSummary, error)
	// GetTrace returns one request with all its runs, steps and scores;
	// ErrNotFound when no request has that id.
	GetTrace(ctx context.Context, requestID string) (Trace, error)
}

// SuiteReader reads suite runs.
type SuiteReader interface {
	// ListSuiteRuns returns suite runs, newest first, at most limit (default 50).
	ListSuiteRuns(ctx context.Context, limit int) ([]SuiteRun, error)
	// GetSuiteRun returns one suite run; ErrNotFound when absent.
	GetSuiteRun(ctx context.Context, suiteRunID string) (SuiteRun, error)
}

// Console runs the SQL console's read-only statements.
type Console interface {
	// Query runs one read-only SQL statement and returns column names and rows
	// as text (ClickHouse's TSV rendering of each value). ErrReadOnly for
	// anything that is not one allowed read (console.go), ErrQueryBusy when
	// every console slot is taken, the engine's error (limits, timeout) otherwise.
	Query(ctx context.Context, sql string) (QueryResult, error)
}

// OverviewReader computes the overview: counts, per-pipeline totals and
// series, agreement (OverviewAnalytics), where the stored traffic is in
// time, which the default window follows (TrafficClock), and its histogram
// and coverage charts (OverviewChartReader).
type OverviewReader interface {
	OverviewAnalytics
	TrafficClock
	OverviewChartReader
}

// SubjectEraser (forget.go) is the role of `forget` and POST /api/forget;
// RunComparer and WorkerReader (analytics.go) those of the comparison pages
// and the workers page; SegmentReader (segments.go) that of the shift page
// and a report's shift section.

// The SQL stores have every role.
var (
	_ TraceWriter    = (*sqlStore)(nil)
	_ WorkStore      = (*sqlStore)(nil)
	_ RunLookup      = (*sqlStore)(nil)
	_ SuiteWriter    = (*sqlStore)(nil)
	_ TraceReader    = (*sqlStore)(nil)
	_ SuiteReader    = (*sqlStore)(nil)
	_ Console        = (*sqlStore)(nil)
	_ OverviewReader = (*sqlStore)(nil)
	_ RunComparer    = (*sqlStore)(nil)
	_ WorkerReader   = (*sqlStore)(nil)
	_ EvalHistory    = (*sqlStore)(nil)
	_ SubjectEraser  = (*sqlStore)(nil)
	_ LiveReader     = (*sqlStore)(nil)
	_ LookStore      = (*sqlStore)(nil)
	_ PlanReader     = (*sqlStore)(nil)
	_ CoverageWriter = (*sqlStore)(nil)
	_ CoverageReader = (*sqlStore)(nil)
	_ FlowReader     = (*sqlStore)(nil)
)

// Roles are the roles of one opened store, resolved once by NewRoles (the
// factory of the pattern: Jaeger's storage.Factory) where the program is
// wired; each consumer is handed the fields it uses as typed dependencies.
// The roles every Store has (TraceWriter, WorkStore, SuiteWriter,
// SuiteReader, Console) are set for any store; the others are set when the
// store implements them and nil otherwise (both SQL transports, embedded and
// server, have every role). A consumer that needs a nil role refuses at
// wiring, or answers that it cannot, with NotSupported naming the role —
// never with a page or report that quietly shows less. Roles does not own
// the store (close the Store).
type Roles struct {
	TraceWriter TraceWriter
	WorkStore   WorkStore
	SuiteWriter SuiteWriter
	SuiteReader SuiteReader
	Console     Console

	TraceReader    TraceReader    // the traces pages; nil when the store cannot search
	OverviewReader OverviewReader // the overview, suite runs' traffic per day
	RunComparer    RunComparer    // a suite run's cases, the comparison pages
	WorkerReader   WorkerReader   // the workers page
	EvalHistory    EvalHistory    // suite runs, `export rewards`, `set build`
	SegmentReader  SegmentReader  // the shift page, a report's shift section
	SubjectEraser  SubjectEraser  // `forget`, POST /api/forget
	ForgetLookup   ForgetLookup   // the shadow workers: forgotten subjects
	RunLookup      RunLookup      // the shadow workers: runs already stored
	VerdictNotices VerdictNotices // the verdict notifications' state
	JudgmentWriter JudgmentWriter // suite runs' pairwise judgments and canaries
	JudgmentReader JudgmentReader // a trace's judgments, a judge's figures
	ReviewWriter   ReviewWriter   // the review page's labels: the web UI's only write
	ReviewReader   ReviewReader   // the review sample, judge–human agreement, `review export`
	LiveReader     LiveReader     // the live verdicts: sequences, observations, coverage, the live judge's record
	LookStore      LookStore      // suite runs: the looks of group-sequential plans
	// LiveJudgments: live judging's day spend (the judge budget across
	// restarts) and live judges' figures (the trace list, the live verdict).
	LiveJudgments LiveJudgmentReader
	// PlanReader: the plans page (plan shapes, attribution, drift, diff).
	PlanReader PlanReader
	// Coverage: the tap's offered counts (CoverageWriter) and what became of
	// the exchanges (CoverageReader: the overview, the live verdict).
	CoverageWriter CoverageWriter
	CoverageReader CoverageReader
	// FlowReader and FlowExportWriter keep the record of data flows: what
	// left the platform, read by the data-flows page, report section and
	// command; the exporters' counts written by store/dataflow.Meter.
	FlowReader       FlowReader
	FlowExportWriter FlowExportWriter
}

// NewRoles resolves the roles of st, once. A nil st gives Roles with every
// role nil.
func NewRoles(st Store) Roles {
	if st == nil {
		return Roles{}
	}
	r := Roles{TraceWriter: st, WorkStore: st, SuiteWriter: st, SuiteReader: st, Console: st}
	r.TraceReader, _ = st.(TraceReader)
	r.OverviewReader, _ = st.(OverviewReader)
	r.RunComparer, _ = st.(RunComparer)
	r.WorkerReader, _ = st.(WorkerReader)
	r.EvalHistory, _ = st.(EvalHistory)
	r.SegmentReader, _ = st.(SegmentReader)
	r.SubjectEraser, _ = st.(SubjectEraser)
	r.ForgetLookup, _ = st.(ForgetLookup)
	r.RunLookup, _ = st.(RunLookup)
	r.VerdictNotices, _ = st.(VerdictNotices)
	r.JudgmentWriter, _ = st.(JudgmentWriter)
	r.JudgmentReader, _ = st.(JudgmentReader)
	r.ReviewWriter, _ = st.(ReviewWriter)
	r.ReviewReader, _ = st.(ReviewReader)
	r.LiveReader, _ = st.(LiveReader)
	r.LookStore, _ = st.(LookStore)
	r.LiveJudgments, _ = st.(LiveJudgmentReader)
	r.PlanReader, _ = st.(PlanReader)
	r.CoverageWriter, _ = st.(CoverageWriter)
	r.CoverageReader, _ = st.(CoverageReader)
	r.FlowReader, _ = st.(FlowReader)
	r.FlowExportWriter, _ = st.(FlowExportWriter)
	return r
}

// NotSupported is the error of a consumer handed no role it needs: it names
// the role ("store: no store.OverviewReader: store: not supported") and wraps
// ErrNotSupported.
func NotSupported(role string) error {
	return fmt.Errorf("store: no %s: %w", role, ErrNotSupported)
}
