package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// third of it.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// PingInterval is how often the queue asks the brokers for the topic's
	// metadata (bounded by the interval too), so readiness sees Kafka down on an
	// idle tap or a waiting shadow worker, not only when a publish fails.
	PingInterval time.Duration `yaml:"ping_interval"`
}

// NewDefaultKafkaConfig returns Kafka off, topic "conductor-shadow.exchanges",
// group "conductor-shadow", a 10,000-exchange buffer, 10 ms produce batches,
// 10 s commits, a 10 s session and a metadata ping every 5 s.
func NewDefaultKafkaConfig() KafkaConfig {
	return KafkaConfig{Topic: "conductor-shadow.exchanges", Group: "conductor-shadow", Buffer: 10000,
		BatchTimeout: 10 * time.Millisecond, CommitTimeout: 10 * time.Second, SessionTimeout: 10 * time.Second,
		PingInterval: 5 * time.Second}
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
	return errors.Join(errs...)
}

// KafkaQueue is the Kafka transport: Publish hands the exchange to a bounded buffer
// that a background producer writes to Topic (keyed by request id, the Exchange as
// JSON with its schema_version), and Next reads the topic as a member of Group.
// A delivery's Ack commits its offset once every earlier offset of its partition
// was acked too, so a crash re-delivers (at least once) and never skips; the store
// keys make re-delivery harmless.
//
// Readiness (Ready) follows three signals: the last publish, the last fetch
// and a metadata ping of the brokers every PingInterval (Start).
//
// Lifecycle: Start launches the ping; Close stops Publish and the ping, flushes
// the producer and makes Next return ErrQueueClosed (what is left stays in
// Kafka for the next consumer); Shutdown, after the workers are done, closes
// the connections. Close and Shutdown are safe without Start and twice.
type KafkaQueue struct {
	cfg       KafkaConfig
	stats     *Stats
	log       *slog.Logger
	writer    *kafka.Writer
	transport *kafka.Transport // the producer's own, so Shutdown can close its connections
	reader    *kafka.Reader    // nil for a producer-only queue

	mu      sync.RWMutex
	closed  bool
	buf     chan kafkaOp
	pubDone chan struct{}
	stop    context.CancelFunc
	stopCtx context.Context

	ackMu   sync.Mutex
	pending map[int]*partitionAcks

	failing  store.Failing // since when publishes fail, and the last error
	fetching store.Failing // since when fetches fail
	pinging  store.Failing // since when the metadata ping fails
	started  bool
	pingDone chan struct{}

	shutOnce sync.Once
	shutErr  error

	flows atomic.Pointer[dataflow.Meter] // counts what the brokers acknowledged (UseFlowMeter)
}

// UseFlowMeter counts every message the brokers acknowledge in m (the record
// of data flows: kind kafka, recipient the topic, host the brokers), with
// the PII kinds pseudonymized in its exchange.
func (q *KafkaQueue) UseFlowMeter(m *dataflow.Meter) { q.flows.Store(m) }

// BrokersHost is how the record of data flows names brokers: their
// host:port addresses joined by ",".
func BrokersHost(brokers []string) string { return strings.Join(brokers, ",") }

// partitionAcks tracks fetched offsets of one partition in fetch order.
type partitionAcks struct {
	offsets []int64 // fetched, not yet committed, ascending
	acked   map[int64]kafka.Message
}

// NewKafkaQueue connects a producer and, when consume is true, a consumer-group
// reader. Nothing is dialed until first use.
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
		writer: &kafka.Writer{
			Transport:              transport,
			Addr:                   kafka.TCP(cfg.Brokers...),
			Topic:                  cfg.Topic,
			Balancer:               &kafka.Hash{},
			BatchTimeout:           cfg.BatchTimeout,
			RequiredAcks:           kafka.RequireAll,
			AllowAutoTopicCreation: true,
		},
		buf:     make(chan kafkaOp, cfg.Buffer),
		pubDone: make(chan struct{}),
		stop:    cancel,
		stopCtx: ctx,
		pending: map[int]*partitionAcks{},
	}
	if consume {
		q.reader = kafka.NewReader(kafka.ReaderConfig{
			Brokers:           cfg.Brokers,
			GroupID:           cfg.Group,
			Topic:             cfg.Topic,
			MaxWait:           250 * time.Millisecond,
			CommitInterval:    0, // synchronous commits: Ack returns once committed
			StartOffset:       kafka.FirstOffset,
			SessionTimeout:    cfg.SessionTimeout,
			HeartbeatInterval: cfg.SessionTimeout / 3,
		})
	}
	go q.publishLoop()
	return q, nil
}

