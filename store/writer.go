package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/time/rate"
)

// ErrQueueFull: Writer.Enqueue found the queue full; the batch was not accepted.
var ErrQueueFull = errors.New("store: write queue full")

// WriterConfig sizes the Writer.
type WriterConfig struct {
	BatchSize     int           `yaml:"batch_size"`     // rows pending that trigger a flush; also rows per INSERT (default 40000)
	BatchBytes    int           `yaml:"batch_bytes"`    // bytes of text pending (Batch.TextBytes) that trigger a flush (default 32 MiB)
	FlushInterval time.Duration `yaml:"flush_interval"` // pending rows are flushed at least this often (default 1s)
	QueueSize     int           `yaml:"queue_size"`     // batches Enqueue can buffer before ErrQueueFull (default 8192)
	MaxRetries    int           `yaml:"max_retries"`    // retries of a failed INSERT before its rows are dropped (default 5)
	RetryInitial  time.Duration `yaml:"retry_initial"`  // first backoff between retries, doubling up to 5s (default 100ms)
}

// NewDefaultWriterConfig returns batches of 40,000 rows or 32 MiB of text,
// whichever comes first, 1 s interval, 8192 queued batches, 5 retries from
// 100 ms. An INSERT into the engine costs about as much as a few thousand
// rows of it (a new part per table, merged away later), so batches are
// large; the byte bound keeps a batch of long prompts and answers from
// holding gigabytes.
func NewDefaultWriterConfig() WriterConfig {
	return WriterConfig{BatchSize: 40000, BatchBytes: 32 << 20, FlushInterval: time.Second, QueueSize: 8192, MaxRetries: 5, RetryInitial: 100 * time.Millisecond}
}

// Validate reports non-positive sizes and intervals and negative retries.
func (c WriterConfig) Validate() error {
	var errs []error
	if c.BatchSize <= 0 {
		errs = append(errs, fmt.Errorf("store: writer batch_size %d: must be > 0", c.BatchSize))
	}
	if c.BatchBytes <= 0 {
		errs = append(errs, fmt.Errorf("store: writer batch_bytes %d: must be > 0", c.BatchBytes))
	}
	if c.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("store: writer flush_interval %v: must be > 0", c.FlushInterval))
	}
	if c.QueueSize <= 0 {
		errs = append(errs, fmt.Errorf("store: writer queue_size %d: must be > 0", c.QueueSize))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("store: writer max_retries %d: must be >= 0", c.MaxRetries))
	}
	if c.RetryInitial <= 0 {
		errs = append(errs, fmt.Errorf("store: writer retry_initial %v: must be > 0", c.RetryInitial))
	}
	return errors.Join(errs...)
}

// MaxWriteDelay bounds how long a row the Writer accepted can take to reach
// the store when the store answers: one FlushInterval of waiting plus every
// retry backoff (RetryInitial doubling, each at most 5 s, times 1.5 for the
// backoff's ±50 % jitter). The INSERTs' own time is not counted. Defaults:
// 1 s + 1.5 × (0.1+0.2+0.4+0.8+1.6) s = 5.65 s. forget waits this long (plus
// a margin) before its second sweep.
func (c WriterConfig) MaxWriteDelay() time.Duration {
	d := c.FlushInterval
	b := c.RetryInitial
	for range max(c.MaxRetries, 0) {
		d += min(b, 5*time.Second) * 3 / 2
		b *= 2
	}
	return d
}

// Batch is a group of records to store together, typically one request with its
// runs, steps and scores.
type Batch struct {
	Requests []Request
	Runs     []Run
	Steps    []Step
	Scores   []Score
	Work     []Work // shadow work states, written after the runs they account for
	// Judgments are live pairwise judgments (eval/livejudge), written last:
	// after the runs they judge. A store without the JudgmentWriter role
	// drops them, counted and logged as any row the store did not take.
	Judgments []Judgment
}

// Rows is the number of records in b.
func (b Batch) Rows() int {
	return len(b.Requests) + len(b.Runs) + len(b.Steps) + len(b.Scores) + len(b.Work) + len(b.Judgments)
}

