package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// KafkaConfig sets the Kafka transport between the tap and the shadow workers.
type KafkaConfig struct {
	// Brokers are host:port addresses; empty: the in-process queue is used.
	Brokers []string `yaml:"brokers"`
	// Topic carries one message per exchange, keyed by request id.
	Topic string `yaml:"topic"`
	// Group is the consumer group of the shadow workers.
	Group string `yaml:"group"`
	// Buffer is how many exchanges wait to be published; when full, copies are
	// dropped ("queue_full"), never waited for.
	Buffer int `yaml:"buffer"`
	// BatchTimeout is the longest a message waits to fill a produce batch.
	BatchTimeout time.Duration `yaml:"batch_timeout"`
	// CommitTimeout bounds one offset commit; a failed commit means re-delivery.
	CommitTimeout time.Duration `yaml:"commit_timeout"`
	// SessionTimeout is how long a shadow worker may stay silent (crashed, killed)
	// before the group hands its partitions to the others; heartbeats go every
	// third of it. The broker refuses a group member whose timeout is outside
	// its group.min.session.timeout.ms to group.max.session.timeout.ms (Apache
	// Kafka's defaults: 6 s to 30 min): the worker then never gets partitions
	// and /readyz names this setting.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// PingInterval is how often the queue asks the brokers for the topic's
	// metadata (bounded by the interval too), so readiness sees Kafka down on an
	// idle tap or a waiting shadow worker, not only when a publish fails. Each
	// ping also reads the topic's message limit (max.message.bytes).
	PingInterval time.Duration `yaml:"ping_interval"`
	// MaxCopyBytes is the largest copy (its Exchange JSON) the tap publishes; a
	// larger one is refused as too_large (413 on /v1/tap). A copy above the
	// topic's message limit but within this one goes through the claim-check:
	// chunks of one message each, keyed by the request id (kafka_claimcheck.go).
	MaxCopyBytes int64 `yaml:"max_copy_bytes"`
	// ReassemblyBytes bounds the chunks a shadow worker holds for claim-check
	// copies not complete yet, over all its partitions; a set that does not
	// fit is dropped (counted "kafka_incomplete").
	ReassemblyBytes int64 `yaml:"reassembly_bytes"`
	// ReassemblyTimeout is how long a shadow worker waits for the rest of a
	// claim-check copy once its first chunk arrived; then the set is dropped
	// (counted "kafka_incomplete").
	ReassemblyTimeout time.Duration `yaml:"reassembly_timeout"`
	// MaxInFlight is how many exchanges one shadow worker process holds at
	// once (handed to its workers and not yet stored): what a kill -9 can
	// leave half done, and what a rebalance waits for.
	MaxInFlight int `yaml:"max_in_flight"`
	// DrainTimeout is how long a shadow worker that loses its partitions in a
	// rebalance waits for the exchanges it holds to be stored (and commits
	// them) before it rejoins the group; what is still running then is
	// shadowed again by the partition's next owner.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
}

// NewDefaultKafkaConfig returns Kafka off, topic "conductor-shadow.exchanges",
// group "conductor-shadow", a 10,000-exchange buffer, 10 ms produce batches,
// 10 s commits, a 10 s session, a metadata ping every 5 s, copies of at most
// 32 MiB (claim-checked above the topic's limit) reassembled within 128 MiB
// and 1 minute, 32 exchanges in flight per worker process and a 10 s drain
// at a rebalance.
func NewDefaultKafkaConfig() KafkaConfig {
	return KafkaConfig{Topic: "conductor-shadow.exchanges", Group: "conductor-shadow", Buffer: 10000,
		BatchTimeout: 10 * time.Millisecond, CommitTimeout: 10 * time.Second, SessionTimeout: 10 * time.Second,
		PingInterval: 5 * time.Second, MaxCopyBytes: 32 << 20, ReassemblyBytes: 128 << 20, ReassemblyTimeout: time.Minute,
		MaxInFlight: 32, DrainTimeout: 10 * time.Second}
}

// Enabled reports whether brokers are configured.
func (c KafkaConfig) Enabled() bool { return len(c.Brokers) > 0 }

