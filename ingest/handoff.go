package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// ErrShadowUnavailable is the hand-off's answer while the shadow side (the
// child process of an isolated all-in-one server) does not answer on its
// socket: the copy was not handed over.
var ErrShadowUnavailable = errors.New("ingest: handoff: the shadow side does not answer")

// errHandoffTimeout is a copy the shadow side did not commit within its
// wait (handoffWait): counted accept_timeout.
var errHandoffTimeout = errors.New("ingest: handoff: the shadow side did not commit the copy in time")

// ReasonShadowUnavailable is the drop reason of copies the front of an
// isolated server could not hand to its shadow side (ErrShadowUnavailable).
const ReasonShadowUnavailable = "shadow_unavailable"

// The hand-off's internal routes, served by the shadow side on its socket
// only (HandoffReceiver); the front never forwards a caller to them.
const (
	HandoffCopiesPath  = "/internal/handoff/copies"  // JSON lines of Exchange → handoffOutcomes
	HandoffRecordsPath = "/internal/handoff/records" // JSON lines of Exchange (records) → 204
	HandoffOfferedPath = "/internal/handoff/offered" // JSON array of store.OfferedCount → 204
	HandoffPrefix      = "/internal/"
)

// HandoffConfig is the front's side of the local transport.
type HandoffConfig struct {
	// Socket is the unix socket the shadow side listens on.
	Socket string
	// Buffer is how many copies wait for the shadow side at most; a copy
	// beyond it is refused at once (ErrQueueFull), never waited for.
	Buffer int
	// Batch is the most copies one POST carries (default 256).
	Batch int
	// Timeout bounds one POST (default 10 s).
	Timeout time.Duration
}

// HandoffStats are the hand-off's counts since start.
type HandoffStats struct {
	HandedOver  int64            `json:"handed_over"` // copies the shadow side took durably
	Refused     map[string]int64 `json:"refused"`     // copies the shadow side answered with a reason (queue_full, duplicate, …)
	Unavailable int64            `json:"unavailable"` // copies not handed over: the shadow side did not answer
	Records     int64            `json:"records"`     // records (exchanges not shadowed) handed over
	Buffered    int              `json:"buffered"`    // copies waiting now
	Failing     bool             `json:"failing"`     // the last POST failed
	// Saturation is whether the front captures exchanges for copies now
	// (Saturation's rule) and how many it forwarded without capture.
	Saturation SaturationSnapshot `json:"saturation"`
}

// Handoff is the DurableQueue of an isolated all-in-one server's front (the
// proxy, the tap and the recorder at production's priority): it carries
// copies, records and offered counts to the shadow side, a child process at
// lower CPU priority that owns the store, over a unix socket. A copy is
// durable once the shadow side's store-first queue committed it, so the tap's
// 202 keeps its promise. PublishDurable never waits: a full buffer is
// ErrQueueFull; a shadow side that does not answer fails the copies with
// ErrShadowUnavailable (counted, logged, Ready says so), and the tap records
// them, as it does every mirrored copy a queue does not take. The front runs
// no shadow worker: Next is never served.
type Handoff struct {
	cfg    HandoffConfig
	client *http.Client
	log    *slog.Logger
	ops    chan handoffOp // mirrored copies: no one waits for them
	waited chan handoffOp // copies a sender waits for: sent first, in batches of their own

	mu      sync.Mutex
	started bool
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup

	handedOver  atomic.Int64
	unavailable atomic.Int64
	records     atomic.Int64
	refusedMu   sync.Mutex
	refused     map[string]int64
	failMu      sync.Mutex
	failSince   time.Time // zero while the last POST succeeded
	failErr     error

	// sat decides before capture whether the shadow side can take a copy
	// (CaptureNext), fed by the refusals below.
	sat Saturation
}

