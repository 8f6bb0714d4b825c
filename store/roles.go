package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotSupported: the store does not have the role asked of Roles. The
// returned error names the role (e.g. "store: *x.y has no store.OverviewReader:
// store: not supported"); a page or command that needs it says so instead of
// showing less.
var ErrNotSupported = errors.New("store: not supported")

// The roles below are the narrow interfaces each consumer takes, in the manner
// of Jaeger's spanstore.Reader and spanstore.Writer: the batched Writer and
// ingest's StoreWriter take a TraceWriter, the store-first queue a WorkStore,
// the suite runner a TraceWriter, a SuiteWriter, an EvalHistory and an
// OverviewReader, each web page the readers it shows, the console a Console.
// Roles hands them out. Times are UTC, durations ms, money USD, tokens counts,
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

// TraceReader reads traces: the list, the search with its filters and one
// trace with everything recorded for it.
type TraceReader interface {
	// ListTraces returns trace summaries, newest first, filtered and paginated by f.
	ListTraces(ctx context.Context, f TraceFilter) ([]TraceSummary, error)
	// SearchTraces returns trace summaries, newest first by (ReceivedAt,
	// RequestID), filtered by q and paginated by keyset, at most
	// ClampLimit(q.Limit). An invalid q returns its Validate error.
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
// series (OverviewAnalytics) and the agreement sequence live verdicts are
// computed from (LiveAgreement).
type OverviewReader interface {
	OverviewAnalytics
	LiveAgreement
}

// RunComparer is the role of the comparison pages: one run with its steps and
// a suite run's scores (Comparisons).
type RunComparer = Comparisons

// SubjectEraser (forget.go) is the role of `forget` and POST /api/forget.

// WorkerReader is the role of the worker-usage page (WorkerAnalytics).
type WorkerReader = WorkerAnalytics

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
	_ LookStore      = (*sqlStore)(nil)
)

// Roles hands out the roles of one opened store (the factory of the pattern:
// Jaeger's storage.Factory). The roles every Store has (TraceWriter,
// WorkStore, SuiteWriter, SuiteReader, Console) are always there; TraceReader,
// OverviewReader, RunComparer, WorkerReader and EvalHistory are there when the
// store implements them, and SubjectEraser when the store can erase a data
// subject; both SQL transports (embedded and server) have every role. A role
// the store lacks answers an error wrapping ErrNotSupported that names it;
// every role of a Roles without a store answers an error too. Roles is a
// small value: copy it freely; it does not own the store (close the Store).
type Roles struct {
	st Store
}

// NewRoles returns the roles of st.
func NewRoles(st Store) Roles { return Roles{st: st} }

// errNoStore: a Roles made without a store.
var errNoStore = errors.New("store: roles of a nil store")

// role returns v as T, or the error naming the missing role name.
func role[T any](r Roles, name string) (T, error) {
	var zero T
	if r.st == nil {
		return zero, errNoStore
	}
	v, ok := r.st.(T)
	if !ok {
		return zero, fmt.Errorf("store: %T has no %s: %w", r.st, name, ErrNotSupported)
	}
	return v, nil
}

// TraceWriter returns the store's TraceWriter.
func (r Roles) TraceWriter() (TraceWriter, error) { return role[TraceWriter](r, "store.TraceWriter") }

// WorkStore returns the store's WorkStore.
func (r Roles) WorkStore() (WorkStore, error) { return role[WorkStore](r, "store.WorkStore") }

// ForgetLookup returns the store's ForgetLookup; ErrNotSupported when absent.
func (r Roles) ForgetLookup() (ForgetLookup, error) {
	return role[ForgetLookup](r, "store.ForgetLookup")
}

// RunLookup returns the store's RunLookup; ErrNotSupported when absent.
func (r Roles) RunLookup() (RunLookup, error) { return role[RunLookup](r, "store.RunLookup") }

// SuiteWriter returns the store's SuiteWriter.
func (r Roles) SuiteWriter() (SuiteWriter, error) { return role[SuiteWriter](r, "store.SuiteWriter") }

// TraceReader returns the store's TraceReader; ErrNotSupported when it cannot search.
func (r Roles) TraceReader() (TraceReader, error) { return role[TraceReader](r, "store.TraceReader") }

// SuiteReader returns the store's SuiteReader.
func (r Roles) SuiteReader() (SuiteReader, error) { return role[SuiteReader](r, "store.SuiteReader") }

// Console returns the store's Console.
func (r Roles) Console() (Console, error) { return role[Console](r, "store.Console") }

// OverviewReader returns the store's OverviewReader; ErrNotSupported when absent.
func (r Roles) OverviewReader() (OverviewReader, error) {
	return role[OverviewReader](r, "store.OverviewReader")
}

// RunComparer returns the store's RunComparer; ErrNotSupported when absent.
func (r Roles) RunComparer() (RunComparer, error) { return role[RunComparer](r, "store.RunComparer") }

// WorkerReader returns the store's WorkerReader; ErrNotSupported when absent.
func (r Roles) WorkerReader() (WorkerReader, error) {
	return role[WorkerReader](r, "store.WorkerReader")
}

// EvalHistory returns the store's EvalHistory; ErrNotSupported when absent.
func (r Roles) EvalHistory() (EvalHistory, error) { return role[EvalHistory](r, "store.EvalHistory") }

// SegmentReader returns the store's SegmentAnalytics (the segment mix of live
// traffic); ErrNotSupported when absent.
func (r Roles) SegmentReader() (SegmentAnalytics, error) {
	return role[SegmentAnalytics](r, "store.SegmentAnalytics")
}

// SubjectEraser returns the store's SubjectEraser; ErrNotSupported when absent.
func (r Roles) SubjectEraser() (SubjectEraser, error) {
	return role[SubjectEraser](r, "store.SubjectEraser")
}

// LookStore returns the store's LookStore (group-sequential looks of suite
// runs); ErrNotSupported when absent.
func (r Roles) LookStore() (LookStore, error) { return role[LookStore](r, "store.LookStore") }
