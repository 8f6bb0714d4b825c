package ingest

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Stats counts what happened to tapped copies. Safe for concurrent use.
type Stats struct {
	accepted   atomic.Int64
	duplicates atomic.Int64
	processed  atomic.Int64
	failed     atomic.Int64
	// store-first and shutdown accounting
	recovered   atomic.Int64
	leftPending atomic.Int64
	unconfirmed atomic.Int64
	cancelled   atomic.Int64
	skippedRuns atomic.Int64

	// The mirroring proxy's forwarding path counts here: lock-free after a key's
	// first use, so it never waits on a lock the shadow side holds.
	dropped  counterMap // by "queue_full", "shutdown", "capture_busy", ...
	mirrored counterMap // proxy outcomes, by ProxyOutcome*
	refused  counterMap // requests the proxy refused, by Refused*
	// copies stored with their incumbent run but not shadowed, by reason (SkipIncumbentNotOK)
	storedOnly counterMap
	// the recorder's copies (not shadowed): stored, and lost without a row,
	// by why they were not shadowed
	recordedBy counterMap
	recordLost counterMap

	kafka kafkaCounters // the Kafka transport's re-deliveries and claim-checks

	mu        sync.Mutex
	rejected  map[string]int64 // by Reason*
	unsampled map[string]int64 // by ReasonSampledOut, ReasonRateCap
	pii       map[string]int64 // values replaced, by rule
	noPrice   map[string]int64 // incumbent runs stored at 0 USD for want of a price, by base model id
}

// maxUnpricedModels caps the model ids StatsSnapshot.Unpriced names (model ids
// come from tapped traffic); further ones are counted under "other".
const maxUnpricedModels = 50

// counterMap counts by key; Add takes no lock once the key exists.
type counterMap struct{ m sync.Map } // string -> *atomic.Int64

