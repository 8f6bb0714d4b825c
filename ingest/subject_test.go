package ingest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
)

const testTraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// The tap keeps only the keyed hash of a data subject, never the value, and
// carries the production request's W3C traceparent to the shadow side.
func TestTapHashesSubjectAndKeepsTraceParent(t *testing.T) {
	secret := []byte("test-secret")
	q := NewMemoryQueue(8)
	tap, err := NewTap(NewDefaultConfig(), q, NewStats(), WithPIISecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	tap.Register(r)
	tests := []struct {
		name, body, header, wantHash, wantParent string
	}{
		{"subject and traceparent header", `{"request_id":"a","subject":"user-42","request":{"messages":[{"role":"user","content":"hi"}]},"response":{"content":"hello"}}`,
			testTraceParent, SubjectHash(secret, "user-42"), testTraceParent},
		{"client-sent hash is replaced", `{"request_id":"b","subject_hash":"forged","request":{"messages":[{"role":"user","content":"hi"}]},"response":{"content":"hello"}}`,
			"", "", ""},
		{"traceparent in the body wins", `{"request_id":"c","subject":"user-7","traceparent":"00-11111111111111111111111111111111-2222222222222222-01","request":{"messages":[{"role":"user","content":"hi"}]},"response":{"content":"hello"}}`,
			testTraceParent, SubjectHash(secret, "user-7"), "00-11111111111111111111111111111111-2222222222222222-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/v1/tap", strings.NewReader(tt.body))
			if tt.header != "" {
				req.Header.Set("traceparent", tt.header)
			}
			req = req.WithContext(ContextWithTraceParent(req.Context(), req.Header.Get("traceparent")))
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			d, err := q.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ex := d.Exchange
			if ex.Subject != "" || ex.SubjectHash != tt.wantHash || ex.TraceParent != tt.wantParent {
				t.Errorf("queued subject %q hash %q traceparent %q; want hash %q traceparent %q", ex.Subject, ex.SubjectHash, ex.TraceParent, tt.wantHash, tt.wantParent)
			}
			rec2, err := RequestRecord(ex)
			if err != nil || rec2.SubjectHash != tt.wantHash || strings.Contains(rec2.Input+strings.Join(mapValues(rec2.Metadata), ""), "user-") {
				t.Errorf("request record %+v, %v", rec2, err)
			}
		})
	}
	if SubjectHash(secret, "user-42") == SubjectHash([]byte("other"), "user-42") || len(SubjectHash(secret, "x")) != 64 {
		t.Error("subject hash does not depend on the secret or is not 64 hex characters")
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// The proxy reads the subject from its header, never forwards that header to
// the incumbent, and mirrors the call with the subject's hash and traceparent.
func TestProxySubjectHeader(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	fake := &incumbenttest.Handler{}
	incumbent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(SubjectHeader))
		mu.Unlock()
		fake.ServeHTTP(w, r)
	}))
	defer incumbent.Close()
	secret := []byte("k")
	q := NewMemoryQueue(4)
	tap, err := NewTap(NewDefaultConfig(), q, NewStats(), WithPIISecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultProxyConfig()
	cfg.IncumbentURL = incumbent.URL
	p, err := NewProxy(cfg, tap, NewStats(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	defer front.Close()
	req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"2+2?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SubjectHeader, "alice@example.com")
	req.Header.Set("traceparent", testTraceParent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	d, err := q.Next(ctx)
	if err != nil {
		t.Fatalf("no mirrored exchange: %v", err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	if d.Exchange.SubjectHash != SubjectHash(secret, "alice@example.com") || d.Exchange.Subject != "" || d.Exchange.TraceParent != testTraceParent {
		t.Errorf("mirrored exchange subject %q hash %q traceparent %q", d.Exchange.Subject, d.Exchange.SubjectHash, d.Exchange.TraceParent)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "" {
		t.Errorf("incumbent saw subject header %q", seen)
	}
}
