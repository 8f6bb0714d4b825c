package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Why a recorded copy carries no text (Exchange.BodyOmitted, requests.body_omitted).
const (
	BodyTooLarge     = ProxyOutcomeTooLarge    // request or answer beyond proxy.max_capture_bytes
	BodyCaptureBusy  = ProxyOutcomeCaptureBusy // every capture slot was taken: not parsed
	BodyOverBudget   = ReasonBodyBudget        // the request body did not fit ingest.max_unfinished_body_bytes
	BodyUnparsable   = ProxyOutcomeUnparsable  // request or answer could not be read as an exchange
	BodyNotStarted   = "not_started"           // served before the proxy's Start: not parsed
	BodyRecordBudget = "record_budget"         // the recorder's text buffers (record.body_slots, body_bytes) were full
)

// RecordConfig sizes the recorder: it stores the copies the tap takes but does
// not shadow (shed, sampled out, over the per-minute cap, a full queue, too
// large, a busy capture) so that every exchange leaves a row. A record is
// handed over in O(1) to one of two bounded buffers and written in batches
// by one goroutine; nothing waits for the store.
type RecordConfig struct {
	// MetadataSlots caps the metadata records (no text: time, route, app,
	// model, status, latency, usage, sizes) waiting to be stored; a record
	// beyond it is dropped, counted (record_dropped, by reason) and logged.
	MetadataSlots int `yaml:"metadata_slots"`
	// BodySlots and BodyBytes cap the records kept with their text waiting
	// to be stored (count, and bytes of request and answer); a record beyond
	// either is kept as a metadata record (body_omitted "record_budget").
	BodySlots int   `yaml:"body_slots"`
	BodyBytes int64 `yaml:"body_bytes"`
	// Batch is the most records one store write takes; Linger how long the
	// first record of a batch waits for others.
	Batch  int           `yaml:"batch"`
	Linger time.Duration `yaml:"linger"`
	// OfferedFlush is how often the offered counts (table tap_offered) are
	// written.
	OfferedFlush time.Duration `yaml:"offered_flush"`
}

// NewDefaultRecordConfig returns 65,536 metadata slots (a few hundred bytes
// each), 1,024 records with text up to 64 MiB, batches of 1,000 gathered for
// 200 ms, and the offered counts written every 10 s.
func NewDefaultRecordConfig() RecordConfig {
	return RecordConfig{MetadataSlots: 65536, BodySlots: 1024, BodyBytes: 64 << 20, Batch: 1000, Linger: 200 * time.Millisecond,
		OfferedFlush: 10 * time.Second}
}

// Validate reports every invalid field at once.
func (c RecordConfig) Validate() error {
	var errs []error
	if c.MetadataSlots < 1 {
		errs = append(errs, fmt.Errorf("ingest: record.metadata_slots must be at least 1, got %d", c.MetadataSlots))
	}
	if c.BodySlots < 0 || c.BodyBytes < 0 {
		errs = append(errs, fmt.Errorf("ingest: record.body_slots (%d) and body_bytes (%d) must not be negative", c.BodySlots, c.BodyBytes))
	}
	if c.MetadataSlots < c.BodySlots {
		errs = append(errs, fmt.Errorf("ingest: record.metadata_slots (%d) must be at least body_slots (%d): a record that does not fit with its text is kept as metadata", c.MetadataSlots, c.BodySlots))
	}
	if c.Batch < 1 {
		errs = append(errs, fmt.Errorf("ingest: record.batch must be at least 1, got %d", c.Batch))
	}
	if c.Linger <= 0 || c.Linger > 10*time.Second {
		errs = append(errs, fmt.Errorf("ingest: record.linger must be between 0 (excluded) and 10s, got %s", c.Linger))
	}
	if c.OfferedFlush < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("ingest: record.offered_flush must be at least 100ms, got %s", c.OfferedFlush))
	}
	return errors.Join(errs...)
}

// RecordSink stores the records of copies not shadowed: each a store-only
// exchange (StoreOnly names why), with its text or as metadata (BodyOmitted).
type RecordSink interface {
	// WriteRecords stores exs; an error means some may not be stored, and the
	// recorder writes them all again (every write is idempotent on its keys).
	WriteRecords(ctx context.Context, exs []Exchange) error
}

