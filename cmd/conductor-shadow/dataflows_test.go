package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	collectorlogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// workerTally is what a worker endpoint received per model asked for: chat
// requests, request and response body bytes, and the tokens its answers
// reported.
type workerTally struct{ requests, sent, received, in, out int64 }

// countingPool is the simulated pool behind a counter of everything that
// reached it.
type countingPool struct {
	next    http.Handler
	mu      sync.Mutex
	byModel map[string]*workerTally
}

// usageRE reads the usage a streamed answer reported.
var usageRE = regexp.MustCompile(`"usage":\{"prompt_tokens":(\d+),"completion_tokens":(\d+)`)

func (p *countingPool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &teeWriter{ResponseWriter: w}
	p.next.ServeHTTP(rec, r)
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.byModel[req.Model]
	if t == nil {
		t = &workerTally{}
		p.byModel[req.Model] = t
	}
	t.requests++
	t.sent += int64(len(body))
	t.received += int64(rec.buf.Len())
	for _, m := range usageRE.FindAllStringSubmatch(rec.buf.String(), -1) {
		var in, out int64
		fmt.Sscan(m[1], &in)
		fmt.Sscan(m[2], &out)
		t.in, t.out = t.in+in, t.out+out
	}
}

// teeWriter keeps a copy of what a handler writes (SSE included).
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(b []byte) (int, error) { w.buf.Write(b); return w.ResponseWriter.Write(b) }
func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// countingOTLP is an OTLP/HTTP receiver of traces and logs that also counts
// requests and body bytes per endpoint, the spans carrying prompt or answer
// text, and the log records.
type countingOTLP struct {
	sink               otlpSink
	mu                 sync.Mutex
	requests, bytes    int64 // /v1/traces
	spans, withContent int64
	logRequests        int64 // /v1/logs
	logBytes, records  int64
}

func (o *countingOTLP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/logs" {
		var req collectorlogs.ExportLogsServiceRequest
		if proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.logRequests++
		o.logBytes += int64(len(body))
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				o.records += int64(len(sl.LogRecords))
			}
		}
		o.mu.Unlock()
		out, _ := proto.Marshal(&collectorlogs.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
		return
	}
	o.mu.Lock()
	o.requests++
	o.bytes += int64(len(body))
	o.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	o.sink.ServeHTTP(w, r)
}

func (o *countingOTLP) count() {
	o.sink.mu.Lock()
	defer o.sink.mu.Unlock()
	o.spans, o.withContent = int64(len(o.sink.spans)), 0
	for _, s := range o.sink.spans {
		if spanAttr(s, "gen_ai.input.messages") != "" || spanAttr(s, "gen_ai.output.messages") != "" {
			o.withContent++
		}
	}
}

