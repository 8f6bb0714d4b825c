package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// recordingTap keeps every exchange offered.
type recordingTap struct {
	mu  sync.Mutex
	got []Exchange
}

func (r *recordingTap) Offer(_ context.Context, ex Exchange) (int, TapResponse) {
	r.mu.Lock()
	r.got = append(r.got, ex)
	r.mu.Unlock()
	return http.StatusAccepted, TapResponse{Status: "queued"}
}

func (r *recordingTap) all() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.got...)
}

type proxyFixture struct {
	incumbent *httptest.Server
	fake      *incumbenttest.Handler
	proxy     *Proxy
	front     *httptest.Server
	client    *http.Client
	stats     *Stats
}

// newProxyFixture serves fake as the incumbent and a proxy in front of it;
// configure adjusts the proxy's config.
func newProxyFixture(t testing.TB, fake http.Handler, tap Offerer, configure ...func(*ProxyConfig)) *proxyFixture {
	t.Helper()
	f := &proxyFixture{stats: NewStats()}
	if h, ok := fake.(*incumbenttest.Handler); ok {
		f.fake = h
	}
	f.incumbent = httptest.NewServer(fake)
	cfg := NewDefaultProxyConfig()
	cfg.IncumbentURL = f.incumbent.URL
	for _, c := range configure {
		c(&cfg)
	}
	p, err := NewProxy(cfg, tap, f.stats, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.proxy = p
	f.front = httptest.NewServer(p)
	f.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		f.client.CloseIdleConnections()
		f.front.Close()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		f.incumbent.Close()
	})
	return f
}

type answerBytes struct {
	status int
	header http.Header
	body   []byte
}

func (f *proxyFixture) do(t *testing.T, base, method, path, body string, header map[string]string) answerBytes {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, base+path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answerBytes{resp.StatusCode, resp.Header, b}
}

// waitFor polls cond for up to 5 s (the copy is offered in the background).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForD(t, 5*time.Second, what, cond)
}

func waitForD(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProxyAnswersUnchangedAndMirrors sends each kind of request directly and
// through the proxy: status, body bytes and headers must match, and each mirrored
// exchange must reach the tap with the reassembled answer, usage and timings.
func TestProxyAnswersUnchangedAndMirrors(t *testing.T) {
	tap := &recordingTap{}
	// Loopback is trusted here: the exchange takes the caller's id and app.
	f := newProxyFixture(t, &incumbenttest.Handler{Chunks: 4}, tap, func(c *ProxyConfig) { c.TrustedNetworks = []string{"127.0.0.0/8", "::1"} })
	tests := []struct {
		name, method, path, body string
		mirrored                 bool
		wantContent              string
		wantUsage                Usage
		wantRoute                string
	}{
		{"chat", "POST", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"what is 2+2?"}]}`, true, "echo: what is 2+2?", Usage{PromptTokens: 12, CompletionTokens: 5}, "/v1/chat/completions"},
		{"chat streamed with usage", "POST", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"name a prime"}]}`, true, "echo: name a prime", Usage{PromptTokens: 12, CompletionTokens: 5}, "/v1/chat/completions"},
		{"responses", "POST", "/v1/responses", `{"model":"gpt-4o","instructions":"be brief","input":"hello there"}`, true, "echo: hello there", Usage{PromptTokens: 12, CompletionTokens: 5}, "/v1/responses"},
		{"responses streamed", "POST", "/v1/responses", `{"model":"gpt-4o","stream":true,"input":[{"role":"user","content":[{"type":"input_text","text":"stream me"}]}]}`, true, "echo: stream me", Usage{PromptTokens: 12, CompletionTokens: 4}, "/v1/responses"},
		{"models passes through", "GET", "/v1/models", ``, false, "", Usage{}, ""},
		{"unknown path passes through", "POST", "/v1/embeddings", `{"input":"x"}`, false, "", Usage{}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{"X-Request-Id": fmt.Sprintf("req-%d", i), "X-Conductor-App": "tutor", "Authorization": "Bearer sk-client"}
			direct := f.do(t, f.incumbent.URL, tt.method, tt.path, tt.body, hdr)
			before := len(tap.all())
			proxied := f.do(t, f.front.URL, tt.method, tt.path, tt.body, hdr)
			if direct.status != proxied.status {
				t.Fatalf("status direct %d, proxied %d", direct.status, proxied.status)
			}
			if !bytes.Equal(direct.body, proxied.body) {
				t.Fatalf("body differs:\ndirect:  %s\nproxied: %s", direct.body, proxied.body)
			}
			for _, h := range []string{"Content-Type", "X-Incumbent", "Cache-Control"} {
				if direct.header.Get(h) != proxied.header.Get(h) {
					t.Errorf("header %s: direct %q, proxied %q", h, direct.header.Get(h), proxied.header.Get(h))
				}
			}
			// Two headers are added, which API clients ignore and browsers obey.
			if proxied.header.Get("Content-Security-Policy") != "sandbox" || proxied.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("proxied answer headers %v; want CSP sandbox and nosniff added", proxied.header)
			}
			if !tt.mirrored {
				time.Sleep(20 * time.Millisecond)
				if n := len(tap.all()); n != before {
					t.Fatalf("a pass-through path was mirrored")
				}
				return
			}
			waitFor(t, "the mirrored exchange", func() bool { return len(tap.all()) == before+1 })
			ex := tap.all()[before]
			if ex.RequestID != hdr["X-Request-Id"] || ex.App != "tutor" || ex.Request.Model != "gpt-4o" {
				t.Errorf("exchange id %q app %q model %q", ex.RequestID, ex.App, ex.Request.Model)
			}
			if ex.Response == nil || ex.Response.Content != tt.wantContent || ex.Response.Usage != tt.wantUsage || ex.Response.UsageEstimated {
				t.Fatalf("response %+v, want content %q usage %+v", ex.Response, tt.wantContent, tt.wantUsage)
			}
			if !strings.Contains(tt.name, "responses") && ex.Response.FinishReason != "stop" {
				t.Errorf("finish reason %q, want the incumbent's \"stop\"", ex.Response.FinishReason)
			}
			if ex.Response.LatencyMs <= 0 || ex.Response.TTFTMs <= 0 || ex.Response.TTFTMs > ex.Response.LatencyMs {
				t.Errorf("latency %v ms, ttft %v ms", ex.Response.LatencyMs, ex.Response.TTFTMs)
			}
			if ex.Metadata["route"] != tt.wantRoute || ex.Metadata["source"] != "proxy" {
				t.Errorf("metadata %v", ex.Metadata)
			}
			if last := ex.Request.Messages[len(ex.Request.Messages)-1]; last.Role != "user" || "echo: "+last.Content != tt.wantContent {
				t.Errorf("last message %+v", last)
			}
		})
	}
	waitFor(t, "4 exchanges offered", func() bool { return f.stats.Snapshot(0).Mirrored[ProxyOutcomeOffered] == 4 })
}

