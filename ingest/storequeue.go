package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// ErrDuplicate is a DurableQueue's answer to a copy whose request id is already
// stored: it is not queued again (the tap answers 200 "duplicate").
var ErrDuplicate = errors.New("ingest: request already stored")

// DurableQueue is a Queue that says when a copy is durable: PublishDurable
// refuses at once (ErrQueueFull, ErrQueueClosed) or returns nil and later calls
// done exactly once with the outcome: nil once the copy is stored (StoreQueue) or
// acknowledged by the brokers (KafkaQueue), ErrDuplicate, or an error wrapping
// ErrStoreUnavailable or ErrKafkaUnavailable. The tap answers 202 only after a nil
// outcome. done must not block.
type DurableQueue interface {
	Queue
	PublishDurable(ex Exchange, done func(error)) error
}

// publishAndWait is Queue.Publish for a durable queue: publish(ex, done), then
// wait for done's outcome or ctx; waiting names what was waited for.
func publishAndWait(ctx context.Context, publish func(Exchange, func(error)) error, ex Exchange, waiting string) error {
	res := make(chan error, 1)
	if err := publish(ex, func(err error) { res <- err }); err != nil {
		return err
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", waiting, ctx.Err())
	}
}

// StoreQueue is the store-first queue of the all-in-one server: an accepted copy
// is a row in the store before the tap answers 202, and the work still owed is read
// back from the store at start.
//
// PublishDurable reserves one of Config.QueueSize slots (a slot is held until the
// exchange's candidates ran: ErrQueueFull when none is free) and hands the copy to
// a group-commit loop that, for each group (at most Config.AcceptBatch copies,
// closed by a quiet gap of Config.AcceptLinger or paced by the last commit:
// groupWaits), drops the ids already stored (ErrDuplicate: the dedup survives
// restarts; a repeat within the group is answered as its first copy), then
// writes one 'pending' store.Work row per candidate version, the incumbent run and
// its step, and last the request row with its segments (the commit point that
// dedup reads; written once: the workers are told the records are stored), and
// only then answers; with UseWriter the rows waiting in the store writer go in
// the same INSERTs (store.Writer.WriteWith: the request rows still last). Committed copies go to an in-memory channel, the fast path to the
// shadow workers.
//
// Start also reads the backlog: requests whose work is still pending (accepted
// before a crash or a stop and not yet shadowed), oldest first, as slots free up.
// Close stops taking copies and makes Next return ErrQueueClosed at once: what is
// still queued stays pending in the store (counted as left_pending) for the next
// start. Safe for concurrent use.
type StoreQueue struct {
	cfg        Config
	st         store.WorkStore
	candidates []store.WorkKey
	pricer     Pricer
	stats      *Stats
	log        *slog.Logger
	loss       *lossLog
	segmenter  *segment.Segmenter
	writer     GroupWriter // nil: commits write the store themselves
	// readyRetry: how long after the last failed commit Ready says not ready
	// (defaultReadyRetry).
	readyRetry time.Duration

	slots  atomic.Int64 // reserved: committing, queued or being shadowed
	intake chan *acceptOp
	ch     chan Delivery

	mu       sync.Mutex
	started  bool
	closed   bool
	shutdown bool
	// seen holds the ids committed by this process while the backlog is being
	// read, so the backlog reader skips them; nil once the backlog is read.
	seen map[string]struct{}

	closing   chan struct{} // closed by Close
	stopLoops context.CancelFunc
	loopsDone sync.WaitGroup

	failing store.Failing // since when writes fail, and the last error
}

// acceptOp is one copy handed to the commit loop, with its records built by
// the caller (exchangeRecords).
type acceptOp struct {
	ex       Exchange
	records  store.Batch
	unpriced string
	err      error // the copy could not be encoded: answered at its commit
	done     func(error)
}

// NewStoreQueue returns a store-first queue writing to st. candidates are the
// configured candidate versions each accepted copy owes a run of; pricer prices
// the incumbent's recorded usage; stats receives left_pending and recovered.
func NewStoreQueue(cfg Config, st store.WorkStore, candidates []store.WorkKey, pricer Pricer, stats *Stats, log *slog.Logger) (*StoreQueue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &StoreQueue{
		cfg: cfg, st: st, candidates: candidates, pricer: pricer, stats: stats, log: log, loss: newLossLog(log), readyRetry: defaultReadyRetry,
		segmenter: segment.New(nil),
		intake:    make(chan *acceptOp, cfg.QueueSize),
		ch:        make(chan Delivery, cfg.QueueSize),
		closing:   make(chan struct{}),
	}, nil
}

