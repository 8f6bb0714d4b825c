package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
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
