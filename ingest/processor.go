package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// BatchWriter takes records for the store; store.Writer (buffered, never blocks)
// and StoreWriter (synchronous) are two. Enqueue failing with store.ErrQueueFull or
// ErrStoreUnavailable is retried with backoff; any other error drops the batch.
type BatchWriter interface {
	Enqueue(b store.Batch) error
}

// Pricer prices the incumbent's recorded usage, in USD. known is false for a model
// missing from the price table (the cost is then recorded as 0).
type Pricer interface {
	Cost(model string, promptTokens, completionTokens int64) (usd float64, known bool)
}

// Processor is the pool of shadow workers: it takes deliveries off the queue and
// writes what each owes (Delivery.Owed): the request and the incumbent run
// unless the queue stored them, then a run of every candidate version owed, on
// the same messages, with its steps.
type Processor struct {
	cfg        Config
	queue      Queue
	writer     BatchWriter
	candidates []shadow.Pipeline
	pricer     Pricer
	stats      *Stats
	log        *slog.Logger
	loss       *lossLog
	segmenter  *segment.Segmenter
	lookup     store.RunLookup    // what a re-delivered exchange already has (Kafka); nil: none
	forgotten  store.ForgetLookup // whether a request's data subject was forgotten; nil: never checked
	pii        *Pseudonymizer     // applied to candidate records before they are written; nil: none
	pairs      PairSink           // live judging: takes every stored live pair; nil: none

	inflightMu sync.Mutex
	inflight   map[string]chan struct{} // request ids being shadowed (with lookup), closed when done

	mu       sync.Mutex
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	done     chan struct{}
	drainErr error
}

// NewProcessor wires a processor; Start launches cfg.Workers workers.
func NewProcessor(cfg Config, q Queue, w BatchWriter, candidates []shadow.Pipeline, pricer Pricer, stats *Stats, log *slog.Logger) *Processor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Processor{cfg: cfg, queue: q, writer: w, candidates: candidates, pricer: pricer, stats: stats, log: log, loss: newLossLog(log),
		segmenter: segment.New(nil)}
}

// UseSegmenter sets the segmenter that computes each stored request's
// segments (call before Start). The default has no vocabulary, so novelty is
// stored as -1.
func (p *Processor) UseSegmenter(s *segment.Segmenter) {
	if s != nil {
		p.segmenter = s
	}
}

// UseRunLookup makes the processor ask the store, before running the
// candidates of a delivery whose queue does not name the runs owed (Kafka, at
// least once; the in-memory queue), which candidate versions already have a
// finished run of that request, and skip those (counted as StatsSnapshot.SkippedRuns): a
// re-delivery, a re-sent file or a restart never runs a candidate version
// twice. Call before Start.
func (p *Processor) UseRunLookup(l store.RunLookup) { p.lookup = l }

// UseForgetLookup makes the processor look up, for an exchange that names a
// data subject (Exchange.SubjectHash set), whether that subject was forgotten
// (`conductor-shadow forget`) at or after the exchange was received: once
// before the exchange is shadowed and again before each candidate run is
// written. A forgotten subject's records are not written; the exchange is
// counted as dropped ("forgotten", StatsSnapshot.Dropped) and logged, and its
// shadow work is acknowledged (nothing is owed for it any more). Exchanges
// without a subject never pay for the look-up. Call before Start.
func (p *Processor) UseForgetLookup(l store.ForgetLookup) { p.forgotten = l }

// DropForgotten is the Dropped reason of exchanges whose data subject was
// forgotten while they were queued or being shadowed.
const DropForgotten = "forgotten"

// Start launches the workers. They run until Shutdown; ctx bounds nothing but is
// the parent of every shadow run's context.
func (p *Processor) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("ingest: processor already started")
	}
	p.started = true
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	p.done = make(chan struct{})
	var wg sync.WaitGroup
	for range p.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.work(runCtx)
		}()
	}
	go func() {
		wg.Wait()
		close(p.done)
	}()
	return nil
}

// Shutdown closes the queue, lets the workers finish what is queued until ctx is
// done, then cancels the runs still going and counts what was left as dropped
// ("shutdown"). Safe without Start and twice.
func (p *Processor) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return p.drainErr
	}
	p.stopped = true
	started := p.started
	p.mu.Unlock()

	_ = p.queue.Close()
	if !started {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.cancel()
		<-p.done
		p.drainErr = fmt.Errorf("ingest: shutdown: drain stopped by %w", ctx.Err())
	}
	p.cancel()
	// Whatever is still queued was never shadowed (a store-first or Kafka queue
	// keeps it for the next start and returns nothing here).
	left := 0
	for {
		if _, err := p.queue.Next(context.Background()); err != nil {
			break
		}
		p.stats.drop("shutdown")
		left++
	}
	if left > 0 {
		p.log.Error("shadow: queued copies dropped at shutdown", "copies", left)
	}
	return p.drainErr
}

