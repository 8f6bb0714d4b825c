package shadow

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// byteCounter is a worker endpoint that counts the body bytes it reads and
// writes: the first attempt of every call answers 503, the second streams
// an answer.
type byteCounter struct {
	mu             sync.Mutex
	requests       int
	received, sent int64
	failFirst      bool
}

func (b *byteCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.requests++
	b.received += int64(len(body))
	fail := b.failFirst && b.requests%2 == 1
	b.mu.Unlock()
	out := "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"42\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":1}}\n\n" +
		"data: [DONE]\n\n"
	if fail {
		out = `{"error":{"message":"overloaded"}}`
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
	} else {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	n, _ := io.WriteString(w, out)
	b.mu.Lock()
	b.sent += int64(n)
	b.mu.Unlock()
}

// A call reports the host of its worker's base URL (no credentials or path)
// and the body bytes of every attempt, as the endpoint counted them; a call
// refused before any attempt reports no host and no bytes.
func TestPoolCallReportsHostAndBytes(t *testing.T) {
	counter := &byteCounter{failFirst: true}
	srv := httptest.NewServer(counter)
	defer srv.Close()
	cfg := testConfig(strings.Replace(srv.URL, "http://", "http://user:secret@", 1) + "/v1?tenant=a")
	cfg.Resilience.MaxAttempts = 2
	pool, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pool.sleep = func(context.Context, time.Duration) error { return nil }
	call, err := pool.Call(context.Background(), "gpt-5", []openai.ChatCompletionMessage{{Role: "user", Content: "What is 6*7?"}})
	if err != nil {
		t.Fatal(err)
	}
	counter.mu.Lock()
	if want := strings.TrimPrefix(srv.URL, "http://"); call.Host != want {
		t.Errorf("host %q, want %q", call.Host, want)
	}
	if call.Attempts != 2 || counter.requests != 2 {
		t.Errorf("attempts %d, endpoint saw %d requests; want 2 and 2", call.Attempts, counter.requests)
	}
	if call.SentBytes != counter.received || call.ReceivedBytes != counter.sent || call.SentBytes == 0 {
		t.Errorf("call sent %d / received %d bytes; the endpoint received %d / sent %d", call.SentBytes, call.ReceivedBytes, counter.received, counter.sent)
	}
	counter.mu.Unlock()

	ctx, _, stop := WithBudget(context.Background(), Budget{MaxSteps: 1})
	defer stop()
	if _, err := pool.Call(ctx, "gpt-5", nil); err != nil {
		t.Fatal(err)
	}
	refused, err := pool.Call(ctx, "gpt-5", nil)
	if err == nil || refused.Host != "" || refused.SentBytes != 0 {
		t.Errorf("a call refused by the budget: err %v, host %q, sent %d; want an error, no host, 0 bytes", err, refused.Host, refused.SentBytes)
	}
}