// TextBytes approximates the memory b's rows hold, in bytes: their text
// fields (inputs, messages, outputs, plans, judge answers …) plus 256 bytes a
// row for the rest. What WriterConfig.BatchBytes bounds.
func (b Batch) TextBytes() int {
	const row = 256
	n := row * b.Rows()
	for _, r := range b.Requests {
		n += len(r.Input) + len(r.Tools)
	}
	for _, r := range b.Runs {
		n += len(r.FinalOutput) + len(r.Reasoning) + len(r.Choices) + len(r.ToolCalls) + len(r.PlanRaw) + len(r.Plan) + len(r.Error)
	}
	for _, s := range b.Steps {
		n += len(s.Subtask) + len(s.Access) + len(s.Messages) + len(s.Output) + len(s.Reasoning) + len(s.ToolCalls) + len(s.Error)
	}
	for _, s := range b.Scores {
		n += len(s.Explanation) + len(s.Error)
	}
	for _, j := range b.Judgments {
		n += len(j.Raw1) + len(j.Raw2) + len(j.Note) + len(j.Error)
	}
	return n
}

func (b *Batch) add(o Batch) {
	b.Requests = append(b.Requests, o.Requests...)
	b.Runs = append(b.Runs, o.Runs...)
	b.Steps = append(b.Steps, o.Steps...)
	b.Scores = append(b.Scores, o.Scores...)
	b.Work = append(b.Work, o.Work...)
	b.Judgments = append(b.Judgments, o.Judgments...)
}

// WriterStats are the Writer's counters since NewWriter. Rows are records of any table.
type WriterStats struct {
	Queued   int64 `json:"queued"`   // rows accepted and not yet written or dropped
	Written  int64 `json:"written"`  // rows stored
	Dropped  int64 `json:"dropped"`  // rows given up: INSERT failed after MaxRetries, or unwritten at Shutdown
	Rejected int64 `json:"rejected"` // batches refused by Enqueue (ErrQueueFull or after Shutdown)
	Failed   int64 `json:"failed"`   // INSERT attempts that failed (each retry counts)
	Flushes  int64 `json:"flushes"`  // flushes that wrote at least one row
	// FailingSince is when the INSERTs started failing; zero while the last one
	// succeeded (or none was tried).
	FailingSince time.Time `json:"failing_since,omitzero"`
	LastError    string    `json:"last_error,omitempty"` // the last failed INSERT's error, "" once one succeeds
}

// Writer batches records and writes them to a Store in the background: pending
// rows are flushed when they reach BatchSize rows or BatchBytes bytes of text
// (Batch.TextBytes), or every FlushInterval. Within a
// flush, requests are inserted before runs, then steps, scores and shadow work, so
// a request is visible no later than its runs and a work row is marked done no
// earlier than its run is stored. A failed INSERT is retried with exponential
// backoff, then its rows are dropped, counted and logged (at most one line per
// 5 s with the running totals). Safe for concurrent use.
type Writer struct {
	st  TraceWriter
	cfg WriterConfig
	log *slog.Logger

	logEvery    rate.Sometimes // rate-limits the loss log lines
	refuseEvery rate.Sometimes // rate-limits the queue-full log lines

	failing Failing // since when writes fail, and the last error

	queue chan Batch
	// took tells the loop that WriteWith took the waiting rows: its interval
	// starts again, so it does not flush the few rows that came since.
	took chan struct{}
	// flushReqs carries Flush's requests to the running loop, the one other
	// receiver of queue: a batch the loop has taken off queue but not yet
	// added to pending is never missed by a Flush that drains queue itself.
	flushReqs chan flushRequest

	mu           sync.Mutex // guards pending and pendingBytes; held while writing, so flushes never overlap
	pending      Batch
	pendingBytes int // pending.TextBytes(), kept as rows come and go

	lifeMu   sync.RWMutex // guards started and stopped; Enqueue holds it shared while sending
	started  bool
	stopped  bool
	stop     chan struct{}
	done     chan struct{}
	shutOnce sync.Once

	queued, written, dropped, rejected, failed, flushes atomic.Int64
}

