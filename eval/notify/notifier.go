// Package notify tells a team when a verdict changes: a suite verdict (per
// candidate version and regression set) or the live verdict on shadow
// traffic (per candidate version) that moves between PASS, FAIL and
// INCONCLUSIVE is sent to a webhook (Slack-compatible JSON) and by e-mail
// (SMTP), with the headline, the gates that did not pass and a link to the
// page with the evidence.
//
// The last verdict decided per sink and key is kept in the store
// (store.VerdictNotices, table verdict_notices): a change is written
// pending before it is sent and sent, failed or dropped after, so a restart
// sends what was pending and never a sent notice again. Offer never waits:
// verdicts go to a bounded outbox, and each sink delivers from its own
// bounded queue with retries (cenkalti/backoff, Retry-After honoured);
// whatever is dropped or fails is counted (Stats), logged and shown by
// serve in /metrics and /readyz.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// Sink names (store.VerdictNotice.Sink, Stats.Sinks, metric labels).
const (
	SinkWebhook = "webhook"
	SinkEmail   = "email"
)

// Reasons a verdict is dropped before change detection (Stats.Dropped).
const (
	DropOutboxFull = "outbox_full" // Config.OutboxSize verdicts were already waiting
	DropStopped    = "stopped"     // offered after Shutdown
	DropInvalid    = "invalid"     // a state the notifier cannot key (VerdictState.check)
)

// sink delivers one notice per call: nil on success, an error wrapped in
// backoff.Permanent when retrying cannot help, a *backoff.RetryAfterError
// in the chain when the receiver said how long to wait; sent is the body
// bytes that reached the receiver (0 when nothing did). host is where it
// delivers (host[:port], never a URL's path or query: the record of data
// flows names it).
type sink interface {
	name() string
	host() string
	send(ctx context.Context, n Notice) (sent int64, err error)
	close()
}

// noticeKey is one sink's verdict key.
type noticeKey struct{ sink, kind, candidate, version, set string }

func keyOf(sink string, s VerdictState) noticeKey {
	return noticeKey{sink, s.Kind, s.Candidate, s.Version, s.Set}
}

// decided is the verdict last decided for a key; gen orders decisions so a
// delivery finishing late does not overwrite a newer pending row.
type decided struct {
	verdict gate.Status
	gen     uint64
}

// queued is a notice waiting in a sink's queue, with its stored row.
type queued struct {
	key    noticeKey
	gen    uint64
	row    store.VerdictNotice
	notice Notice
}

// outbox is one sink with its delivery queue and counters (under
// Notifier.mu).
type outbox struct {
	sink  sink
	queue chan queued
	stats SinkStats
}

// SinkStats count one sink's notices since Start.
type SinkStats struct {
	Decided     int64 `json:"decided"`      // changes decided for this sink
	Sent        int64 `json:"sent"`         // accepted by the receiver
	Failed      int64 `json:"failed"`       // refused for good or retries exhausted
	Dropped     int64 `json:"dropped"`      // the sink's queue was full: never sent
	Retries     int64 `json:"retries"`      // attempts beyond the first
	LeftPending int64 `json:"left_pending"` // undelivered at Shutdown: sent at the next Start
	Pending     int64 `json:"pending"`      // queued or being delivered now
	// FailingSince is the first failed attempt of the current run of
	// failures, zero once an attempt succeeds.
	FailingSince time.Time `json:"failing_since,omitzero"`
}

// Stats are the notifier's counters since Start.
type Stats struct {
	Offered int64 `json:"offered"` // verdicts given to Offer (live reads included)
	// Dropped counts verdicts lost before change detection, by reason
	// (DropOutboxFull, DropStopped, DropInvalid).
	Dropped map[string]int64     `json:"dropped"`
	Sinks   map[string]SinkStats `json:"sinks"` // by sink name
	// StateWriteFailures counts failed writes of verdict_notices rows: the
	// notice is still sent, but a restart may send it again or miss it.
	StateWriteFailures int64 `json:"state_write_failures"`
	// LiveReadFailures counts live-verdict reads that failed.
	LiveReadFailures int64 `json:"live_read_failures"`
}