// kafkaMessage encodes ex for the topic.
func kafkaMessage(ex Exchange) (kafka.Message, error) {
	ex.SchemaVersion = SchemaVersion
	b, err := json.Marshal(ex)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("ingest: kafka: encode %s: %w", ex.RequestID, err)
	}
	return kafka.Message{Key: []byte(ex.RequestID), Value: b}, nil
}

// kafkaOp is one exchange waiting to be published and who to tell the outcome.
type kafkaOp struct {
	ex   Exchange
	done func(error)
}

// publishLoop writes buffered exchanges in batches until Close drains the buffer,
// and tells each op the outcome once the brokers acknowledged (RequireAll) or
// refused the batch.
func (q *KafkaQueue) publishLoop() {
	defer close(q.pubDone)
	const maxBatch = 500
	batch := make([]kafka.Message, 0, maxBatch)
	ops := make([]kafkaOp, 0, maxBatch)
	for op := range q.buf {
		batch, ops = batch[:0], ops[:0]
		add := func(op kafkaOp) {
			m, err := kafkaMessage(op.ex)
			if err != nil {
				q.stats.failed.Add(1)
				op.done(err)
				return
			}
			batch, ops = append(batch, m), append(ops, op)
		}
		add(op)
	fill:
		for len(batch) < maxBatch {
			select {
			case more, ok := <-q.buf:
				if !ok {
					break fill
				}
				add(more)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			continue
		}
		err := q.writer.WriteMessages(q.stopCtx, batch...)
		q.notePublish(err)
		q.countFlow(batch, ops, err)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrKafkaUnavailable, err)
		}
		for _, op := range ops {
			op.done(err)
		}
	}
}

// countFlow counts a written batch in the flow meter: each message the
// brokers acknowledged (all of them when err is nil; those without an error
// of a kafka.WriteErrors) with its key and value bytes and its exchange's PII
// kinds (MetadataPIIRules), the others as failed.
func (q *KafkaQueue) countFlow(batch []kafka.Message, ops []kafkaOp, err error) {
	m := q.flows.Load()
	if m == nil {
		return
	}
	var werrs kafka.WriteErrors
	partial := errors.As(err, &werrs) && len(werrs) == len(batch)
	d := dataflow.Delta{Requests: 1}
	for i, msg := range batch {
		if err != nil && (!partial || werrs[i] != nil) {
			d.FailedItems++
			continue
		}
		d.Items++
		d.ContentItems++
		d.SentBytes += int64(len(msg.Key) + len(msg.Value))
		if rules := ops[i].ex.Metadata[MetadataPIIRules]; rules != "" {
			d.PII = append(d.PII, strings.Split(rules, ",")...)
		}
	}
	m.Add(dataflow.KindKafka, q.cfg.Topic, BrokersHost(q.cfg.Brokers), d)
}

func (q *KafkaQueue) notePublish(err error) {
	q.failing.Note(err)
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

// ping asks the brokers for the cluster's metadata and records the outcome. A
// failure is logged when it starts, a recovery when it ends.
func (q *KafkaQueue) ping() {
	ctx, cancel := context.WithTimeout(q.stopCtx, q.cfg.PingInterval)
	defer cancel()
	err := q.pingBrokers(ctx)
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
}

// pingBrokers dials the brokers in turn on a fresh connection (the producer's
// and the reader's pools answer metadata from their cache) and sends one
// metadata request (no topics: a topic not created yet is no failure); nil at
// the first broker that answers.
func (q *KafkaQueue) pingBrokers(ctx context.Context) error {
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
		_, err = conn.Brokers()
		_ = conn.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: metadata: %w", b, err))
	}
	return fmt.Errorf("metadata ping: %w", errors.Join(errs...))
}

