package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
)

// consoleCallerKey carries who sent a console statement, for its audit lines.
type consoleCallerKey struct{}

// WithConsoleCaller returns ctx carrying caller (a remote address, "cli"),
// which the console's audit lines name.
func WithConsoleCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, consoleCallerKey{}, caller)
}

func consoleCaller(ctx context.Context) string {
	if c, ok := ctx.Value(consoleCallerKey{}).(string); ok {
		return c
	}
	return "unknown"
}

// Query implements Store: one read statement, as the engine's own parser
// decides, checked against the console's rules (console.go) and run in its
// canonical form with the configured limits and readonly = 1. On the embedded
// engine it runs in a console worker over a snapshot of the database
// (console_worker.go; QueryResult.SnapshotAt); on a server, on the console's
// connection with max_execution_time, and a KILL QUERY when no answer came in
// time. Unqualified table names resolve in the store's database.
//
// It writes an audit line before anything runs ("console query started":
// id, caller, the statement's first 500 bytes) and one with the outcome after
// ("console query": answered, refused, busy, ended or failed; rows, ms,
// error). Errors: ErrReadOnly for anything that is not one allowed read,
// ErrQueryBusy when every console slot is taken, ErrQueryKilled when the
// statement ran to the time limit on the embedded engine, the engine's error
// (its own limits and timeouts included) otherwise.
func (s *sqlStore) Query(ctx context.Context, sql string) (QueryResult, error) {
	start := time.Now()
	id := randomID()
	caller := consoleCaller(ctx)
	if s.log != nil {
		shown := sql
		if len(shown) > 500 {
			shown = shown[:500] + "…"
		}
		s.log.Info("console query started", "id", id, "caller", caller, "sql", shown)
	}
	res, err := s.query(ctx, sql)
	if s.log != nil {
		attrs := []any{"id", id, "caller", caller, "outcome", consoleOutcome(err), "rows", len(res.Rows),
			"ms", time.Since(start).Milliseconds()}
		if !res.SnapshotAt.IsZero() {
			attrs = append(attrs, "snapshot_at", res.SnapshotAt)
		}
		level := slog.LevelInfo
		if err != nil {
			attrs = append(attrs, "error", err.Error())
			if errors.Is(err, ErrReadOnly) {
				level = slog.LevelWarn
			}
		}
		s.log.Log(context.WithoutCancel(ctx), level, "console query", attrs...)
	}
	return res, err
}

// consoleOutcome names how a console statement ended, for its audit line.
func consoleOutcome(err error) string {
	switch {
	case err == nil:
		return "answered"
	case errors.Is(err, ErrReadOnly):
		return "refused"
	case errors.Is(err, ErrQueryBusy):
		return "busy"
	case errors.Is(err, ErrQueryKilled), strings.Contains(err.Error(), "TIMEOUT_EXCEEDED"):
		return "ended"
	}
	return "failed"
}

func (s *sqlStore) query(ctx context.Context, sql string) (QueryResult, error) {
	if err := s.check(ctx); err != nil {
		return QueryResult{}, fmt.Errorf("store: query: %w", err)
	}
	if err := CheckReadOnly(sql); err != nil {
		return QueryResult{}, err
	}
	if !s.console.unchecked {
		if err := checkQuerySize(sql); err != nil {
			return QueryResult{}, err
		}
	}
	if !s.console.acquire() {
		return QueryResult{}, ErrQueryBusy
	}
	defer s.console.release()
	if e, ok := s.t.(*embedded); ok && s.consoleT == nil {
		if s.workers == nil {
			return QueryResult{}, errors.New("store: query: the embedded store has no console workers (open it with Open)")
		}
		return s.queryInWorker(ctx, e, sql)
	}
	t := s.t
	if s.consoleT != nil {
		t = s.consoleT
	}
	return s.queryOnServer(ctx, t, sql)
}

// serverKillAfter is how long past the console's time limit a server
// statement may go without an answer before the store sends KILL QUERY
// (the server's own max_execution_time should have ended it by then).
const serverKillAfter = time.Second

// queryIDKey carries the query id a console statement runs under on a
// server (server.queryText sends it), so KILL QUERY can name it.
type queryIDKey struct{}

func withQueryID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, queryIDKey{}, id)
}

func queryIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(queryIDKey{}).(string)
	return id
}

// killQuerySQL ends the statement running under query id id on the server
// (ASYNC: the kill is asked for, not waited for).
func killQuerySQL(id string) string {
	return "KILL QUERY WHERE query_id = " + quoteString(id) + " ASYNC"
}