// topicTally reads every message of topic back from the brokers.
func topicTally(t *testing.T, broker, topic string, partitions int) (messages, bytes int64) {
	t.Helper()
	for p := range partitions {
		conn, err := kafka.DialLeader(context.Background(), "tcp", broker, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for range last {
			m, err := conn.ReadMessage(16 << 20)
			if err != nil {
				t.Fatal(err)
			}
			bytes += int64(len(m.Key) + len(m.Value))
		}
		messages += last
		conn.Close()
	}
	return messages, bytes
}

// A run through the real serve — tapped exchanges over Kafka (kfake),
// shadowed by the conductor on the simulated pool, a judged suite run
// through the server, spans to an OTLP receiver with content, a verdict
// notice to a webhook — then the record of data flows lists exactly those
// recipients (live judging's evaluation events included, when judge.live
// judges), with the counts each test receiver counted: the command
// (through the server and locally), and the page of a restarted server
// configured without OTLP, Kafka and the webhook (which then shows them as
// "sent, no longer configured").
func TestDataFlowsRecordWhatWasSent(t *testing.T) {
	storetest.RequireEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	simCfg := simpool.NewDefaultConfig()
	simCfg.LatencyScale, simCfg.MalformedPlanProb = 0, 0
	sim, err := simpool.New(simCfg)
	if err != nil {
		t.Fatal(err)
	}
	pool := &countingPool{next: sim, byModel: map[string]*workerTally{}}
	poolSrv := httptest.NewServer(pool)
	defer poolSrv.Close()
	otlp := &countingOTLP{}
	otlpSrv := httptest.NewServer(otlp)
	defer otlpSrv.Close()
	hook := newHookCounter()
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	const topic, partitions = "conductor-shadow.exchanges", 2
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	broker := kc.ListenAddrs()[0]

	addr := freeAddr(t)
	dir := t.TempDir()
	setPath := filepath.Join(dir, "flows-set.jsonl")
	writeFile(t, setPath, `{"id":"n1","category":"math","input":"What is 6*7?","reference":"42","grader":"numeric"}
{"id":"n2","category":"math","input":"What is 12+30?","reference":"42","grader":"numeric"}
{"id":"p1","category":"chat","input":"Write a haiku about rain.","grader":"pairwise"}
`)
	base := "suite:\n  set: " + setPath + "\n  report_dir: " + filepath.Join(dir, "reports") + "\n  concurrency: 2\n  judge:\n    worker: gpt-4-1106-preview\n" +
		"judge:\n  live:\n    share: 1\n" + "writer:\n  flush_interval: 50ms\n"
	full := filepath.Join(dir, "full.yaml")
	writeFile(t, full, base+"telemetry:\n  capture_content: true\n  otlp_endpoint: "+otlpSrv.URL+"\n"+
		"notify:\n  base_url: https://shadow.example.com\n  live_interval: 0s\n  webhook:\n    url_env: FLOWS_TEST_HOOK\n"+
		"ingest:\n  kafka:\n    brokers: ["+broker+"]\n")
	bare := filepath.Join(dir, "bare.yaml")
	writeFile(t, bare, base)
	t.Setenv("CONDUCTOR_SHADOW_ADDR", addr)
	t.Setenv("CONDUCTOR_SHADOW_DATA", filepath.Join(dir, "data"))
	t.Setenv("CONDUCTOR_SHADOW_POOL_URL", poolSrv.URL+"/v1")
	t.Setenv("CONDUCTOR_SHADOW_PII_SECRET", "flows-test-secret")
	t.Setenv("FLOWS_TEST_HOOK", hookSrv.URL+"/services/T0/B0/s3cr3t")

	serveDone := make(chan error, 1)
	go func() { serveDone <- run(ctx, []string{"--config", full, "serve"}, io.Discard, io.Discard) }()
	waitHTTP(t, "http://"+addr+"/healthz", serveDone)
	for i, text := range []string{"What is 2+2?", "Please write to ada.lovelace@example.com: what is 3+3?", "What is 5+5?"} {
		body := fmt.Sprintf(`{"request_id":"flow-%d","app":"support","request":{"model":"gpt-5","messages":[{"role":"user","content":%q}]},"response":{"model":"gpt-5","content":"ok","latency_ms":100,"usage":{"prompt_tokens":10,"completion_tokens":2}}}`, i, text)
		resp, err := http.Post("http://"+addr+"/v1/tap", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("tap answered %d", resp.StatusCode)
		}
	}
	waitForCond(t, 60*time.Second, "3 candidate runs stored", func() bool {
		out, err := cliErr(ctx, full, "query", "SELECT count() FROM runs FINAL WHERE mode = 'candidate' AND suite_run_id = ''")
		return err == nil && lastLine(out) == "3"
	})
	out := cli(t, ctx, full, "suite", "run")
	if !strings.Contains(out, "verdict:") {
		t.Fatalf("suite run said %q", out)
	}
	waitForCond(t, 30*time.Second, "the verdict notice", func() bool { return hook.count() >= 1 })
	var viaServer dataflow.Record
	if err := json.Unmarshal([]byte(cli(t, ctx, full, "data-flows", "--json")), &viaServer); err != nil {
		t.Fatal(err)
	}
	if len(viaServer.Recipients) == 0 {
		t.Fatal("the server's record lists no recipient")
	}
	cancel()
	if err := <-serveDone; err != nil {
		t.Fatalf("serve: %v", err)
	}

	// Everything is flushed: what the receivers counted.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	var rec dataflow.Record
	if err := json.Unmarshal([]byte(cli(t, ctx2, full, "data-flows", "--local", "--json", "--since", "1h")), &rec); err != nil {
		t.Fatal(err)
	}
	otlp.count()
	messages, kbytes := topicTally(t, broker, topic, partitions)
	poolHost := strings.TrimPrefix(poolSrv.URL, "http://")
	sent := map[string]dataflow.Recipient{}
	for _, r := range rec.Recipients {
		if r.Items == 0 && r.Requests == 0 {
			if r.Status != dataflow.StatusNothingSent {
				t.Errorf("%s got nothing but is %q", r.Label(), r.Status)
			}
			continue
		}
		if r.Status != dataflow.StatusSent {
			t.Errorf("%s at %s: status %q, want sent", r.Label(), r.Host, r.Status)
		}
		sent[r.Kind+"/"+r.Name+"@"+r.Host] = r
	}
	pool.mu.Lock()
	want := map[string]func(dataflow.Recipient) string{}
	for model, tally := range pool.byModel {
		kind := dataflow.KindWorker
		if model == "gpt-4-1106-preview" {
			kind = dataflow.KindJudge
		}
		want[kind+"/"+model+"@"+poolHost] = func(r dataflow.Recipient) string {
			if r.Items != tally.requests || r.Requests != tally.requests || r.SentBytes != tally.sent || r.ReceivedBytes != tally.received ||
				r.InputTokens != tally.in || r.OutputTokens != tally.out || r.Provider != dataflow.ProviderSimulated {
				return fmt.Sprintf("%+v; the pool received %+v", r, *tally)
			}
			return ""
		}
	}
	pool.mu.Unlock()
	want[dataflow.KindOTLP+"/traces@"+strings.TrimPrefix(otlpSrv.URL, "http://")] = func(r dataflow.Recipient) string {
		if r.Items != otlp.spans || r.ContentItems != otlp.withContent || r.Requests != otlp.requests || r.SentBytes != otlp.bytes ||
			r.FailedItems != 0 || otlp.withContent == 0 || !strings.Contains(r.Content, "prompts and answers") {
			return fmt.Sprintf("%+v; the receiver got %d spans (%d with content) in %d requests of %d bytes", r, otlp.spans, otlp.withContent, otlp.requests, otlp.bytes)
		}
		return ""
	}
	// Live judging's evaluation events (judge.live.share 1: every live pair).
	want[dataflow.KindOTLPLogs+"/logs@"+strings.TrimPrefix(otlpSrv.URL, "http://")] = func(r dataflow.Recipient) string {
		if r.Items != otlp.records || r.ContentItems != otlp.records || r.Requests != otlp.logRequests || r.SentBytes != otlp.logBytes ||
			r.FailedItems != 0 || otlp.records == 0 {
			return fmt.Sprintf("%+v; the receiver got %d log records in %d requests of %d bytes", r, otlp.records, otlp.logRequests, otlp.logBytes)
		}
		return ""
	}
	want[dataflow.KindKafka+"/"+topic+"@"+broker] = func(r dataflow.Recipient) string {
		if r.Items != messages || r.ContentItems != messages || r.SentBytes != kbytes || messages != 3 || r.PIIText() != "email 1" {
			return fmt.Sprintf("%+v; the topic holds %d messages of %d bytes", r, messages, kbytes)
		}
		return ""
	}
	hook.mu.Lock()
	want[dataflow.KindWebhook+"/webhook@"+strings.TrimPrefix(hookSrv.URL, "http://")] = func(r dataflow.Recipient) string {
		if r.Items != hook.requests || r.Requests != hook.requests || r.SentBytes != hook.bytes || !strings.HasPrefix(r.Content, "metadata only") {
			return fmt.Sprintf("%+v; the webhook got %d requests of %d bytes", r, hook.requests, hook.bytes)
		}
		return ""
	}
	hook.mu.Unlock()
	for key, check := range want {
		r, ok := sent[key]
		if !ok {
			t.Errorf("the record lacks %s (it lists %v)", key, keys(sent))
			continue
		}
		if msg := check(r); msg != "" {
			t.Errorf("%s: %s", key, msg)
		}
	}
	for _, key := range keys(sent) {
		r := sent[key]
		t.Logf("%s: %s, %d requests, %d/%d tokens, %d/%d bytes, PII %s", key, r.Received(), r.Requests, r.InputTokens, r.OutputTokens, r.SentBytes, r.ReceivedBytes, r.PIIText())
	}
	for key := range sent {
		if want[key] == nil {
			t.Errorf("the record lists %s, which no test receiver saw", key)
		}
	}
	conductor := sent[dataflow.KindWorker+"/conductor@"+poolHost]
	if judge := sent[dataflow.KindJudge+"/gpt-4-1106-preview@"+poolHost]; judge.SuiteItems == judge.Items {
		t.Errorf("judge: %d of %d calls on suite cases; want live judging's calls too", judge.SuiteItems, judge.Items)
	}
	if !strings.Contains(conductor.PIIText(), "email") || conductor.SuiteItems == 0 || conductor.SuiteItems == conductor.Items {
		t.Errorf("conductor: PII %q, %d of %d calls on suite cases; want email pseudonymized and both live and suite calls", conductor.PIIText(), conductor.SuiteItems, conductor.Items)
	}
	for _, r := range viaServer.Recipients { // the record the server answered while running: a subset of the final one
		if f, ok := sent[r.Kind+"/"+r.Name+"@"+r.Host]; r.Items > 0 && (!ok || r.Items > f.Items) {
			t.Errorf("through the server: %s %d items, finally %d", r.Label(), r.Items, f.Items)
		}
	}

	// The page of a server configured without OTLP, Kafka and the webhook.
	serveDone = make(chan error, 1)
	go func() { serveDone <- run(ctx2, []string{"--config", bare, "serve"}, io.Discard, io.Discard) }()
	waitHTTP(t, "http://"+addr+"/healthz", serveDone)
	page := get(t, "http://"+addr+"/data-flows?since=1h")
	rows := regexp.MustCompile(`<tr data-testid="flow:([^"]+)" data-kind="[^"]+" data-status="([^"]+)">.*?data-items="(\d+)"`).FindAllStringSubmatch(page, -1)
	got := map[string]string{}
	for _, m := range rows {
		got[m[1]] = m[2] + " " + m[3]
	}
	for key, r := range sent {
		kind, rest, _ := strings.Cut(key, "/")
		status := dataflow.StatusSent
		if kind == dataflow.KindOTLP || kind == dataflow.KindOTLPLogs || kind == dataflow.KindKafka || kind == dataflow.KindWebhook {
			status = dataflow.StatusNotConfigured
		}
		if w := fmt.Sprintf("%s %d", status, r.Items); got[kind+":"+rest] != w {
			t.Errorf("page row %s:%s = %q, want %q", kind, rest, got[kind+":"+rest], w)
		}
	}
	for id, v := range got { // every other row is a recipient configured now that got nothing
		if kind, rest, _ := strings.Cut(id, ":"); sent[kind+"/"+rest].Items == 0 && v != dataflow.StatusNothingSent+" 0" {
			t.Errorf("page row %s = %q, want %q", id, v, dataflow.StatusNothingSent+" 0")
		}
	}
	cancel2()
	if err := <-serveDone; err != nil {
		t.Fatalf("second serve: %v", err)
	}
}

// hookCounter is a webhook receiver counting requests and body bytes.
type hookCounter struct {
	mu              sync.Mutex
	requests, bytes int64
}

func newHookCounter() *hookCounter { return &hookCounter{} }

func (h *hookCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(bufio.NewReader(r.Body))
	h.mu.Lock()
	h.requests++
	h.bytes += int64(len(body))
	h.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (h *hookCounter) count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
