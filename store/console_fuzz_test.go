package store

import (
	"context"
	"errors"
	"flag"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingTransport passes every statement to the transport it wraps (if
// any) and keeps its text.
type recordingTransport struct {
	transport
	mu   sync.Mutex
	seen []string
}

func (r *recordingTransport) record(sql string) {
	r.mu.Lock()
	r.seen = append(r.seen, sql)
	r.mu.Unlock()
}

func (r *recordingTransport) exec(ctx context.Context, sql string, params Params) error {
	r.record(sql)
	if r.transport == nil {
		return nil // recording only
	}
	return r.transport.exec(ctx, sql, params)
}

func (r *recordingTransport) queryJSON(ctx context.Context, sql string, params Params) ([][]byte, error) {
	r.record(sql)
	return r.transport.(jsonQuerier).queryJSON(ctx, sql, params)
}

func (r *recordingTransport) queryText(ctx context.Context, sql string) (QueryResult, error) {
	r.record(sql)
	return r.transport.queryText(ctx, sql)
}

func (r *recordingTransport) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// FuzzConsoleCheck feeds Store.Query mutated statements on the real engine and
// asserts that nothing but single reads of the database reached the console
// worker's engine: the engine's own parser (chdb_classify_query_n)
// classifies every text the console sent as one read-only statement; what
// the console answers (rows, column names, errors) never shows the token of
// a canary file; the engine opens no connection to a canary TCP listener nor
// sends an HTTP request; and the schema is intact afterwards. Seeds:
// testdata/fuzz/FuzzConsoleCheck, and when fuzzing (-fuzz) also the attack
// and read lists of console_test.go (with {CANARY}, {TCP}, {URL} expanded to
// the canaries). Without -fuzz those lists are not run here a second time:
// TestConsoleRefusesAttacks and TestConsoleAnswersReads run each of them
// through the same checks (checkConsoleAnswer).
func FuzzConsoleCheck(f *testing.F) {
	if fuzzing() {
		for _, q := range consoleAttacks {
			f.Add(q)
		}
		for _, q := range consoleReads {
			f.Add(q)
		}
	}
	fx := newConsoleFixture(f)
	check, ok := fx.recordWorkerSQL()
	if !ok {
		f.Skip("the fuzz target needs the embedded engine")
	}
	s := fx.s
	s.queryLimits = queryLimits{timeout: 2 * time.Second, maxRows: 1000, maxRowsRead: 10_000_000, maxMemory: 256 << 20}
	f.Fuzz(func(t *testing.T, sql string) {
		sql = fx.expand(sql)
		res, err := s.Query(context.Background(), sql)
		check(t, sql, res, err)
		fx.intact(t, sql)
	})
}

// fuzzing says whether the test binary runs a fuzz target's fuzzing (-fuzz),
// not only its seed corpus.
func fuzzing() bool {
	fl := flag.Lookup("test.fuzz")
	return fl != nil && fl.Value.String() != ""
}

// recordWorkerSQL records every statement fx's store sends to a console
// worker and returns the check of one Query's answer: nothing leaked
// (consoleFixture.leaked); the engine's own parser classifies each statement
// the console sent as one read-only statement; an error is the console's
// (ErrReadOnly, ErrQueryBusy or wrapped "store: query"). ok is false off the
// embedded engine.
func (fx consoleFixture) recordWorkerSQL() (check func(t *testing.T, sql string, res QueryResult, err error), ok bool) {
	emb, ok := fx.s.t.(*embedded)
	if !ok {
		return nil, false
	}
	rec := &recordingTransport{}
	fx.s.onWorkerSQL = rec.record
	return func(t *testing.T, sql string, res QueryResult, err error) {
		t.Helper()
		fx.leaked(t, sql, res, err)
		for _, sent := range rec.take() {
			a, cerr := emb.ref.Classify(context.Background(), sent)
			if cerr != nil {
				t.Fatalf("classify %q: %v", sent, cerr)
			}
			if a.Statements != 1 || a.Class != 0 {
				t.Fatalf("Query(%q) (err %v) sent %q to the engine: %d statement(s) of class %d", sql, err, sent, a.Statements, a.Class)
			}
		}
		if err != nil && !errors.Is(err, ErrReadOnly) && !errors.Is(err, ErrQueryBusy) && !strings.Contains(err.Error(), "store: query") {
			t.Fatalf("Query(%q): unwrapped error %v", sql, err)
		}
	}, true
}
