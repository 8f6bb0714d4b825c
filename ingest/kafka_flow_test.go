package ingest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// The flow meter counts exactly what the brokers hold: every acknowledged
// message with its key and value bytes (read back from the topic), the PII
// kinds pseudonymized in each exchange, and a publish the brokers refused
// as failed.
func TestKafkaFlowMeterCountsWhatTheBrokersHold(t *testing.T) {
	t.Parallel() // its Kafka peer is its own: runs beside the other Kafka tests
	ctx := context.Background()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "flows"))
	if err != nil {
		t.Fatal(err)
	}
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic = c.ListenAddrs(), "flows"
	cfg := NewDefaultConfig()
	cfg.Kafka = kcfg
	cfg.AcceptTimeout = 20 * time.Second
	stats := NewStats()
	q, err := NewKafkaQueue(kcfg, false, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Shutdown(ctx)
	meter := dataflow.NewMeter(nil)
	q.UseFlowMeter(meter)
	tap, err := NewTap(cfg, q, stats, WithPIISecret([]byte("s")))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"plain question", "mail me at ada@example.com", "ada@example.com or +44 20 7946 0958", "what is 2+2?"}
	for i, text := range texts {
		if code, resp := tap.Offer(ctx, exchange(fmt.Sprintf("flow-%d", i), text)); code != http.StatusAccepted {
			t.Fatalf("offer %d = %d %+v", i, code, resp)
		}
	}
	var messages, bytes int64
	for p := range 2 {
		conn, err := kafka.DialLeader(ctx, "tcp", kcfg.Brokers[0], "flows", p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for messages := int64(0); messages < last; messages++ {
			m, err := conn.ReadMessage(10 << 20)
			if err != nil {
				t.Fatal(err)
			}
			bytes += int64(len(m.Key) + len(m.Value))
		}
		messages += last
		conn.Close()
	}
	got := meter.Totals(dataflow.KindKafka)
	if got.Items != messages || got.ContentItems != messages || got.SentBytes != bytes || got.FailedItems != 0 || got.Requests < 1 {
		t.Errorf("meter counted %+v; the topic holds %d messages of %d bytes", got, messages, bytes)
	}
	if messages != int64(len(texts)) {
		t.Errorf("the topic holds %d messages, want %d", messages, len(texts))
	}
	if fmt.Sprint(got.PII) != "[email phone]" {
		t.Errorf("PII kinds %v, want [email phone]", got.PII)
	}
	c.Close()
	if code, _ := tap.Offer(ctx, exchange("flow-lost", "q")); code != http.StatusServiceUnavailable {
		t.Fatalf("offer with Kafka down = %d, want 503", code)
	}
	if got := meter.Totals(dataflow.KindKafka); got.Items != messages || got.FailedItems != 1 {
		t.Errorf("after a refused publish: %+v, want %d items and 1 failed", got, messages)
	}
}