// Validate checks topic, group and limits when brokers are set.
func (c KafkaConfig) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			errs = append(errs, fmt.Errorf("ingest: kafka.brokers: %q is not host:port", b))
		}
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("ingest: kafka.topic must not be empty"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("ingest: kafka.group must not be empty"))
	}
	if c.Buffer < 1 {
		errs = append(errs, fmt.Errorf("ingest: kafka.buffer must be at least 1, got %d", c.Buffer))
	}
	if c.BatchTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ingest: kafka.batch_timeout must be positive, got %s", c.BatchTimeout))
	}
	if c.CommitTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ingest: kafka.commit_timeout must be positive, got %s", c.CommitTimeout))
	}
	if c.SessionTimeout < time.Second {
		errs = append(errs, fmt.Errorf("ingest: kafka.session_timeout must be at least 1s, got %s", c.SessionTimeout))
	}
	if c.PingInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("ingest: kafka.ping_interval must be at least 100ms, got %s", c.PingInterval))
	}
	if c.MaxCopyBytes < 1024 {
		errs = append(errs, fmt.Errorf("ingest: kafka.max_copy_bytes must be at least 1024, got %d", c.MaxCopyBytes))
	}
	if c.ReassemblyBytes < c.MaxCopyBytes {
		errs = append(errs, fmt.Errorf("ingest: kafka.reassembly_bytes (%d) must be at least kafka.max_copy_bytes (%d)", c.ReassemblyBytes, c.MaxCopyBytes))
	}
	if c.ReassemblyTimeout < time.Second {
		errs = append(errs, fmt.Errorf("ingest: kafka.reassembly_timeout must be at least 1s, got %s", c.ReassemblyTimeout))
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > 4096 {
		errs = append(errs, fmt.Errorf("ingest: kafka.max_in_flight must be between 1 and 4096, got %d", c.MaxInFlight))
	}
	if c.DrainTimeout < 0 || c.DrainTimeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("ingest: kafka.drain_timeout must be between 0 and 10m, got %s", c.DrainTimeout))
	}
	return errors.Join(errs...)
}

// KafkaQueue is the Kafka transport: Publish hands the exchange to a bounded buffer
// that a background producer writes to Topic (keyed by request id, the Exchange as
// JSON with its schema_version; above the topic's message limit as claim-check
// chunks), and Next reads the topic as a member of Group (kafka_group.go).
// A delivery's Ack commits its offset once every earlier offset of its partition
// was acked too, so a crash re-delivers (at least once) and never skips; the
// commit's metadata records what was handed out and what is done above the
// committed offset, so the next owner of a partition skips what is done and
// counts what it gets again (StatsSnapshot.Kafka.Redelivered).
//
// Readiness (Ready) follows connectivity only: the metadata ping, a publish
// that failed for any reason but size, and the consumer's fetches. A copy the
// brokers refuse for its size is ErrCopyTooLarge for that copy alone.
//
// Lifecycle: Start launches the ping; Close stops Publish and the ping, flushes
// the producer and makes Next return ErrQueueClosed (what is left stays in
// Kafka for the next consumer); Shutdown, after the workers are done, drains
// and commits what they acked, leaves the group and closes the connections.
// Close and Shutdown are safe without Start and twice.
type KafkaQueue struct {
	cfg       KafkaConfig
	stats     *Stats
	log       *slog.Logger
	transport *kafka.Transport // the producer's and the admin client's, so Shutdown can close their connections
	client    *kafka.Client    // admin requests: the topic's limit, offsets with metadata
	consumer  *kafkaConsumer   // nil for a producer-only queue

	limit atomic.Int64 // the topic's message limit in bytes (max.message.bytes), read by the ping

	mu      sync.RWMutex
	closed  bool
	buf     chan kafkaOp
	pubDone chan struct{}
	stop    context.CancelFunc
	stopCtx context.Context

	failing  store.Failing // since when publishes fail for want of Kafka, and the last error
	fetching store.Failing // since when fetches fail
	pinging  store.Failing // since when the metadata ping fails
	started  bool
	pingDone chan struct{}

	shutOnce sync.Once
	shutErr  error

	flows atomic.Pointer[dataflow.Meter] // counts what the brokers acknowledged (UseFlowMeter)
}

// DefaultMessageMaxBytes is a Kafka broker's default message.max.bytes (1 MiB
// plus 12 bytes of log overhead; Kafka's "Broker Configs" documentation), the
// limit assumed until the topic's own was read.
const DefaultMessageMaxBytes = 1048588

// ErrCopyTooLarge refuses a copy larger than ingest.kafka.max_copy_bytes, or
// one the brokers refused for its size even alone and claim-checked at the
// limit they report: the tap answers 413 too_large. It never means Kafka is
// unavailable and never turns readiness.
var ErrCopyTooLarge = errors.New("ingest: kafka: copy too large")