// TestProxyStreamsChunkByChunk holds the incumbent before its second chunk until
// the client has read the first one through the proxy.
func TestProxyStreamsChunkByChunk(t *testing.T) {
	firstSeen := make(chan struct{})
	fake := &incumbenttest.Handler{Chunks: 3, BeforeChunk: func(i int) {
		if i == 1 {
			select {
			case <-firstSeen:
			case <-time.After(5 * time.Second):
			}
		}
	}}
	tap := &recordingTap{}
	f := newProxyFixture(t, fake, tap)
	req, _ := http.NewRequest("POST", f.front.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"abcdef"}]}`))
	start := time.Now()
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(line, `"content":"echo"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Fatalf("first chunk arrived after %s: it was held until the answer ended", waited)
	}
	close(firstSeen)
	rest, err := io.ReadAll(rd)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("rest %q, %v", rest, err)
	}
	waitFor(t, "the mirrored exchange", func() bool { return len(tap.all()) == 1 })
	if got := tap.all()[0].Response; got.Content != "echo: abcdef" || !got.UsageEstimated {
		t.Fatalf("reassembled %+v (no usage was streamed: it must be estimated)", got)
	}
}

func TestProxyForwardsAndMirrorsIncumbentErrors(t *testing.T) {
	tap := &recordingTap{}
	f := newProxyFixture(t, &incumbenttest.Handler{Status: http.StatusTooManyRequests}, tap)
	a := f.do(t, f.front.URL, "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
	if a.status != http.StatusTooManyRequests || !strings.Contains(string(a.body), "scripted failure") {
		t.Fatalf("got %d %s", a.status, a.body)
	}
	waitFor(t, "the outcome counted", func() bool { return f.stats.Snapshot(0).Mirrored[ProxyOutcomeNotOK] == 1 })
	waitFor(t, "the failure offered", func() bool { return len(tap.all()) == 1 })
	if r := tap.all()[0].Response; r.Status != http.StatusTooManyRequests || !strings.Contains(r.Error, "scripted failure") {
		t.Fatalf("offered %+v, want the 429 and its error body", r)
	}
}

func TestProxyConfigValidate(t *testing.T) {
	for _, u := range []string{"ftp://x", "not a url", "http://"} {
		c := NewDefaultProxyConfig()
		c.IncumbentURL = u
		if c.Validate() == nil {
			t.Errorf("%q accepted", u)
		}
	}
	if _, err := NewProxy(NewDefaultProxyConfig(), &recordingTap{}, NewStats(), nil, nil); err == nil {
		t.Error("a proxy without an incumbent URL must be refused")
	}
}

// stalledWriter is a store that stopped: the writer is always full.
type stalledWriter struct{}

func (stalledWriter) Enqueue(store.Batch) error { return store.ErrQueueFull }

// TestProxyKeepsAnsweringWhenStoreIsDown runs the real tap and shadow workers over
// a store that accepts nothing: every client request must still be answered by the
// incumbent, and every mirrored copy must be accounted for as dropped.
func TestProxyKeepsAnsweringWhenStoreIsDown(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig()
	cfg.QueueSize = 4
	cfg.Workers = 2
	q := NewMemoryQueue(cfg.QueueSize)
	stats := NewStats()
	tap, err := NewTap(cfg, q, stats, WithPIISecret(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	proc := NewProcessor(cfg, q, stalledWriter{}, nil, nil, stats, nil)
	if err := proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f := newProxyFixture(t, &incumbenttest.Handler{}, tap)
	f.proxy.stats = stats
	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"q%d"}]}`, i)
			resp, err := f.client.Post(f.front.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"echo: q%d"`, i)) {
				errs <- fmt.Errorf("request %d: %d %s", i, resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(t, "every copy offered", func() bool {
		m := stats.Snapshot(0).Mirrored
		var total int64
		for _, v := range m {
			total += v
		}
		if total == n && m[ProxyOutcomeOffered] != n {
			t.Fatalf("outcomes %v, want all %d offered", m, n)
		}
		return total == n
	})
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := proc.Shutdown(sctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown over a stopped store: %v, want the drain cut short", err)
	}
	snap := stats.Snapshot(q.Len())
	var dropped int64
	for _, d := range snap.Dropped {
		dropped += d
	}
	if snap.Processed != 0 || dropped != n || snap.Dropped["queue_full"] == 0 {
		t.Fatalf("stats %+v: want all %d copies dropped, some for a full queue", snap, n)
	}
	if snap.Accepted+snap.Dropped["queue_full"] != n {
		t.Fatalf("accepted %d + queue_full %d != %d offered", snap.Accepted, snap.Dropped["queue_full"], n)
	}
}

// TestProxyFrontRoutes: mirrored routes go to the proxy ahead of next; every other
// request reaches next.
func TestProxyFrontRoutes(t *testing.T) {
	tap := &recordingTap{}
	f := newProxyFixture(t, &incumbenttest.Handler{}, tap)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Next", "yes") })
	h := f.proxy.Front(next)
	tests := []struct {
		method, path string
		wantNext     bool
	}{
		{"POST", "/v1/chat/completions", false},
		{"POST", "/openai/v1/responses", false},
		{"POST", "/v1/messages", false},
		{"POST", "/anthropic/v1/messages/", false},
		{"POST", "/v1/messages/count_tokens", true},
		{"POST", "/v1/messages/batches", true},
		{"POST", "/v1/threads/thread_abc/messages", true},
		{"GET", "/v1/chat/completions", true},
		{"POST", "/v1/tap", true},
		{"GET", "/", true},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)))
		if got := rec.Header().Get("X-Next") == "yes"; got != tt.wantNext {
			t.Errorf("%s %s: served by next = %v, want %v", tt.method, tt.path, got, tt.wantNext)
		}
	}
}

