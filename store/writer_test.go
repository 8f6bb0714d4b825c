package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// flaky wraps a store: the first failN inserts fail, and every insert's table is
// recorded in order.
type flaky struct {
	store.Store
	mu     sync.Mutex
	failN  int
	block  bool // inserts wait for ctx to end
	tables []string
}

func (f *flaky) do(ctx context.Context, table string, insert func() error) error {
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	f.mu.Lock()
	f.tables = append(f.tables, table)
	fail := f.failN > 0
	if fail {
		f.failN--
	}
	f.mu.Unlock()
	if fail {
		return errors.New("injected failure")
	}
	return insert()
}

func (f *flaky) InsertRequests(ctx context.Context, r []store.Request) error {
	return f.do(ctx, "requests", func() error { return f.Store.InsertRequests(ctx, r) })
}
func (f *flaky) InsertRuns(ctx context.Context, r []store.Run) error {
	return f.do(ctx, "runs", func() error { return f.Store.InsertRuns(ctx, r) })
}
func (f *flaky) InsertSteps(ctx context.Context, s []store.Step) error {
	return f.do(ctx, "steps", func() error { return f.Store.InsertSteps(ctx, s) })
}
func (f *flaky) InsertScores(ctx context.Context, s []store.Score) error {
	return f.do(ctx, "scores", func() error { return f.Store.InsertScores(ctx, s) })
}

func fixtureBatch(id string) store.Batch {
	f := storetest.NewFixture(id, storetest.T0())
	return store.Batch{Requests: []store.Request{f.Request}, Runs: f.Runs, Steps: f.Steps, Scores: f.Scores}
}

// The writer tests share one embedded store (an open costs about a second): each
// subtest writes request ids under a prefix of its own (its name) and counts only
// those, so what it sees is what its writer stored.

// idOf is request id id in t's share of the shared store.
func idOf(t testing.TB, id string) string { return t.Name() + "/" + id }

// batchOf is fixtureBatch under t's prefix.
func batchOf(t testing.TB, id string) store.Batch { return fixtureBatch(idOf(t, id)) }

// stored counts the distinct records (the last write of each key, after FINAL)
// st holds under t's prefix; the fixture's run ids start with its request id.
func stored(t testing.TB, st store.Console) storetest.Counts {
	t.Helper()
	p := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(t.Name()+"/") + "'"
	res, err := st.Query(context.Background(), fmt.Sprintf(`SELECT
		(SELECT count() FROM requests FINAL WHERE startsWith(request_id, %[1]s)),
		(SELECT count() FROM runs FINAL WHERE startsWith(request_id, %[1]s)),
		(SELECT count() FROM steps FINAL WHERE startsWith(run_id, %[1]s)),
		(SELECT count() FROM scores FINAL WHERE startsWith(request_id, %[1]s))`, p))
	if err != nil || len(res.Rows) != 1 || len(res.Rows[0]) != 4 {
		t.Fatalf("count stored rows: %v (%+v)", err, res)
	}
	var n [4]int
	for i, v := range res.Rows[0] {
		if _, err := fmt.Sscan(v, &n[i]); err != nil {
			t.Fatalf("count stored rows: column %d %q: %v", i, v, err)
		}
	}
	return storetest.Counts{Requests: n[0], Runs: n[1], Steps: n[2], Scores: n[3]}
}

// fixture rows: 1 request + 3 runs + 4 steps + 2 scores
const fixtureRows = 10

func writerConfig() store.WriterConfig {
	return store.WriterConfig{BatchSize: 1000, BatchBytes: 1 << 30, FlushInterval: time.Hour, QueueSize: 16, MaxRetries: 3, RetryInitial: time.Millisecond}
}

// newWriter builds a writer on st that logs into the test's log.
func newWriter(t testing.TB, st store.Store, cfg store.WriterConfig) *store.Writer {
	t.Helper()
	w, err := store.NewWriter(st, cfg, slog.New(slog.NewTextHandler(tlog{t}, nil)))
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	return w
}

// tlog writes log lines to the test's log.
type tlog struct{ t testing.TB }