// NewWriter returns a Writer on st; cfg must pass Validate (its error is
// returned as is). log receives the loss lines; nil discards them.
func NewWriter(st TraceWriter, cfg WriterConfig, log *slog.Logger) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{st: st, cfg: cfg, log: log, logEvery: rate.Sometimes{Interval: 5 * time.Second}, refuseEvery: rate.Sometimes{Interval: 5 * time.Second},
		queue: make(chan Batch, cfg.QueueSize), took: make(chan struct{}, 1), flushReqs: make(chan flushRequest), stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start runs the flush loop until Shutdown. ctx carries values only: its end does
// not stop the loop (a stop is Shutdown's, which flushes first). Calling it again,
// or after Shutdown, does nothing.
func (w *Writer) Start(ctx context.Context) {
	w.lifeMu.Lock()
	defer w.lifeMu.Unlock()
	if w.started || w.stopped {
		return
	}
	w.started = true
	go w.loop(context.WithoutCancel(ctx))
}

func (w *Writer) loop(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(w.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case b := <-w.queue:
			w.mu.Lock()
			w.addPendingLocked(b)
			if w.pending.Rows() >= w.cfg.BatchSize || w.pendingBytes >= w.cfg.BatchBytes {
				_ = w.writeLocked(ctx)
			}
			w.mu.Unlock()
		case <-w.took:
			// Every row waiting was just written: a row that comes next
			// still waits at most one FlushInterval.
			tick.Reset(w.cfg.FlushInterval)
		case req := <-w.flushReqs:
			req.done <- w.flushNow(req.ctx)
		case <-tick.C:
			w.mu.Lock()
			_ = w.writeLocked(ctx)
			w.mu.Unlock()
		}
	}
}

// Enqueue hands b to the writer without blocking. ErrQueueFull when QueueSize
// batches are already waiting, ErrClosed after Shutdown; the batch is then not
// stored and counted in Rejected. An empty batch is accepted and ignored.
func (w *Writer) Enqueue(b Batch) error {
	if b.Rows() == 0 {
		return nil
	}
	w.lifeMu.RLock()
	defer w.lifeMu.RUnlock()
	if w.stopped {
		w.rejected.Add(1)
		return fmt.Errorf("store: enqueue: %w", ErrClosed)
	}
	select {
	case w.queue <- b:
		w.queued.Add(int64(b.Rows()))
		return nil
	default:
		w.rejected.Add(1)
		// Not a loss here: the caller keeps b (the processor sends it again
		// with backoff) and counts what it gives up.
		w.refuseEvery.Do(func() {
			w.log.Warn("store writer: queue full, batch refused; the caller keeps it", "queue_batches", cap(w.queue), "rejected_batches_total", w.rejected.Load())
		})
		return ErrQueueFull
	}
}

// Flush writes everything queued or pending now, retrying as configured, and
// returns when done or when ctx ends. Rows whose INSERT failed for good are
// dropped (counted) and reported in the error. Works with or without Start.
//
// While the loop runs (Start), the loop flushes for Flush: the loop takes a
// batch off the queue before it takes the lock, so a Flush draining the
// queue by itself could return with that batch neither written nor queued.
func (w *Writer) Flush(ctx context.Context) error {
	w.lifeMu.RLock()
	started := w.started
	w.lifeMu.RUnlock()
	if started {
		req := flushRequest{ctx: ctx, done: make(chan error, 1)}
		select {
		case w.flushReqs <- req:
			select {
			case err := <-req.done:
				return err
			case <-ctx.Done():
				return fmt.Errorf("store: flush: %w", ctx.Err())
			}
		case <-w.done: // the loop ended (Shutdown): nothing else takes from the queue
		case <-ctx.Done():
			return fmt.Errorf("store: flush: %w", ctx.Err())
		}
	}
	return w.flushNow(ctx)
}

// flushRequest is one Flush handed to the loop: flush on ctx, answer on done.
type flushRequest struct {
	ctx  context.Context
	done chan error
}

// flushNow writes everything queued or pending now (Flush).
func (w *Writer) flushNow(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.takeQueuedLocked(math.MaxInt, math.MaxInt)
	return w.writeLocked(ctx)
}

// takeQueuedLocked moves queued batches into pending while pending holds
// fewer than rows rows and bytes bytes (TextBytes), or until the queue is
// empty.
func (w *Writer) takeQueuedLocked(rows, bytes int) {
	for w.pending.Rows() < rows && w.pendingBytes < bytes {
		select {
		case b := <-w.queue:
			w.addPendingLocked(b)
			continue
		default:
		}
		break
	}
}

// addPendingLocked adds b to pending.
func (w *Writer) addPendingLocked(b Batch) {
	w.pending.add(b)
	w.pendingBytes += b.TextBytes()
}

// takePendingLocked empties pending and returns what it held.
func (w *Writer) takePendingLocked() Batch {
	p := w.pending
	w.pending, w.pendingBytes = Batch{}, 0
	return p
}

