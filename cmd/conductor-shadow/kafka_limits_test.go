package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
)

// kafkaDefaultMessageMaxBytes is a Kafka broker's default message.max.bytes
// (1 MiB + 12 bytes of log overhead), which the tests' brokers keep.
const kafkaDefaultMessageMaxBytes = "1048588"

// TestKafkaOneKBCopiesAfterAThreeMBOneAllArrive sends, through the mirroring
// proxy of `serve --role tap` (an OS process), one 3 MB exchange and then
// 1,000 1 KB ones to a Kafka peer that keeps the broker's default message
// limit (message.max.bytes 1,048,588). Every 1 KB copy must reach a consumer
// of the group, the 3 MB one must arrive whole through the claim-check (its
// chunks reassembled and its SHA-256 checked), and /readyz, polled all along,
// must answer 200 every time.
func TestKafkaOneKBCopiesAfterAThreeMBOneAllArrive(t *testing.T) {
	t.Parallel() // its tap process and Kafka peer are its own
	if testing.Short() {
		t.Skip("runs the command as a tap process")
	}
	bin := commandBinary(t)
	const topic = "limits"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, topic),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": kafkaDefaultMessageMaxBytes}))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	incumbent := httptest.NewServer(&incumbenttest.Handler{})
	defer incumbent.Close()

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`ingest:
  proxy:
    incumbent_url: %s
    trusted_networks: [127.0.0.1/32] # the test's request ids are kept
  kafka:
    brokers: [%q]
    topic: %s
    ping_interval: 200ms
`, incumbent.URL, kc.ListenAddrs()[0], topic))
	tap := startServe(t, bin, os.Environ(), "tap", "--config", cfgPath, "--role", "tap", "--data", filepath.Join(dir, "tap"))

	// A consumer of the topic: what a shadow worker would be handed.
	kcfg := ingest.NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.Group = kc.ListenAddrs(), topic, "limits-consumer"
	cstats := ingest.NewStats()
	cons, err := ingest.NewKafkaQueue(kcfg, true, cstats, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer cons.Shutdown(context.Background())
	var mu sync.Mutex
	got := map[string]ingest.Exchange{}
	cctx, stopConsumer := context.WithCancel(context.Background())
	defer stopConsumer()
	go func() {
		for {
			d, err := cons.Next(cctx)
			if err != nil {
				if cctx.Err() != nil || errors.Is(err, ingest.ErrQueueClosed) {
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

	// /readyz all along, every 50 ms.
	var samples, notReady atomic.Int64
	var firstNotReady atomic.Value
	pollDone := make(chan struct{})
	stopPoll := make(chan struct{})
	go func() {
		defer close(pollDone)
		for {
			select {
			case <-stopPoll:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := http.Get("http://" + tap.addr + "/readyz")
			if err != nil {
				continue
			}
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			samples.Add(1)
			if resp.StatusCode != http.StatusOK {
				notReady.Add(1)
				firstNotReady.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, body.String()))
			}
		}
	}()

	chat := func(id, content string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "gpt-5", "messages": []map[string]string{{"role": "user", "content": content}}})
		req, _ := http.NewRequest(http.MethodPost, "http://"+tap.addr+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			return
		}
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s through the proxy: %d %s", id, resp.StatusCode, tail(out.String(), 300))
		}
	}
	const sentence = "the quick brown fox jumps over the lazy dog. "
	big := strings.Repeat(sentence, 3_000_000/len(sentence))
	small := strings.Repeat(sentence, 1000/len(sentence))
	chat("big-3mb", big)
	const n = 1000
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				chat(fmt.Sprintf("small-%04d", i), fmt.Sprintf("%d %s", i, small))
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()

	arrived := func() (smalls int, bigOK bool) {
		mu.Lock()
		defer mu.Unlock()
		for i := range n {
			if _, ok := got[fmt.Sprintf("small-%04d", i)]; ok {
				smalls++
			}
		}
		ex, ok := got["big-3mb"]
		return smalls, ok && len(ex.Request.Messages) == 1 && ex.Request.Messages[0].Content == big
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s, b := arrived(); (s == n && b) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Readiness a little longer: a refusal must not flip it later either.
	time.Sleep(time.Second)
	close(stopPoll)
	<-pollDone
	smalls, bigOK := arrived()
	st := tap.stats(t)
	t.Logf("1 KB copies arrived after the 3 MB one: %d of %d (%.1f%%); 3 MB copy arrived whole: %v; /readyz samples: %d, not ready: %d; tap dropped %v, mirrored %v",
		smalls, n, 100*float64(smalls)/n, bigOK, samples.Load(), notReady.Load(), st.Dropped, st.Mirrored)
	if smalls != n {
		t.Errorf("%d of %d 1 KB copies arrived; want all", smalls, n)
	}
	if !bigOK {
		t.Errorf("the 3 MB copy did not arrive whole through the claim-check")
	}
	if samples.Load() < 20 {
		t.Errorf("only %d /readyz samples: readiness was not watched", samples.Load())
	}
	if notReady.Load() != 0 {
		t.Errorf("/readyz answered not ready %d of %d times; first: %v", notReady.Load(), samples.Load(), firstNotReady.Load())
	}
	if len(st.Dropped) != 0 {
		t.Errorf("the tap dropped copies: %v", st.Dropped)
	}
	if st.Kafka.ClaimChecked != 1 || cstats.Snapshot(0).Kafka.Reassembled != 1 {
		t.Errorf("claim-checked copies: %d published, %d reassembled; want the 3 MB one, once each", st.Kafka.ClaimChecked, cstats.Snapshot(0).Kafka.Reassembled)
	}
}
