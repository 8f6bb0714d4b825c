package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Every message of an encoded copy fits the batch room of its limit, and the
// chunks of a claim-check rebuild the copy byte for byte, a chunk sent twice
// included; a copy above max_copy_bytes, or one a tiny limit cannot chunk, is
// ErrCopyTooLarge.
func TestEncodeCopyFitsTheLimit(t *testing.T) {
	sentence := "the quick brown fox jumps over the lazy dog. "
	tests := []struct {
		name     string
		content  int   // bytes of the request's message
		limit    int64 // the topic's max.message.bytes
		maxCopy  int64
		chunks   int // want; 0: ErrCopyTooLarge
		tooLarge bool
	}{
		{"small, one message", 1000, DefaultMessageMaxBytes, 32 << 20, 1, false},
		{"just under the limit", DefaultMessageMaxBytes - 4096, DefaultMessageMaxBytes, 32 << 20, 1, false},
		{"3 MB at the default limit", 3_000_000, DefaultMessageMaxBytes, 32 << 20, 3, false},
		{"3 MB at a 200 KB limit", 3_000_000, 200_000, 32 << 20, 16, false},
		{"above max_copy_bytes", 3_000_000, DefaultMessageMaxBytes, 2 << 20, 0, true},
		{"a limit too small to chunk", 100_000, 2048, 32 << 20, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := exchange("enc-1", strings.Repeat(sentence, tt.content/len(sentence)))
			ex.Response.Content = "ok"
			e, err := encodeCopy(ex, "", tt.limit, tt.maxCopy)
			if tt.tooLarge {
				if !errors.Is(err, ErrCopyTooLarge) {
					t.Fatalf("err = %v; want ErrCopyTooLarge", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(e.msgs) != tt.chunks {
				t.Fatalf("%d messages; want %d", len(e.msgs), tt.chunks)
			}
			for i, m := range e.msgs {
				if messageSize(m) > batchBytesFor(tt.limit) {
					t.Errorf("message %d is %d bytes, more than the batch room %d", i, messageSize(m), batchBytesFor(tt.limit))
				}
				if string(m.Key) != ex.RequestID {
					t.Errorf("message %d key %q; want the request id", i, m.Key)
				}
			}
			if len(e.msgs) == 1 {
				return
			}
			// Rebuild as a consumer does, the second chunk delivered twice.
			order := append([]kafka.Message{e.msgs[0], e.msgs[1]}, e.msgs[1:]...)
			var set *partialSet
			var complete bool
			for off, m := range order {
				p, ok, err := parseClaimPart(m)
				if !ok || err != nil {
					t.Fatalf("chunk headers: ok %v, %v", ok, err)
				}
				if set == nil {
					set = newPartialSet(ex.RequestID, p, time.Now())
				}
				if complete, err = set.add(p, m.Value, int64(off)); err != nil {
					t.Fatal(err)
				}
			}
			if !complete {
				t.Fatal("the set is not complete with every chunk")
			}
			b, err := set.assemble()
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != int64(e.size) || len(set.offsets) != len(order) {
				t.Fatalf("rebuilt %d bytes over %d offsets; want %d over %d", len(b), len(set.offsets), e.size, len(order))
			}
		})
	}
}

// A chunk whose bytes changed on the way fails the SHA-256 check; malformed
// headers are refused.
func TestClaimCheckRefusesCorruptChunks(t *testing.T) {
	ex := exchange("corrupt-1", strings.Repeat("x", 300_000))
	e, err := encodeCopy(ex, "", 100_000, 32<<20)
	if err != nil || len(e.msgs) < 2 {
		t.Fatalf("%d chunks, %v", len(e.msgs), err)
	}
	var set *partialSet
	for i, m := range e.msgs {
		p, _, _ := parseClaimPart(m)
		if set == nil {
			set = newPartialSet(ex.RequestID, p, time.Now())
		}
		v := m.Value
		if i == 1 {
			v = append([]byte(nil), v...)
			v[10] ^= 1
		}
		if _, err := set.add(p, v, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := set.assemble(); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("assemble of a changed chunk = %v; want a SHA-256 mismatch", err)
	}
	bad := kafka.Message{Headers: []kafka.Header{{Key: headerCopyID, Value: []byte("x")}, {Key: headerPart, Value: []byte("3/2")}}}
	if _, ok, err := parseClaimPart(bad); !ok || err == nil {
		t.Errorf("part 3/2 without size or hash: ok %v, err %v; want an error", ok, err)
	}
}

func TestCommitMetadataRoundTrip(t *testing.T) {
	tests := []struct {
		name           string
		offset, handed int64
		done           []int64
		limit          int
		want           string
		wantDone       []int64 // what the next owner reads as done
	}{
		{"nothing done", 10, 10, nil, maxDoneListed, "cs1 h=10", nil},
		{"done above the commit", 10, 15, []int64{12, 14}, maxDoneListed, "cs1 h=15 a=2,4", []int64{12, 14}},
		{"done at the commit (an earlier owner's)", 10, 12, []int64{10, 11}, maxDoneListed, "cs1 h=12 a=0,1", []int64{10, 11}},
		{"past the limit: the rest left out", 0, 9, []int64{2, 4, 6, 8}, 2, "cs1 h=9 a=2,4", []int64{2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := commitMetadata(tt.offset, tt.handed, tt.done, tt.limit)
			if got != tt.want {
				t.Errorf("commitMetadata(%d, %d, %v, %d) = %q; want %q", tt.offset, tt.handed, tt.done, tt.limit, got, tt.want)
			}
			h, done := parseCommitMetadata(tt.offset, got)
			if h != tt.handed || len(done) != len(tt.wantDone) {
				t.Errorf("parse %q = h=%d done=%v; want h=%d done=%v", got, h, done, tt.handed, tt.wantDone)
			}
			for _, o := range tt.wantDone {
				if !done[o] {
					t.Errorf("parse %q lost done offset %d", got, o)
				}
			}
		})
	}
	for _, foreign := range []string{"", "some other client's metadata", "cs2 h=4 a=1"} {
		if h, done := parseCommitMetadata(5, foreign); h != 0 || done != nil {
			t.Errorf("metadata %q read as h=%d done=%v; want nothing handed out or done", foreign, h, done)
		}
	}
	if _, done := parseCommitMetadata(5, "cs1 h=9 a=-3,x,2"); len(done) != 1 || !done[7] {
		t.Errorf("negative and malformed deltas: done = %v; want only offset 7", done)
	}
	// The longest list a commit sends fits Kafka's default
	// offset.metadata.max.bytes (4,096).
	worst := make([]int64, maxDoneListed+50)
	for i := range worst {
		worst[i] = 1_000_000_000 + 99_999 - int64(len(worst)) + int64(i)
	}
	if m := commitMetadata(1_000_000_000, 1_000_000_000+99_999, worst, maxDoneListed); len(m) > 4096 {
		t.Errorf("metadata of %d done offsets 5 digits above the commit is %d bytes; Kafka keeps 4,096", maxDoneListed, len(m))
	}
}

// newLimitCluster is a one-broker Kafka peer keeping the broker's default
// message limit (message.max.bytes 1,048,588).
func newLimitCluster(t *testing.T, topic string, partitions int32) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(DefaultMessageMaxBytes)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// testClient is an admin client of c whose connections close with the test.
func testClient(t *testing.T, c *kfake.Cluster) *kafka.Client {
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...), Transport: tr}
}

// collect reads q until ctx ends, acking each delivery, and returns what
// arrived by request id.
func collect(ctx context.Context, q *KafkaQueue) func() map[string]Exchange {
	var mu sync.Mutex
	got := map[string]Exchange{}
	go func() {
		for {
			d, err := q.Next(ctx)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrQueueClosed) {
					return
				}
				continue
			}
			mu.Lock()
			got[d.Exchange.RequestID] = d.Exchange
			mu.Unlock()
			d.Ack()
		}
	}()
	return func() map[string]Exchange {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]Exchange, len(got))
		for k, v := range got {
			out[k] = v
		}
		return out
	}
}