func (l tlog) Write(p []byte) (int, error) { l.t.Log(strings.TrimSpace(string(p))); return len(p), nil }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // generous: the engine shares the machine
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func shutdown(t *testing.T, w *store.Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// The writer's behaviour on the embedded engine, one subtest per case on one
// shared store (see stored).
func TestWriter(t *testing.T) {
	st := store.OpenTestStore(t)
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, st store.Store)
	}{
		{"FlushesOnSize", writerFlushesOnSize},
		{"FlushesOnBytes", writerFlushesOnBytes},
		{"FlushesOnInterval", writerFlushesOnInterval},
		{"QueueFullNeverBlocks", writerQueueFullNeverBlocks},
		{"ShutdownDrainsAndIsIdempotent", writerShutdownDrainsAndIsIdempotent},
		{"RetriesThenDrops", writerRetriesThenDrops},
		{"InsertsRequestsBeforeRuns", writerInsertsRequestsBeforeRuns},
		{"ShutdownDeadline", writerShutdownDeadline},
		{"RedeliveryStoredOnce", writerRedeliveryStoredOnce},
		{"OutlivesStartContext", writerOutlivesStartContext},
		{"LossIsLoggedAndVisible", writerLossIsLoggedAndVisible},
		{"HoldsBackWorkMarksOfDroppedRuns", writerHoldsBackWorkMarksOfDroppedRuns},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, st) })
	}
}

func writerFlushesOnSize(t *testing.T, st store.Store) {
	cfg := writerConfig()
	cfg.BatchSize = 2 * fixtureRows
	w := newWriter(t, st, cfg)
	w.Start(context.Background())
	defer shutdown(t, w)
	if err := w.Enqueue(batchOf(t, "a")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if c := stored(t, st); c != (storetest.Counts{}) {
		t.Fatalf("flushed below BatchSize: %+v", c)
	}
	if err := w.Enqueue(batchOf(t, "b")); err != nil {
		t.Fatal(err)
	}
	// Flushes counts a flush once all its tables' INSERTs returned.
	waitFor(t, "size-triggered flush", func() bool { return w.Stats().Flushes > 0 })
	if s := w.Stats(); s.Written != 2*fixtureRows || s.Queued != 0 || s.Flushes != 1 {
		t.Errorf("stats = %+v; want 20 written, 0 queued, 1 flush", s)
	}
	if c, want := stored(t, st), (storetest.Counts{Requests: 2, Runs: 6, Steps: 8, Scores: 4}); c != want {
		t.Errorf("stored after the size-triggered flush = %+v; want %+v", c, want)
	}
}

// writerFlushesOnBytes: rows far below BatchSize are flushed once their
// text reaches BatchBytes.
func writerFlushesOnBytes(t *testing.T, st store.Store) {
	a, b := batchOf(t, "a"), batchOf(t, "b")
	cfg := writerConfig()
	cfg.BatchSize = 1 << 20
	cfg.BatchBytes = a.TextBytes() + b.TextBytes()
	w := newWriter(t, st, cfg)
	w.Start(context.Background())
	defer shutdown(t, w)
	if err := w.Enqueue(a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if c := stored(t, st); c != (storetest.Counts{}) {
		t.Fatalf("flushed below BatchBytes: %+v", c)
	}
	if err := w.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "byte-triggered flush", func() bool { return w.Stats().Flushes > 0 })
	if c, want := stored(t, st), (storetest.Counts{Requests: 2, Runs: 6, Steps: 8, Scores: 4}); c != want {
		t.Errorf("stored after the byte-triggered flush = %+v; want %+v", c, want)
	}
}

// TestBatchTextBytes: a batch's text bytes grow with its text fields, 256
// bytes a row besides.
func TestBatchTextBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    store.Batch
		want int
	}{
		{"empty", store.Batch{}, 0},
		{"work row", store.Batch{Work: []store.Work{{RequestID: "r"}}}, 256},
		{"request input", store.Batch{Requests: []store.Request{{RequestID: "r", Input: strings.Repeat("x", 1000)}}}, 1256},
		{"step messages and output", store.Batch{Steps: []store.Step{{Messages: "mm", Output: "ooo"}}}, 261},
		{"run plan and answer", store.Batch{Runs: []store.Run{{Plan: "pp", PlanRaw: "p", FinalOutput: "a"}}}, 260},
		{"judgment answers", store.Batch{Judgments: []store.Judgment{{Raw1: "1", Raw2: "22"}}}, 259},
	} {
		if got := tc.b.TextBytes(); got != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, got, tc.want)
		}
	}
}