// UseSegmenter sets the segmenter that computes each accepted request's
// segments (call before Start); the default has no vocabulary (novelty -1).
func (q *StoreQueue) UseSegmenter(s *segment.Segmenter) {
	if s != nil {
		q.segmenter = s
	}
}

// GroupWriter stores a group commit's rows together with rows waiting to be
// written: store.Writer.WriteWith, whose order keeps the request rows last.
type GroupWriter interface {
	WriteWith(ctx context.Context, b store.Batch) error
}

// UseWriter makes each group commit go through w (call before Start): the
// shadow workers' rows waiting in it (candidate runs, steps, done marks) are
// written in the commit's INSERTs instead of INSERTs of their own. w must
// write to the queue's store. Without it a commit writes its four tables
// itself.
func (q *StoreQueue) UseWriter(w GroupWriter) { q.writer = w }

// Start launches the group-commit loop and the backlog reader. ctx carries values
// only; Shutdown stops both.
func (q *StoreQueue) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started || q.shutdown {
		return errors.New("ingest: store queue: already started or shut down")
	}
	q.started = true
	q.seen = map[string]struct{}{}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	q.stopLoops = cancel
	q.loopsDone.Add(3)
	go func() { defer q.loopsDone.Done(); q.commitLoop() }()
	go func() { defer q.loopsDone.Done(); q.readBacklog(lctx) }()
	// The language detector loads its models on first use (about 0.4 s):
	// not on the first accepted copy's time.
	go func() { defer q.loopsDone.Done(); q.segmenter.Of("warm up the language detector") }()
	return nil
}

// PublishDurable implements DurableQueue. The copy's records (the request
// row with its segments, the incumbent run) are built here, in the caller's
// goroutine (a tap handler that waits for the commit anyway, a capture
// worker), once a slot is reserved: segmenting a prompt takes about a
// millisecond, which the commit loop never waits for.
func (q *StoreQueue) PublishDurable(ex Exchange, done func(error)) error {
	q.mu.Lock()
	if q.closed || !q.started {
		q.mu.Unlock()
		return ErrQueueClosed
	}
	if !q.reserve() {
		q.mu.Unlock()
		return ErrQueueFull
	}
	q.mu.Unlock()
	op := &acceptOp{ex: ex, done: done}
	op.records, op.unpriced, op.err = exchangeRecords(&op.ex, q.segmenter, q.pricer)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.release()
		return ErrQueueClosed
	}
	select {
	case q.intake <- op:
		return nil
	default: // cannot happen: intake holds QueueSize and every op holds a slot
		q.release()
		return ErrQueueFull
	}
}

// Publish implements Queue: PublishDurable, waiting for the outcome or ctx.
func (q *StoreQueue) Publish(ctx context.Context, ex Exchange) error {
	return publishAndWait(ctx, q.PublishDurable, ex, "ingest: store queue: waiting for the commit")
}

func (q *StoreQueue) reserve() bool {
	for {
		n := q.slots.Load()
		if n >= int64(q.cfg.QueueSize) {
			return false
		}
		if q.slots.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (q *StoreQueue) release() { q.slots.Add(-1) }

// Next implements Queue.
func (q *StoreQueue) Next(ctx context.Context) (Delivery, error) {
	select {
	case <-q.closing:
		return Delivery{}, ErrQueueClosed
	default:
	}
	select {
	case d := <-q.ch:
		return d, nil
	case <-q.closing:
		return Delivery{}, ErrQueueClosed
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	}
}

// Len implements Queue: copies committed or being committed and not yet taken by
// a shadow worker.
func (q *StoreQueue) Len() int { return len(q.ch) + len(q.intake) }

// Close implements Queue: Publish refuses, Next returns ErrQueueClosed; queued
// copies stay pending in the store. Safe twice.
func (q *StoreQueue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.closing)
		close(q.intake) // the commit loop commits what was handed over, then stops
	}
	return nil
}