// Detail words the problems of s for /readyz, which answers any caller: by
// sink "failing since <time> (see server log)" and the failed and dropped
// counts, and under "verdicts" the verdicts dropped; nil when all is well.
// Notification trouble never makes the process unready: it says so here.
func (s Stats) Detail() map[string]string {
	out := map[string]string{}
	for name, ss := range s.Sinks {
		var parts []string
		if !ss.FailingSince.IsZero() {
			parts = append(parts, "failing since "+ss.FailingSince.UTC().Format(time.RFC3339)+" (see server log)")
		}
		if ss.Failed > 0 || ss.Dropped > 0 {
			parts = append(parts, fmt.Sprintf("%d failed, %d dropped since start", ss.Failed, ss.Dropped))
		}
		if len(parts) > 0 {
			out["notify_"+name] = strings.Join(parts, "; ")
		}
	}
	var dropped []string
	for _, r := range []string{DropOutboxFull, DropStopped, DropInvalid} {
		if n := s.Dropped[r]; n > 0 {
			dropped = append(dropped, fmt.Sprintf("%d %s", n, r))
		}
	}
	if len(dropped) > 0 {
		out["notify_verdicts"] = "verdicts dropped: " + strings.Join(dropped, ", ")
	}
	if s.StateWriteFailures > 0 {
		out["notify_state"] = fmt.Sprintf("%d notice state writes failed (see server log)", s.StateWriteFailures)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Notifier finds verdict changes and sends them. Start and Shutdown are safe
// without the other and twice; Offer is safe from any goroutine at any time.
type Notifier struct {
	cfg    Config
	st     store.VerdictNotices
	log    *slog.Logger
	live   LiveFunc
	flows  *dataflow.Meter // nil: deliveries are not counted for the record of data flows
	boxes  []*outbox
	intake chan []VerdictState

	// offerMu orders Offer against Shutdown: Offer pushes under the read
	// lock, so after Shutdown has set stopped under the write lock no batch
	// can land in the intake unseen.
	offerMu sync.RWMutex
	stopped atomic.Bool

	mu      sync.Mutex // lifecycle and the decided verdicts; never held across a send
	started bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	last    map[noticeKey]decided
	gen     uint64

	smu   sync.Mutex // the counters (stats, every outbox's stats); taken after mu, never before
	stats Stats
}

// Option adjusts New.
type Option func(*options)

type options struct {
	log    *slog.Logger
	getenv func(string) string
	live   LiveFunc
	flows  *dataflow.Meter
}

// WithFlowMeter counts every delivery attempt and every delivered notice in
// m, per sink and host (the record of data flows).
func WithFlowMeter(m *dataflow.Meter) Option { return func(o *options) { o.flows = m } }

// WithLogger logs through l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithEnv reads the secrets' environment variables through getenv (default
// os.Getenv).
func WithEnv(getenv func(string) string) Option { return func(o *options) { o.getenv = getenv } }

// WithLive reads the live verdicts with f every Config.LiveInterval.
func WithLive(f LiveFunc) Option { return func(o *options) { o.live = f } }

// New validates cfg, reads the secrets it names from the environment and
// builds the sinks; st keeps the notified state. Without a sink configured
// the notifier does nothing (Offer returns at once). Errors name the key or
// the variable, never a secret's value.
func New(cfg Config, st store.VerdictNotices, opts ...Option) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{log: slog.New(slog.DiscardHandler), getenv: os.Getenv}
	for _, opt := range opts {
		opt(&o)
	}
	n := &Notifier{cfg: cfg, st: st, log: o.log, live: o.live, flows: o.flows, intake: make(chan []VerdictState, cfg.OutboxSize),
		last: map[noticeKey]decided{}, stats: Stats{Dropped: map[string]int64{}, Sinks: map[string]SinkStats{}}}
	if !cfg.Enabled() {
		return n, nil
	}
	if st == nil {
		return nil, errors.New("notify: no store for the notified state")
	}
	var sinks []sink
	if env := cfg.Webhook.URLEnv; env != "" {
		u := o.getenv(env)
		if u == "" {
			return nil, fmt.Errorf("notify: webhook.url_env: $%s is empty", env)
		}
		w, err := newWebhook(u, cfg.Timeout)
		if err != nil {
			return nil, fmt.Errorf("notify: webhook.url_env: $%s: %w", env, err)
		}
		sinks = append(sinks, w)
	}
	if e := cfg.Email; e.SMTPHost != "" {
		var password string
		if e.Username != "" {
			if password = o.getenv(e.PasswordEnv); password == "" {
				return nil, fmt.Errorf("notify: email.password_env: $%s is empty", e.PasswordEnv)
			}
		}
		m, err := newEmail(e, password, cfg.Timeout)
		if err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
		sinks = append(sinks, m)
	}
	for _, s := range sinks {
		n.boxes = append(n.boxes, &outbox{sink: s, queue: make(chan queued, cfg.OutboxSize)})
		n.stats.Sinks[s.name()] = SinkStats{}
	}
	return n, nil
}

// Enabled reports whether any sink is configured.
func (n *Notifier) Enabled() bool { return len(n.boxes) > 0 }

// Start reads the notified state, queues the notices a previous process
// left pending, and starts delivery and (with WithLive and a LiveInterval)
// the live reads: one at once, then every interval. It returns the store's
// error when the state cannot be read. After Shutdown it does nothing.
func (n *Notifier) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started || n.stopped.Load() || len(n.boxes) == 0 {
		return nil
	}
	rows, err := n.st.VerdictNotices(ctx)
	if err != nil {
		return fmt.Errorf("notify: start: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	byName := map[string]*outbox{}
	for _, b := range n.boxes {
		byName[b.sink.name()] = b
	}
	resumed := 0
	var dropped []store.VerdictNotice
	for _, r := range rows {
		k := noticeKey{r.Sink, r.Kind, r.Candidate, r.CandidateVersion, r.SetName}
		n.gen++
		n.last[k] = decided{verdict: gate.Status(r.Verdict), gen: n.gen}
		b, ok := byName[r.Sink]
		if r.Status != store.NoticePending || !ok {
			continue
		}
		var nt Notice
		if err := json.Unmarshal([]byte(r.Notice), &nt); err != nil {
			n.log.Error("notify: a pending notice cannot be read back; it is not sent", "sink", r.Sink, "candidate", r.Candidate, "err", err)
			continue
		}
		if d := n.enqueueLocked(b, queued{key: k, gen: n.gen, row: r, notice: nt}); d != nil {
			dropped = append(dropped, *d)
		} else {
			resumed++
		}
	}
	if len(dropped) > 0 {
		n.writeRows(ctx, dropped)
	}
	if resumed > 0 {
		n.log.Info("notify: sending the notices a previous run left pending", "notices", resumed)
	}
	for _, b := range n.boxes {
		n.wg.Go(func() { n.deliverLoop(runCtx, b) })
	}
	n.wg.Go(func() { n.detectLoop(runCtx) })
	if n.live != nil && n.cfg.LiveInterval > 0 {
		n.wg.Go(func() { n.liveLoop(runCtx) })
	}
	n.started = true
	return nil
}

// Offer hands verdicts to the notifier and returns at once: they wait in the
// outbox for change detection. A full outbox, or a notifier already shut
// down, drops them (counted in Stats.Dropped, logged).
func (n *Notifier) Offer(states ...VerdictState) {
	if len(n.boxes) == 0 || len(states) == 0 {
		return
	}
	batch := append([]VerdictState(nil), states...)
	n.smu.Lock()
	n.stats.Offered += int64(len(batch))
	n.smu.Unlock()
	n.offerMu.RLock()
	defer n.offerMu.RUnlock()
	if n.stopped.Load() {
		n.drop(DropStopped, batch)
		return
	}
	select {
	case n.intake <- batch:
	default:
		n.drop(DropOutboxFull, batch)
	}
}

func (n *Notifier) drop(reason string, states []VerdictState) {
	n.smu.Lock()
	n.stats.Dropped[reason] += int64(len(states))
	n.smu.Unlock()
	for _, s := range states {
		n.log.Warn("notify: verdict dropped before change detection; its change may go unnotified", "reason", reason,
			"kind", s.Kind, "candidate", s.Candidate, "version", s.Version, "set", s.Set, "verdict", s.Verdict)
	}
}

// Stats returns a copy of the counters.
func (n *Notifier) Stats() Stats {
	n.smu.Lock()
	defer n.smu.Unlock()
	s := n.stats
	s.Dropped = make(map[string]int64, len(n.stats.Dropped))
	for k, v := range n.stats.Dropped {
		s.Dropped[k] = v
	}
	s.Sinks = make(map[string]SinkStats, len(n.boxes))
	for _, b := range n.boxes {
		s.Sinks[b.sink.name()] = b.stats
	}
	return s
}

// Shutdown stops the live reads and delivery within ctx. A notice being
// delivered or still queued stays pending in the store and is sent at the
// next Start (a stop is not a failure: counted as left pending); verdicts
// still in the outbox are decided and stored pending first. Safe without
// Start and twice.
func (n *Notifier) Shutdown(ctx context.Context) error {
	n.offerMu.Lock()
	already := n.stopped.Swap(true)
	n.offerMu.Unlock()
	if already {
		return nil
	}
	n.mu.Lock()
	cancel, started := n.cancel, n.started
	n.mu.Unlock()
	if !started {
		n.drainIntake(func(batch []VerdictState) { n.drop(DropStopped, batch) }) // offered before a Start that never came
		for _, b := range n.boxes {
			b.sink.close()
		}
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("notify: shutdown: %w", ctx.Err())
	}
	// Verdicts offered but not yet looked at: store their changes pending.
	n.drainIntake(func(batch []VerdictState) { n.decide(ctx, batch, false) })
	n.smu.Lock()
	left := 0
	for _, b := range n.boxes {
		q := int64(len(b.queue))
		b.stats.LeftPending += q
		b.stats.Pending -= q
		left += int(q)
		b.sink.close()
	}
	n.smu.Unlock()
	if left > 0 {
		n.log.Info("notify: stopped with notices undelivered; they are sent at the next start", "notices", left)
	}
	return nil
}

// drainIntake hands every batch still in the outbox to f, without waiting.
func (n *Notifier) drainIntake(f func([]VerdictState)) {
	for {
		select {
		case batch := <-n.intake:
			f(batch)
		default:
			return
		}
	}
}

func (n *Notifier) detectLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case batch := <-n.intake:
			n.decide(ctx, batch, true)
		}
	}
}

