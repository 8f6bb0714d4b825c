package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// countingStore counts request rows inserted, re-deliveries included.
type countingStore struct {
	*storetest.Memory
	inserted atomic.Int64
}

func (s *countingStore) InsertRequests(ctx context.Context, reqs []store.Request) error {
	s.inserted.Add(int64(len(reqs)))
	return s.Memory.InsertRequests(ctx, reqs)
}

func newKafkaCluster(t *testing.T, topic string, partitions int) KafkaConfig {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := NewDefaultKafkaConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.Topic = topic
	cfg.Group = "shadow-workers"
	cfg.CommitTimeout = 300 * time.Millisecond // commits after the simulated crash fail fast
	return cfg
}

// consumer is one shadow-worker process reading the topic.
type consumer struct {
	q    *KafkaQueue
	proc *Processor
}

func startConsumer(t *testing.T, kcfg KafkaConfig, st store.Store, stats *Stats, cand shadow.Pipeline) *consumer {
	t.Helper()
	q, err := NewKafkaQueue(kcfg, true, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.Workers = 4
	proc := NewProcessor(cfg, q, StoreWriter{Store: st}, []shadow.Pipeline{cand}, flatPricer(0), stats, nil)
	if err := proc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &consumer{q: q, proc: proc}
}

// stop ends the consumer within d: runs still going are cancelled, unacked
// messages stay uncommitted in Kafka.
func (c *consumer) stop(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = c.proc.Shutdown(ctx)
	if err := c.q.Shutdown(context.Background()); err != nil {
		t.Logf("kafka shutdown: %v", err)
	}
}

// TestKafkaConsumerRestartStoresEachExchangeOnce publishes exchanges, kills the
// consumer mid-stream, starts another in the same group, and checks every exchange
// and its runs are in the store exactly once.
func TestKafkaConsumerRestartStoresEachExchangeOnce(t *testing.T) {
	kcfg := newKafkaCluster(t, "exchanges", 3)
	ctx := context.Background()
	const n = 60

	pstats := NewStats()
	prod, err := NewKafkaQueue(kcfg, false, pstats, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := prod.Publish(ctx, exchange(fmt.Sprintf("k-%02d", i), fmt.Sprintf("question %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := pstats.Snapshot(0).Dropped; len(d) != 0 {
		t.Fatalf("publish dropped %v", d)
	}

	st := &countingStore{Memory: storetest.NewMemory()}
	slow := &echoPipeline{release: make(chan struct{})}
	stats := NewStats()
	first := startConsumer(t, kcfg, st, stats, slow)
	// Let some exchanges through, then kill the consumer with runs in flight.
	for i := 0; i < 20; i++ {
		slow.release <- struct{}{}
	}
	waitFor(t, "20 exchanges stored by the first consumer", func() bool { return stats.Snapshot(0).Processed >= 20 })
	// Crash: the consumer's connection dies while runs are in flight; they finish and
	// are stored, but their offsets can no longer be committed.
	_ = first.q.reader.Close()
	close(slow.release)
	first.stop(t, 5*time.Second)
	firstDone := st.Memory.Counts().Requests
	if firstDone >= n {
		t.Fatalf("the first consumer stored all %d exchanges: the kill came too late to test anything", firstDone)
	}

	fast := &echoPipeline{}
	second := startConsumer(t, kcfg, st, NewStats(), fast)
	waitForD(t, 40*time.Second, "every exchange stored", func() bool {
		c := st.Memory.Counts()
		return c.Requests == n && c.Runs == 2*n
	})
	second.stop(t, 5*time.Second)

	c := st.Memory.Counts()
	if c.Requests != n || c.Runs != 2*n {
		t.Fatalf("store holds %d requests and %d runs, want %d and %d", c.Requests, c.Runs, n, 2*n)
	}
	for i := range n {
		if _, err := st.GetTrace(ctx, fmt.Sprintf("k-%02d", i)); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
	}
	if st.inserted.Load() <= n {
		t.Fatalf("%d request rows inserted for %d exchanges: the crash re-delivered nothing, so the test proved nothing", st.inserted.Load(), n)
	}
	t.Logf("first consumer stored %d; %d request rows inserted for %d exchanges (re-deliveries deduplicated by key)", firstDone, st.inserted.Load(), n)
}

func TestKafkaConfigValidate(t *testing.T) {
	cfg := NewDefaultKafkaConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("kafka off must validate: %v", err)
	}
	cfg.Brokers = []string{"no-port"}
	cfg.Topic = ""
	cfg.Buffer = 0
	if err := cfg.Validate(); err == nil {
		t.Fatal("want errors")
	}
	if _, err := NewKafkaQueue(NewDefaultKafkaConfig(), true, NewStats(), nil); err == nil {
		t.Fatal("a queue without brokers must be refused")
	}
}

// TestKafkaPublishWithAckWaitsForTheBroker: an acknowledged Publish returns once
// the exchange is in the topic, and with ErrKafkaUnavailable when no broker
// answers; a copy nobody waits for is counted as dropped instead.
func TestKafkaPublishWithAckWaitsForTheBroker(t *testing.T) {
	kcfg := newKafkaCluster(t, "acked", 1)
	stats := NewStats()
	prod, err := NewKafkaQueue(kcfg, false, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Shutdown(context.Background())
	if err := prod.Publish(WithAck(context.Background()), exchange("acked-1", "question")); err != nil {
		t.Fatalf("acknowledged publish: %v", err)
	}
	// It is in the topic already: a consumer reads it.
	cons, err := NewKafkaQueue(kcfg, true, NewStats(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := cons.Next(ctx)
	if err != nil || d.Exchange.RequestID != "acked-1" {
		t.Fatalf("next: %v %q", err, d.Exchange.RequestID)
	}

	// No broker: the acknowledged publish fails within ack_timeout.
	down := kcfg
	down.Brokers = []string{closedAddr(t)}
	down.AckTimeout = 500 * time.Millisecond
	dstats := NewStats()
	dq, err := NewKafkaQueue(down, false, dstats, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dq.Shutdown(context.Background())
	start := time.Now()
	err = dq.Publish(WithAck(context.Background()), exchange("lost-1", "question"))
	if !errors.Is(err, ErrKafkaUnavailable) {
		t.Fatalf("publish without a broker: %v, want ErrKafkaUnavailable", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the acknowledged publish took %s, ack_timeout is 500ms", time.Since(start))
	}
	// Through the tap: 503 kafka_unavailable, counted once.
	tap, err := NewTap(NewDefaultConfig(), dq, dstats, WithPIISecret([]byte("s")))
	if err != nil {
		t.Fatal(err)
	}
	code, resp := tap.Offer(WithAck(context.Background()), exchange("lost-2", "question"))
	if code != http.StatusServiceUnavailable || resp.Reason != "kafka_unavailable" {
		t.Fatalf("tap answered %d %+v", code, resp)
	}
	if n := dstats.Snapshot(0).Dropped["kafka_unavailable"]; n != 1 {
		t.Fatalf("kafka_unavailable counted %d, want 1 (the waiting caller counts it, the producer does not)", n)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