// Shutdown closes the queue, lets the commit loop finish what it holds (within
// ctx) and stops the backlog reader; copies still queued are counted as
// left_pending. Safe without Start and twice.
func (q *StoreQueue) Shutdown(ctx context.Context) error {
	_ = q.Close()
	q.mu.Lock()
	if q.shutdown {
		q.mu.Unlock()
		return nil
	}
	q.shutdown = true
	started := q.started
	q.mu.Unlock()
	if !started {
		return nil
	}
	q.stopLoops()
	done := make(chan struct{})
	go func() { q.loopsDone.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("ingest: store queue shutdown: %w", ctx.Err())
	}
	left := 0
	for {
		select {
		case <-q.ch:
			left++
			q.release()
			continue
		default:
		}
		break
	}
	if left > 0 {
		q.stats.add(&q.stats.leftPending, int64(left))
		q.log.Info("shadow work left pending in the store for the next start", "copies", left)
	}
	return err
}

// defaultReadyRetry is how long Ready stays "not ready" after a failed store
// commit when no copy comes to try again.
const defaultReadyRetry = 10 * time.Second

// Ready reports why the queue cannot accept: a commit failed within the last
// 10 s (defaultReadyRetry; the store cannot be written) or every slot is
// taken. nil when it can.
func (q *StoreQueue) Ready() error {
	since, last := q.failing.State()
	// Not ready while commits fail; but once readyRetry passes without a
	// new failure it is ready again, so that a balancer that holds traffic
	// back from a not-ready instance lets the next copy try the store (a
	// failure turns it not ready again). Nothing else would clear it.
	if !since.IsZero() && time.Since(q.failing.LastFailure()) < q.readyRetry {
		return fmt.Errorf("store writes failing since %s: %s", since.UTC().Format(time.RFC3339), last)
	}
	if q.slots.Load() >= int64(q.cfg.QueueSize) {
		return fmt.Errorf("%w: %d copies wait or are being shadowed", ErrQueueFull, q.cfg.QueueSize)
	}
	return nil
}

func (q *StoreQueue) noteCommit(err error) {
	q.failing.Note(err)
}

// commitLoop groups handed-over copies and commits them until the intake closes.
func (q *StoreQueue) commitLoop() {
	batch := make([]*acceptOp, 0, q.cfg.AcceptBatch)
	var last time.Duration // how long the last commit took
	for op := range q.intake {
		quiet, most := groupWaits(q.cfg, last)
		batch = q.gather(append(batch[:0], op), quiet, most)
		start := time.Now()
		q.commit(batch)
		last = time.Since(start)
	}
}

// groupWaits paces group commits by the engine: a group closes once no copy
// came for quiet (accept_linger, or a quarter of the last commit's time if
// longer) or most passed since its first copy (the last commit's time, at
// least accept_linger, at most accept_timeout / 8 so a POST /v1/tap caller
// is still answered well within accept_timeout). Every commit costs the
// engine a new part per table whatever its size: a group closed at its first
// copy's accept_linger would, with many POST /v1/tap callers each waiting
// for its answer, commit the few that came back while the last commit
// answered the others, one commit of a handful for each full one; waiting
// costs a copy at most one commit's time and saves a commit.
func groupWaits(cfg Config, last time.Duration) (quiet, most time.Duration) {
	most = min(max(last, cfg.AcceptLinger), cfg.AcceptTimeout/8)
	return min(max(last/4, cfg.AcceptLinger), most), most
}

// gather adds to batch the copies handed over until none came for quiet,
// most passed, or batch holds accept_batch copies.
func (q *StoreQueue) gather(batch []*acceptOp, quiet, most time.Duration) []*acceptOp {
	deadline := time.NewTimer(most)
	defer deadline.Stop()
	gap := time.NewTimer(quiet)
	defer gap.Stop()
	for len(batch) < q.cfg.AcceptBatch {
		select {
		case more, ok := <-q.intake:
			if !ok {
				return batch
			}
			batch = append(batch, more)
			gap.Reset(quiet)
		case <-gap.C:
			return batch
		case <-deadline.C:
			return batch
		}
	}
	return batch
}

// commitTimeout bounds one group commit: 4 × accept_timeout. A caller of
// POST /v1/tap is answered 503 accept_timeout after accept_timeout and its copy
// may still be stored (sending it again is then answered duplicate); the
// mirroring proxy waits for nobody. A group of thousands on a contended
// engine (its statements queue behind the store writer's) may take longer
// than one accept_timeout, and failing it whole would refuse every copy in it.
func commitTimeout(cfg Config) time.Duration { return 4 * cfg.AcceptTimeout }