// The producer reads the topic's limit from the brokers and follows a change:
// with max.message.bytes lowered to 200,000 a 500 KB copy goes as claim-check
// chunks and arrives whole, and the copies around it arrive too.
func TestKafkaLimitFollowsTheTopic(t *testing.T) {
	ctx := context.Background()
	const topic = "limits"
	c := newLimitCluster(t, topic, 2)
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.Group, kcfg.PingInterval = c.ListenAddrs(), topic, "limit-workers", 100*time.Millisecond
	pstats := NewStats()
	prod, err := NewKafkaQueue(kcfg, false, pstats, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer prod.Shutdown(ctx)
	cl := testClient(t, c)
	resp, err := cl.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, Configs: []kafka.AlterConfigRequestConfig{{Name: "max.message.bytes", Value: "200000"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for r, err := range resp.Errors {
		if err != nil {
			t.Fatalf("alter %v: %v", r, err)
		}
	}
	waitForD(t, 10*time.Second, "the producer reads the topic's new limit", func() bool { return prod.MessageLimit() == 200000 })

	cstats := NewStats()
	cons, err := NewKafkaQueue(kcfg, true, cstats, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Shutdown(ctx)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	got := collect(cctx, cons)

	big := exchange("big", strings.Repeat("the quick brown fox jumps over the lazy dog. ", 500_000/45))
	for _, ex := range []Exchange{exchange("before", "q"), big, exchange("after", "q")} {
		if err := prod.Publish(ctx, ex); err != nil {
			t.Fatalf("publish %s: %v", ex.RequestID, err)
		}
	}
	waitForD(t, 30*time.Second, "the three copies arrive", func() bool { return len(got()) == 3 })
	if g := got()["big"]; g.Request.Messages[0].Content != big.Request.Messages[0].Content {
		t.Errorf("the 500 KB copy arrived with %d bytes of content; want %d", len(g.Request.Messages[0].Content), len(big.Request.Messages[0].Content))
	}
	if n := pstats.Snapshot(0).Kafka.ClaimChecked; n != 1 {
		t.Errorf("claim-checked copies published = %d; want 1", n)
	}
	if n := cstats.Snapshot(0).Kafka.Reassembled; n != 1 {
		t.Errorf("claim-check copies reassembled = %d; want 1", n)
	}
	if err := prod.Ready(); err != nil {
		t.Errorf("producer not ready: %v", err)
	}
}

// newTooLargeTap is a tap publishing to topic on a Kafka of its own whose
// copies may hold at most 64 KiB (ingest.kafka.max_copy_bytes), with its
// queue (shut down when t ends) and counters.
func newTooLargeTap(t *testing.T, topic string) (*Tap, *KafkaQueue, *Stats) {
	t.Helper()
	c := newLimitCluster(t, topic, 1)
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.MaxCopyBytes, kcfg.ReassemblyBytes = c.ListenAddrs(), topic, 64<<10, 64<<10
	cfg := NewDefaultConfig()
	cfg.Kafka = kcfg
	stats := NewStats()
	q, err := NewKafkaQueue(kcfg, false, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Shutdown(context.Background()) })
	tap, err := NewTap(cfg, q, stats, WithPIISecret([]byte("s")))
	if err != nil {
		t.Fatal(err)
	}
	return tap, q, stats
}

// Through /v1/tap a copy above max_copy_bytes is answered 413 too_large,
// counted as rejected, never as Kafka unavailable, and readiness holds; the
// next copy is accepted.
func TestKafkaTapAnswersTooLarge(t *testing.T) {
	ctx := context.Background()
	tap, q, stats := newTooLargeTap(t, "too-large")
	code, resp := tap.Offer(ctx, exchange("huge", strings.Repeat("y", 100<<10)))
	if code != http.StatusRequestEntityTooLarge || resp.Reason != ReasonTooLarge {
		t.Errorf("offer above max_copy_bytes = %d %+v; want 413 too_large", code, resp)
	}
	if err := q.Ready(); err != nil {
		t.Errorf("Ready after a size refusal: %v", err)
	}
	if code, resp := tap.Offer(ctx, exchange("small", "q")); code != http.StatusAccepted {
		t.Errorf("offer of a small copy after it = %d %+v; want 202", code, resp)
	}
	snap := stats.Snapshot(0)
	if snap.Rejected[ReasonTooLarge] != 1 || len(snap.Dropped) != 0 || snap.Accepted != 1 {
		t.Errorf("stats = rejected %v, dropped %v, accepted %d; want 1 too_large, none dropped, 1 accepted", snap.Rejected, snap.Dropped, snap.Accepted)
	}
}

// A claim-check copy whose chunks stop arriving is dropped after
// reassembly_timeout, counted and logged; the copies after it on the same
// partition are delivered meanwhile, and its offsets do not hold the
// partition's commits for ever.
func TestKafkaIncompleteClaimCheckIsCounted(t *testing.T) {
	ctx := context.Background()
	const topic = "incomplete"
	c := newLimitCluster(t, topic, 1)
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.Group, kcfg.ReassemblyTimeout = c.ListenAddrs(), topic, "incomplete-workers", time.Second
	e, err := encodeCopy(exchange("cut", strings.Repeat("z", 300_000)), "", 100_000, 32<<20)
	if err != nil || len(e.msgs) < 3 {
		t.Fatalf("%d chunks, %v", len(e.msgs), err)
	}
	whole, err := encodeCopy(exchange("whole", "q"), "", DefaultMessageMaxBytes, 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(c.ListenAddrs()...), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		Transport: testClient(t, c).Transport}
	defer w.Close()
	// The producer failed after two chunks; a whole copy follows.
	if err := w.WriteMessages(ctx, append(e.msgs[:2:2], whole.msgs...)...); err != nil {
		t.Fatal(err)
	}
	stats := NewStats()
	q, err := NewKafkaQueue(kcfg, true, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Shutdown(ctx)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	got := collect(cctx, q)
	waitForD(t, 20*time.Second, "the whole copy after the cut one arrives", func() bool { _, ok := got()["whole"]; return ok })
	waitForD(t, 20*time.Second, "the cut copy counted as incomplete", func() bool { return stats.Snapshot(0).Dropped[DropKafkaIncomplete] == 1 })
	if _, ok := got()["cut"]; ok {
		t.Error("an incomplete claim-check copy was handed out")
	}
	// Everything is done now: the committed offset passes all three messages.
	cl := testClient(t, c)
	waitForD(t, 10*time.Second, "the partition committed past the dropped set", func() bool {
		r, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: kcfg.Group, Topics: map[string][]int{topic: {0}}})
		return err == nil && len(r.Topics[topic]) == 1 && r.Topics[topic][0].CommittedOffset == 3
	})
}

// A mirroring-proxy copy above max_copy_bytes has no sender to be told 413:
// it is recorded (not shadowed, too_large) as a metadata record without its
// text, so the exchange still leaves a row.
func TestKafkaMirroredTooLargeIsRecorded(t *testing.T) {
	ctx := context.Background()
	tap, _, stats := newTooLargeTap(t, "too-large-mirror")
	sink := newRecordSink()
	rcfg := NewDefaultRecordConfig()
	rcfg.Linger = 10 * time.Millisecond
	rec, err := NewRecorder(rcfg, sink, nil, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	tap.UseRecorder(rec)
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rec.Shutdown(ctx)
	ex := exchange("huge-mirror", strings.Repeat("y", 100<<10))
	ex.Metadata["source"] = "proxy"
	if code, resp := tap.Mirror(ex); code != http.StatusAccepted {
		t.Fatalf("hand-over = %d %+v; want 202 (the size refusal comes later)", code, resp)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sink.all()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := sink.all()
	if len(got) != 1 {
		t.Fatalf("%d records; want the one too-large copy", len(got))
	}
	r := got[0]
	if r.RequestID != "huge-mirror" || r.StoreOnly != ReasonTooLarge || r.BodyOmitted != BodyTooLarge || len(r.Request.Messages) != 0 {
		t.Errorf("record = id %q not_shadowed %q body_omitted %q, %d messages; want huge-mirror too_large too_large without text",
			r.RequestID, r.StoreOnly, r.BodyOmitted, len(r.Request.Messages))
	}
}