// FuzzCaptureExchange feeds arbitrary request and answer bodies of each
// mirrored API (chat completions, Responses, Anthropic Messages) to the code
// that turns a proxied exchange into a tap copy: it must never panic, and
// whatever it accepts must pass Validate.
func FuzzCaptureExchange(f *testing.F) {
	routes := []string{"/v1/chat/completions", "/v1/responses", "/v1/messages"}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), []byte(`{"id":"c1","model":"m","choices":[{"message":{"content":"yo"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`), false, uint8(0))
	f.Add([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`), []byte("data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n"), true, uint8(0))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`), []byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"b\"}\n\n"), true, uint8(1))
	f.Add([]byte(`{"input":"x"}`), []byte(`{"output":[{"type":"message","content":[{"type":"output_text","text":"t"}]}]}`), false, uint8(1))
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}},{"type":"text","text":"x"}]}]}`),
		[]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"), true, uint8(2))
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`), []byte(`{"id":"msg","model":"m","content":[{"type":"text","text":"t"}],"usage":{"input_tokens":1,"output_tokens":1}}`), false, uint8(2))
	f.Fuzz(func(t *testing.T, req, resp []byte, streamed bool, route uint8) {
		c := capture{path: routes[int(route)%len(routes)], app: "a", reqBody: req, respBody: resp, respHeader: http.Header{}, start: time.Now(), latency: time.Millisecond}
		if streamed {
			c.respHeader.Set("Content-Type", "text/event-stream")
		}
		ex, err := c.exchange(nil)
		if err != nil {
			return
		}
		if err := ex.Validate(1<<20, true); err != nil {
			t.Fatalf("accepted an invalid exchange: %v", err)
		}
	})
}

