package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// otlpSink is an OTLP/HTTP trace receiver: it decodes every protobuf export.
type otlpSink struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
	s.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			v := kv.Value
			switch {
			case v.GetArrayValue() != nil:
				var parts []string
				for _, e := range v.GetArrayValue().Values {
					parts = append(parts, e.GetStringValue())
				}
				return strings.Join(parts, ",")
			case v.GetStringValue() != "":
				return v.GetStringValue()
			default:
				return fmt.Sprint(v.GetIntValue())
			}
		}
	}
	return ""
}

// On a running serve with the simulated pool: spans reach an OTLP/HTTP sink with
// the GenAI attributes and join the production request's trace, /metrics has
// the tap, writer, run and GenAI families, the tables carry the configured TTL,
// and forget removes one subject's rows and keeps the others'.
func TestOperableServe(t *testing.T) {
	storetest.RequireEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	simCfg := simpool.NewDefaultConfig()
	simCfg.LatencyScale = 0
	simCfg.MalformedPlanProb = 0
	sim, err := simpool.New(simCfg)
	if err != nil {
		t.Fatal(err)
	}
	pool := httptest.NewServer(sim)
	defer pool.Close()
	sink := &otlpSink{}
	collector := httptest.NewServer(sink)
	defer collector.Close()

	addr := freeAddr(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	writeFile(t, cfgPath, "writer:\n  flush_interval: 50ms\nstore:\n  retention:\n    requests: 2160h\n    bodies: 720h\n")
	t.Setenv("CONDUCTOR_SHADOW_ADDR", addr)
	t.Setenv("CONDUCTOR_SHADOW_DATA", filepath.Join(dir, "data"))
	t.Setenv("CONDUCTOR_SHADOW_POOL_URL", pool.URL+"/v1")
	t.Setenv("CONDUCTOR_SHADOW_OTLP_ENDPOINT", strings.TrimPrefix(collector.URL, "http://"))
	t.Setenv("CONDUCTOR_SHADOW_PII_SECRET", "operable-test-secret")

	serveDone := make(chan error, 1)
	go func() { serveDone <- run(ctx, []string{"--config", cfgPath, "serve"}, io.Discard, io.Discard) }()
	waitHTTP(t, "http://"+addr+"/healthz", serveDone)

	const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	for i, subject := range []string{"alice", "alice", "bob"} {
		body := fmt.Sprintf(`{"request_id":"op-%d","app":"support","subject":%q,"request":{"model":"gpt-5","messages":[{"role":"user","content":"What is %d+2?"}]},"response":{"model":"gpt-5","content":"%d","latency_ms":100,"usage":{"prompt_tokens":10,"completion_tokens":2}}}`, i, subject, i, i+2)
		// A client sends again on 503 (the store-first commit ran out of time on
		// a busy machine), as replay does; when that commit landed meanwhile the
		// copy sent again is answered 200 duplicate: it is stored.
		status, resent := http.StatusServiceUnavailable, false
		for try := 0; status == http.StatusServiceUnavailable && try < 10; try++ {
			resent = try > 0
			if try > 0 {
				time.Sleep(time.Second)
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/tap", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("traceparent", "00-"+parentTrace+"-00f067aa0ba902b7-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			status = resp.StatusCode
		}
		if status != http.StatusAccepted && !(resent && status == http.StatusOK) {
			t.Fatalf("tap answered %d", status)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for lastLine(cli(t, ctx, cfgPath, "query", "SELECT count() FROM runs FINAL WHERE mode = 'candidate'")) != "3" {
		if time.Now().After(deadline) {
			t.Fatal("candidate runs not stored in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the writer's last flush

	metrics := get(t, "http://"+addr+"/metrics")
	for _, family := range []string{
		"conductor_shadow_tap_copies_total{outcome=\"accepted\"} 3", "conductor_shadow_tap_queue_depth", "conductor_shadow_runs_cancelled_total 0", "conductor_shadow_tap_copies_total{outcome=\"left_pending\"}",
		"conductor_shadow_writer_rows_total{outcome=\"written\"}", "conductor_shadow_writer_insert_failures_total",
		"conductor_shadow_runs_total{", "conductor_shadow_cost_usd_total{", "gen_ai_client_token_usage_bucket{",
		"gen_ai_client_operation_duration_seconds_bucket{", `gen_ai_token_type="input"`, `conductor_shadow_candidate="conductor"`,
	} {
		if !strings.Contains(metrics, family) {
			t.Errorf("/metrics lacks %q", family)
		}
	}

	if create := cli(t, ctx, cfgPath, "query", "SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = 'requests'"); !strings.Contains(create, "TTL toDateTime(received_at) + toIntervalSecond(7776000)") ||
		!strings.Contains(create, "`input` String TTL toDateTime(received_at) + toIntervalSecond(2592000)") {
		t.Errorf("requests table lacks the configured TTLs: %s", create)
	}

	for _, body := range []string{`{"subject":""}`, `{"subject":`, ``} {
		resp, err := http.Post("http://"+addr+"/api/forget", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST /api/forget %q answered %d; want 400", body, resp.StatusCode)
		}
	}
	if _, err := cliErr(ctx, cfgPath, "forget", "--subject", " "); err == nil {
		t.Error("forget with a blank subject succeeded")
	}
	out := cli(t, ctx, cfgPath, "forget", "--subject", "alice")
	if !strings.Contains(out, "removed: 2 requests, 4 runs") {
		t.Errorf("forget said %q", out)
	}
	if got := lastLine(cli(t, ctx, cfgPath, "query", "SELECT (SELECT count() FROM requests FINAL) || '/' || (SELECT count() FROM runs FINAL) || '/' || (SELECT count() FROM audit_log WHERE action = 'forget' AND requests = 2)")); got != "1/2/1" {
		t.Errorf("after forget requests/runs/audit = %s, want 1/2/1 (bob's rows kept)", got)
	}
	if got := cli(t, ctx, cfgPath, "query", "SELECT * FROM audit_log"); strings.Contains(got, "alice") {
		t.Errorf("audit log holds the subject's value: %s", got)
	}

	cancel()
	if err := <-serveDone; err != nil {
		t.Fatalf("serve: %v", err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var runs, chats int
	for _, s := range sink.spans {
		switch {
		case strings.HasPrefix(s.Name, "invoke_workflow "):
			runs++
			if fmt.Sprintf("%x", s.TraceId) != parentTrace || spanAttr(s, "gen_ai.operation.name") != "invoke_workflow" || spanAttr(s, "conductor_shadow.candidate") == "" {
				t.Errorf("run span %s: trace %x attrs %v", s.Name, s.TraceId, s.Attributes)
			}
		case strings.HasPrefix(s.Name, "chat "):
			chats++
			for _, k := range []string{"gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "conductor_shadow.cost_usd"} {
				if spanAttr(s, k) == "" {
					t.Errorf("chat span %s lacks %s", s.Name, k)
				}
			}
			if spanAttr(s, "gen_ai.input.messages") != "" {
				t.Errorf("chat span carries the prompt without capture_content")
			}
		}
	}
	if runs != 3 || chats < 3 {
		t.Errorf("OTLP sink got %d invoke_workflow and %d chat spans of %d; want 3 and at least 3", runs, chats, len(sink.spans))
	}
}

// Both endpoint forms reach an OTLP/HTTP receiver: host:port and a URL (with
// or without its own path).
func TestOTLPEndpointForms(t *testing.T) {
	sink := &otlpSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	for _, endpoint := range []string{strings.TrimPrefix(srv.URL, "http://"), srv.URL, srv.URL + "/v1/traces"} {
		tp, shutdown, err := newTracerProvider(context.Background(), platform.TelemetryConfig{OTLPEndpoint: endpoint, ServiceName: "t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, span := tp.Tracer("t").Start(context.Background(), "span "+endpoint)
		span.End()
		if err := shutdown(context.Background()); err != nil {
			t.Fatalf("%s: %v", endpoint, err)
		}
		sink.mu.Lock()
		got := len(sink.spans) > 0 && sink.spans[len(sink.spans)-1].Name == "span "+endpoint
		sink.mu.Unlock()
		if !got {
			t.Errorf("endpoint %q: span not received", endpoint)
		}
	}
}
