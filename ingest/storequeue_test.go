package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// storeFirst is one life of the all-in-one shadow side on st: a store-first
// queue, its tap and (when cand is set) the shadow workers.
type storeFirst struct {
	q     *StoreQueue
	tap   *Tap
	proc  *Processor
	stats *Stats
}

func startStoreFirst(t *testing.T, st store.Store, cfg Config, cand shadow.Pipeline, log *slog.Logger) *storeFirst {
	t.Helper()
	ctx := context.Background()
	stats := NewStats()
	var keys []store.WorkKey
	var cands []shadow.Pipeline
	if cand != nil {
		keys = []store.WorkKey{{Pipeline: cand.Name(), PipelineVersion: cand.Version()}}
		cands = []shadow.Pipeline{cand}
	} else {
		keys = []store.WorkKey{{Pipeline: "echo", PipelineVersion: "v1"}}
	}
	q, err := NewStoreQueue(cfg, st, keys, flatPricer(0.001), stats, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tap, err := NewTap(cfg, q, stats, WithPIISecret([]byte("s")), WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	sf := &storeFirst{q: q, tap: tap, stats: stats}
	if cand != nil {
		sf.proc = NewProcessor(cfg, q, syncWriter{st}, cands, flatPricer(0.001), stats, log)
		if err := sf.proc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return sf
}

// stop shuts the life down within d (the processor first, as serve does).
func (sf *storeFirst) stop(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if sf.proc != nil {
		_ = sf.proc.Shutdown(ctx)
	}
	if err := sf.q.Shutdown(context.Background()); err != nil {
		t.Errorf("queue shutdown: %v", err)
	}
}

func storeFirstConfig() Config {
	cfg := NewDefaultConfig()
	cfg.Workers = 4
	cfg.QueueSize = 50
	cfg.AcceptLinger = time.Millisecond
	cfg.PII.Enabled = false
	return cfg
}

// pendingWork is the store's pending work, failing t when it cannot be read.
func pendingWork(t *testing.T, st store.Store) []store.PendingRequest {
	t.Helper()
	pending, err := st.PendingWork(context.Background(), store.WorkCursor{}, 100)
	if err != nil {
		t.Fatalf("pending work: %v", err)
	}
	return pending
}

func candidateRuns(t *testing.T, st store.Store, id string) []store.Run {
	t.Helper()
	tr, err := st.GetTrace(context.Background(), id)
	if err != nil {
		t.Fatalf("trace %s: %v", id, err)
	}
	var out []store.Run
	for _, r := range tr.Runs {
		if r.Mode == store.ModeCandidate {
			out = append(out, r)
		}
	}
	return out
}

// A 202 means stored: the copies answered 202 by a life that shadowed nothing
// (as if it was killed right after) are shadowed by the next life without being
// sent again, exactly once; sending them again is answered "duplicate".
func TestStoreQueueAcceptedSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := storeFirstConfig()
	first := startStoreFirst(t, st, cfg, nil, nil) // no shadow workers: nothing is shadowed
	ids := []string{"r1", "r2", "r3", "r4", "r5"}
	for _, id := range ids {
		code, resp := first.tap.Offer(ctx, exchange(id, "question "+id))
		if code != http.StatusAccepted {
			t.Fatalf("offer %s = %d %+v; want 202", id, code, resp)
		}
		if _, err := st.GetTrace(ctx, id); err != nil {
			t.Fatalf("copy %s answered 202 but not stored: %v", id, err)
		}
	}
	first.stop(t, time.Second)
	if pending := pendingWork(t, st); len(pending) != len(ids) {
		t.Fatalf("pending after the first life = %d; want %d", len(pending), len(ids))
	}

	cand := &echoPipeline{}
	second := startStoreFirst(t, st, cfg, cand, nil)
	waitForD(t, 30*time.Second, "the backlog shadowed by the second life", func() bool {
		return second.stats.Snapshot(0).Processed >= int64(len(ids))
	})
	for _, id := range ids {
		code, resp := second.tap.Offer(ctx, exchange(id, "question "+id))
		if code != http.StatusOK || resp.Status != "duplicate" {
			t.Errorf("re-sent %s = %d %+v; want 200 duplicate (dedup from the store)", id, code, resp)
		}
	}
	second.stop(t, 5*time.Second)
	snap := second.stats.Snapshot(0)
	if snap.Recovered != int64(len(ids)) || snap.Processed != int64(len(ids)) || snap.Duplicates != int64(len(ids)) {
		t.Errorf("second life stats = %+v; want %d recovered, processed and duplicates", snap, len(ids))
	}
	if len(cand.seen) != len(ids) {
		t.Errorf("candidate ran %d times (%v); want once per copy", len(cand.seen), cand.seen)
	}
	for _, id := range ids {
		if runs := candidateRuns(t, st, id); len(runs) != 1 || runs[0].Status != store.StatusOK {
			t.Errorf("%s candidate runs = %+v; want one ok run", id, runs)
		}
	}
	if pending := pendingWork(t, st); len(pending) != 0 {
		t.Errorf("work still pending after the second life: %+v", pending)
	}
}

// A stop is not a failure: a run cut by shutdown is stored as cancelled, its work
// stays pending, and the next start shadows it (one run in the end, ok).
func TestStoreQueueStopLeavesWorkPending(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := storeFirstConfig()
	cfg.Workers = 1
	held := &echoPipeline{release: make(chan struct{})} // never released: runs end only when cancelled
	first := startStoreFirst(t, st, cfg, held, nil)
	for _, id := range []string{"s1", "s2", "s3"} {
		if code, resp := first.tap.Offer(ctx, exchange(id, "question "+id)); code != http.StatusAccepted {
			t.Fatalf("offer %s = %d %+v", id, code, resp)
		}
	}
	waitForD(t, 30*time.Second, "one candidate run in flight", func() bool { return held.running.Load() == 1 })
	first.stop(t, 50*time.Millisecond)
	snap := first.stats.Snapshot(0)
	if snap.CancelledRuns != 1 || snap.LeftPending != 3 || snap.DroppedTotal() != 0 {
		t.Errorf("first life stats = %+v; want 1 cancelled run, 3 left pending, nothing dropped", snap)
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		for _, r := range candidateRuns(t, st, id) {
			if r.Status == store.StatusError {
				t.Errorf("%s: a run stopped by shutdown was stored as an error: %s", id, r.Error)
			}
		}
	}

	cand := &echoPipeline{}
	second := startStoreFirst(t, st, cfg, cand, nil)
	waitForD(t, 30*time.Second, "the three copies shadowed by the second life", func() bool {
		return second.stats.Snapshot(0).Processed >= 3
	})
	second.stop(t, 5*time.Second)
	for _, id := range []string{"s1", "s2", "s3"} {
		if runs := candidateRuns(t, st, id); len(runs) != 1 || runs[0].Status != store.StatusOK {
			t.Errorf("%s candidate runs after restart = %+v; want one ok run", id, runs)
		}
	}
}

// failingStore is the engine's store whose shadow_work INSERT fails (the
// store-first queue's first write), as on a data folder turned read-only.
type failingStore struct{ store.Store }

var errDiskReadOnly = errors.New("Cannot open file: Read-only file system")

func (failingStore) InsertWork(context.Context, []store.Work) error { return errDiskReadOnly }

// Loss is never silent: a copy the store cannot take is answered 503, counted,
// logged, and the queue says it is not ready; a full queue is answered 503 too.
func TestStoreQueueRefusesLoudly(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedBuffer{&mu, &logs}, nil))
	cfg := storeFirstConfig()
	st := engine.Open(t) // shared by both halves: they use distinct request ids
	sf := startStoreFirst(t, failingStore{st}, cfg, nil, log)
	code, resp := sf.tap.Offer(ctx, exchange("f1", "q"))
	if code != http.StatusServiceUnavailable || resp.Reason != ReasonStoreUnavailable {
		t.Errorf("offer with a read-only store = %d %+v; want 503 store_unavailable", code, resp)
	}
	if err := sf.q.Ready(); err == nil || !strings.Contains(err.Error(), "Read-only") {
		t.Errorf("Ready = %v; want the store failure", err)
	}
	// With no copy arriving to try again (a balancer holds traffic back from a
	// not-ready instance), readiness comes back after readyRetry; the next
	// failed commit takes it away again.
	sf.q.readyRetry = 50 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for sf.q.Ready() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := sf.q.Ready(); err != nil {
		t.Errorf("Ready after readyRetry without new failures = %v; want nil", err)
	}
	sf.q.readyRetry = time.Hour
	if code, _ := sf.tap.Offer(ctx, exchange("f2", "q")); code != http.StatusServiceUnavailable {
		t.Errorf("second offer with a read-only store = %d; want 503", code)
	}
	if err := sf.q.Ready(); err == nil {
		t.Error("Ready after a new failure = nil; want the store failure")
	}
	if snap := sf.stats.Snapshot(0); snap.Dropped[ReasonStoreUnavailable] != 2 || snap.Accepted != 0 {
		t.Errorf("stats = %+v; want 2 dropped store_unavailable, 0 accepted", snap)
	}
	sf.stop(t, time.Second)
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "store_unavailable") {
		t.Errorf("log = %q; want a line naming the refused copy", out)
	}

	cfg.QueueSize = 2
	full := startStoreFirst(t, st, cfg, nil, nil) // no workers: slots stay taken
	var codes []int
	for i := range 3 {
		c, _ := full.tap.Offer(ctx, exchange(fmt.Sprint("q", i), "q"))
		codes = append(codes, c)
	}
	if codes[0] != 202 || codes[1] != 202 || codes[2] != 503 {
		t.Errorf("codes = %v; want 202, 202, 503 (queue full)", codes)
	}
	if err := full.q.Ready(); !errors.Is(err, ErrQueueFull) {
		t.Errorf("Ready = %v; want ErrQueueFull", err)
	}
	full.stop(t, time.Second)
}