// commit writes one group of copies and answers each.
func (q *StoreQueue) commit(ops []*acceptOp) {
	answer := func(op *acceptOp, err error) {
		if err != nil {
			q.release()
		}
		op.done(err)
	}
	// A repeated id within the group is answered as its first copy is
	// (duplicate once that is stored, the same error if it is refused): never
	// "duplicate" for a copy the store may yet refuse.
	ids := make([]string, 0, len(ops))
	first := make(map[string]*acceptOp, len(ops))
	var keep, repeats []*acceptOp
	for _, op := range ops {
		id := op.ex.RequestID
		if _, dup := first[id]; dup {
			repeats = append(repeats, op)
			continue
		}
		first[id] = op
		ids = append(ids, id)
		keep = append(keep, op)
	}
	var failed error              // the group's commit error
	refused := map[string]error{} // first copies answered alone: stored before, or not encodable
	defer func() {
		for _, op := range repeats {
			err, alone := refused[op.ex.RequestID]
			switch {
			case alone && !errors.Is(err, ErrDuplicate):
				answer(op, err)
			case !alone && failed != nil:
				answer(op, failed)
			default:
				answer(op, ErrDuplicate)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout(q.cfg))
	defer cancel()
	stored, err := q.st.StoredRequests(ctx, ids)
	if err != nil {
		failed = fmt.Errorf("%w: dedup lookup: %w", ErrStoreUnavailable, err)
		q.fail(keep, failed)
		return
	}
	storedSet := make(map[string]bool, len(stored))
	for _, id := range stored {
		storedSet[id] = true
	}
	var b store.Batch
	var ok []*acceptOp
	for _, op := range keep {
		if storedSet[op.ex.RequestID] {
			refused[op.ex.RequestID] = ErrDuplicate
			answer(op, ErrDuplicate)
			continue
		}
		if op.err != nil {
			err := fmt.Errorf("ingest: encode request %s: %w", op.ex.RequestID, op.err)
			refused[op.ex.RequestID] = err
			answer(op, err)
			continue
		}
		q.stats.unpriced(op.unpriced)
		b.Requests = append(b.Requests, op.records.Requests...)
		b.Runs, b.Steps = append(b.Runs, op.records.Runs...), append(b.Steps, op.records.Steps...)
		if op.ex.StoreOnly == "" { // a store-only copy owes no candidate run
			for _, c := range q.candidates {
				b.Work = append(b.Work, store.Work{RequestID: op.ex.RequestID, Pipeline: c.Pipeline, PipelineVersion: c.PipelineVersion,
					Status: store.WorkPending, ReceivedAt: op.ex.ReceivedAt})
			}
		}
		ok = append(ok, op)
	}
	if len(ok) == 0 {
		return
	}
	// The request row goes last: it is the commit point that dedup reads, so a
	// crash half-way leaves no request row and the copy may be sent again.
	werr := q.write(ctx, b)
	if werr != nil {
		failed = fmt.Errorf("%w: %w", ErrStoreUnavailable, werr)
		q.fail(ok, failed)
		return
	}
	q.noteCommit(nil)
	q.mu.Lock()
	if q.seen != nil {
		for _, op := range ok {
			q.seen[op.ex.RequestID] = struct{}{}
		}
	}
	q.mu.Unlock()
	for _, op := range ok {
		q.ch <- q.delivery(op.ex, q.candidates) // room is reserved
		op.done(nil)
	}
}

// write stores one group's rows, the request rows last: through the writer
// (UseWriter) with the rows waiting in it, else one INSERT per table.
func (q *StoreQueue) write(ctx context.Context, b store.Batch) error {
	if q.writer != nil {
		return q.writer.WriteWith(ctx, b)
	}
	err := q.st.InsertWork(ctx, b.Work)
	if err == nil {
		err = q.st.InsertRuns(ctx, b.Runs)
	}
	if err == nil {
		err = q.st.InsertSteps(ctx, b.Steps)
	}
	if err == nil {
		err = q.st.InsertRequests(ctx, b.Requests)
	}
	return err
}

func (q *StoreQueue) fail(ops []*acceptOp, err error) {
	q.noteCommit(err)
	q.loss.log("tap: copies refused: the store cannot be written", "store_unavailable", err, len(ops))
	for _, op := range ops {
		q.release()
		op.done(err)
	}
}

// backlogPage is how many pending requests one backlog read takes at most.
const backlogPage = 256

// readBacklog feeds the work left pending by earlier runs of the process to the
// shadow workers, oldest first, as slots free up; it stops when a read finds
// nothing more. A failed read is retried every second.
func (q *StoreQueue) readBacklog(ctx context.Context) {
	var cur store.WorkCursor
	recovered, stale := 0, 0
	defer func() {
		q.mu.Lock()
		q.seen = nil
		q.mu.Unlock()
		if recovered > 0 {
			q.log.Info("shadow backlog picked up from the store", "requests", recovered)
		}
		if stale > 0 {
			q.log.Warn("pending shadow work left in the store: its candidate versions are no longer configured",
				"requests", stale, "configured", q.candidates)
		}
	}()
	for ctx.Err() == nil {
		free := int64(q.cfg.QueueSize) - q.slots.Load()
		if free <= 0 {
			if !sleepCtx(ctx, 20*time.Millisecond) {
				return
			}
			continue
		}
		page, err := q.st.PendingWork(ctx, cur, int(min(free, backlogPage)))
		if err != nil {
			if ctx.Err() == nil {
				q.loss.log("shadow backlog: read failed; retrying", "backlog_read", err, 0)
			}
			if !sleepCtx(ctx, time.Second) {
				return
			}
			continue
		}
		if len(page) == 0 {
			return
		}
		for _, p := range page {
			cur = store.WorkCursor{ReceivedAt: p.Request.ReceivedAt, RequestID: p.Request.RequestID}
			q.mu.Lock()
			_, mine := q.seen[p.Request.RequestID]
			q.mu.Unlock()
			if mine {
				continue // accepted by this process: already on its way
			}
			owed := make([]store.WorkKey, 0, len(p.Owed))
			for _, k := range p.Owed {
				if slices.Contains(q.candidates, k) {
					owed = append(owed, k)
				}
			}
			if len(owed) == 0 {
				stale++
				continue
			}
			ex, err := exchangeFromStored(p.Request)
			if err != nil {
				q.stats.failed.Add(1)
				q.loss.log("shadow backlog: stored request unreadable; skipped", "backlog_unreadable", err, 1)
				continue
			}
			for !q.reserve() {
				if !sleepCtx(ctx, 20*time.Millisecond) {
					return
				}
			}
			select {
			case q.ch <- q.delivery(ex, owed):
				recovered++
				q.stats.recovered.Add(1)
			case <-ctx.Done():
				q.release()
				return
			}
		}
	}
}

// delivery hands a stored copy to the shadow workers: its records are
// stored, runs of the candidate versions owed are owed with their work rows
// marked done, and the slot is freed whether the delivery is acked or released
// (a released copy's work rows stay pending for the next start).
func (q *StoreQueue) delivery(ex Exchange, owed []store.WorkKey) Delivery {
	return Delivery{Exchange: ex, Owed: Owed{Runs: append([]store.WorkKey{}, owed...), Work: true}, Ack: q.release, Release: q.release}
}

// exchangeFromStored rebuilds what the shadow workers need from a stored request.
func exchangeFromStored(r store.Request) (Exchange, error) {
	var msgs []openai.ChatCompletionMessage
	if err := shadow.UnmarshalMessages([]byte(r.Input), &msgs); err != nil {
		return Exchange{}, fmt.Errorf("ingest: request %s: decode input: %w", r.RequestID, err)
	}
	var tools []openai.Tool
	if r.Tools != "" {
		if err := json.Unmarshal([]byte(r.Tools), &tools); err != nil {
			return Exchange{}, fmt.Errorf("ingest: request %s: decode tools: %w", r.RequestID, err)
		}
	}
	return Exchange{SchemaVersion: SchemaVersion, RequestID: r.RequestID, App: r.App, ReceivedAt: r.ReceivedAt,
		SubjectHash: r.SubjectHash, Request: ExchangeRequest{Messages: msgs, Tools: tools, InputReduced: r.InputReduced}, Metadata: r.Metadata}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