// WriteWith stores b now, in the same INSERTs as the rows waiting in the
// writer: a caller that must have b stored before it answers (the
// store-first queue's group commit) takes the writer's rows along, and the
// writer makes no INSERTs of its own for them. Every INSERT writes a new part
// per table (files created, merged away later) whatever its size, so rows
// written together cost the engine less than the same rows in two INSERTs.
//
// Order, each table once: the writer's requests (a request is visible no
// later than its runs), then runs, steps, scores and shadow work of both (a
// done mark is written after its run), the writer's judgments, and b's
// requests last (so b's request rows, the store-first queue's commit point,
// follow everything else of b). Each INSERT is tried once. When one fails,
// the writer's rows go back to its own flush (with its retries; rows already
// stored are written again, which the tables collapse) and b is written
// again alone, in the same order, once: a row of the writer's that the
// engine refuses never refuses b. The error is that second try's.
//
// Once it took every waiting row, the writer's next interval flush is a full
// FlushInterval away (a row still waits at most FlushInterval), so between
// commits closer together than that the writer makes no INSERTs of its own.
//
// b is written alone when it and the waiting rows would make more than
// BatchSize rows or BatchBytes bytes, and at once while the writer is
// flushing (not waiting for that flush).
func (w *Writer) WriteWith(ctx context.Context, b Batch) error {
	if !w.mu.TryLock() {
		return writeTogether(ctx, w.st, Batch{}, b)
	}
	defer w.mu.Unlock()
	// The rows waiting go along while b and they make at most BatchSize
	// rows and BatchBytes bytes, what the writer would write in one INSERT
	// of its own. Those rows are written either way, on the same engine
	// (its calls are serialized), so the commit takes longer by about the
	// time the writer's own INSERTs would have held the engine between
	// commits, and their parts are saved.
	most, bBytes := w.cfg.BatchSize, b.TextBytes()
	w.takeQueuedLocked(most-b.Rows(), w.cfg.BatchBytes-bBytes)
	if w.pending.Rows()+b.Rows() > most || w.pendingBytes+bBytes > w.cfg.BatchBytes {
		return writeTogether(ctx, w.st, Batch{}, b)
	}
	held := w.takePendingLocked()
	if err := writeTogether(ctx, w.st, held, b); err != nil {
		w.addPendingLocked(held)
		if held.Rows() == 0 {
			return err
		}
		return writeTogether(ctx, w.st, Batch{}, b)
	}
	if n := int64(held.Rows()); n > 0 {
		w.queued.Add(-n)
		w.written.Add(n)
		w.flushes.Add(1)
		w.noteInsert(nil)
	}
	if w.pending.Rows() == 0 {
		select {
		case w.took <- struct{}{}:
		default: // the loop has not seen the last one yet
		}
	}
	return nil
}

// writeTogether inserts held and b as WriteWith orders them, one INSERT per
// table, stopping at the first error (wrapped with the table).
func writeTogether(ctx context.Context, st TraceWriter, held, b Batch) error {
	steps := []struct {
		table string
		write func() error
	}{
		{"requests", func() error { return st.InsertRequests(ctx, held.Requests) }},
		{"runs", func() error { return st.InsertRuns(ctx, slices.Concat(held.Runs, b.Runs)) }},
		{"steps", func() error { return st.InsertSteps(ctx, slices.Concat(held.Steps, b.Steps)) }},
		{"scores", func() error { return st.InsertScores(ctx, slices.Concat(held.Scores, b.Scores)) }},
		{"shadow_work", func() error { return st.InsertWork(ctx, slices.Concat(held.Work, b.Work)) }},
		{"judgments", func() error { return InsertJudgmentsOf(st)(ctx, slices.Concat(held.Judgments, b.Judgments)) }},
		{"requests", func() error { return st.InsertRequests(ctx, b.Requests) }},
	}
	for _, s := range steps {
		if err := s.write(); err != nil {
			return fmt.Errorf("store: write %s: %w", s.table, err)
		}
	}
	return nil
}

// writeLocked inserts the pending rows table by table, in chunks of BatchSize.
// On return pending is empty: rows are written or dropped.
func (w *Writer) writeLocked(ctx context.Context) error {
	p := w.takePendingLocked()
	if p.Rows() == 0 {
		return nil
	}
	var errs []error
	errs = append(errs, writeChunks(ctx, w, "requests", p.Requests, w.st.InsertRequests))
	runsErr := writeChunks(ctx, w, "runs", p.Runs, w.st.InsertRuns)
	errs = append(errs, runsErr)
	errs = append(errs, writeChunks(ctx, w, "steps", p.Steps, w.st.InsertSteps))
	errs = append(errs, writeChunks(ctx, w, "scores", p.Scores, w.st.InsertScores))
	if runsErr != nil && len(p.Work) > 0 {
		// A work row marked done whose run was dropped would hide the loss: the
		// marks are held back, so the work stays pending and is done again.
		n := int64(len(p.Work))
		w.queued.Add(-n)
		w.dropped.Add(n)
		errs = append(errs, fmt.Errorf("store: writer: %d shadow_work rows held back: their runs were not stored", n))
	} else {
		errs = append(errs, writeChunks(ctx, w, "shadow_work", p.Work, w.st.InsertWork))
	}
	errs = append(errs, writeChunks(ctx, w, "judgments", p.Judgments, InsertJudgmentsOf(w.st)))
	w.flushes.Add(1)
	err := errors.Join(errs...)
	if err != nil {
		w.logLoss("store writer: rows dropped after retries", err)
	}
	return err
}

