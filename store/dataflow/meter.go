package dataflow

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// DefaultFlushInterval is how often a Meter writes its counts.
const DefaultFlushInterval = 10 * time.Second

// Delta is what one export sent to one recipient.
type Delta struct {
	Items        int64 // spans, messages or notices the recipient took
	ContentItems int64 // of Items, those carrying prompts, answers or whole exchanges
	Requests     int64 // HTTP requests, produce batches or SMTP sessions (attempts)
	SentBytes    int64 // bodies sent, bytes
	FailedItems  int64 // items the recipient did not take
	// PII names the PII kinds pseudonymized in the text of the items taken,
	// once per item that had it (so "email" twice for two such messages).
	PII []string
}

type meterKey struct {
	hour                  time.Time
	kind, recipient, host string
	pii                   string
}

// Meter counts, per UTC hour, what the exporters the store does not see
// otherwise (OTLP spans, Kafka messages, notices) sent to each recipient,
// and writes the cumulative counts to a store.FlowExportWriter every flush
// interval and at Shutdown. A failed write keeps the counts and is tried
// again at the next flush (counted, logged); nothing is lost while the
// process runs. Add never waits on the store. A nil *Meter counts nothing
// (exporters built without one). Safe for concurrent use; Start and
// Shutdown are safe without the other and twice.
type Meter struct {
	process  string
	interval time.Duration
	log      *slog.Logger
	now      func() time.Time

	mu     sync.Mutex
	w      store.FlowExportWriter
	counts map[meterKey]store.FlowExport // per hour, until written
	dirty  map[meterKey]bool
	life   map[meterKey]store.FlowExport // since start, hour zero: what Totals and Snapshot read
	failed int64                         // flushes that failed
	since  time.Time

	lc      sync.Mutex // Start and Shutdown
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// MeterOption adjusts NewMeter.
type MeterOption func(*Meter)

// WithFlushInterval flushes every d (default DefaultFlushInterval).
func WithFlushInterval(d time.Duration) MeterOption {
	return func(m *Meter) {
		if d > 0 {
			m.interval = d
		}
	}
}

// NewMeter returns a Meter with a random process id; log gets its flush
// failures (nil: discarded).
func NewMeter(log *slog.Logger, opts ...MeterOption) *Meter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	m := &Meter{process: hex.EncodeToString(id[:]), interval: DefaultFlushInterval, log: log, now: time.Now,
		counts: map[meterKey]store.FlowExport{}, dirty: map[meterKey]bool{}, life: map[meterKey]store.FlowExport{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// UseWriter makes the meter write to w (the store, once it is open). Until
// then, and without one, counts stay in memory only.
func (m *Meter) UseWriter(w store.FlowExportWriter) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.w = w
	m.mu.Unlock()
}

// Add counts d for the recipient (kind, name, host) in the current hour.
func (m *Meter) Add(kind, recipient, host string, d Delta) {
	if m == nil {
		return
	}
	now := m.now().UTC()
	hour := now.Truncate(time.Hour)
	m.mu.Lock()
	defer m.mu.Unlock()
	k := meterKey{hour: hour, kind: kind, recipient: recipient, host: host}
	lk := k
	lk.hour = time.Time{}
	m.counts[k] = addDelta(m.counts[k], d, now)
	m.life[lk] = addDelta(m.life[lk], d, now)
	m.dirty[k] = true
	for _, p := range d.PII {
		pk, plk := k, lk
		pk.pii, plk.pii = p, p
		m.counts[pk] = addDelta(m.counts[pk], Delta{Items: 1}, now)
		m.life[plk] = addDelta(m.life[plk], Delta{Items: 1}, now)
		m.dirty[pk] = true
	}
}

// addDelta returns row with d's counts added.
func addDelta(row store.FlowExport, d Delta, now time.Time) store.FlowExport {
	row.Items += d.Items
	row.ContentItems += d.ContentItems
	row.Requests += d.Requests
	row.SentBytes += d.SentBytes
	row.FailedItems += d.FailedItems
	row.UpdatedAt = now
	return row
}

// Snapshot returns the counts since the process started, one row per
// recipient (kind, recipient, host; PIIKind ""), by kind, recipient, host:
// what /metrics exposes, also where no store keeps them (the tap role).
func (m *Meter) Snapshot() []store.FlowExport {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.FlowExport, 0, len(m.life))
	for k, r := range m.life {
		if k.pii != "" {
			continue
		}
		r.Kind, r.Recipient, r.Host, r.ProcessID = k.kind, k.recipient, k.host, m.process
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b store.FlowExport) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Recipient, b.Recipient), cmp.Compare(a.Host, b.Host))
	})
	return out
}