// StoreRecords writes records to the store: per exchange the request row
// (with the segments of its text), the incumbent run and its step, priced by
// Pricer (exchangeRecords, as every queue stores a copy); the request rows
// last, as the store-first queue writes them.
type StoreRecords struct {
	Store     store.TraceWriter
	Segmenter *segment.Segmenter // nil: segments without a vocabulary (novelty -1)
	Pricer    Pricer
	Stats     *Stats // counts unpriced incumbent models; nil: not counted
}

// WriteRecords implements RecordSink.
func (s StoreRecords) WriteRecords(ctx context.Context, exs []Exchange) error {
	seg := s.Segmenter
	if seg == nil {
		seg = segment.New(nil)
	}
	var b store.Batch
	for i := range exs {
		rec, unpriced, err := exchangeRecords(&exs[i], seg, s.Pricer)
		if err != nil {
			// Text that cannot be encoded: its metadata is still recorded.
			exs[i] = metadataOnly(exs[i], BodyUnparsable)
			if rec, unpriced, err = exchangeRecords(&exs[i], seg, s.Pricer); err != nil {
				return fmt.Errorf("ingest: record %s: %w", exs[i].RequestID, err)
			}
		}
		s.Stats.unpriced(unpriced)
		b.Requests = append(b.Requests, rec.Requests...)
		b.Runs, b.Steps = append(b.Runs, rec.Runs...), append(b.Steps, rec.Steps...)
	}
	if err := s.Store.InsertRuns(ctx, b.Runs); err != nil {
		return err
	}
	if err := s.Store.InsertSteps(ctx, b.Steps); err != nil {
		return err
	}
	return s.Store.InsertRequests(ctx, b.Requests)
}

// QueueRecords hands records to a durable queue (the tap role's Kafka), for
// the shadow workers to store: they store a store-only copy's records and
// run no candidate on it.
type QueueRecords struct{ Queue DurableQueue }