// logLoss logs a loss line with the running totals, at most once per 5 s.
func (w *Writer) logLoss(msg string, err error) {
	w.logEvery.Do(func() {
		st := w.Stats()
		w.log.Error(msg, "err", err, "dropped_rows_total", st.Dropped, "rejected_batches_total", st.Rejected, "failed_inserts_total", st.Failed)
	})
}

// noteInsert records the outcome of one INSERT attempt for Ready and Stats.
func (w *Writer) noteInsert(err error) {
	w.failing.Note(err)
}

// Ready reports why the writer cannot store now: the last INSERT failed (the
// store cannot be written), or the queue is full. nil when it can.
func (w *Writer) Ready() error {
	since, last := w.failing.State()
	if !since.IsZero() {
		return fmt.Errorf("store: writes failing since %s: %s", since.UTC().Format(time.RFC3339), last)
	}
	if len(w.queue) >= cap(w.queue) {
		return fmt.Errorf("store: writer: %w (%d batches)", ErrQueueFull, cap(w.queue))
	}
	return nil
}

func writeChunks[T any](ctx context.Context, w *Writer, table string, rows []T, insert func(context.Context, []T) error) error {
	var errs []error
	for start := 0; start < len(rows); start += w.cfg.BatchSize {
		chunk := rows[start:min(start+w.cfg.BatchSize, len(rows))]
		n := int64(len(chunk))
		eb := backoff.NewExponentialBackOff()
		eb.InitialInterval = w.cfg.RetryInitial
		eb.MaxInterval = 5 * time.Second
		eb.MaxElapsedTime = 0
		policy := backoff.WithContext(backoff.WithMaxRetries(eb, uint64(w.cfg.MaxRetries)), ctx)
		err := backoff.Retry(func() error {
			err := insert(ctx, chunk)
			w.noteInsert(err)
			if err != nil {
				w.failed.Add(1)
				if errors.Is(err, ErrClosed) || errors.Is(err, ErrNotSupported) {
					return backoff.Permanent(err)
				}
			}
			return err
		}, policy)
		w.queued.Add(-n)
		if err != nil {
			w.dropped.Add(n)
			errs = append(errs, fmt.Errorf("store: writer: %d %s rows dropped: %w", n, table, err))
			continue
		}
		w.written.Add(n)
	}
	return errors.Join(errs...)
}

// Shutdown stops the loop, then flushes what is queued within ctx's deadline;
// rows still unwritten when ctx ends are dropped and counted. Later Enqueue
// calls return ErrClosed. Safe without Start and twice (the second call
// returns nil at once). The Store is not closed.
func (w *Writer) Shutdown(ctx context.Context) error {
	var err error
	w.shutOnce.Do(func() {
		w.lifeMu.Lock()
		w.stopped = true
		started := w.started
		w.lifeMu.Unlock()
		if started {
			close(w.stop)
			select {
			case <-w.done:
			case <-ctx.Done():
				// The loop is still writing; what waits in the queue is lost.
				for drained := false; !drained; {
					select {
					case b := <-w.queue:
						w.queued.Add(-int64(b.Rows()))
						w.dropped.Add(int64(b.Rows()))
					default:
						drained = true
					}
				}
				err = fmt.Errorf("store: writer shutdown: %w", ctx.Err())
				w.log.Error("store writer: rows dropped at shutdown", "err", err, "dropped_rows_total", w.dropped.Load())
				return
			}
		}
		err = w.Flush(ctx)
	})
	return err
}

// Stats returns the counters.
func (w *Writer) Stats() WriterStats {
	since, last := w.failing.State()
	return WriterStats{
		Queued: w.queued.Load(), Written: w.written.Load(), Dropped: w.dropped.Load(),
		Rejected: w.rejected.Load(), Failed: w.failed.Load(), Flushes: w.flushes.Load(),
		FailingSince: since, LastError: last,
	}
}