// Totals sums the counts of kind over every recipient and host since the
// process started; PII lists the kinds seen.
func (m *Meter) Totals(kind string) Delta {
	if m == nil {
		return Delta{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var d Delta
	for k, r := range m.life {
		if k.kind != kind {
			continue
		}
		if k.pii != "" {
			d.PII = append(d.PII, k.pii)
			continue
		}
		d.Items += r.Items
		d.ContentItems += r.ContentItems
		d.Requests += r.Requests
		d.SentBytes += r.SentBytes
		d.FailedItems += r.FailedItems
	}
	slices.Sort(d.PII)
	d.PII = slices.Compact(d.PII)
	return d
}

// FlushFailures counts the flushes that could not be written.
func (m *Meter) FlushFailures() int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed
}

// Flush writes the counts changed since the last flush. On failure they
// stay changed (the next flush writes them) and the error is returned.
func (m *Meter) Flush(ctx context.Context) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	w := m.w
	if w == nil || len(m.dirty) == 0 {
		m.mu.Unlock()
		return nil
	}
	rows := make([]store.FlowExport, 0, len(m.dirty))
	keys := make([]meterKey, 0, len(m.dirty))
	for k := range m.dirty {
		r := m.counts[k]
		r.WindowStart, r.ProcessID, r.Kind, r.Recipient, r.Host, r.PIIKind = k.hour, m.process, k.kind, k.recipient, k.host, k.pii
		rows = append(rows, r)
		keys = append(keys, k)
	}
	clear(m.dirty)
	m.mu.Unlock()

	err := w.InsertFlowExports(ctx, rows)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		for _, k := range keys {
			m.dirty[k] = true
		}
		m.failed++
		if m.since.IsZero() {
			m.since = m.now()
			m.log.Warn("data flows: the exporters' counts could not be stored; kept and tried again at the next flush", "err", err)
		}
		return err
	}
	if !m.since.IsZero() {
		m.log.Info("data flows: the exporters' counts are stored again", "failing_for", m.now().Sub(m.since).Round(time.Second))
		m.since = time.Time{}
	}
	// Hours before the current one that are written are done: forget them.
	current := m.now().UTC().Truncate(time.Hour)
	for k := range m.counts {
		if k.hour.Before(current) && !m.dirty[k] {
			delete(m.counts, k)
		}
	}
	return nil
}

// Start flushes every interval until Shutdown. ctx is not kept.
func (m *Meter) Start(context.Context) error {
	if m == nil {
		return nil
	}
	m.lc.Lock()
	defer m.lc.Unlock()
	if m.started || m.stopped {
		return nil
	}
	m.started = true
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fctx, fcancel := context.WithTimeout(ctx, m.interval)
				_ = m.Flush(fctx)
				fcancel()
			}
		}
	}()
	return nil
}

// Shutdown stops the flushes and writes what changed since the last one,
// within ctx. Counts it cannot write are logged as lost.
func (m *Meter) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	m.lc.Lock()
	if m.stopped {
		m.lc.Unlock()
		return nil
	}
	m.stopped = true
	cancel, done := m.cancel, m.done
	m.lc.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if err := m.Flush(ctx); err != nil {
		m.mu.Lock()
		n := len(m.dirty)
		m.mu.Unlock()
		m.log.Error("data flows: the exporters' last counts were not stored; the record of data flows misses them", "rows", n, "err", err)
		return errors.Join(errors.New("dataflow: final flush"), err)
	}
	return nil
}