// waitedPublisher is a DurableQueue with a lane for copies a sender waits
// for (POST /v1/tap): PublishWaited is PublishDurable ahead of the copies no
// one waits for (Handoff).
type waitedPublisher interface {
	PublishWaited(ex Exchange, done func(error)) error
}

type handoffOp struct {
	ex   Exchange
	done func(error)
}

// handoffOutcomes is the shadow side's answer to a batch of copies: one
// reason per line, "" for a copy taken durably.
type handoffOutcomes struct {
	Outcomes []string `json:"outcomes"`
}

// NewHandoff returns the front's hand-off over cfg.Socket.
func NewHandoff(cfg HandoffConfig, log *slog.Logger) (*Handoff, error) {
	if cfg.Socket == "" {
		return nil, errors.New("ingest: handoff: no socket")
	}
	if cfg.Buffer < 1 {
		return nil, fmt.Errorf("ingest: handoff: buffer must be ≥ 1, got %d", cfg.Buffer)
	}
	if cfg.Batch < 1 {
		cfg.Batch = 256
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &Handoff{cfg: cfg, client: UnixClient(cfg.Socket, cfg.Timeout), log: log,
		ops: make(chan handoffOp, cfg.Buffer), waited: make(chan handoffOp, max(cfg.Buffer/4, 64)), closing: make(chan struct{}), refused: map[string]int64{}}, nil
}

// UnixClient is an HTTP client whose every connection goes to the unix
// socket at path (the URL's host is ignored), each request bounded by timeout
// (0: none).
func UnixClient(path string, timeout time.Duration) *http.Client {
	var d net.Dialer
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns: 16, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute,
	}}
}

// handoffSenders is how many POSTs of copies are in flight at once.
const handoffSenders = 2

// Start starts the senders.
func (h *Handoff) Start(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return errors.New("ingest: handoff: already started")
	}
	if h.closed {
		return ErrQueueClosed
	}
	h.started = true
	h.wg.Add(handoffSenders)
	for range handoffSenders {
		go func() { defer h.wg.Done(); h.send() }()
	}
	return nil
}

// Shutdown stops taking copies and hands over those buffered until ctx ends;
// the rest are failed with ErrQueueClosed (the tap records them). Safe without
// Start and twice.
func (h *Handoff) Shutdown(ctx context.Context) error {
	_ = h.Close()
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if !started {
		return nil
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ingest: handoff: %d copies not handed over at the deadline: %w", len(h.ops), ctx.Err())
	}
}

// Close implements Queue: PublishDurable refuses from now on; what is
// buffered is still handed over. Safe twice.
func (h *Handoff) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
	return nil
}

// PublishDurable implements DurableQueue: done is told once the shadow side
// committed ex, or why not.
func (h *Handoff) PublishDurable(ex Exchange, done func(error)) error {
	return h.enqueue(h.ops, ex, done)
}

// PublishWaited is PublishDurable for a copy a sender waits for (POST
// /v1/tap): it is handed over before every mirrored copy buffered, in a batch
// of its own kind, so the sender's accept_timeout is not spent behind copies
// no one waits for.
func (h *Handoff) PublishWaited(ex Exchange, done func(error)) error {
	return h.enqueue(h.waited, ex, done)
}

// enqueue puts ex on lane without waiting: ErrQueueClosed before Start or
// after Close, ErrQueueFull when the lane's buffer is full.
func (h *Handoff) enqueue(lane chan<- handoffOp, ex Exchange, done func(error)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !h.started {
		return ErrQueueClosed
	}
	select {
	case lane <- handoffOp{ex: ex, done: done}:
		return nil
	default:
		if lane == h.ops {
			h.sat.Refused(time.Now())
		}
		return ErrQueueFull
	}
}

// CaptureNext implements CaptureGate with the Saturation rule: false
// (ReasonShadowSaturated) while the shadow side refuses copies, for all but
// the share still captured.
func (h *Handoff) CaptureNext() (reason string, capture bool) {
	if h.sat.Capture(time.Now(), h.drained) {
		return "", true
	}
	return ReasonShadowSaturated, false
}