func TestStoreQueueShutdownWithoutStartAndTwice(t *testing.T) {
	// Never started: the queue touches no store.
	q, err := NewStoreQueue(storeFirstConfig(), nil, nil, nil, NewStats(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := q.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.PublishDurable(exchange("x", "q"), func(error) {}); !errors.Is(err, ErrQueueClosed) {
		t.Errorf("publish after shutdown = %v; want ErrQueueClosed", err)
	}
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Work owed to a candidate version that is no longer configured is not run by
// another version: it stays pending and is reported.
func TestStoreQueueBacklogSkipsUnconfiguredVersions(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := storeFirstConfig()
	first := startStoreFirst(t, st, cfg, nil, nil) // owes echo v1
	if code, _ := first.tap.Offer(ctx, exchange("old", "q")); code != http.StatusAccepted {
		t.Fatal("offer refused")
	}
	first.stop(t, time.Second)
	var logs bytes.Buffer
	var mu sync.Mutex
	cand := &versionedEcho{version: "v2"}
	second := startStoreFirst(t, st, cfg, cand, slog.New(slog.NewTextHandler(lockedBuffer{&mu, &logs}, nil)))
	logged := func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
	// The backlog reader reports the stale work once it has read the whole backlog.
	waitForD(t, 30*time.Second, "the stale work reported", func() bool { return strings.Contains(logged(), "no longer configured") })
	second.stop(t, time.Second)
	if n := cand.runs.Load(); n != 0 {
		t.Errorf("candidate v2 ran %d times on work owed to v1", n)
	}
	if pending := pendingWork(t, st); len(pending) != 1 {
		t.Errorf("pending = %d; want the v1 work still pending", len(pending))
	}
}

// versionedEcho is an echo candidate with a chosen version that counts its runs.
type versionedEcho struct {
	version string
	runs    atomic.Int64
}

func (p *versionedEcho) Name() string    { return "echo" }
func (p *versionedEcho) Version() string { return p.version }
func (p *versionedEcho) Run(_ context.Context, req shadow.Request, mode string) shadow.Result {
	p.runs.Add(1)
	id := shadow.RunID(req.RequestID, "", "echo")
	return shadow.Result{Run: store.Run{RunID: id, RequestID: req.RequestID, Pipeline: "echo", PipelineVersion: p.version, Mode: mode, Status: store.StatusOK}}
}

// A long console query does not cost the tap its copies: while console
// queries that would scan without end run back to back on the same embedded
// engine, every copy offered within the default accept_timeout is answered
// 202 (none 503 accept_timeout), and the console queries end with the
// engine's limit error.
func TestStoreQueueAcceptsWhileConsoleQueryRuns(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := storeFirstConfig()
	sf := startStoreFirst(t, st, cfg, nil, nil)
	defer sf.stop(t, time.Second)
	const long = "SELECT count() FROM system.numbers WHERE sipHash64(number) % 7 = 3"
	stop := make(chan struct{})
	var consoleErrs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := st.Query(ctx, long)
			consoleErrs = append(consoleErrs, err)
		}
	}()
	time.Sleep(100 * time.Millisecond) // the first console query is running
	var refused []string
	for i := range 8 {
		id := fmt.Sprintf("c%d", i)
		if code, resp := sf.tap.Offer(ctx, exchange(id, "question "+id)); code != http.StatusAccepted {
			refused = append(refused, fmt.Sprintf("%s: %d %+v", id, code, resp))
		}
	}
	close(stop)
	<-done
	if len(refused) > 0 {
		t.Errorf("copies refused while a console query ran: %v", refused)
	}
	if len(consoleErrs) == 0 {
		t.Fatal("no console query ran")
	}
	for _, err := range consoleErrs {
		if err == nil || !strings.Contains(err.Error(), "TIMEOUT_EXCEEDED") && !strings.Contains(err.Error(), "TOO_MANY_") {
			t.Errorf("console query: %v; want the engine's limit error", err)
		}
	}
}

// The store-first queue writes each request row once, at accept, with its
// segments: the shadow workers are told the records are stored and write only
// the candidate runs and their work rows.
func TestStoreFirstWritesEachRequestOnce(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: engine.Open(t)}
	cfg := storeFirstConfig()
	cand := &echoPipeline{}
	sf := startStoreFirst(t, st, cfg, cand, nil)
	ids := []string{"once-1", "once-2", "once-3"}
	for _, id := range ids {
		if code, resp := sf.tap.Offer(ctx, exchange(id, "Сколько будет два плюс два? Ответь одним числом.")); code != http.StatusAccepted {
			t.Fatalf("offer %s = %d %+v; want 202", id, code, resp)
		}
	}
	waitForD(t, 30*time.Second, "every copy shadowed", func() bool {
		return sf.stats.Snapshot(0).Processed >= int64(len(ids))
	})
	sf.stop(t, 5*time.Second)
	if n := st.inserted.Load(); n != int64(len(ids)) {
		t.Errorf("request rows inserted = %d; want %d, one per copy", n, len(ids))
	}
	for _, id := range ids {
		tr, err := st.GetTrace(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Request.Language != "ru" || tr.Request.LengthBucket == "" {
			t.Errorf("%s stored without its segments: language %q, length bucket %q", id, tr.Request.Language, tr.Request.LengthBucket)
		}
		if runs := candidateRuns(t, st, id); len(runs) != 1 || runs[0].Status != store.StatusOK {
			t.Errorf("%s candidate runs = %+v; want one ok run", id, runs)
		}
	}
	if pending := pendingWork(t, st); len(pending) != 0 {
		t.Errorf("work still pending: %+v", pending)
	}
}