// WriteRecords implements RecordSink: every record is published, then the
// outcomes are awaited (ctx bounds the wait).
func (s QueueRecords) WriteRecords(ctx context.Context, exs []Exchange) error {
	res := make(chan error, len(exs))
	sent := 0
	var errs []error
	for _, ex := range exs {
		if err := s.Queue.PublishDurable(ex, func(err error) { res <- err }); err != nil {
			errs = append(errs, err)
			continue
		}
		sent++
	}
	for range sent {
		select {
		case err := <-res:
			if err != nil && !errors.Is(err, ErrDuplicate) {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			return fmt.Errorf("ingest: records: waiting for the queue: %w", ctx.Err())
		}
	}
	return errors.Join(errs...)
}

// Recorder stores the copies the tap takes but does not shadow, so that every
// exchange forwarded leaves a row: Put hands one over in O(1) to a bounded
// buffer (records with their text, and a much larger one of metadata
// records), and one goroutine writes them in batches through its RecordSink,
// retrying while the store fails. What even the metadata buffer cannot take is
// dropped, counted (Stats.RecordDropped, by reason) and logged: loss is loud.
// It also keeps the tap's offered counts (Offered) and writes them every
// OfferedFlush. Start runs the writer; Shutdown writes what is buffered
// within its deadline (the rest is counted dropped, "shutdown"). Safe for
// concurrent use; Put works before Start (records wait in the buffers).
type Recorder struct {
	cfg     RecordConfig
	sink    RecordSink
	offered *Offered
	counts  store.CoverageWriter // nil: offered counts are not stored
	stats   *Stats
	log     *slog.Logger
	loss    *lossLog
	// clean pseudonymizes a record taken raw (Record) before it is written,
	// and labels the offered counts' app and route as the stored rows carry
	// them (Tap.UseRecorder sets both); nil: left as they are.
	clean  func(*Exchange)
	labels func(app, route string) (string, string)

	meta      chan record
	bodies    chan record
	bodySlots atomic.Int64
	bodyBytes atomic.Int64
	failing   atomic.Pointer[error] // the last write's error while the store refuses; nil once a write succeeds

	lifeMu  sync.Mutex
	started bool
	closed  bool
	stop    chan struct{}
	done    chan struct{}
}

// record is one buffered copy; raw when its texts are not pseudonymized yet.
type record struct {
	ex  Exchange
	raw bool
}

// NewRecorder returns a recorder writing records to sink and the offered
// counts to counts (nil: counted in memory only, e.g. a tap without a store).
func NewRecorder(cfg RecordConfig, sink RecordSink, counts store.CoverageWriter, stats *Stats, log *slog.Logger) (*Recorder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("ingest: recorder: no sink")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{cfg: cfg, sink: sink, counts: counts, stats: stats, log: log, loss: newLossLog(log), offered: NewOffered(),
		meta: make(chan record, cfg.MetadataSlots), bodies: make(chan record, max(cfg.BodySlots, 1)),
		stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Offered returns the offered counts the recorder writes.
func (r *Recorder) Offered() *Offered { return r.offered }

// Record keeps ex, an exchange that will not be shadowed, as it arrived (its
// texts raw: they are pseudonymized by the writer before anything is
// stored), with notShadowed as its reason (Exchange.StoreOnly). Its text is
// kept when it fits record.body_slots and body_bytes, else it becomes a
// metadata record (BodyRecordBudget). O(1), never blocks: the mirroring
// proxy calls it on the production path.
func (r *Recorder) Record(ex Exchange, notShadowed string) { r.take(ex, notShadowed, true) }

// take is Record for a copy whose texts are raw or already pseudonymized.
func (r *Recorder) take(ex Exchange, notShadowed string, raw bool) {
	ex.StoreOnly = notShadowed
	withText := ex.BodyOmitted == "" && r.fitsText(textSize(ex))
	if !withText && ex.BodyOmitted == "" {
		ex = metadataOnly(ex, BodyRecordBudget)
	}
	r.put(record{ex: ex, raw: raw}, withText)
}

// Buffered is how many records wait for the store now.
func (r *Recorder) Buffered() int { return len(r.meta) + len(r.bodies) }

// ErrRecordBufferFull is Ready's error when the metadata buffer is at least
// 90% full: records are about to be dropped.
var ErrRecordBufferFull = errors.New("ingest: recorder: the metadata buffer is 90% full")

// Ready reports whether records reach the store: an error while its last
// write failed (wrapping the store's error), or when the metadata buffer is
// at least 90% full (ErrRecordBufferFull).
func (r *Recorder) Ready() error {
	if n := len(r.meta); n*10 >= cap(r.meta)*9 {
		return fmt.Errorf("%w (%d of %d records wait; ingest.record.metadata_slots)", ErrRecordBufferFull, n, cap(r.meta))
	}
	if err := r.failing.Load(); err != nil {
		return fmt.Errorf("ingest: recorder: the store does not take the records: %w", *err)
	}
	return nil
}

// fitsText reserves room for a record of size bytes of text; false when the
// text buffers are full (the record is then kept as metadata). A reservation
// is given back by the writer, or by put when the record is not queued.
func (r *Recorder) fitsText(size int64) bool {
	if r.bodySlots.Add(1) > int64(r.cfg.BodySlots) {
		r.bodySlots.Add(-1)
		return false
	}
	if r.bodyBytes.Add(size) > r.cfg.BodyBytes {
		r.bodyBytes.Add(-size)
		r.bodySlots.Add(-1)
		return false
	}
	return true
}

func (r *Recorder) freeText(rec record) {
	r.bodySlots.Add(-1)
	r.bodyBytes.Add(-textSize(rec.ex))
}

// put queues ex, whose text room was reserved by fitsText when withText is
// true (ex.BodyOmitted is then ""). A metadata record that finds its buffer
// full, or any record after Shutdown, is dropped, counted and logged.
func (r *Recorder) put(rec record, withText bool) {
	r.lifeMu.Lock()
	closed := r.closed
	r.lifeMu.Unlock()
	if closed {
		if withText {
			r.freeText(rec)
		}
		r.dropped(rec.ex, "shutdown", errors.New("the recorder is stopped"))
		return
	}
	if withText {
		r.bodies <- rec // room reserved: never blocks
		return
	}
	select {
	case r.meta <- rec:
	default:
		r.dropped(rec.ex, "metadata_buffer_full", fmt.Errorf("%d metadata records wait for the store (ingest.record.metadata_slots)", r.cfg.MetadataSlots))
	}
}

// dropped counts a record lost (by the copy's reason) and logs it,
// rate-limited, with the cause.
func (r *Recorder) dropped(ex Exchange, cause string, err error) {
	r.stats.recordDrop(ex.StoreOnly)
	r.offered.dropped(ex)
	r.loss.log("record: exchange left without a row", "record_"+cause, fmt.Errorf("%w (request %s, not shadowed: %s)", err, ex.RequestID, ex.StoreOnly), 1)
}

// Start launches the writer.
func (r *Recorder) Start(ctx context.Context) error {
	r.lifeMu.Lock()
	defer r.lifeMu.Unlock()
	if r.started || r.closed {
		return errors.New("ingest: recorder: already started or shut down")
	}
	r.started = true
	go r.loop(context.WithoutCancel(ctx))
	return nil
}

// Shutdown stops taking records and writes what is buffered, within ctx;
// records still unwritten then are counted dropped ("shutdown") and logged.
// Safe without Start and twice.
func (r *Recorder) Shutdown(ctx context.Context) error {
	r.lifeMu.Lock()
	if r.closed {
		r.lifeMu.Unlock()
		return nil
	}
	r.closed = true
	started := r.started
	r.lifeMu.Unlock()
	if started {
		close(r.stop)
		<-r.done
	}
	var err error
	for batch := r.buffered(); len(batch) > 0; batch = r.buffered() {
		if err != nil {
			for _, rec := range batch {
				r.dropped(rec.ex, "shutdown", err)
			}
			continue
		}
		if err = r.write(ctx, batch); err != nil {
			// What could not be written before the deadline is lost, and said so.
			for _, rec := range batch {
				r.dropped(rec.ex, "shutdown", err)
			}
		}
	}
	if ferr := r.flushOffered(ctx, true); ferr != nil && err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("ingest: recorder shutdown: %w", err)
	}
	return nil
}

// buffered takes up to Batch buffered records without waiting.
func (r *Recorder) buffered() []record {
	var out []record
	for len(out) < r.cfg.Batch {
		select {
		case rec := <-r.bodies:
			r.freeText(rec)
			out = append(out, rec)
		case rec := <-r.meta:
			out = append(out, rec)
		default:
			return out
		}
	}
	return out
}

// loop writes batches until Shutdown, and the offered counts every
// OfferedFlush.
func (r *Recorder) loop(ctx context.Context) {
	defer close(r.done)
	flush := time.NewTicker(r.cfg.OfferedFlush)
	defer flush.Stop()
	for {
		var first record
		select {
		case <-r.stop:
			return
		case <-flush.C:
			_ = r.flushOffered(ctx, false)
			continue
		case first = <-r.bodies:
			r.freeText(first)
		case first = <-r.meta:
		}
		r.writeAll(ctx, r.collect(first))
	}
}

// collect gathers more records after first, for Linger at most, until the
// batch is full or Shutdown begins.
func (r *Recorder) collect(first record) []record {
	batch := []record{first}
	linger := time.NewTimer(r.cfg.Linger)
	defer linger.Stop()
	for len(batch) < r.cfg.Batch {
		select {
		case rec := <-r.bodies:
			r.freeText(rec)
			batch = append(batch, rec)
		case rec := <-r.meta:
			batch = append(batch, rec)
		case <-linger.C:
			return batch
		case <-r.stop:
			return batch
		}
	}
	return batch
}

// writeAll writes batch, retrying with backoff (100 ms doubling to 5 s) until
// it is stored or Shutdown begins; then it goes back to the buffers for
// Shutdown to write. Meanwhile new records wait in the buffers, and what they
// cannot hold is dropped and counted.
func (r *Recorder) writeAll(ctx context.Context, batch []record) {
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval, eb.MaxInterval, eb.MaxElapsedTime = 100*time.Millisecond, 5*time.Second, 0
	for {
		err := r.write(ctx, batch)
		if err == nil {
			r.failing.Store(nil)
			return
		}
		r.failing.Store(&err)
		r.loss.log("record: the store did not take the records; retrying (new ones wait in the buffers)", "record_store_failing", err, 0)
		wait := time.NewTimer(eb.NextBackOff())
		select {
		case <-r.stop:
			wait.Stop()
			r.requeue(batch)
			return
		case <-wait.C:
		}
	}
}

// requeue puts a batch the loop could not write back for Shutdown to write,
// as metadata when the text buffer is full again.
func (r *Recorder) requeue(batch []record) {
	for _, rec := range batch {
		if rec.ex.BodyOmitted == "" && r.fitsText(textSize(rec.ex)) {
			r.bodies <- rec
			continue
		}
		if rec.ex.BodyOmitted == "" {
			rec.ex = metadataOnly(rec.ex, BodyRecordBudget)
		}
		select {
		case r.meta <- rec:
		default:
			r.dropped(rec.ex, "metadata_buffer_full", errors.New("no room to keep the record for the stop"))
		}
	}
}

// write pseudonymizes the raw records of batch (once: they are kept
// pseudonymized for a retry), stores the batch and counts what was recorded.
func (r *Recorder) write(ctx context.Context, batch []record) error {
	if len(batch) == 0 {
		return nil
	}
	exs := make([]Exchange, len(batch))
	for i := range batch {
		if batch[i].raw && r.clean != nil {
			r.clean(&batch[i].ex)
		}
		batch[i].raw = false
		exs[i] = batch[i].ex
	}
	if err := r.sink.WriteRecords(ctx, exs); err != nil {
		return err
	}
	for _, ex := range exs {
		r.stats.recorded(ex.StoreOnly)
	}
	return nil
}

// flushOffered writes the offered counts of the minutes that changed since
// the last flush (all minutes held when final).
func (r *Recorder) flushOffered(ctx context.Context, final bool) error {
	if r.counts == nil {
		return nil
	}
	rows := r.offered.changed(time.Now(), final)
	if len(rows) == 0 {
		return nil
	}
	if err := r.counts.InsertOffered(ctx, r.labelled(rows)); err != nil {
		r.offered.unflushed(rows)
		r.loss.log("record: offered counts not stored; kept for the next flush", "offered_store_failing", err, 0)
		return err
	}
	return nil
}

// labelled is rows with their app and route as the stored rows carry them
// (r.labels); rows that then share a key are summed into one.
func (r *Recorder) labelled(rows []store.OfferedCount) []store.OfferedCount {
	if r.labels == nil {
		return rows
	}
	type key struct {
		at                 time.Time
		source, route, app string
	}
	out := make([]store.OfferedCount, 0, len(rows))
	at := map[key]int{}
	for _, c := range rows {
		c.App, c.Route = r.labels(c.App, c.Route)
		k := key{c.WindowStart, c.Source, c.Route, c.App}
		if i, ok := at[k]; ok {
			out[i].Offered += c.Offered
			out[i].RecordDropped += c.RecordDropped
			continue
		}
		at[k] = len(out)
		out = append(out, c)
	}
	return out
}

// textSize is the bytes of text a record holds, for the body budget: the
// request and answer bodies as they travelled, or their text when the sizes
// are not known.
func textSize(ex Exchange) int64 {
	if n := ex.RequestBytes + ex.ResponseBytes; n > 0 {
		return n
	}
	var n int
	for _, m := range ex.Request.Messages {
		n += len(m.Content)
		for _, p := range m.MultiContent {
			n += len(p.Text)
			if p.ImageURL != nil {
				n += len(p.ImageURL.URL)
			}
		}
	}
	if r := ex.Response; r != nil {
		n += len(r.Content) + len(r.Reasoning) + len(r.Error)
	}
	return int64(n)
}

// metadataOnly is ex without its text: the request's model, the answer's id,
// model, status, latency, time to first byte, usage and how it ended, the
// metadata, sizes and ids; why names what kept the text out.
func metadataOnly(ex Exchange, why string) Exchange {
	out := Exchange{SchemaVersion: ex.SchemaVersion, RequestID: ex.RequestID, App: ex.App, ReceivedAt: ex.ReceivedAt,
		Request: ExchangeRequest{Model: ex.Request.Model}, Metadata: ex.Metadata, Simulated: ex.Simulated,
		SubjectHash: ex.SubjectHash, TraceParent: ex.TraceParent, StoreOnly: ex.StoreOnly, BodyOmitted: why,
		RequestBytes: ex.RequestBytes, ResponseBytes: ex.ResponseBytes}
	if r := ex.Response; r != nil {
		out.Response = &ExchangeResponse{ID: r.ID, Model: r.Model, LatencyMs: r.LatencyMs, TTFTMs: r.TTFTMs, Usage: r.Usage,
			UsageEstimated: r.UsageEstimated, FinishReason: r.FinishReason, Status: r.Status, Partial: r.Partial,
			CancelledByClient: r.CancelledByClient, Headers: r.Headers}
	}
	return out
}
