package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
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
	store.Store
	inserted atomic.Int64
}

// FinishedRuns passes the lookup through to the wrapped store.
func (s *countingStore) FinishedRuns(ctx context.Context, id string) ([]store.WorkKey, error) {
	return s.Store.(store.RunLookup).FinishedRuns(ctx, id)
}

func (s *countingStore) InsertRequests(ctx context.Context, reqs []store.Request) error {
	s.inserted.Add(int64(len(reqs)))
	return s.Store.InsertRequests(ctx, reqs)
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
	lookup := store.NewRoles(st).RunLookup
	if lookup == nil {
		t.Fatal("the store has no store.RunLookup")
	}
	proc.UseRunLookup(lookup)
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

	st := &countingStore{Store: engine.Open(t)}
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
	firstDone := storetest.MustCountRows(t, st).Requests
	if firstDone >= n {
		t.Fatalf("the first consumer stored all %d exchanges: the kill came too late to test anything", firstDone)
	}

	fast := &echoPipeline{}
	secondStats := NewStats()
	second := startConsumer(t, kcfg, st, secondStats, fast)
	waitForD(t, 40*time.Second, "every exchange stored", func() bool {
		if st.inserted.Load() < n { // cannot be all stored yet: spare the engine a count
			return false
		}
		c := storetest.MustCountRows(t, st)
		return c.Requests == n && c.Runs == 2*n
	})
	second.stop(t, 5*time.Second)

	c := storetest.MustCountRows(t, st)
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
	// No second spend: a re-delivered exchange whose candidate run was stored
	// before the crash is not run again.
	runs := map[string]int{}
	for _, p := range []*echoPipeline{slow, fast} {
		for _, id := range p.seen {
			runs[id]++
		}
	}
	for id, c := range runs {
		if c > 1 {
			t.Errorf("exchange %s: the candidate ran %d times; want once", id, c)
		}
	}
	skipped := secondStats.Snapshot(0).SkippedRuns
	if skipped == 0 {
		t.Errorf("the second consumer skipped no stored run: the re-delivery of stored exchanges was not exercised")
	}
	t.Logf("second consumer skipped %d candidate runs already stored", skipped)
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

// The tap answers 202 only once the brokers acknowledged the copy: with Kafka
// gone every copy is refused with 503 (never accepted), counted, and Ready names
// Kafka once a publish failed.
func TestKafkaTapAcceptsOnlyAcknowledgedCopies(t *testing.T) {
	ctx := context.Background()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acks"))
	if err != nil {
		t.Fatal(err)
	}
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic = c.ListenAddrs(), "acks"
	cfg := NewDefaultConfig()
	cfg.Kafka = kcfg
	cfg.AcceptTimeout = 20 * time.Second
	stats := NewStats()
	q, err := NewKafkaQueue(kcfg, false, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Shutdown(ctx)
	tap, err := NewTap(cfg, q, stats, WithPIISecret([]byte("s")))
	if err != nil {
		t.Fatal(err)
	}
	if code, resp := tap.Offer(ctx, exchange("acked", "q")); code != http.StatusAccepted {
		t.Fatalf("offer with Kafka up = %d %+v; want 202", code, resp)
	}
	if err := q.Ready(); err != nil {
		t.Fatalf("Ready with Kafka up: %v", err)
	}
	c.Close()
	code, resp := tap.Offer(ctx, exchange("lost", "q"))
	if code != http.StatusServiceUnavailable || resp.Reason != ReasonKafkaUnavailable {
		t.Errorf("offer with Kafka down = %d %+v; want 503 kafka_unavailable", code, resp)
	}
	if err := q.Ready(); err == nil || !strings.Contains(err.Error(), "kafka unreachable") {
		t.Errorf("Ready with Kafka down = %v; want kafka unreachable", err)
	}
	if snap := stats.Snapshot(0); snap.Accepted != 1 || snap.Dropped[ReasonKafkaUnavailable] != 1 {
		t.Errorf("stats = %+v; want 1 accepted, 1 dropped kafka_unavailable", snap)
	}
}

// Readiness follows the brokers without any traffic: an idle producer (a tap)
// and a waiting consumer (a shadow worker) turn not ready once the cluster is
// gone, naming Kafka and the ping, and ready again once brokers answer on the
// same address.
func TestKafkaReadyFollowsTheBrokersWhenIdle(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "idle"))
	if err != nil {
		t.Fatal(err)
	}
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.Group = c.ListenAddrs(), "idle", "idle-workers"
	kcfg.PingInterval = 100 * time.Millisecond
	roles := map[string]*KafkaQueue{}
	for role, consume := range map[string]bool{"tap": false, "shadow worker": true} {
		q, err := NewKafkaQueue(kcfg, consume, NewStats(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Shutdown(context.Background()) })
		if consume { // a worker waiting on an empty topic
			go func() {
				for {
					if _, err := q.Next(context.Background()); errors.Is(err, ErrQueueClosed) {
						return
					}
				}
			}()
		}
		roles[role] = q
	}
	for role, q := range roles {
		waitFor(t, role+" ready while the brokers answer", func() bool { return q.Ready() == nil })
	}
	c.Close()
	for role, q := range roles {
		waitFor(t, role+" not ready, naming the ping, with the cluster gone", func() bool {
			err := q.Ready()
			return err != nil && strings.Contains(err.Error(), "kafka unreachable") && strings.Contains(err.Error(), "(ping)")
		})
	}
	_, port, err := net.SplitHostPort(kcfg.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	again, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(p), kfake.SeedTopics(1, "idle"))
	if err != nil {
		t.Skipf("cannot listen on %s again to check recovery: %v", kcfg.Brokers[0], err)
	}
	defer again.Close()
	waitFor(t, "tap ready again once the brokers answer", func() bool { return roles["tap"].Ready() == nil })
}