// drained reports whether the mirrored copies buffered fill at most half of
// the buffer (Saturation's condition to capture more again).
func (h *Handoff) drained() bool { return len(h.ops)*2 <= cap(h.ops) }

// Saturated reports the saturation rule's state: nil while every exchange is
// captured.
func (h *Handoff) Saturated() *SaturationSnapshot {
	st := h.sat.Snapshot(time.Now(), h.drained)
	if !st.Saturated {
		return nil
	}
	return &st
}

// Publish implements Queue: PublishWaited, waiting for the outcome or ctx.
func (h *Handoff) Publish(ctx context.Context, ex Exchange) error {
	return publishAndWait(ctx, h.PublishWaited, ex, "ingest: handoff: waiting for the shadow side")
}

// Next implements Queue: the front runs no shadow worker, so nothing is
// delivered here; it waits for ctx or the close.
func (h *Handoff) Next(ctx context.Context) (Delivery, error) {
	select {
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	case <-h.closing:
		return Delivery{}, ErrQueueClosed
	}
}

// Len implements Queue: copies buffered, not yet handed over.
func (h *Handoff) Len() int { return len(h.ops) + len(h.waited) }

// Ready reports why copies cannot be handed over: the shadow side did not
// answer the last POST (ErrShadowUnavailable, since when), or the buffer is
// 90% full (ErrQueueFull).
func (h *Handoff) Ready() error {
	h.failMu.Lock()
	since, err := h.failSince, h.failErr
	h.failMu.Unlock()
	if !since.IsZero() {
		return fmt.Errorf("%w since %s: %v", ErrShadowUnavailable, since.UTC().Format(time.RFC3339), err)
	}
	if n := len(h.ops); n*10 >= cap(h.ops)*9 {
		return fmt.Errorf("ingest: handoff: %d of %d mirrored copies buffered: %w", n, cap(h.ops), ErrQueueFull)
	}
	return nil
}

// Stats returns the hand-off's counts.
func (h *Handoff) Stats() HandoffStats {
	h.refusedMu.Lock()
	refused := make(map[string]int64, len(h.refused))
	for k, v := range h.refused {
		refused[k] = v
	}
	h.refusedMu.Unlock()
	h.failMu.Lock()
	failing := !h.failSince.IsZero()
	h.failMu.Unlock()
	return HandoffStats{HandedOver: h.handedOver.Load(), Refused: refused, Unavailable: h.unavailable.Load(),
		Records: h.records.Load(), Buffered: h.Len(), Failing: failing, Saturation: h.sat.Snapshot(time.Now(), h.drained)}
}