// UseFlowMeter counts every message the brokers acknowledge in m (the record
// of data flows: kind kafka, recipient the topic, host the brokers), with
// the PII kinds pseudonymized in its exchange.
func (q *KafkaQueue) UseFlowMeter(m *dataflow.Meter) { q.flows.Store(m) }

// BrokersHost is how the record of data flows names brokers: their
// host:port addresses joined by ",".
func BrokersHost(brokers []string) string { return strings.Join(brokers, ",") }

// NewKafkaQueue connects a producer and, when consume is true, a consumer-group
// member. Nothing is dialed until first use.
func NewKafkaQueue(cfg KafkaConfig, consume bool, stats *Stats, log *slog.Logger) (*KafkaQueue, error) {
	if !cfg.Enabled() {
		return nil, errors.New("ingest: kafka: no brokers configured")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	transport := &kafka.Transport{}
	q := &KafkaQueue{
		cfg: cfg, stats: stats, log: log, transport: transport,
		client:  &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: transport, Timeout: cfg.CommitTimeout},
		buf:     make(chan kafkaOp, cfg.Buffer),
		pubDone: make(chan struct{}),
		stop:    cancel,
		stopCtx: ctx,
	}
	q.limit.Store(DefaultMessageMaxBytes)
	if consume {
		q.consumer = newKafkaConsumer(q)
	}
	go q.publishLoop()
	return q, nil
}

// MessageLimit is the topic's message limit in bytes as last read from the
// brokers (max.message.bytes, else the broker's message.max.bytes), or
// DefaultMessageMaxBytes before the first read.
func (q *KafkaQueue) MessageLimit() int64 { return q.limit.Load() }

// kafkaOp is one exchange waiting to be published and who to tell the outcome.
type kafkaOp struct {
	ex   Exchange
	done func(error)
}

// publishLoop writes buffered exchanges in batches until Close drains the buffer,
// and tells each op its own outcome once the brokers acknowledged (RequireAll)
// or refused its messages.
func (q *KafkaQueue) publishLoop() {
	defer close(q.pubDone)
	p := &kafkaProducer{q: q}
	defer p.close()
	const maxBatch = 500
	ops := make([]kafkaOp, 0, maxBatch)
	for op := range q.buf {
		ops = append(ops[:0], op)
	fill:
		for len(ops) < maxBatch {
			select {
			case more, ok := <-q.buf:
				if !ok {
					break fill
				}
				ops = append(ops, more)
			default:
				break fill
			}
		}
		p.publish(q.stopCtx, ops)
	}
}

// Start launches the metadata ping: one at once, then every PingInterval,
// until Close. ctx is not kept. A second Start is an error.
func (q *KafkaQueue) Start(context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return errors.New("ingest: kafka: already started")
	}
	if q.closed {
		return ErrQueueClosed
	}
	q.started = true
	q.pingDone = make(chan struct{})
	go q.pingLoop()
	return nil
}

func (q *KafkaQueue) pingLoop() {
	defer close(q.pingDone)
	t := time.NewTicker(q.cfg.PingInterval)
	defer t.Stop()
	for {
		q.ping()
		select {
		case <-q.stopCtx.Done():
			return
		case <-t.C:
		}
	}
}

// ping asks the brokers for the cluster's metadata and records the outcome,
// then reads the topic's message limit. A failure is logged when it starts, a
// recovery when it ends.
func (q *KafkaQueue) ping() {
	ctx, cancel := context.WithTimeout(q.stopCtx, q.cfg.PingInterval)
	defer cancel()
	brokers, err := q.pingBrokers(ctx)
	if q.stopCtx.Err() != nil {
		return // closing: not a Kafka failure
	}
	was, _ := q.pinging.State()
	q.pinging.Note(err)
	switch {
	case err != nil && was.IsZero():
		q.log.Error("kafka: brokers unreachable; /readyz reports it until a ping succeeds", "brokers", q.cfg.Brokers, "err", err)
	case err == nil && !was.IsZero():
		q.log.Info("kafka: brokers reachable again", "brokers", q.cfg.Brokers, "down_for", time.Since(was).Round(time.Millisecond))
	}
	if err == nil {
		q.refreshLimit(ctx, brokers)
	}
}