// Ready reports why copies cannot be published or read now: the metadata ping,
// the last publish or the last fetch failed (Kafka unreachable), or the buffer
// is full. nil when all is well.
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
// acknowledged the exchange (nil) or the publish failed (ErrKafkaUnavailable).
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

// Next implements Queue: the next exchange of the group's partitions. A message
// that is not a valid Exchange is counted as failed and committed (skipped).
func (q *KafkaQueue) Next(ctx context.Context) (Delivery, error) {
	if q.reader == nil {
		return Delivery{}, errors.New("ingest: kafka: this queue only publishes")
	}
	for {
		q.mu.RLock()
		closed := q.closed
		q.mu.RUnlock()
		if closed {
			return Delivery{}, ErrQueueClosed
		}
		// Stop fetching when the queue closes, not only when ctx ends.
		fctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(q.stopCtx, cancel)
		m, err := q.reader.FetchMessage(fctx)
		stop()
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return Delivery{}, ctx.Err()
			}
			if q.stopCtx.Err() != nil || errors.Is(err, io.EOF) {
				return Delivery{}, ErrQueueClosed
			}
			err = fmt.Errorf("ingest: kafka: fetch: %w", err)
			q.fetching.Note(err)
			return Delivery{}, err
		}
		q.fetching.Note(nil)
		q.track(m)
		var ex Exchange
		if err := json.Unmarshal(m.Value, &ex); err != nil || (ex.SchemaVersion != 0 && ex.SchemaVersion != SchemaVersion) {
			q.stats.failed.Add(1)
			q.log.Error("kafka: message skipped", "partition", m.Partition, "offset", m.Offset, "schema_version", ex.SchemaVersion, "err", err)
			q.ack(m)
			continue
		}
		// Not committed until acked: a release leaves the offset to be delivered again.
		return Delivery{Exchange: ex, Owed: Owed{Records: true}, Ack: func() { q.ack(m) }, Release: func() {}}, nil
	}
}

func (q *KafkaQueue) track(m kafka.Message) {
	q.ackMu.Lock()
	defer q.ackMu.Unlock()
	p := q.pending[m.Partition]
	if p == nil {
		p = &partitionAcks{acked: map[int64]kafka.Message{}}
		q.pending[m.Partition] = p
	}
	p.offsets = append(p.offsets, m.Offset)
}

// ack marks m done and commits the highest offset below which all are done.
func (q *KafkaQueue) ack(m kafka.Message) {
	q.ackMu.Lock()
	p := q.pending[m.Partition]
	if p == nil {
		q.ackMu.Unlock()
		return
	}
	p.acked[m.Offset] = m
	var last *kafka.Message
	for len(p.offsets) > 0 {
		done, ok := p.acked[p.offsets[0]]
		if !ok {
			break
		}
		delete(p.acked, p.offsets[0])
		p.offsets = p.offsets[1:]
		last = &done
	}
	if last == nil {
		q.ackMu.Unlock()
		return
	}
	// Commit under the lock so commits of one partition never go backwards.
	defer q.ackMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.CommitTimeout)
	defer cancel()
	if err := q.reader.CommitMessages(ctx, *last); err != nil {
		q.log.Warn("kafka: commit failed; the exchange will be re-delivered", "partition", last.Partition, "offset", last.Offset, "err", err)
	}
}

// Len implements Queue: exchanges waiting to be published.
func (q *KafkaQueue) Len() int { return len(q.buf) }

// Close implements Queue: it stops Publish, waits (up to 10 s) for the producer to
// write what is buffered, and makes Next stop fetching.
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

// Shutdown closes the queue if needed, then the producer and the reader (commits
// made by Ack are already done). Call it after the workers stopped.
func (q *KafkaQueue) Shutdown(context.Context) error {
	q.shutOnce.Do(func() {
		_ = q.Close()
		var errs []error
		if err := q.writer.Close(); err != nil {
			errs = append(errs, fmt.Errorf("ingest: kafka: close producer: %w", err))
		}
		q.transport.CloseIdleConnections()
		if q.reader != nil {
			if err := q.reader.Close(); err != nil {
				errs = append(errs, fmt.Errorf("ingest: kafka: close reader: %w", err))
			}
		}
		q.shutErr = errors.Join(errs...)
	})
	return q.shutErr
}