func (n *Notifier) liveLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.LiveInterval)
	defer t.Stop()
	for {
		states, err := n.live(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			n.smu.Lock()
			n.stats.LiveReadFailures++
			n.smu.Unlock()
			n.log.Warn("notify: reading the live verdicts failed; next try in "+n.cfg.LiveInterval.String(), "err", err)
		default:
			n.Offer(states...)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// decide compares each state with the verdict last decided for its key, per
// sink. A change — a different verdict, or the first of a suite key (a
// first live verdict counts only when it is not INCONCLUSIVE, which is where
// every live sequence starts) — is stored pending and, with deliver, queued.
func (n *Notifier) decide(ctx context.Context, states []VerdictState, deliver bool) {
	var rows []store.VerdictNotice
	var qs []struct {
		b *outbox
		q queued
	}
	base := strings.TrimRight(n.cfg.BaseURL, "/")
	n.mu.Lock()
	n.smu.Lock()
	for _, s := range states {
		if err := s.check(); err != nil {
			n.stats.Dropped[DropInvalid]++
			n.log.Error("notify: verdict not usable", "err", err)
			continue
		}
		for _, b := range n.boxes {
			k := keyOf(b.sink.name(), s)
			last, seen := n.last[k]
			if (seen && last.verdict == s.Verdict) || (!seen && s.Kind == KindLive && s.Verdict == gate.Inconclusive) {
				continue
			}
			n.gen++
			n.last[k] = decided{verdict: s.Verdict, gen: n.gen}
			nt := Notice{VerdictState: s, Previous: last.verdict, Link: base + s.Page}
			body, _ := json.Marshal(nt) // plain strings and times: cannot fail
			row := store.VerdictNotice{Sink: k.sink, Kind: k.kind, Candidate: k.candidate, CandidateVersion: k.version, SetName: k.set,
				Verdict: string(s.Verdict), Previous: string(last.verdict), Status: store.NoticePending, Notice: string(body), ChangedAt: s.At.UTC()}
			rows = append(rows, row)
			qs = append(qs, struct {
				b *outbox
				q queued
			}{b, queued{key: k, gen: n.gen, row: row, notice: nt}})
			b.stats.Decided++
		}
	}
	n.smu.Unlock()
	n.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	for _, r := range rows {
		n.log.Info("notify: verdict changed", "sink", r.Sink, "kind", r.Kind, "candidate", r.Candidate, "version", r.CandidateVersion,
			"set", r.SetName, "from", r.Previous, "to", r.Verdict)
	}
	n.writeRows(ctx, rows)
	if !deliver { // stored pending: the next Start sends them
		n.smu.Lock()
		for _, x := range qs {
			x.b.stats.LeftPending++
		}
		n.smu.Unlock()
		return
	}
	var dropped []store.VerdictNotice
	for _, x := range qs {
		if d := n.enqueueLocked(x.b, x.q); d != nil {
			dropped = append(dropped, *d)
		}
	}
	if len(dropped) > 0 {
		n.writeRows(ctx, dropped)
	}
}

// enqueueLocked queues q for b's delivery without waiting. A full queue
// drops it (counted, logged) and returns its row rewritten dropped, for the
// caller to store. It takes n.smu; n.mu may be held.
func (n *Notifier) enqueueLocked(b *outbox, q queued) *store.VerdictNotice {
	n.smu.Lock()
	defer n.smu.Unlock()
	select {
	case b.queue <- q:
		b.stats.Pending++
		return nil
	default:
	}
	b.stats.Dropped++
	n.log.Error("notify: the sink's queue is full; notice dropped", "sink", b.sink.name(), "candidate", q.key.candidate,
		"kind", q.key.kind, "verdict", q.notice.Verdict, "outbox_size", n.cfg.OutboxSize)
	row := q.row
	row.Status = store.NoticeDropped
	return &row
}

// writeRows stores rows within Config.Timeout, counting and logging a failure.
func (n *Notifier) writeRows(ctx context.Context, rows []store.VerdictNotice) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.Timeout)
	defer cancel()
	if err := n.st.InsertVerdictNotices(wctx, rows); err != nil {
		n.smu.Lock()
		n.stats.StateWriteFailures++
		n.smu.Unlock()
		n.log.Error("notify: storing the notice state failed; a restart may send these notices again or miss them",
			"notices", len(rows), "err", err)
	}
}