func (p *Processor) work(ctx context.Context) {
	for ctx.Err() == nil {
		d, err := p.queue.Next(ctx)
		if errors.Is(err, ErrQueueClosed) || ctx.Err() != nil {
			return
		}
		if err != nil {
			// A transport failure (a Kafka fetch): readiness reports it; the
			// worker waits a second and reads again rather than leaving the pool.
			p.loss.log("shadow: reading the queue failed; retrying", "queue_read", err, 0)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		p.process(ctx, d)
	}
}

// process shadows one exchange, writing what the delivery says is owed: the
// request and incumbent records first (so a slow candidate never hides the
// trace), then a run of each candidate version owed (owedRuns). A candidate
// run stopped by shutdown is stored as "cancelled" and its work stays owed
// (leaveOwed), so the next start shadows it again.
func (p *Processor) process(ctx context.Context, d Delivery) {
	switch gone, ok := p.subjectForgotten(ctx, d.Exchange); {
	case !ok:
		p.leaveOwed(d)
		return
	case gone:
		p.dropForgotten(d, 0)
		return
	}
	if d.Owed.Records && !p.writeRecords(ctx, d) {
		return
	}
	if d.Exchange.StoreOnly != "" {
		// Stored with the incumbent's answer; no candidate runs on it.
		p.stats.storeOnly(d.Exchange.StoreOnly)
		d.Ack()
		return
	}
	owed, release, ok := p.owedRuns(ctx, d)
	if !ok {
		// Stopped while another worker shadowed the request or the store did
		// not answer: nothing ran.
		p.leaveOwed(d)
		return
	}
	defer release()
	if p.runCandidates(ctx, d, owed) {
		p.stats.processed.Add(1)
		d.Ack()
	}
}

// writeRecords hands the request and incumbent records to the writer; false
// when the delivery ended here (it could not be encoded, or the store did not
// take it before ctx ended).
func (p *Processor) writeRecords(ctx context.Context, d Delivery) bool {
	b, unpriced, err := exchangeRecords(&d.Exchange, p.segmenter, p.pricer)
	if err != nil {
		p.stats.failed.Add(1)
		p.log.Error("shadow: encode request", "request_id", d.Exchange.RequestID, "err", err)
		d.Ack()
		return false
	}
	p.stats.unpriced(unpriced)
	return p.enqueue(ctx, b)
}

// owedRuns returns the candidates d owes a run of, the one duplicate-run
// check every queue's deliveries pass: those the queue names (Owed.Runs), or,
// when it names none, every candidate without a finished run in the store
// (asked of the RunLookup when the processor has one; the others are counted
// as StatsSnapshot.SkippedRuns: never paid for twice). A consumer group
// re-reads uncommitted offsets after a rebalance, so the exchange may arrive
// again while this process still shadows it: the look-up waits for that one
// (claim) and then sees its stored runs. ok is false when ctx ended first;
// release ends the claim.
func (p *Processor) owedRuns(ctx context.Context, d Delivery) (owed []shadow.Pipeline, release func(), ok bool) {
	keyOf := func(c shadow.Pipeline) store.WorkKey {
		return store.WorkKey{Pipeline: c.Name(), PipelineVersion: c.Version()}
	}
	if d.Owed.Runs != nil || p.lookup == nil {
		for _, c := range p.candidates {
			if d.Owed.Runs == nil || slices.Contains(d.Owed.Runs, keyOf(c)) {
				owed = append(owed, c)
			}
		}
		return owed, func() {}, true
	}
	id := d.Exchange.RequestID
	release, ok = p.claim(ctx, id)
	if !ok {
		return nil, nil, false
	}
	finished, ok := p.finishedRuns(ctx, id)
	if !ok {
		release()
		return nil, nil, false
	}
	for _, c := range p.candidates {
		if slices.Contains(finished, keyOf(c)) {
			p.stats.skippedRuns.Add(1)
			continue
		}
		owed = append(owed, c)
	}
	return owed, release, true
}

// runCandidates runs and stores each owed candidate on the exchange's
// messages, joining the production request's trace. It returns true when
// every run was stored; false when the delivery ended on the way (stopped:
// left owed; forgotten: dropped; or the store did not take a run).
func (p *Processor) runCandidates(ctx context.Context, d Delivery, owed []shadow.Pipeline) bool {
	ex := d.Exchange
	sreq := ex.ShadowRequest()
	runCtx := ContextWithTraceParent(ctx, ex.TraceParent)
	interrupted := false
	for _, c := range owed {
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		res := shadow.MarkCancelled(ctx, c.Run(runCtx, sreq, store.ModeCandidate))
		b := store.Batch{Runs: []store.Run{res.Run}, Steps: res.Steps}
		if res.Run.Status == store.StatusCancelled {
			interrupted = true
			p.stats.cancelled.Add(1)
		} else if d.Owed.Work {
			b.Work = []store.Work{{RequestID: ex.RequestID, Pipeline: c.Name(), PipelineVersion: c.Version(),
				Status: store.WorkDone, ReceivedAt: ex.ReceivedAt}}
		}
		if !p.storeRun(ctx, d, &b, interrupted) {
			return false
		}
		if !interrupted {
			p.offerPair(ctx, ex, storedRun{run: b.Runs[0], span: res.Span})
		}
	}
	if interrupted {
		p.leaveOwed(d)
		return false
	}
	return true
}

// storeRun hands one candidate run to the writer unless its data subject was
// forgotten while it ran. A run after the stop (interrupted) is stored
// best-effort on a fresh context: it shows the stop in the trace and is
// replaced by the run of the next start. It returns false when the delivery
// ended here. b is pseudonymized in place: the caller hands on what was stored.
func (p *Processor) storeRun(ctx context.Context, d Delivery, b *store.Batch, interrupted bool) bool {
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if interrupted {
		wctx, cancel = context.WithTimeout(context.Background(), time.Second)
	}
	defer cancel()
	if gone, ok := p.subjectForgotten(wctx, d.Exchange); gone || !ok {
		if gone {
			p.dropForgotten(d, b.Rows())
		} else {
			p.leaveOwed(d)
		}
		return false
	}
	p.pseudonymize(d.Exchange.App, b)
	return p.enqueue(wctx, *b) || interrupted
}

// leaveOwed ends a delivery stopped by shutdown: the queue keeps what is
// owed (Release: a stored copy's work row stays pending, Kafka delivers it
// again), or, when it keeps nothing (the in-memory queue), the copy is counted
// as dropped ("shutdown").
func (p *Processor) leaveOwed(d Delivery) {
	if d.Release == nil {
		p.stats.drop("shutdown")
	} else {
		p.stats.leftPending.Add(1)
		d.Release()
	}
	p.log.Info("shadow: stopped by shutdown; the work stays owed", "request_id", d.Exchange.RequestID)
}

// subjectForgotten reports whether ex's data subject was forgotten at or
// after ex was received, asking the ForgetLookup (retried with backoff while
// the store does not answer). Exchanges without a subject, and processors
// without a lookup, answer false at once. ok is false only when ctx ended
// before the store answered: then nothing may be written.
func (p *Processor) subjectForgotten(ctx context.Context, ex Exchange) (gone, ok bool) {
	if ex.SubjectHash == "" || p.forgotten == nil {
		return false, true
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 10 * time.Millisecond
	bo.MaxInterval = time.Second
	bo.MaxElapsedTime = 0
	var at time.Time
	err := backoff.Retry(func() error {
		var err error
		at, err = p.forgotten.ForgottenAt(ctx, ex.SubjectHash)
		if err != nil && ctx.Err() == nil {
			p.loss.log("shadow: looking up forgotten subjects failed; retrying before writing any record of a subject", "forget_lookup", err, 0)
		}
		return err
	}, backoff.WithContext(bo, ctx))
	if err != nil {
		return false, false
	}
	return !at.IsZero() && !ex.ReceivedAt.After(at), true
}

// dropForgotten ends a delivery whose data subject was forgotten: rows
// records (of a finished candidate run) are not written, the exchange is
// counted as dropped (DropForgotten) and logged, and the delivery is
// acknowledged: nothing is owed for a forgotten subject.
func (p *Processor) dropForgotten(d Delivery, rows int) {
	p.stats.drop(DropForgotten)
	p.log.Warn("shadow: records dropped: the request's data subject was forgotten", "request_id", d.Exchange.RequestID,
		"reason", DropForgotten, "rows", rows)
	if d.Ack != nil {
		d.Ack()
	}
}

// claim marks id as being shadowed by this process, waiting while another
// worker of the process shadows it; ok is false when ctx ended first. release
// ends the claim.
func (p *Processor) claim(ctx context.Context, id string) (release func(), ok bool) {
	for {
		p.inflightMu.Lock()
		if p.inflight == nil {
			p.inflight = map[string]chan struct{}{}
		}
		busy, taken := p.inflight[id]
		if !taken {
			done := make(chan struct{})
			p.inflight[id] = done
			p.inflightMu.Unlock()
			return func() {
				p.inflightMu.Lock()
				delete(p.inflight, id)
				p.inflightMu.Unlock()
				close(done)
			}, true
		}
		p.inflightMu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// finishedRuns asks the lookup which candidate versions already have a
// finished run of id, retrying with backoff while the store does not answer;
// ok is false only when ctx ended first.
func (p *Processor) finishedRuns(ctx context.Context, id string) (keys []store.WorkKey, ok bool) {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 10 * time.Millisecond
	bo.MaxInterval = time.Second
	bo.MaxElapsedTime = 0
	err := backoff.Retry(func() error {
		var err error
		keys, err = p.lookup.FinishedRuns(ctx, id)
		if err != nil && ctx.Err() == nil {
			p.loss.log("shadow: looking up finished runs failed; retrying before running any candidate", "run_lookup", err, 0)
		}
		return err
	}, backoff.WithContext(bo, ctx))
	return keys, err == nil
}

// enqueue hands b to the writer, waiting with exponential backoff while the writer
// is full or the store unavailable (the shadow side absorbs back-pressure, production never does). It gives
// up, counting a drop, only when ctx ends.
func (p *Processor) enqueue(ctx context.Context, b store.Batch) bool {
	if err := p.enqueueBatch(ctx, b); err != nil {
		p.stats.drop("store_unavailable")
		p.loss.log("shadow: records dropped: the store writer did not take them (a stored copy's work stays pending for the next start)",
			"store_unavailable", err, b.Rows())
		return false
	}
	return true
}

// ErrStoreUnavailable wraps a failed synchronous INSERT: the processor retries it,
// the tap refuses the copy.
var ErrStoreUnavailable = errors.New("ingest: store unavailable")

// ErrKafkaUnavailable wraps a failed publish to Kafka: the tap refuses the copy.
var ErrKafkaUnavailable = errors.New("ingest: kafka unavailable")

// StoreWriter writes each batch to the store before Enqueue returns, so a
// delivery acked after it (the processor acks once every batch of an exchange is
// written) is durably stored: use it with an at-least-once transport such as
// KafkaQueue. A failed INSERT returns ErrStoreUnavailable and the processor retries
// until it succeeds or shutdown; the store's keys make a partial retry harmless.
type StoreWriter struct {
	Store store.TraceWriter
	// Timeout bounds one batch's INSERTs; 0 means 30 s.
	Timeout time.Duration
}

// Enqueue implements BatchWriter.
func (w StoreWriter) Enqueue(b store.Batch) error {
	d := w.Timeout
	if d <= 0 {
		d = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := w.Store.InsertRequests(ctx, b.Requests); err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := w.Store.InsertRuns(ctx, b.Runs); err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := w.Store.InsertSteps(ctx, b.Steps); err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := w.Store.InsertScores(ctx, b.Scores); err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := w.Store.InsertWork(ctx, b.Work); err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if len(b.Judgments) > 0 {
		if err := store.InsertJudgmentsOf(w.Store)(ctx, b.Judgments); err != nil {
			if errors.Is(err, store.ErrNotSupported) {
				return err // dropped, not retried: this store has no judgments table
			}
			return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		}
	}
	return nil
}

// UserText joins the text of the user messages with newlines: what segments
// are computed from (system prompts are the app's, not the user's).
func UserText(msgs []openai.ChatCompletionMessage) string {
	var parts []string
	for _, m := range msgs {
		if m.Role != openai.ChatMessageRoleUser {
			continue
		}
		if m.Content != "" {
			parts = append(parts, m.Content)
		}
		for _, p := range m.MultiContent {
			if p.Text != "" {
				parts = append(parts, p.Text)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// SetSegments copies seg into the request's segment columns.
func SetSegments(r *store.Request, seg segment.Segments) {
	r.Language, r.HasTable, r.HasCode, r.LengthBucket, r.Novelty = seg.Language, seg.HasTable, seg.HasCode, seg.LengthBucket, seg.Novelty
}
