package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
)

// guardRouter serves the guard over our own routes, /healthz and a NoRoute
// pass-through, as serve mounts them.
func guardRouter(log *slog.Logger, allowed ...string) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(logServerErrors(log), browserGuard(guard.NewHosts("127.0.0.1:8080", allowed), log))
	ok := func(c *gin.Context) { c.String(http.StatusOK, "ok") }
	r.GET("/healthz", ok)
	r.GET("/traces", ok)
	r.POST("/api/query", ok)
	r.POST("/api/suite-runs", ok)
	r.POST("/v1/tap", ok)
	r.GET("/boom", func(c *gin.Context) {
		_ = c.Error(errors.New("store: list traces: engine gone"))
		c.String(http.StatusInternalServerError, "internal error")
	})
	r.NoRoute(ok) // the proxy's pass-through to the incumbent
	return r
}

func TestBrowserGuard(t *testing.T) {
	const js = "application/json"
	tests := []struct {
		name, method, path, host, origin, fetchSite, ctype, body string
		want                                                     int
	}{
		{name: "loopback ip", method: "GET", path: "/traces", host: "127.0.0.1:8080", want: 200},
		{name: "localhost", method: "GET", path: "/traces", host: "localhost:8080", want: 200},
		{name: "ipv6 loopback", method: "GET", path: "/traces", host: "[::1]:8080", want: 200},
		{name: "lan ip", method: "GET", path: "/traces", host: "10.1.2.3:8080", want: 200},
		{name: "configured name", method: "GET", path: "/traces", host: "shadow.corp.example", want: 200},
		{name: "configured domain", method: "GET", path: "/traces", host: "a.internal.example:443", want: 200},
		{name: "rebinding page", method: "GET", path: "/traces", host: "attacker.example:8080", want: 421},
		{name: "rebinding api", method: "POST", path: "/api/query", host: "attacker.example", ctype: js, body: "{}", want: 421},
		{name: "rebinding lookalike", method: "GET", path: "/traces", host: "localhost.attacker.example", want: 421},
		{name: "rebinding domain edge", method: "GET", path: "/traces", host: "evilinternal.example", want: 421},
		{name: "healthz any host", method: "GET", path: "/healthz", host: "svc.cluster.local", want: 200},
		{name: "pass-through foreign host", method: "POST", path: "/v1/embeddings", host: "conductor-shadow:8080", ctype: "multipart/form-data; boundary=x", body: "x", want: 421},
		{name: "pass-through allowed host", method: "POST", path: "/v1/embeddings", host: "shadow.corp.example", ctype: "multipart/form-data; boundary=x", body: "x", want: 200},
		{name: "cli json", method: "POST", path: "/api/query", host: "127.0.0.1:8080", ctype: js, body: "{}", want: 200},
		{name: "json with charset", method: "POST", path: "/v1/tap", host: "127.0.0.1:8080", ctype: "application/json; charset=utf-8", body: "{}", want: 200},
		{name: "suite run empty body", method: "POST", path: "/api/suite-runs", host: "127.0.0.1:8080", want: 200},
		{name: "text/plain", method: "POST", path: "/api/query", host: "127.0.0.1:8080", ctype: "text/plain", body: "{}", want: 415},
		{name: "form", method: "POST", path: "/v1/tap", host: "127.0.0.1:8080", ctype: "application/x-www-form-urlencoded", body: "a=b", want: 415},
		{name: "no content type", method: "POST", path: "/api/query", host: "127.0.0.1:8080", body: "{}", want: 415},
		{name: "csrf text/plain", method: "POST", path: "/api/query", host: "127.0.0.1:8080", origin: "http://evil.example", ctype: "text/plain", body: "{}", want: 403},
		{name: "csrf tap", method: "POST", path: "/v1/tap", host: "127.0.0.1:8080", origin: "http://evil.example", ctype: "text/plain", body: "{}", want: 403},
		{name: "csrf json", method: "POST", path: "/api/suite-runs", host: "127.0.0.1:8080", origin: "http://evil.example", ctype: js, body: "{}", want: 403},
		{name: "csrf other local port", method: "POST", path: "/api/query", host: "127.0.0.1:8080", origin: "http://127.0.0.1:3000", ctype: js, body: "{}", want: 403},
		{name: "csrf localhost other port", method: "POST", path: "/api/query", host: "localhost:8080", origin: "http://localhost:3000", ctype: js, body: "{}", want: 403},
		{name: "csrf null origin", method: "POST", path: "/api/query", host: "127.0.0.1:8080", origin: "null", ctype: js, body: "{}", want: 403},
		{name: "csrf fetch metadata", method: "POST", path: "/api/query", host: "127.0.0.1:8080", fetchSite: "cross-site", ctype: js, body: "{}", want: 403},
		{name: "csrf sibling site", method: "POST", path: "/api/query", host: "127.0.0.1:8080", fetchSite: "same-site", ctype: js, body: "{}", want: 403},
		{name: "csrf through pass-through", method: "POST", path: "/v1/embeddings", host: "127.0.0.1:8080", origin: "http://evil.example", ctype: js, body: "{}", want: 403},
		{name: "same origin", method: "POST", path: "/api/query", host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080", fetchSite: "same-origin", ctype: js, body: "{}", want: 200},
		{name: "configured origin", method: "POST", path: "/api/query", host: "127.0.0.1:8080", origin: "https://shadow.corp.example", ctype: js, body: "{}", want: 200},
		{name: "cross-site get", method: "GET", path: "/traces", host: "127.0.0.1:8080", origin: "http://evil.example", fetchSite: "cross-site", want: 200},
	}
	var logs bytes.Buffer
	r := guardRouter(slog.New(slog.NewTextHandler(&logs, nil)), "shadow.corp.example", ".internal.example")
	for _, tc := range tests {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		req.Host = tc.host
		for k, v := range map[string]string{"Origin": tc.origin, "Sec-Fetch-Site": tc.fetchSite, "Content-Type": tc.ctype} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("%s: %s %s Host %s: status %d (%s); want %d", tc.name, tc.method, tc.path, tc.host, w.Code, w.Body, tc.want)
		}
	}
	if !strings.Contains(logs.String(), "attacker.example") || !strings.Contains(logs.String(), "evil.example") {
		t.Errorf("refusals are not logged:\n%s", logs.String())
	}
}