// The proxy's lifecycle: forwarding works before Start, but the copies of those
// requests are counted as not_started rather than mirrored; Start twice or after
// Shutdown is an error; Shutdown is safe without Start and twice.
func TestProxyLifecycle(t *testing.T) {
	incumbent := httptest.NewServer(&incumbenttest.Handler{})
	defer incumbent.Close()
	cfg := NewDefaultProxyConfig()
	cfg.IncumbentURL = incumbent.URL
	tap, stats := &recordingTap{}, NewStats()
	p, err := NewProxy(cfg, tap, stats, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The client has the whole answer before the handler hands the copy off, so
	// each post waits for the handler itself to return.
	handled := make(chan struct{}, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { handled <- struct{}{} }()
		p.ServeHTTP(w, r)
	}))
	defer front.Close()
	post := func() {
		t.Helper()
		resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"2+2?"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		<-handled
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("forwarded status %d, want 200", resp.StatusCode)
		}
	}
	post()
	if got := stats.Snapshot(0).Dropped["not_started"]; got != 1 {
		t.Errorf("copy before Start: not_started = %d, want 1", got)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err == nil {
		t.Error("second Start: want an error")
	}
	post()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if got := len(tap.all()); got != 1 {
		t.Errorf("mirrored %d copies after Start, want 1", got)
	}
	if err := p.Start(context.Background()); err == nil {
		t.Error("Start after Shutdown: want an error")
	}

	unstarted, err := NewProxy(cfg, tap, NewStats(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := unstarted.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown without Start: %v", err)
	}
}

// TestProxyRebuildsResponsesConversations: a Responses API request naming
// previous_response_id is mirrored with the conversation before it, as the
// proxy saw it (instructions of earlier turns not carried over, as the API
// does), over three turns; one naming a response the proxy never saw is
// mirrored with its own input only, marked input_reduced and counted.
func TestProxyRebuildsResponsesConversations(t *testing.T) {
	tap := &recordingTap{}
	f := newProxyFixture(t, &incumbenttest.Handler{}, tap)
	idOf := func(a answerBytes) string {
		var r struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(a.body, &r); err != nil || r.ID == "" {
			t.Fatalf("no response id in %s", a.body)
		}
		return r.ID
	}
	first := f.do(t, f.front.URL, "POST", "/v1/responses", `{"model":"gpt-5","instructions":"Be terse.","input":"Name a prime."}`, nil)
	second := f.do(t, f.front.URL, "POST", "/v1/responses",
		fmt.Sprintf(`{"model":"gpt-5","instructions":"Be brief.","previous_response_id":%q,"input":[{"role":"user","content":"Another one."}]}`, idOf(first)), nil)
	f.do(t, f.front.URL, "POST", "/v1/responses",
		fmt.Sprintf(`{"model":"gpt-5","previous_response_id":%q,"input":"And a third."}`, idOf(second)), nil)
	f.do(t, f.front.URL, "POST", "/v1/responses", `{"model":"gpt-5","previous_response_id":"resp_elsewhere","input":"Continue."}`, nil)
	waitFor(t, "4 mirrored exchanges", func() bool { return len(tap.all()) == 4 })
	exs := tap.all()
	type turn struct{ role, text string }
	turns := func(ex Exchange) []turn {
		var out []turn
		for _, m := range ex.Request.Messages {
			out = append(out, turn{m.Role, m.Content})
		}
		return out
	}
	want := [][]turn{
		{{"system", "Be terse."}, {"user", "Name a prime."}},
		{{"system", "Be brief."}, {"user", "Name a prime."}, {"assistant", "echo: Name a prime."}, {"user", "Another one."}},
		{{"user", "Name a prime."}, {"assistant", "echo: Name a prime."}, {"user", "Another one."}, {"assistant", "echo: Another one."}, {"user", "And a third."}},
		{{"user", "Continue."}},
	}
	for i, ex := range exs {
		if got := turns(ex); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("exchange %d: messages %v, want %v", i, got, want[i])
		}
		if reduced := ex.Request.InputReduced != ""; reduced != (i == 3) {
			t.Errorf("exchange %d: input_reduced %q", i, ex.Request.InputReduced)
		}
	}
	if !strings.Contains(exs[3].Request.InputReduced, "resp_elsewhere") {
		t.Errorf("reason %q does not name the response", exs[3].Request.InputReduced)
	}
	if n := f.stats.Snapshot(0).Mirrored[ProxyOutcomeInputReduced]; n != 1 {
		t.Errorf("input_reduced counted %d times, want 1", n)
	}
}