func (c *counterMap) add(key string) {
	v, ok := c.m.Load(key)
	if !ok {
		v, _ = c.m.LoadOrStore(key, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

func (c *counterMap) snapshot() map[string]int64 {
	out := map[string]int64{}
	c.m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// StatsSnapshot is a point-in-time copy of Stats, as served by GET /api/stats.
type StatsSnapshot struct {
	Accepted   int64 `json:"accepted"`   // queued for shadowing
	Duplicates int64 `json:"duplicates"` // re-sent copies answered without queueing
	Processed  int64 `json:"processed"`  // shadowed and handed to the store writer
	Failed     int64 `json:"failed"`     // shadowing failed before anything could be stored
	// Recovered are stored copies whose shadow work was left pending by an earlier
	// run of the server (a crash or a stop) and was picked up at start.
	Recovered int64 `json:"recovered"`
	// LeftPending are copies not shadowed (or cut short) at shutdown but not lost:
	// their work stays pending in the store, or Kafka delivers them again, and
	// the next start shadows them.
	LeftPending int64 `json:"left_pending"`
	// Unconfirmed are copies answered 503 because the store did not confirm the
	// write within ingest.accept_timeout; such a write may still land, and a
	// re-sent copy is then answered "duplicate".
	Unconfirmed int64 `json:"unconfirmed"`
	// CancelledRuns are candidate runs stopped by a shutdown: stored with status
	// "cancelled" (never "error"), their work stays owed and is shadowed again.
	CancelledRuns int64 `json:"cancelled_runs"`
	// SkippedRuns are candidate runs not started because the store already
	// held a finished run of that (request, pipeline, version): a re-delivered
	// or re-sent exchange on the Kafka path (Processor.UseRunLookup).
	SkippedRuns int64            `json:"skipped_runs"`
	Rejected    map[string]int64 `json:"rejected"`  // refused with a 4xx, by reason
	Dropped     map[string]int64 `json:"dropped"`   // accepted or offered but not shadowed, by reason
	Unsampled   map[string]int64 `json:"unsampled"` // valid but left out by sampling or the per-minute cap, by reason
	PII         map[string]int64 `json:"pii"`       // values pseudonymized, by rule
	Mirrored    map[string]int64 `json:"mirrored"`  // mirroring-proxy exchanges, by outcome
	// ProxyRefused are requests the mirroring proxy refused before forwarding
	// anything, by reason (foreign_host, cross_site, untrusted, bad_path).
	ProxyRefused map[string]int64 `json:"proxy_refused"`
	// StoredOnly are copies stored with their incumbent run but not shadowed,
	// by reason: incumbent_not_2xx (the incumbent did not answer 2xx and
	// ingest.shadow_incumbent_errors is off).
	StoredOnly map[string]int64 `json:"stored_only"`
	// Unpriced are incumbent runs that used tokens but whose model had no price
	// after shadow.ResolvePrice (response.model, then request.model): stored with
	// cost 0 USD and a note on the step, by base model id (shadow.BaseModelID).
	// A cost comparison over them is biased towards the incumbent.
	Unpriced map[string]int64 `json:"unpriced"`
	// Recorded are exchanges not shadowed whose record (with its text, or a
	// metadata row) the recorder stored, by why they were not shadowed
	// (shed_latency, sampled_out, capture_busy, too_large, ...).
	Recorded map[string]int64 `json:"recorded"`
	// RecordDropped are exchanges not shadowed whose record was lost too (the
	// recorder's buffers full, or a stop): they left no row. By the same reasons.
	RecordDropped map[string]int64   `json:"record_dropped"`
	Kafka         KafkaStatsSnapshot `json:"kafka"`  // re-deliveries and claim-checks of the Kafka transport
	Queued        int                `json:"queued"` // waiting now
}

// NewStats returns zeroed counters.
func NewStats() *Stats {
	return &Stats{rejected: map[string]int64{}, unsampled: map[string]int64{}, pii: map[string]int64{}, noPrice: map[string]int64{}}
}

func (s *Stats) add(c *atomic.Int64, n int64) { c.Add(n) }

// DroppedTotal is the sum of Dropped over reasons.
func (s StatsSnapshot) DroppedTotal() int64 {
	var n int64
	for _, v := range s.Dropped {
		n += v
	}
	return n
}

func (s *Stats) reject(reason string) {
	s.mu.Lock()
	s.rejected[reason]++
	s.mu.Unlock()
}

func (s *Stats) drop(reason string) { s.dropped.add(reason) }

func (s *Stats) unsample(reason string) {
	s.mu.Lock()
	s.unsampled[reason]++
	s.mu.Unlock()
}

func (s *Stats) mirror(outcome string) { s.mirrored.add(outcome) }

func (s *Stats) proxyRefuse(reason string) { s.refused.add(reason) }

func (s *Stats) storeOnly(reason string) { s.storedOnly.add(reason) }

// recorded counts a record stored by the recorder. Safe on a nil *Stats.
func (s *Stats) recorded(reason string) {
	if s != nil {
		s.recordedBy.add(reason)
	}
}

// recordDrop counts a record lost by the recorder. Safe on a nil *Stats.
func (s *Stats) recordDrop(reason string) {
	if s != nil {
		s.recordLost.add(reason)
	}
}

// unpriced counts an incumbent run stored at 0 USD for want of a price; model ""
// (priced, or no tokens used) counts nothing. At most maxUnpricedModels ids are
// named. Safe on a nil *Stats.
func (s *Stats) unpriced(model string) {
	if s == nil || model == "" {
		return
	}
	s.mu.Lock()
	if _, seen := s.noPrice[model]; !seen && len(s.noPrice) >= maxUnpricedModels {
		model = "other"
	}
	s.noPrice[model]++
	s.mu.Unlock()
}

func (s *Stats) addPII(fired map[string]int) {
	if len(fired) == 0 {
		return
	}
	s.mu.Lock()
	for k, n := range fired {
		s.pii[k] += int64(n)
	}
	s.mu.Unlock()
}

// Snapshot copies the counters; queued is the queue's current length.
func (s *Stats) Snapshot(queued int) StatsSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return StatsSnapshot{
		Accepted:   s.accepted.Load(),
		Duplicates: s.duplicates.Load(),
		Processed:  s.processed.Load(),
		Failed:     s.failed.Load(),

		Recovered:     s.recovered.Load(),
		LeftPending:   s.leftPending.Load(),
		Unconfirmed:   s.unconfirmed.Load(),
		CancelledRuns: s.cancelled.Load(),
		SkippedRuns:   s.skippedRuns.Load(),
		Rejected:      maps.Clone(s.rejected),
		Dropped:       s.dropped.snapshot(),
		Unsampled:     maps.Clone(s.unsampled),
		PII:           maps.Clone(s.pii),
		Mirrored:      s.mirrored.snapshot(),
		ProxyRefused:  s.refused.snapshot(),
		StoredOnly:    s.storedOnly.snapshot(),
		Unpriced:      maps.Clone(s.noPrice),
		Kafka:         s.kafka.snapshot(),
		Recorded:      s.recordedBy.snapshot(),
		RecordDropped: s.recordLost.snapshot(),
		Queued:        queued,
	}
}