func writerFlushesOnInterval(t *testing.T, st store.Store) {
	cfg := writerConfig()
	cfg.FlushInterval = 20 * time.Millisecond
	w := newWriter(t, st, cfg)
	w.Start(context.Background())
	defer shutdown(t, w)
	if err := w.Enqueue(batchOf(t, "a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "interval flush", func() bool { return stored(t, st).Scores == 2 })
}

// A full queue refuses at once; the refusal is logged as a warning, not as a
// loss: the caller keeps the batch.
func writerQueueFullNeverBlocks(t *testing.T, st store.Store) {
	cfg := writerConfig()
	cfg.QueueSize = 2
	var logs bytes.Buffer
	var mu sync.Mutex
	w, err := store.NewWriter(st, cfg, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))) // not started: nothing drains the queue
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := w.Enqueue(batchOf(t, fmt.Sprint(i))); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- w.Enqueue(batchOf(t, "overflow")) }()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrQueueFull) {
			t.Fatalf("third enqueue: %v; want ErrQueueFull", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Enqueue blocked on a full queue")
	}
	if s := w.Stats(); s.Rejected != 1 || s.Queued != 2*fixtureRows {
		t.Errorf("stats = %+v; want 1 rejected, 20 queued", s)
	}
	mu.Lock()
	line := logs.String()
	mu.Unlock()
	if !contains(line, "level=WARN") || !contains(line, "queue full") || contains(line, "level=ERROR") {
		t.Errorf("log = %q; want one warning that the queue was full, no error", line)
	}
	shutdown(t, w) // drains without Start
	if c := stored(t, st); c.Requests != 2 {
		t.Errorf("after Shutdown counts = %+v; want the 2 queued requests", c)
	}
}