// pingBrokers dials the brokers in turn on a fresh connection (the producer's
// and the reader's pools answer metadata from their cache) and sends one
// metadata request (no topics: a topic not created yet is no failure); the
// brokers the first one that answers knows.
func (q *KafkaQueue) pingBrokers(ctx context.Context) ([]kafka.Broker, error) {
	d := &kafka.Dialer{Timeout: q.cfg.PingInterval}
	var errs []error
	for _, b := range q.cfg.Brokers {
		conn, err := d.DialContext(ctx, "tcp", b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b, err))
			continue
		}
		deadline, _ := ctx.Deadline()
		_ = conn.SetDeadline(deadline)
		brokers, err := conn.Brokers()
		_ = conn.Close()
		if err == nil {
			return brokers, nil
		}
		errs = append(errs, fmt.Errorf("%s: metadata: %w", b, err))
	}
	return nil, fmt.Errorf("metadata ping: %w", errors.Join(errs...))
}

// Ready reports why copies cannot be published or read now: the metadata ping,
// the last publish or the last fetch failed (Kafka unreachable), or the buffer
// is full. nil when all is well. A copy refused for its size is no reason.
func (q *KafkaQueue) Ready() error {
	for _, f := range []struct {
		what string
		s    *store.Failing
	}{{"ping", &q.pinging}, {"publish", &q.failing}, {"fetch", &q.fetching}} {
		if since, last := f.s.State(); !since.IsZero() {
			return fmt.Errorf("kafka unreachable since %s (%s): %s", since.UTC().Format(time.RFC3339), f.what, last)
		}
	}
	if len(q.buf) >= cap(q.buf) {
		return fmt.Errorf("%w: kafka buffer of %d", ErrQueueFull, cap(q.buf))
	}
	return nil
}

// PublishDurable implements DurableQueue: done is told once the brokers
// acknowledged the exchange (nil), refused it for its size (ErrCopyTooLarge)
// or could not be reached (ErrKafkaUnavailable).
func (q *KafkaQueue) PublishDurable(ex Exchange, done func(error)) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrQueueClosed
	}
	select {
	case q.buf <- kafkaOp{ex: ex, done: done}:
		return nil
	default:
		return ErrQueueFull
	}
}

// Publish implements Queue: PublishDurable, waiting for the acknowledgement or ctx.
func (q *KafkaQueue) Publish(ctx context.Context, ex Exchange) error {
	return publishAndWait(ctx, q.PublishDurable, ex, "ingest: kafka: waiting for the acknowledgement")
}

// Next implements Queue: the next exchange of the group's partitions held by
// this member, at most MaxInFlight at once. A message that is not a valid
// Exchange is counted as failed and committed (skipped).
func (q *KafkaQueue) Next(ctx context.Context) (Delivery, error) {
	if q.consumer == nil {
		return Delivery{}, errors.New("ingest: kafka: this queue only publishes")
	}
	q.mu.RLock()
	closed := q.closed
	q.mu.RUnlock()
	if closed {
		return Delivery{}, ErrQueueClosed
	}
	return q.consumer.next(ctx)
}

// LimitInFlight makes Next hold no more exchanges at once than limit says
// the worker process runs at once (the admission's current limit), within
// ingest.kafka.max_in_flight: an exchange waiting for a run slot is better
// left in Kafka, where a rebalance hands it over untouched, than held by a
// worker that must finish it before the rebalance can complete. Call before
// the first Next; a producer-only queue ignores it.
func (q *KafkaQueue) LimitInFlight(limit func() int) {
	if q.consumer != nil {
		q.consumer.limitFn = limit
	}
}

// Len implements Queue: exchanges waiting to be published.
func (q *KafkaQueue) Len() int { return len(q.buf) }

// Close implements Queue: it stops Publish, waits (up to 10 s) for the producer to
// write what is buffered, and makes Next stop handing out exchanges. The group
// membership stays until Shutdown, so what the workers finish is still committed.
func (q *KafkaQueue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.buf)
	q.mu.Unlock()
	select {
	case <-q.pubDone:
	case <-time.After(10 * time.Second):
	}
	q.stop()
	<-q.pubDone
	q.mu.RLock()
	pingDone := q.pingDone
	q.mu.RUnlock()
	if pingDone != nil {
		<-pingDone
	}
	return nil
}

// Shutdown closes the queue if needed, then leaves the group (after the
// drain: what the workers acked is committed) and closes the connections.
// Call it after the workers stopped.
func (q *KafkaQueue) Shutdown(ctx context.Context) error {
	q.shutOnce.Do(func() {
		_ = q.Close()
		var errs []error
		if q.consumer != nil {
			if err := q.consumer.shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("ingest: kafka: leave group: %w", err))
			}
		}
		q.transport.CloseIdleConnections()
		q.shutErr = errors.Join(errs...)
	})
	return q.shutErr
}