func (n *Notifier) deliverLoop(ctx context.Context, b *outbox) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-b.queue:
			n.deliver(ctx, b, q)
		}
	}
}

// deliver sends q with retries, then stores its outcome unless a newer
// change of its key was decided meanwhile (that one's pending row stands).
func (n *Notifier) deliver(ctx context.Context, b *outbox, q queued) {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = n.cfg.Retry.InitialBackoff, n.cfg.Retry.MaxBackoff
	attempts := 0
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		attempts++
		actx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
		defer cancel()
		sent, err := b.sink.send(actx, q.notice)
		d := dataflow.Delta{Requests: 1, SentBytes: sent}
		if err == nil {
			d.Items = 1
		}
		n.flows.Add(b.sink.name(), b.sink.name(), b.sink.host(), d)
		return struct{}{}, err
	}, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(n.cfg.Retry.MaxElapsed), backoff.WithNotify(func(err error, wait time.Duration) {
		n.smu.Lock()
		b.stats.Retries++
		if b.stats.FailingSince.IsZero() {
			b.stats.FailingSince = time.Now().UTC()
		}
		n.smu.Unlock()
		n.log.Warn("notify: delivery failed; retrying", "sink", b.sink.name(), "candidate", q.key.candidate, "kind", q.key.kind,
			"verdict", q.notice.Verdict, "attempt", attempts, "retry_in", wait, "err", err)
	}))
	n.smu.Lock()
	b.stats.Pending--
	if err != nil && ctx.Err() != nil { // stopped: the row stays pending for the next start
		b.stats.LeftPending++
		n.smu.Unlock()
		return
	}
	row := q.row
	row.Attempts = int32(min(attempts, 1<<30))
	if err == nil {
		b.stats.Sent++
		b.stats.FailingSince = time.Time{}
		row.Status = store.NoticeSent
	} else {
		b.stats.Failed++
		if b.stats.FailingSince.IsZero() {
			b.stats.FailingSince = time.Now().UTC()
		}
		row.Status, row.Error = store.NoticeFailed, cut(err.Error(), 1000)
	}
	n.smu.Unlock()
	n.mu.Lock()
	current := n.last[q.key].gen == q.gen
	n.mu.Unlock()
	if err != nil {
		n.log.Error("notify: notice not delivered; it is not retried", "sink", b.sink.name(), "candidate", q.key.candidate,
			"kind", q.key.kind, "version", q.key.version, "set", q.key.set, "verdict", q.notice.Verdict, "attempts", attempts, "err", err)
	}
	if current {
		n.writeRows(ctx, []store.VerdictNotice{row})
	}
}