func writerShutdownDrainsAndIsIdempotent(t *testing.T, st store.Store) {
	w := newWriter(t, st, writerConfig())
	w.Start(context.Background())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Enqueue(batchOf(t, fmt.Sprint("c", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	shutdown(t, w)
	shutdown(t, w) // second call: no-op
	if c := stored(t, st); c.Requests != 8 || c.Runs != 24 || c.Steps != 32 || c.Scores != 16 {
		t.Errorf("counts after Shutdown = %+v", c)
	}
	if s := w.Stats(); s.Written != 8*fixtureRows || s.Queued != 0 || s.Dropped != 0 {
		t.Errorf("stats = %+v", s)
	}
	if err := w.Enqueue(batchOf(t, "late")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Enqueue after Shutdown: %v; want ErrClosed", err)
	}
	// Shutdown without Start, twice.
	w2 := newWriter(t, st, writerConfig())
	shutdown(t, w2)
	shutdown(t, w2)
}

func writerRetriesThenDrops(t *testing.T, st store.Store) {
	t.Run("recovers", func(t *testing.T) {
		f := &flaky{Store: st, failN: 2}
		w := newWriter(t, f, writerConfig())
		if err := w.Enqueue(batchOf(t, "r")); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(context.Background()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if s := w.Stats(); s.Failed != 2 || s.Written != fixtureRows || s.Dropped != 0 {
			t.Errorf("stats = %+v; want 2 failed attempts, all written", s)
		}
		shutdown(t, w)
	})
	t.Run("gives up", func(t *testing.T) {
		f := &flaky{Store: st, failN: 1 << 30}
		cfg := writerConfig()
		cfg.MaxRetries = 2
		w := newWriter(t, f, cfg)
		if err := w.Enqueue(batchOf(t, "r")); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(context.Background()); err == nil {
			t.Fatal("Flush succeeded with a store that always fails")
		}
		// 4 tables x (1 try + 2 retries)
		if s := w.Stats(); s.Failed != 12 || s.Dropped != fixtureRows || s.Written != 0 || s.Queued != 0 {
			t.Errorf("stats = %+v; want 12 failed attempts, 10 dropped", s)
		}
		shutdown(t, w)
	})
}

func writerInsertsRequestsBeforeRuns(t *testing.T, st store.Store) {
	f := &flaky{Store: st}
	w := newWriter(t, f, writerConfig())
	for _, id := range []string{"a", "b"} {
		b := batchOf(t, id)
		b.Requests = nil // runs first in the batch...
		if err := w.Enqueue(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Enqueue(store.Batch{Requests: batchOf(t, id).Requests}); err != nil { // ...request later
			t.Fatal(err)
		}
	}
	shutdown(t, w)
	if want := []string{"requests", "runs", "steps", "scores"}; !reflect.DeepEqual(f.tables, want) {
		t.Errorf("insert order = %v; want %v (one INSERT per table)", f.tables, want)
	}
}

func writerShutdownDeadline(t *testing.T, st store.Store) {
	f := &flaky{Store: st, block: true}
	w := newWriter(t, f, writerConfig())
	if err := w.Enqueue(batchOf(t, "slow")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := w.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown past its deadline returned nil")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %v; want about its 50ms deadline", d)
	}
	if s := w.Stats(); s.Dropped != fixtureRows || s.Queued != 0 {
		t.Errorf("stats = %+v; want all rows dropped at the deadline", s)
	}
}

func TestWriterConfigValidate(t *testing.T) {
	if err := store.NewDefaultWriterConfig().Validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	bad := store.WriterConfig{BatchSize: 0, FlushInterval: -1, QueueSize: 0, MaxRetries: -1}
	err := bad.Validate()
	for _, want := range []string{"batch_size", "batch_bytes", "flush_interval", "queue_size", "max_retries", "retry_initial"} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want it to name %s", err, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A batch enqueued twice (a re-delivery) is stored once.
func writerRedeliveryStoredOnce(t *testing.T, st store.Store) {
	w := newWriter(t, st, writerConfig())
	w.Start(context.Background())
	for range 2 {
		if err := w.Enqueue(batchOf(t, "emb")); err != nil {
			t.Fatal(err)
		}
	}
	shutdown(t, w)
	tr, err := st.GetTrace(context.Background(), idOf(t, "emb"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) != 3 || len(tr.Steps) != 4 || len(tr.Scores) != 2 {
		t.Errorf("trace has %d runs, %d steps, %d scores; want 3, 4, 2", len(tr.Runs), len(tr.Steps), len(tr.Scores))
	}
	if c, want := stored(t, st), (storetest.Counts{Requests: 1, Runs: 3, Steps: 4, Scores: 2}); c != want {
		t.Errorf("stored after a re-delivery = %+v; want %+v", c, want)
	}
}

// An invalid config is an error, never silently replaced by defaults (checked
// before the store is looked at: none is needed).
func TestNewWriterRejectsInvalidConfig(t *testing.T) {
	cfg := writerConfig()
	cfg.BatchSize = 0
	if _, err := store.NewWriter(nil, cfg, nil); err == nil || !contains(err.Error(), "batch_size") {
		t.Fatalf("NewWriter with batch_size 0: %v; want a batch_size error", err)
	}
}

// The loop outlives the Start context: a cancelled request context must not stop
// the writer; Shutdown stops it after flushing.
func writerOutlivesStartContext(t *testing.T, st store.Store) {
	cfg := writerConfig()
	cfg.FlushInterval = 10 * time.Millisecond
	w := newWriter(t, st, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	w.Start(ctx)
	cancel()
	time.Sleep(20 * time.Millisecond)
	if err := w.Enqueue(batchOf(t, "after-cancel")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "flush after the Start context ended", func() bool { return stored(t, st).Requests == 1 })
	shutdown(t, w)
}

// Dropped rows are counted, logged and make the writer not ready until an INSERT
// succeeds again.
func writerLossIsLoggedAndVisible(t *testing.T, st store.Store) {
	var logs bytes.Buffer
	var mu sync.Mutex
	f := &flaky{Store: st, failN: 1 << 30}
	cfg := writerConfig()
	cfg.MaxRetries = 0
	w, err := store.NewWriter(f, cfg, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(); err != nil {
		t.Fatalf("Ready before any write: %v", err)
	}
	if err := w.Enqueue(batchOf(t, "lost")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(context.Background()); err == nil {
		t.Fatal("Flush succeeded with a failing store")
	}
	s := w.Stats()
	if s.Dropped != fixtureRows || s.FailingSince.IsZero() || !contains(s.LastError, "injected failure") {
		t.Errorf("stats = %+v; want %d dropped, failing since set, the last error", s, fixtureRows)
	}
	if err := w.Ready(); err == nil || !contains(err.Error(), "failing") {
		t.Errorf("Ready with failing writes = %v; want an error", err)
	}
	mu.Lock()
	line := logs.String()
	mu.Unlock()
	if !contains(line, "rows dropped") || !contains(line, "dropped_rows_total=10") {
		t.Errorf("log = %q; want a line naming the dropped rows", line)
	}
	f.mu.Lock()
	f.failN = 0
	f.mu.Unlock()
	if err := w.Enqueue(batchOf(t, "back")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(); err != nil {
		t.Errorf("Ready after a successful write: %v", err)
	}
	shutdown(t, w)
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// failRuns fails every INSERT into runs and records the work rows it got.
type failRuns struct {
	store.Store
	mu   sync.Mutex
	work int
}

func (f *failRuns) InsertRuns(context.Context, []store.Run) error {
	return errors.New("runs: disk full")
}
func (f *failRuns) InsertWork(ctx context.Context, w []store.Work) error {
	f.mu.Lock()
	f.work += len(w)
	f.mu.Unlock()
	return f.Store.InsertWork(ctx, w)
}

// A work row is never marked done when its run could not be stored: the work
// stays pending (to be done again) and the held-back rows are counted as dropped.
func writerHoldsBackWorkMarksOfDroppedRuns(t *testing.T, st store.Store) {
	f := &failRuns{Store: st}
	cfg := writerConfig()
	cfg.MaxRetries = 0
	w := newWriter(t, f, cfg)
	b := batchOf(t, "held")
	b.Work = []store.Work{{RequestID: idOf(t, "held"), Pipeline: "conductor", PipelineVersion: "v3", Status: store.WorkDone}}
	if err := w.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(context.Background()); err == nil || !contains(err.Error(), "held back") {
		t.Fatalf("Flush = %v; want the runs' failure and the held-back work rows", err)
	}
	if f.work != 0 {
		t.Errorf("%d work rows written although their runs were dropped", f.work)
	}
	if s := w.Stats(); s.Dropped != 3+1 || s.Queued != 0 {
		t.Errorf("stats = %+v; want 3 runs + 1 work row dropped, none queued", s)
	}
	shutdown(t, w)
}

// MaxWriteDelay is one flush interval plus every retry backoff (doubling,
// capped at 5 s, ×1.5 for jitter): what forget waits before its second sweep.
func TestWriterMaxWriteDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  store.WriterConfig
		want time.Duration
	}{
		{"defaults", store.NewDefaultWriterConfig(), 5650 * time.Millisecond},
		{"no retries", store.WriterConfig{FlushInterval: 200 * time.Millisecond, MaxRetries: 0, RetryInitial: time.Second}, 200 * time.Millisecond},
		{"backoff capped at 5 s", store.WriterConfig{FlushInterval: time.Second, MaxRetries: 3, RetryInitial: 4 * time.Second}, time.Second + 6*time.Second + 7500*time.Millisecond + 7500*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cfg.MaxWriteDelay(); got != tc.want {
				t.Errorf("MaxWriteDelay() = %v, want %v", got, tc.want)
			}
		})
	}
}

// counted wraps a store: each INSERT with rows is recorded as "table:rows",
// in order; while failN > 0 an INSERT fails instead (and is not recorded).
type counted struct {
	store.Store
	mu    sync.Mutex
	failN int
	calls []string
}

func (c *counted) note(table string, n int, insert func() error) error {
	if n == 0 {
		return insert()
	}
	c.mu.Lock()
	fail := c.failN > 0
	if fail {
		c.failN--
	} else {
		c.calls = append(c.calls, fmt.Sprintf("%s:%d", table, n))
	}
	c.mu.Unlock()
	if fail {
		return errors.New("injected failure")
	}
	return insert()
}

func (c *counted) InsertRequests(ctx context.Context, r []store.Request) error {
	return c.note("requests", len(r), func() error { return c.Store.InsertRequests(ctx, r) })
}
func (c *counted) InsertRuns(ctx context.Context, r []store.Run) error {
	return c.note("runs", len(r), func() error { return c.Store.InsertRuns(ctx, r) })
}
func (c *counted) InsertSteps(ctx context.Context, s []store.Step) error {
	return c.note("steps", len(s), func() error { return c.Store.InsertSteps(ctx, s) })
}
func (c *counted) InsertScores(ctx context.Context, s []store.Score) error {
	return c.note("scores", len(s), func() error { return c.Store.InsertScores(ctx, s) })
}
func (c *counted) InsertWork(ctx context.Context, w []store.Work) error {
	return c.note("shadow_work", len(w), func() error { return c.Store.InsertWork(ctx, w) })
}

// WriteWith writes the caller's batch and the writer's waiting rows in one
// INSERT per table, the caller's requests last; when an INSERT fails, the
// caller's batch is written again alone and the writer's rows wait for its
// own flush, so nothing is lost either way.
func TestWriterWriteWith(t *testing.T) {
	st := store.OpenTestStore(t)
	work := func(t *testing.T, id, status string) []store.Work {
		return []store.Work{{RequestID: idOf(t, id), Pipeline: "p", PipelineVersion: "v1", Status: status, ReceivedAt: storetest.T0()}}
	}
	alone := []string{"runs:3", "steps:4", "scores:2", "shadow_work:1", "requests:1", // the caller's batch
		"requests:1", "runs:3", "steps:4", "scores:2", "shadow_work:1"} // then the writer's own flush
	for _, tt := range []struct {
		name      string
		failN     int
		batchSize int
		want      []string // INSERTs with rows, in order
	}{
		{"together", 0, 1000, []string{"requests:1", "runs:6", "steps:8", "scores:4", "shadow_work:2", "requests:1"}},
		// The first INSERT (the writer's request) fails.
		{"caller alone after a failure", 1, 1000, alone},
		// Both would make more than BatchSize rows.
		{"caller alone above BatchSize", 0, 2*(fixtureRows+1) - 1, alone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &counted{Store: st}
			cfg := writerConfig()
			cfg.BatchSize = tt.batchSize
			w := newWriter(t, c, cfg)
			held := batchOf(t, "held")
			held.Work = work(t, "held", store.WorkDone)
			if err := w.Enqueue(held); err != nil {
				t.Fatal(err)
			}
			b := batchOf(t, "commit")
			b.Work = work(t, "commit", store.WorkPending)
			c.failN = tt.failN
			if err := w.WriteWith(context.Background(), b); err != nil {
				t.Fatalf("WriteWith: %v", err)
			}
			if err := w.Flush(context.Background()); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if !reflect.DeepEqual(c.calls, tt.want) {
				t.Errorf("INSERTs = %v; want %v", c.calls, tt.want)
			}
			if got, want := stored(t, st), (storetest.Counts{Requests: 2, Runs: 6, Steps: 8, Scores: 4}); got != want {
				t.Errorf("stored = %+v; want %+v", got, want)
			}
			if s := w.Stats(); s.Written != fixtureRows+1 || s.Queued != 0 || s.Dropped != 0 {
				t.Errorf("writer stats = %+v; want the held %d rows written, none queued or dropped", s, fixtureRows+1)
			}
		})
	}
}
