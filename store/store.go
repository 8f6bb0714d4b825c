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
	"time"
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

// Store is what a transport opens (OpenEmbedded, OpenServer): the roles every
// store has, and Close. Consumers do not take a Store: resolve its roles once
// with NewRoles and give each consumer the narrow roles it uses (roles.go); a
// role a store lacks is nil there and its consumer says so (NotSupported),
// never a quietly degraded page. Implementations are safe for concurrent use. Insert* calls
// are synchronous and idempotent on the record's key (see each type); use
// Writer for batched, asynchronous writes.
type Store interface {
	TraceWriter
	WorkReader
	SuiteWriter
	SuiteReader
	Console

	// GetTrace returns one request with all its runs, steps and scores.
	// ErrNotFound when no request has that id.
	GetTrace(ctx context.Context, requestID string) (Trace, error)

	// Close flushes nothing (Store is synchronous) and releases the
	// transport: Shutdown within 10 s. Safe to call twice.
	Close() error
	// Shutdown releases the transport within ctx: console statements still
	// running are ended, and on the embedded engine a statement still inside
	// the engine at ctx's end is abandoned (ErrAbandoned, logged) rather than
	// waited for, so a stop never hangs past its deadline. Safe to call twice.
	Shutdown(ctx context.Context) error
}

// QueryResult is the answer to Console.Query: column names and rows of text values.
type QueryResult struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// SnapshotAt is when the tables the answer read were frozen (UTC): on the
	// embedded engine the console reads a snapshot taken as the statement
	// starts, so rows written after it are not in the answer. Zero on a
	// ClickHouse server, where the console reads the live tables.
	SnapshotAt time.Time `json:"snapshot_at,omitzero"`
}
