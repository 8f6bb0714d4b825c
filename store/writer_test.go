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

// fixture rows: 1 request + 3 runs + 4 steps + 2 scores
const fixtureRows = 10

func writerConfig() store.WriterConfig {
	return store.WriterConfig{BatchSize: 1000, FlushInterval: time.Hour, QueueSize: 16, MaxRetries: 3, RetryInitial: time.Millisecond}
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
	deadline := time.Now().Add(3 * time.Second)
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

func TestWriterFlushesOnSize(t *testing.T) {
	mem := storetest.NewMemory()
	cfg := writerConfig()
	cfg.BatchSize = 2 * fixtureRows
	w := newWriter(t, mem, cfg)
	w.Start(context.Background())
	defer shutdown(t, w)
	if err := w.Enqueue(fixtureBatch("a")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if c := mem.Counts(); c.Requests != 0 {
		t.Fatalf("flushed below BatchSize: %+v", c)
	}
	if err := w.Enqueue(fixtureBatch("b")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "size-triggered flush", func() bool { return mem.Counts().Requests == 2 })
	if s := w.Stats(); s.Written != 2*fixtureRows || s.Queued != 0 || s.Flushes != 1 {
		t.Errorf("stats = %+v; want 20 written, 0 queued, 1 flush", s)
	}
}

func TestWriterFlushesOnInterval(t *testing.T) {
	mem := storetest.NewMemory()
	cfg := writerConfig()
	cfg.FlushInterval = 20 * time.Millisecond
	w := newWriter(t, mem, cfg)
	w.Start(context.Background())
	defer shutdown(t, w)
	if err := w.Enqueue(fixtureBatch("a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "interval flush", func() bool { return mem.Counts().Scores == 2 })
}

func TestWriterQueueFullNeverBlocks(t *testing.T) {
	mem := storetest.NewMemory()
	cfg := writerConfig()
	cfg.QueueSize = 2
	w := newWriter(t, mem, cfg) // not started: nothing drains the queue
	for i := range 2 {
		if err := w.Enqueue(fixtureBatch(fmt.Sprint(i))); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- w.Enqueue(fixtureBatch("overflow")) }()
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
	shutdown(t, w) // drains without Start
	if c := mem.Counts(); c.Requests != 2 {
		t.Errorf("after Shutdown counts = %+v; want the 2 queued requests", c)
	}
}

func TestWriterShutdownDrainsAndIsIdempotent(t *testing.T) {
	mem := storetest.NewMemory()
	w := newWriter(t, mem, writerConfig())
	w.Start(context.Background())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Enqueue(fixtureBatch(fmt.Sprint("c", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	shutdown(t, w)
	shutdown(t, w) // second call: no-op
	if c := mem.Counts(); c.Requests != 8 || c.Runs != 24 || c.Steps != 32 || c.Scores != 16 {
		t.Errorf("counts after Shutdown = %+v", c)
	}
	if s := w.Stats(); s.Written != 8*fixtureRows || s.Queued != 0 || s.Dropped != 0 {
		t.Errorf("stats = %+v", s)
	}
	if err := w.Enqueue(fixtureBatch("late")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Enqueue after Shutdown: %v; want ErrClosed", err)
	}
	// Shutdown without Start, twice.
	w2 := newWriter(t, mem, writerConfig())
	shutdown(t, w2)
	shutdown(t, w2)
}

func TestWriterRetriesThenDrops(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		f := &flaky{Store: storetest.NewMemory(), failN: 2}
		w := newWriter(t, f, writerConfig())
		if err := w.Enqueue(fixtureBatch("r")); err != nil {
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
		f := &flaky{Store: storetest.NewMemory(), failN: 1 << 30}
		cfg := writerConfig()
		cfg.MaxRetries = 2
		w := newWriter(t, f, cfg)
		if err := w.Enqueue(fixtureBatch("r")); err != nil {
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

func TestWriterInsertsRequestsBeforeRuns(t *testing.T) {
	f := &flaky{Store: storetest.NewMemory()}
	w := newWriter(t, f, writerConfig())
	for _, id := range []string{"a", "b"} {
		b := fixtureBatch(id)
		b.Requests = nil // runs first in the batch...
		if err := w.Enqueue(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Enqueue(store.Batch{Requests: fixtureBatch(id).Requests}); err != nil { // ...request later
			t.Fatal(err)
		}
	}
	shutdown(t, w)
	if want := []string{"requests", "runs", "steps", "scores"}; !reflect.DeepEqual(f.tables, want) {
		t.Errorf("insert order = %v; want %v (one INSERT per table)", f.tables, want)
	}
}

func TestWriterShutdownDeadline(t *testing.T) {
	f := &flaky{Store: storetest.NewMemory(), block: true}
	w := newWriter(t, f, writerConfig())
	if err := w.Enqueue(fixtureBatch("slow")); err != nil {
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
	for _, want := range []string{"batch_size", "flush_interval", "queue_size", "max_retries", "retry_initial"} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want it to name %s", err, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// The writer against the embedded engine: a batch enqueued twice (a re-delivery)
// is stored once.
func TestWriterEmbedded(t *testing.T) {
	st := store.OpenTestStore(t)
	w := newWriter(t, st, writerConfig())
	w.Start(context.Background())
	for range 2 {
		if err := w.Enqueue(fixtureBatch("emb")); err != nil {
			t.Fatal(err)
		}
	}
	shutdown(t, w)
	tr, err := st.GetTrace(context.Background(), "emb")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) != 3 || len(tr.Steps) != 4 || len(tr.Scores) != 2 {
		t.Errorf("trace has %d runs, %d steps, %d scores; want 3, 4, 2", len(tr.Runs), len(tr.Steps), len(tr.Scores))
	}
}

// An invalid config is an error, never silently replaced by defaults.
func TestNewWriterRejectsInvalidConfig(t *testing.T) {
	cfg := writerConfig()
	cfg.BatchSize = 0
	if _, err := store.NewWriter(storetest.NewMemory(), cfg, nil); err == nil || !contains(err.Error(), "batch_size") {
		t.Fatalf("NewWriter with batch_size 0: %v; want a batch_size error", err)
	}
}

// The loop outlives the Start context: a cancelled request context must not stop
// the writer; Shutdown stops it after flushing.
func TestWriterOutlivesStartContext(t *testing.T) {
	mem := storetest.NewMemory()
	cfg := writerConfig()
	cfg.FlushInterval = 10 * time.Millisecond
	w := newWriter(t, mem, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	w.Start(ctx)
	cancel()
	time.Sleep(20 * time.Millisecond)
	if err := w.Enqueue(fixtureBatch("after-cancel")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "flush after the Start context ended", func() bool { return mem.Counts().Requests == 1 })
	shutdown(t, w)
}

// Dropped rows are counted, logged and make the writer not ready until an INSERT
// succeeds again.
func TestWriterLossIsLoggedAndVisible(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	f := &flaky{Store: storetest.NewMemory(), failN: 1 << 30}
	cfg := writerConfig()
	cfg.MaxRetries = 0
	w, err := store.NewWriter(f, cfg, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(); err != nil {
		t.Fatalf("Ready before any write: %v", err)
	}
	if err := w.Enqueue(fixtureBatch("lost")); err != nil {
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
	if err := w.Enqueue(fixtureBatch("back")); err != nil {
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
func TestWriterHoldsBackWorkMarksOfDroppedRuns(t *testing.T) {
	f := &failRuns{Store: storetest.NewMemory()}
	cfg := writerConfig()
	cfg.MaxRetries = 0
	w := newWriter(t, f, cfg)
	b := fixtureBatch("held")
	b.Work = []store.Work{{RequestID: "held", Pipeline: "conductor", PipelineVersion: "v3", Status: store.WorkDone}}
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