// queryOnServer checks sql on t (the console's connection) and runs it under
// a query id of its own with the limits appended. When no answer came within
// the time limit plus serverKillAfter (or the caller gave up), the store's
// own connection sends KILL QUERY for that id, so the server stops working
// on it.
func (s *sqlStore) queryOnServer(ctx context.Context, t transport, sql string) (QueryResult, error) {
	limit := s.queryLimits.timeout
	qctx, cancel := context.WithTimeout(ctx, limit+serverKillAfter)
	defer cancel()
	canon, err := s.console.check(qctx, t, sql)
	if err != nil {
		return QueryResult{}, err
	}
	stmt := s.console.statement(canon, s.queryLimits)
	if c, ok := t.(statementClassifier); ok {
		if err := c.checkOneRead(qctx, stmt); err != nil {
			return QueryResult{}, err
		}
	}
	id := "console-" + randomID()
	if s.onStatement != nil {
		s.onStatement()
	}
	res, err := t.queryText(withQueryID(qctx, id), stmt)
	if err != nil && qctx.Err() != nil {
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer kcancel()
		if kerr := s.t.exec(kctx, killQuerySQL(id), nil); kerr != nil {
			return QueryResult{}, fmt.Errorf("%w (no answer within %v; KILL QUERY %s failed: %v)", ErrQueryKilled, limit+serverKillAfter, id, kerr)
		}
		return QueryResult{}, fmt.Errorf("%w (no answer within %v; KILL QUERY sent for %s)", ErrQueryKilled, limit+serverKillAfter, id)
	}
	if err != nil {
		return QueryResult{}, engineQueryError(err)
	}
	return res, nil
}

// randomID is 12 hex digits of crypto/rand.
func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ErrStalled: a statement has been inside the store's engine, or a caller
// has waited for the engine, longer than stalled_after.
var ErrStalled = errors.New("store: stalled")

// EngineHealth is a store that can tell whether its engine is stuck (the
// embedded engine runs one statement at a time: one that does not end holds
// every write and read behind it).
type EngineHealth interface {
	// Stalled returns an error wrapping ErrStalled that names the statement
	// (its first words) and how long it ran, or how long the longest caller
	// waited, when either passed stalled_after; nil otherwise.
	Stalled() error
}

var _ EngineHealth = (*sqlStore)(nil)

// Stalled implements EngineHealth; always nil on a server (its own
// concurrency is the server's).
func (s *sqlStore) Stalled() error {
	e, ok := s.t.(*embedded)
	if !ok || s.stallAfter <= 0 {
		return nil
	}
	call, running, waiting, since := e.ref.InFlight()
	now := time.Now()
	if running && now.Sub(call.Since) > s.stallAfter {
		return fmt.Errorf("%w: %q has been inside the engine for %v, %d call(s) waiting", ErrStalled, call.Label,
			now.Sub(call.Since).Round(time.Millisecond), waiting)
	}
	if waiting > 0 && now.Sub(since) > s.stallAfter {
		return fmt.Errorf("%w: a call has waited %v for the engine", ErrStalled, now.Sub(since).Round(time.Millisecond))
	}
	return nil
}

// ErrAbandoned: Shutdown's deadline came while a statement was still inside
// the embedded engine; the store gave up waiting for it.
var ErrAbandoned = errors.New("store: abandoned a statement still inside the engine")

// defaultCloseTimeout bounds Close; Shutdown takes the caller's deadline.
const defaultCloseTimeout = 10 * time.Second

// Close implements Store: Shutdown within defaultCloseTimeout.
func (s *sqlStore) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), defaultCloseTimeout)
	defer cancel()
	return s.Shutdown(ctx)
}

// Shutdown implements Store: it kills the console workers still running and
// releases the transport within ctx. On the embedded engine the last store
// closes the engine; a statement still inside it at ctx's end is abandoned
// (it cannot be interrupted; the process ends it), logged and reported in an
// error wrapping ErrAbandoned that names it and counts it. Safe to call twice.
func (s *sqlStore) Shutdown(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	if s.workers != nil {
		if n := s.workers.killAll(); n > 0 && s.log != nil {
			s.log.Warn("store: closed with console statements still running; their workers were killed", "statements", n)
		}
	}
	if e, ok := s.t.(*embedded); ok {
		if err := e.closeWithin(ctx); err != nil {
			if errors.Is(err, chdb.ErrAbandoned) {
				err = fmt.Errorf("%w: 1 statement abandoned: %v", ErrAbandoned, err)
				if s.log != nil {
					s.log.Error("store: closed without waiting for the statement inside the engine; it ends with the process", "abandoned", 1, "err", err)
				}
			}
			errs = append(errs, err)
		}
	} else if err := s.t.close(); err != nil {
		errs = append(errs, err)
	}
	if s.consoleT != nil {
		errs = append(errs, s.consoleT.close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}