func TestServerErrorsAreLogged(t *testing.T) {
	var logs bytes.Buffer
	r := guardRouter(slog.New(slog.NewTextHandler(&logs, nil)))
	req := httptest.NewRequest("GET", "/boom", nil)
	req.Host = "127.0.0.1:8080"
	r.ServeHTTP(httptest.NewRecorder(), req)
	for _, want := range []string{"server error", "status=500", "path=/boom", "engine gone"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// recordingHandler is a slog.Handler keeping every record, for tests.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// lines returns the records with message msg, each as its attributes.
func (h *recordingHandler) lines(msg string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		attrs := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		out = append(out, attrs)
	}
	return out
}

// TestTapDropsAreLoggedOnceWithTheirReason: a storm of tap 503s (the queue is
// closed) gives the tap's own rate-limited loss line naming the reason and no
// "server error" line per answer; other 5xx answers are logged with their
// cause, at most one line per 5 s that counts the answers it stands for.
func TestTapDropsAreLoggedOnceWithTheirReason(t *testing.T) {
	logs := &recordingHandler{}
	log := slog.New(logs)
	q := ingest.NewMemoryQueue(1)
	_ = q.Close() // every copy is refused: shutting_down
	tap, err := ingest.NewTap(ingest.NewDefaultConfig(), q, ingest.NewStats(), ingest.WithLogger(log), ingest.WithPIISecret([]byte("k")))
	if err != nil {
		t.Fatal(err)
	}
	r := guardRouter(log)
	tap.Register(r.Group("/tapped"))
	const n = 50
	for i := range n {
		body := fmt.Sprintf(`{"request_id":"drop-%d","request":{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]},"response":{"model":"gpt-5","content":"hello","latency_ms":100,"usage":{"prompt_tokens":10,"completion_tokens":2}}}`, i)
		req := httptest.NewRequest("POST", "/tapped/v1/tap", strings.NewReader(body))
		req.Host, req.Header["Content-Type"] = "127.0.0.1:8080", []string{"application/json"}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("tap answered %d (%s); want 503", w.Code, w.Body)
		}
	}
	if got := logs.lines("server error"); len(got) != 0 {
		t.Errorf("tap 503s logged again as server errors: %v", got)
	}
	dropped := logs.lines("tap: copy dropped")
	if len(dropped) != 1 || dropped[0]["reason"] != ingest.ReasonShuttingDown || dropped[0]["records"] != "1" {
		t.Errorf("tap loss lines = %v; want one naming %s", dropped, ingest.ReasonShuttingDown)
	}

	for range n {
		req := httptest.NewRequest("GET", "/boom", nil)
		req.Host = "127.0.0.1:8080"
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
	boom := logs.lines("server error")
	if len(boom) != 1 || !strings.Contains(boom[0]["cause"], "engine gone") || boom[0]["answers"] != "1" || boom[0]["level"] != "ERROR" {
		t.Errorf("server error lines for %d failures = %v; want one ERROR naming the cause", n, boom)
	}
}
