package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
	c := newLimitCluster(t, topic, int32(partitions))
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
	t.Parallel() // its Kafka peer is its own: runs beside the other Kafka tests
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
	first.q.consumer.crash()
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
	t.Parallel() // its Kafka peer is its own: runs beside the other Kafka tests
	ctx := context.Background()
	c := newLimitCluster(t, "acks", 1)
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

// nopWriter takes every batch: the rebalance test counts runs, not rows.
type nopWriter struct{}

func (nopWriter) Enqueue(store.Batch) error { return nil }

// publishQuestions publishes one exchange per request id ("question i" for
// the i-th) and fails t on any error.
func publishQuestions(t *testing.T, kcfg KafkaConfig, ids ...string) {
	t.Helper()
	ctx := context.Background()
	prod, err := NewKafkaQueue(kcfg, false, NewStats(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if err := prod.Publish(ctx, exchange(id, fmt.Sprintf("question %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// numbered is prefix000, prefix001, … (n ids).
func numbered(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return ids
}

// startRunner is a shadow-worker process without a store: its candidate
// runs, nothing is written or looked up. edit adjusts the queue before it
// joins (nil: as built).
func startRunner(t *testing.T, kcfg KafkaConfig, stats *Stats, cand shadow.Pipeline, edit func(*KafkaQueue)) *consumer {
	t.Helper()
	q, err := NewKafkaQueue(kcfg, true, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(q)
	}
	cfg := NewDefaultConfig()
	cfg.Workers = 4
	proc := NewProcessor(cfg, q, nopWriter{}, []shadow.Pipeline{cand}, flatPricer(0), stats, nil)
	if err := proc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &consumer{q: q, proc: proc}
}

// slowEcho is the echo candidate taking a while per run, counting runs per
// request across every consumer it serves.
type slowEcho struct {
	echoPipeline
	delay time.Duration
	mu    sync.Mutex
	runs  map[string]int
}

func (p *slowEcho) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	time.Sleep(p.delay)
	p.mu.Lock()
	p.runs[req.RequestID]++
	p.mu.Unlock()
	return p.echoPipeline.Run(ctx, req, mode)
}

func (p *slowEcho) counts() (distinct, twice int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.runs {
		distinct++
		if n > 1 {
			twice++
		}
	}
	return
}

// Two consumers of one group that share no store (none at all, or one
// each: no run look-up sees the other's runs): the second joins mid-stream
// and later leaves, two rebalances with runs in flight. Each exchange must be
// run once, and with a store each it must be stored in exactly one: a member
// finishes and commits what it holds before its partitions move.
func TestKafkaRebalanceRunsEachExchangeOnce(t *testing.T) {
	t.Parallel() // its Kafka peer is its own: runs beside the other Kafka tests
	tests := []struct {
		name   string
		stores bool
	}{
		{"no store", false},
		{"a store per worker", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			kcfg := newKafkaCluster(t, fmt.Sprintf("rebalance-%d", i), 6)
			const n = 150
			publishQuestions(t, kcfg, numbered("rb-", n)...)

			cand := &slowEcho{delay: 150 * time.Millisecond, runs: map[string]int{}}
			var stores []store.Store
			start := func(stats *Stats) *consumer {
				if tt.stores {
					st := engine.Open(t)
					stores = append(stores, st)
					return startConsumer(t, kcfg, st, stats, cand)
				}
				return startRunner(t, kcfg, stats, cand, nil)
			}
			aStats, bStats := NewStats(), NewStats()
			a := start(aStats)
			defer a.stop(t, 10*time.Second)
			waitForD(t, 30*time.Second, "a first share run", func() bool { d, _ := cand.counts(); return d >= 20 })
			b := start(bStats)
			waitForD(t, 30*time.Second, "the second consumer runs some", func() bool { return bStats.Snapshot(0).Processed >= 15 })
			b.stop(t, 10*time.Second)
			if d, _ := cand.counts(); d >= n {
				t.Fatalf("all %d exchanges ran before the second consumer left: the rebalances came too late", n)
			}
			waitForD(t, 60*time.Second, "every exchange run and stored", func() bool {
				d, _ := cand.counts()
				return d == n && aStats.Snapshot(0).Processed+bStats.Snapshot(0).Processed >= n
			})
			distinct, twice := cand.counts()
			as, bs := aStats.Snapshot(0).Kafka, bStats.Snapshot(0).Kafka
			t.Logf("%d exchanges run, %d twice; re-delivered: %d, %d; unfinished at a drain: %d, %d", distinct, twice, as.Redelivered, bs.Redelivered, as.RevokedUnfinished, bs.RevokedUnfinished)
			if twice != 0 {
				t.Errorf("%d exchanges ran twice across two rebalances", twice)
			}
			if r := as.Redelivered + bs.Redelivered; r != 0 {
				t.Errorf("%d re-deliveries counted; a rebalance that drains re-delivers nothing", r)
			}
			if !tt.stores {
				return
			}
			held := map[string]int{} // stores holding each request
			for _, st := range stores {
				res, err := st.(store.Console).Query(ctx, "SELECT request_id FROM requests FINAL")
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res.Rows {
					held[r[0]]++
				}
			}
			for _, id := range numbered("rb-", n) {
				if held[id] != 1 {
					t.Errorf("%s is stored in %d of the 2 stores; want 1", id, held[id])
				}
			}
		})
	}
}

// gateEcho is the echo candidate holding the run of one request until
// released, counting runs per request across every consumer it serves.
type gateEcho struct {
	echoPipeline
	stuck   string
	release chan struct{}
	mu      sync.Mutex
	runs    map[string]int
}

func (p *gateEcho) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	if req.RequestID == p.stuck {
		select {
		case <-p.release:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	p.runs[req.RequestID]++
	p.mu.Unlock()
	return p.echoPipeline.Run(ctx, req, mode)
}

func (p *gateEcho) count(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs[id]
}

func (p *gateEcho) ran() (ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.runs {
		ids = append(ids, id)
	}
	return ids
}

// A run that does not end holds back its partition once the offsets done
// above it fill what one commit's metadata lists: the worker then dies with
// that run going, and the partition's next owner (no store shared) skips
// every exchange the dead one finished, running only the one it had going.
// Without the hold, the exchanges finished beyond the list would run again.
func TestKafkaLongRunHoldsBackItsPartition(t *testing.T) {
	kcfg := newKafkaCluster(t, "longrun", 1)
	const others, limit = 40, 8
	rest := numbered("lr-", others)
	publishQuestions(t, kcfg, append([]string{"lr-stuck"}, rest...)...)

	cand := &gateEcho{stuck: "lr-stuck", release: make(chan struct{}), runs: map[string]int{}}
	start := func(stats *Stats) *consumer {
		return startRunner(t, kcfg, stats, cand, func(q *KafkaQueue) { q.consumer.listLimit = limit })
	}
	a := start(NewStats())
	// What the group holds for the partition: the stuck exchange (offset 0)
	// not done, and the done offsets listed above it.
	listed := func() (offset int64, done map[int64]bool) {
		c := a.q.consumer.committedMetadata([]int{0})[0]
		_, done = parseCommitMetadata(c.offset, c.metadata)
		return c.offset, done
	}
	waitForD(t, 30*time.Second, fmt.Sprintf("%d exchanges after the stuck one recorded done", limit), func() bool {
		offset, done := listed()
		return offset == 0 && len(done) == limit
	})
	ranA := len(cand.ran())
	if ranA != limit {
		t.Fatalf("the first worker ran %d exchanges besides the stuck one; want %d (what one commit lists)", ranA, limit)
	}
	a.q.consumer.crash() // dies with the stuck run going: nothing more is committed
	close(cand.release)
	a.stop(t, 10*time.Second)

	bStats := NewStats()
	b := start(bStats)
	defer b.stop(t, 10*time.Second)
	waitForD(t, 30*time.Second, "every exchange run", func() bool { return len(cand.ran()) == others+1 && cand.count("lr-stuck") == 2 })
	for _, id := range rest {
		if cand.count(id) != 1 {
			t.Errorf("%s ran %d times; want once", id, cand.count(id))
		}
	}
	if k := bStats.Snapshot(0).Kafka; k.Redelivered != 1 || k.SkippedDone != limit {
		t.Errorf("next owner: %d re-delivered, %d skipped as done; want 1 (the stuck one) and %d", k.Redelivered, k.SkippedDone, limit)
	}
}

// A member that leaves the group while a run outlasts drain_timeout hands
// the partition over with that run going: the run then happens twice, and
// both counters show it (revoked unfinished at the old owner, re-delivered
// at the new one); what the old owner finished is skipped, not run again.
func TestKafkaDrainTimeoutRunsTwiceCounted(t *testing.T) {
	ctx := context.Background()
	kcfg := newKafkaCluster(t, "draintimeout", 1)
	kcfg.DrainTimeout = 0
	const others = 10
	rest := numbered("dt-", others)
	publishQuestions(t, kcfg, append([]string{"dt-stuck"}, rest...)...)

	cand := &gateEcho{stuck: "dt-stuck", release: make(chan struct{}), runs: map[string]int{}}
	start := func(stats *Stats) *consumer { return startRunner(t, kcfg, stats, cand, nil) }
	aStats := NewStats()
	a := start(aStats)
	waitForD(t, 30*time.Second, "the others run by the first worker", func() bool { return len(cand.ran()) == others })
	// The first worker leaves the group with the stuck run going.
	if err := a.q.consumer.shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if k := aStats.Snapshot(0).Kafka; k.RevokedUnfinished != 1 {
		t.Errorf("the leaving worker counted %d exchanges unfinished at its drain; want 1", k.RevokedUnfinished)
	}
	bStats := NewStats()
	b := start(bStats)
	defer b.stop(t, 10*time.Second)
	waitForD(t, 30*time.Second, "the stuck exchange delivered to the second worker", func() bool { return bStats.Snapshot(0).Kafka.Redelivered == 1 })
	close(cand.release)
	waitForD(t, 30*time.Second, "the stuck exchange run by both", func() bool { return cand.count("dt-stuck") == 2 })
	a.stop(t, 10*time.Second)
	for _, id := range rest {
		if cand.count(id) != 1 {
			t.Errorf("%s ran %d times; want once", id, cand.count(id))
		}
	}
	if k := bStats.Snapshot(0).Kafka; k.SkippedDone != others {
		t.Errorf("the second worker skipped %d exchanges as done; want the %d the first one finished", k.SkippedDone, others)
	}
}