// send hands over buffered copies in batches, those a sender waits for
// first, until the hand-off is closed and its buffers empty.
func (h *Handoff) send() {
	batch := make([]handoffOp, 0, h.cfg.Batch)
	for {
		var from chan handoffOp
		select {
		case op := <-h.waited:
			batch, from = append(batch[:0], op), h.waited
		default:
			select {
			case op := <-h.waited:
				batch, from = append(batch[:0], op), h.waited
			case op := <-h.ops:
				batch, from = append(batch[:0], op), h.ops
			case <-h.closing:
				select {
				case op := <-h.waited:
					batch, from = append(batch[:0], op), h.waited
				case op := <-h.ops:
					batch, from = append(batch[:0], op), h.ops
				default:
					return
				}
			}
		}
	fill:
		for len(batch) < h.cfg.Batch {
			select {
			case op := <-from:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		h.sendCopies(batch)
	}
}

// sendCopies POSTs one batch and tells every copy its outcome.
func (h *Handoff) sendCopies(batch []handoffOp) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	errs := make([]error, len(batch))
	for i := range batch {
		if err := enc.Encode(&batch[i].ex); err != nil {
			errs[i] = fmt.Errorf("ingest: handoff: encode copy %s: %w", batch[i].ex.RequestID, err)
		}
	}
	var out handoffOutcomes
	err := h.post(HandoffCopiesPath, "application/x-ndjson", body.Bytes(), &out)
	if err == nil && len(out.Outcomes) != len(batch) {
		err = fmt.Errorf("ingest: handoff: %d outcomes for %d copies", len(out.Outcomes), len(batch))
	}
	if err != nil {
		h.unavailable.Add(int64(len(batch)))
	}
	for i, op := range batch {
		e := errs[i]
		switch {
		case e != nil:
		case err != nil:
			e = fmt.Errorf("%w: %v", ErrShadowUnavailable, err)
		default:
			e = h.outcome(out.Outcomes[i])
		}
		op.done(e)
	}
}

// outcome turns one of the shadow side's reasons into the error the tap reads.
func (h *Handoff) outcome(reason string) error {
	if reason == "" {
		h.handedOver.Add(1)
		h.sat.Taken()
		return nil
	}
	h.refusedMu.Lock()
	h.refused[reason]++
	h.refusedMu.Unlock()
	switch reason {
	case "duplicate":
		return ErrDuplicate
	case ReasonQueueFull:
		h.sat.Refused(time.Now())
		return ErrQueueFull
	case ReasonShuttingDown:
		return ErrQueueClosed
	case ReasonAcceptTimeout:
		h.sat.Refused(time.Now())
		return errHandoffTimeout
	}
	return fmt.Errorf("ingest: handoff: the shadow side did not store the copy: %s", reason)
}

// WriteRecords implements RecordSink: the records go to the shadow side,
// which stores them before it answers.
func (h *Handoff) WriteRecords(_ context.Context, exs []Exchange) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for i := range exs {
		if err := enc.Encode(&exs[i]); err != nil {
			return fmt.Errorf("ingest: handoff: encode record %s: %w", exs[i].RequestID, err)
		}
	}
	if err := h.post(HandoffRecordsPath, "application/x-ndjson", body.Bytes(), nil); err != nil {
		return err
	}
	h.records.Add(int64(len(exs)))
	return nil
}

// InsertOffered implements store.CoverageWriter: the offered counts go to
// the shadow side's store.
func (h *Handoff) InsertOffered(_ context.Context, counts []store.OfferedCount) error {
	b, err := json.Marshal(counts)
	if err != nil {
		return fmt.Errorf("ingest: handoff: encode offered counts: %w", err)
	}
	return h.post(HandoffOfferedPath, "application/json", b, nil)
}

// post sends one POST to the shadow side and decodes its JSON answer into out
// (nil: 204 expected). A failure marks the hand-off failing until a POST
// succeeds.
func (h *Handoff) post(path, contentType string, body []byte, out any) (err error) {
	defer func() { h.noteResult(err) }()
	resp, err := h.client.Post("http://shadow"+path, contentType, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrShadowUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%w: %s answered %d: %s", ErrShadowUnavailable, path, resp.StatusCode, bytes.TrimSpace(msg))
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%w: %s: decode answer: %v", ErrShadowUnavailable, path, err)
	}
	return nil
}

func (h *Handoff) noteResult(err error) {
	h.failMu.Lock()
	defer h.failMu.Unlock()
	if err == nil {
		if !h.failSince.IsZero() {
			h.log.Info("handoff: the shadow side answers again", "failing_for", time.Since(h.failSince).Round(time.Millisecond),
				"copies_not_handed_over", h.unavailable.Load())
		}
		h.failSince, h.failErr = time.Time{}, nil
		return
	}
	if h.failSince.IsZero() {
		h.failSince = time.Now()
		// Logged once per outage; each copy is counted and logged by the tap.
		h.log.Warn("handoff: the shadow side does not answer; production is served, copies are recorded until it does", "err", err)
	}
	h.failErr = err
}
