package ingest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaSessionTimeoutBelowTheBrokersMinimum: a shadow worker whose
// session timeout the broker refuses (3 s against the default minimum of
// 6 s) never gets partitions; readiness says so and names the setting.
func TestKafkaSessionTimeoutBelowTheBrokersMinimum(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "st"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.Group = c.ListenAddrs(), "st", "st-workers"
	kcfg.SessionTimeout = 3 * time.Second
	q, err := NewKafkaQueue(kcfg, true, NewStats(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer q.Shutdown(context.Background())
	go func() {
		for {
			if _, err := q.Next(context.Background()); errors.Is(err, ErrQueueClosed) {
				return
			}
		}
	}()
	waitFor(t, "not ready, naming ingest.kafka.session_timeout", func() bool {
		err := q.Ready()
		return err != nil && strings.Contains(err.Error(), "Invalid Session Timeout") && strings.Contains(err.Error(), "ingest.kafka.session_timeout 3s")
	})
}

// TestKafkaMissingTopicRejoinsAfterAPause: a shadow worker started before its
// topic exists joins the group about once a pause, not in a loop (kafka-go's
// partition watcher ends each such generation at once: 2,400 joins a second
// without the pause), says so once, and reads the topic once it is created.
func TestKafkaMissingTopicRejoinsAfterAPause(t *testing.T) {
	t.Parallel() // its Kafka peer is its own: runs beside the other Kafka tests
	var joins atomic.Int64
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ControlKey(int16(kmsg.JoinGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		joins.Add(1)
		return nil, nil, false
	})
	kcfg := NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.Group = c.ListenAddrs(), "later", "later-workers"
	var mu sync.Mutex
	var logs bytes.Buffer
	q, err := NewKafkaQueue(kcfg, true, NewStats(), slog.New(slog.NewTextHandler(lockedBuffer{&mu, &logs}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer q.Shutdown(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := collect(ctx, q)

	const watch = 3 * time.Second
	time.Sleep(watch)
	// Pauses of 0.1, 0.2, 0.4, 0.8 and 1.6 s fit in 3 s: about 7 joins.
	n := joins.Load()
	t.Logf("%d JoinGroup requests in %s while the topic does not exist", n, watch)
	if n > 12 {
		t.Errorf("%d JoinGroup requests in %s while the topic does not exist; want a handful", n, watch)
	}
	mu.Lock()
	warned := strings.Count(logs.String(), "no partition of the topic")
	mu.Unlock()
	if warned != 1 {
		t.Errorf("the churn was logged %d times; want once:\n%s", warned, logs.String())
	}
	if err := q.Ready(); err != nil {
		t.Errorf("a topic not created yet is no failure; Ready: %v", err)
	}

	if _, err := testClient(t, c).CreateTopics(context.Background(), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: "later", NumPartitions: 1, ReplicationFactor: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	publishQuestions(t, kcfg, "later-1")
	waitForD(t, 20*time.Second, "the copy published once the topic exists", func() bool { return len(got()) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "no longer end at once") {
		t.Errorf("the end of the pause was not logged:\n%s", logs.String())
	}
}
