// Package store keeps every trace of conductor-shadow in ClickHouse: the tapped
// requests, the incumbent's and candidates' runs, each run's steps (worker calls),
// grader scores, suite runs and regression-set case snapshots.
//
// One SQL dialect runs on two transports: the embedded chDB engine (libchdb, the
// default, data in a local folder) and a ClickHouse server through clickhouse-go/v2.
// Tables are ReplacingMergeTree keyed by their natural ids, and every read that
// counts uses FINAL, so writing the same record twice never double-counts.
package store

import (
	"context"
	"errors"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrNotFound: the requested trace, run or suite run does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrEngineMissing: the embedded engine (libchdb.so) could not be loaded.
	ErrEngineMissing = errors.New("store: libchdb not found (run `make libchdb` or set CHDB_LIB_PATH)")
	// ErrReadOnly: a statement given to Query is not one read the console
	// allows (SELECT, WITH, SHOW TABLES, DESCRIBE, EXPLAIN of this database,
	// without settings, files, URLs or other servers; see console.go).
	ErrReadOnly = errors.New("store: only read-only statements are allowed")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// Store is the storage contract every other package uses. Implementations are safe
// for concurrent use. Insert* calls are synchronous and idempotent on the record's
// key (see each type); use Writer for batched, asynchronous writes.
type Store interface {
	// InsertRequests stores tapped or suite requests, keyed by RequestID.
	InsertRequests(ctx context.Context, reqs []Request) error
	// InsertRuns stores runs, keyed by RunID.
	InsertRuns(ctx context.Context, runs []Run) error
	// InsertSteps stores steps, keyed by (RunID, Index).
	InsertSteps(ctx context.Context, steps []Step) error
	// InsertScores stores grader scores, keyed by (SuiteRunID, RunID, Grader).
	InsertScores(ctx context.Context, scores []Score) error
	// InsertSuiteRuns stores suite runs, keyed by SuiteRunID; a later write with the
	// same id replaces the earlier one (status updates).
	InsertSuiteRuns(ctx context.Context, runs []SuiteRun) error
	// InsertWork stores shadow work rows, keyed by (RequestID, Pipeline,
	// PipelineVersion); a later write replaces the state (pending → done).
	InsertWork(ctx context.Context, work []Work) error
	// StoredRequests returns which of ids already have a request row (any order).
	StoredRequests(ctx context.Context, ids []string) ([]string, error)
	// PendingWork returns up to limit requests (oldest received first, after
	// cursor) that still owe a candidate run: a pending Work row with no stored
	// run of that candidate version other than a cancelled one. Requests whose
	// row is missing are left out.
	PendingWork(ctx context.Context, after WorkCursor, limit int) ([]PendingRequest, error)
	// InsertCases stores the snapshot of a suite run's regression-set cases, keyed by
	// (SuiteRunID, CaseID).
	InsertCases(ctx context.Context, cases []Case) error

	// ListTraces returns trace summaries, newest first, filtered and paginated by f.
	ListTraces(ctx context.Context, f TraceFilter) ([]TraceSummary, error)
	// GetTrace returns one request with all its runs, steps and scores.
	// ErrNotFound when no request has that id.
	GetTrace(ctx context.Context, requestID string) (Trace, error)
	// ListSuiteRuns returns suite runs, newest first, at most limit (default 50).
	ListSuiteRuns(ctx context.Context, limit int) ([]SuiteRun, error)
	// GetSuiteRun returns one suite run. ErrNotFound when absent.
	GetSuiteRun(ctx context.Context, suiteRunID string) (SuiteRun, error)
	// Query runs one read-only SQL statement (the SQL console) and returns
	// column names and rows as text (ClickHouse's TSV rendering of each value).
	// ErrReadOnly for anything that is not one allowed read, ErrQueryBusy when
	// every console slot is taken, the engine's error (limits, timeout) otherwise.
	Query(ctx context.Context, sql string) (QueryResult, error)

	// Close flushes nothing (Store is synchronous) and releases the transport.
	// Safe to call twice.
	Close() error
}

// QueryResult is the answer to Store.Query: column names and rows of text values.
type QueryResult struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}
