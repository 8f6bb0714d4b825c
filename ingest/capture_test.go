package ingest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// lineEnds are the three line ends of the SSE format.
var lineEnds = []struct{ name, eol string }{{"LF", "\n"}, {"CRLF", "\r\n"}, {"CR", "\r"}}

// reframe rewrites body's LF line ends as eol.
func reframe(body []byte, eol string) []byte {
	return bytes.ReplaceAll(body, []byte("\n"), []byte(eol))
}

func TestSSEEventsFraming(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"LF", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"bare CR", "data: a\r\rdata: b\r\r", []string{"a", "b"}},
		{"mixed", "data: a\r\n\rdata: b\n\r\ndata: c\r\r", []string{"a", "b", "c"}},
		{"multi-line data joined by LF", "data: a\rdata: b\r\r", []string{"a\nb"}},
		{"no space after colon", "data:a\n\n", []string{"a"}},
		{"only one space dropped", "data:  a\n\n", []string{" a"}},
		{"comments and other fields ignored", ": ping\nevent: x\nid: 7\nretry: 10\ndata: a\n\n", []string{"a"}},
		{"field without colon is empty data", "data\n\n", []string{""}},
		{"DONE skipped", "data: a\n\ndata: [DONE]\n\n", []string{"a"}},
		{"byte order mark", "\xef\xbb\xbfdata: a\n\n", []string{"a"}},
		{"last event unclosed", "data: a\n\ndata: b", []string{"a", "b"}},
		{"blank lines only", "\n\r\n\r", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := sseEvents([]byte(tt.body), func(d []byte, _ bool) error {
				got = append(got, string(d))
				return nil
			})
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("events %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

// captureCase is one recorded incumbent answer (testdata/capture) and what the
// tap must store of it.
type captureCase struct {
	file      string
	route     string // /v1/chat/completions, /v1/responses or /v1/messages
	cut       bool   // the answer was cut off (client hung up)
	content   string
	reasoning string
	choices   []Choice // nil: not stored (one choice, no tool calls)
	usage     Usage
	estimated bool
	errText   string
}

var cached = Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800}

func captureCases() []captureCase {
	weather := ToolCall{Index: 0, ID: "call_a", Type: "function", Name: "get_weather", Arguments: `{"city":"Paris"}`}
	timeCall := ToolCall{Index: 1, ID: "call_b", Type: "function", Name: "get_time", Arguments: `{"tz":"CET"}`}
	const chat, resp, msgs = "/v1/chat/completions", "/v1/responses", "/v1/messages"
	writes := Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800, CacheWritePromptTokens: 100, CacheWrite1hPromptTokens: 40}
	return []captureCase{
		{file: "anthropic_stream_thinking.sse", route: msgs, content: "The answer is 4.", reasoning: "Two plus two is four.", usage: cached},
		{file: "anthropic_stream_tools.sse", route: msgs, content: "Checking", usage: writes, choices: []Choice{
			{Index: 0, Content: "Checking", FinishReason: "tool_calls", ToolCalls: []ToolCall{
				{Index: 0, ID: "toolu_a", Type: "function", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{Index: 1, ID: "toolu_b", Type: "function", Name: "get_time", Arguments: `{"tz":"CET"}`}}}}},
		{file: "anthropic_stream_error_event.sse", route: msgs, content: "The answer", usage: Usage{PromptTokens: 1000, CompletionTokens: 1, CachedPromptTokens: 800},
			errText: "overloaded_error: Overloaded"},
		{file: "anthropic_stream_cut.sse", route: msgs, cut: true, usage: Usage{PromptTokens: 1000, CompletionTokens: 1, CachedPromptTokens: 800}, choices: []Choice{
			{Index: 0, ToolCalls: []ToolCall{{Index: 0, ID: "toolu_c", Type: "function", Name: "get_weather", Arguments: `{"city":`}}}}},
		{file: "anthropic_body.json", route: msgs, content: "The answer is 4.", reasoning: "Two plus two is four.", usage: cached, choices: []Choice{
			{Index: 0, Content: "The answer is 4.", Reasoning: "Two plus two is four.", FinishReason: "tool_calls",
				ToolCalls: []ToolCall{{Index: 0, ID: "toolu_d", Type: "function", Name: "calc", Arguments: `{"expr":"2+2"}`}}}}},
		{file: "chat_stream_reasoning_content.sse", route: chat, content: "The answer is 4.", reasoning: "Two plus two is four.", usage: cached},
		{file: "chat_stream_reasoning.sse", route: chat, content: "The answer is 4.", reasoning: "Two plus two is four.", usage: cached},
		{file: "chat_stream_n2.sse", route: chat, content: "Paris.", usage: cached, choices: []Choice{
			{Index: 0, Content: "Paris.", FinishReason: "stop"}, {Index: 1, Content: "It is Paris.", FinishReason: "stop"}}},
		{file: "chat_stream_tools.sse", route: chat, usage: cached, choices: []Choice{
			{Index: 0, FinishReason: "tool_calls", ToolCalls: []ToolCall{weather, timeCall}}}},
		{file: "chat_stream_tools_no_index.sse", route: chat, usage: cached, choices: []Choice{
			{Index: 0, FinishReason: "tool_calls", ToolCalls: []ToolCall{
				{Index: 0, ID: "call_x", Type: "function", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{Index: 1, ID: "call_y", Type: "function", Name: "get_time", Arguments: `{"tz":"CET"}`}}}}},
		{file: "chat_stream_function_call.sse", route: chat, estimated: true, usage: Usage{PromptTokens: 1, CompletionTokens: 7}, choices: []Choice{
			{Index: 0, FinishReason: "function_call", ToolCalls: []ToolCall{{Index: 0, Type: "function", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}}},
		{file: "chat_stream_error_event.sse", route: chat, content: "The answer", estimated: true, usage: Usage{PromptTokens: 1, CompletionTokens: 3},
			errText: "server_error: The server had an error while processing your request."},
		{file: "chat_stream_multiline_data.sse", route: chat, content: "line data joined", usage: cached},
		{file: "chat_body_n2_tools.json", route: chat, content: "Paris.", reasoning: "The capital of France is Paris.", usage: cached, choices: []Choice{
			{Index: 0, Content: "Paris.", Reasoning: "The capital of France is Paris.", FinishReason: "stop"},
			{Index: 1, FinishReason: "tool_calls", ToolCalls: []ToolCall{{Index: 0, ID: "call_a", Type: "function", Name: "lookup", Arguments: `{"q":"capital of France"}`}}}}},
		{file: "chat_body_parts.json", route: chat, content: "The answer is 4.", reasoning: "Two plus two is four.", usage: cached},
		{file: "responses_stream_reasoning.sse", route: resp, content: "The answer is 4.", reasoning: "Two plus two is four.", usage: cached},
		{file: "responses_stream_tools_cut.sse", route: resp, cut: true, content: "Checking", reasoning: "Need the weather.", estimated: true,
			usage: Usage{PromptTokens: 1, CompletionTokens: 13}, choices: []Choice{{Index: 0, Content: "Checking", Reasoning: "Need the weather.",
				ToolCalls: []ToolCall{{Index: 0, ID: "call_a", Type: "function", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}}},
		{file: "responses_body.json", route: resp, content: "The answer is 4.", reasoning: "Two plus two is four.", usage: cached, choices: []Choice{
			{Index: 0, Content: "The answer is 4.", Reasoning: "Two plus two is four.",
				ToolCalls: []ToolCall{{Index: 0, ID: "call_c", Type: "function", Name: "calc", Arguments: `{"expr":"2+2"}`}}}}},
	}
}

// TestCaptureExchangeFidelity: every recorded answer, framed with LF, CRLF and
// bare CR line ends, gives the same stored exchange: the answer, the reasoning
// apart from it, every choice and tool call merged by index, and the usage with
// its cached tokens.
func TestCaptureExchangeFidelity(t *testing.T) {
	for _, tc := range captureCases() {
		raw, err := os.ReadFile(filepath.Join("testdata", "capture", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		streamed := strings.HasSuffix(tc.file, ".sse")
		for _, le := range lineEnds {
			if !streamed && le.name != "LF" {
				continue
			}
			t.Run(tc.file+"/"+le.name, func(t *testing.T) {
				req := `{"model":"m","messages":[{"role":"user","content":"2+2?"}]}`
				switch tc.route {
				case "/v1/responses":
					req = `{"model":"m","input":"2+2?"}`
				case "/v1/messages":
					req = `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"2+2?"}]}`
				}
				c := capture{path: tc.route, app: "a", reqBody: []byte(req), respBody: reframe(raw, le.eol), status: 200,
					respHeader: http.Header{}, start: time.Now(), latency: time.Millisecond}
				if streamed {
					c.respHeader.Set("Content-Type", "text/event-stream; charset=utf-8")
				}
				if tc.cut {
					c.end = endClientGone
				}
				ex, err := c.exchange(nil)
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				r := ex.Response
				if r.Content != tc.content || r.Reasoning != tc.reasoning {
					t.Errorf("content %q reasoning %q, want %q and %q", r.Content, r.Reasoning, tc.content, tc.reasoning)
				}
				if !reflect.DeepEqual(r.Choices, tc.choices) {
					t.Errorf("choices\n got %+v\nwant %+v", r.Choices, tc.choices)
				}
				if r.Usage != tc.usage || r.UsageEstimated != tc.estimated {
					t.Errorf("usage %+v estimated %v, want %+v estimated %v", r.Usage, r.UsageEstimated, tc.usage, tc.estimated)
				}
				if r.Error != tc.errText || r.Partial != tc.cut || r.CancelledByClient != tc.cut {
					t.Errorf("error %q partial %v cancelled %v, want %q %v", r.Error, r.Partial, r.CancelledByClient, tc.errText, tc.cut)
				}
			})
		}
	}
}

// TestIncumbentRunFromCapture: what the tap stores for an answer with reasoning,
// several choices and tool calls, and cached tokens priced at the cached rate.
func TestIncumbentRunFromCapture(t *testing.T) {
	raw, err := os.ReadFile("testdata/capture/chat_stream_tools.sse")
	if err != nil {
		t.Fatal(err)
	}
	c := capture{path: "/v1/chat/completions", app: "a", reqBody: []byte(`{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"weather?"}]}`),
		respBody: reframe(raw, "\r"), status: 200, respHeader: http.Header{"Content-Type": {"text/event-stream"}}, start: time.Now(), latency: time.Second}
	ex, err := c.exchange(nil)
	if err != nil {
		t.Fatal(err)
	}
	run, step := IncumbentRun(ex, usagePricer{})
	if run.Status != store.StatusOK || run.HTTPStatus != 200 || run.Partial {
		t.Errorf("run status %q http %d partial %v", run.Status, run.HTTPStatus, run.Partial)
	}
	const wantCalls = `[{"choice":0,"index":0,"id":"call_a","type":"function","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"choice":0,"index":1,"id":"call_b","type":"function","name":"get_time","arguments":"{\"tz\":\"CET\"}"}]`
	if run.ToolCalls != wantCalls {
		t.Errorf("tool calls\n got %s\nwant %s", run.ToolCalls, wantCalls)
	}
	if !strings.Contains(run.Choices, `"finish_reason":"tool_calls"`) {
		t.Errorf("choices %s", run.Choices)
	}
	// gpt-5: 200 fresh × 1.25 + 800 cached × 0.125 + 100 × 10, per 1M tokens.
	if run.CostUSD < 0.00135-1e-12 || run.CostUSD > 0.00135+1e-12 || step.CachedInputTokens != 800 {
		t.Errorf("cost %.8f USD cached %d, want 0.00135 and 800", run.CostUSD, step.CachedInputTokens)
	}
}

// usagePricer prices gpt-5 at its list price (1.25 / 10, cached 0.125 USD per 1M).
type usagePricer struct{}

func (usagePricer) Cost(model string, in, out int64) (float64, bool) {
	return usagePricer{}.CostUsage(model, Usage{PromptTokens: in, CompletionTokens: out}.Shadow())
}

func (usagePricer) CostUsage(model string, u shadow.Usage) (float64, bool) {
	if model != "gpt-5" {
		return 0, false
	}
	fresh := u.PromptTokens - u.CachedPromptTokens
	return (float64(fresh)*1.25 + float64(u.CachedPromptTokens)*0.125 + float64(u.CompletionTokens)*10) / 1e6, true
}

// rawIncumbent answers every request with status, headers and the body pieces,
// flushing each; before piece stall it waits until release is closed.
type rawIncumbent struct {
	status  int
	header  http.Header
	pieces  []string
	stall   int
	release chan struct{}
}

func (h *rawIncumbent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.WriteHeader(h.status)
	for i, p := range h.pieces {
		if h.release != nil && i == h.stall {
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, p)
		w.(http.Flusher).Flush()
	}
}

func newRawProxy(t *testing.T, inc http.Handler, tap Offerer) (*httptest.Server, *httptest.Server, *Stats) {
	t.Helper()
	incSrv := httptest.NewServer(inc)
	cfg := NewDefaultProxyConfig()
	cfg.IncumbentURL = incSrv.URL
	stats := NewStats()
	p, err := NewProxy(cfg, tap, stats, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(func() {
		front.Close()
		_ = p.Shutdown(context.Background())
		incSrv.Close()
	})
	return incSrv, front, stats
}

// TestProxyBareCRStreams: a stream framed with bare CR reaches the client byte
// for byte and is stored whole, on both mirrored routes.
func TestProxyBareCRStreams(t *testing.T) {
	for _, f := range []struct{ file, route, body, want string }{
		{"chat_stream_reasoning.sse", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"2+2?"}]}`, "The answer is 4."},
		{"responses_stream_reasoning.sse", "/v1/responses", `{"model":"m","stream":true,"input":"2+2?"}`, "The answer is 4."},
		{"chat_stream_reasoning_content.sse", "/openai/deployments/prod/chat/completions?api-version=2025-04-01-preview",
			`{"stream":true,"messages":[{"role":"user","content":"2+2?"}]}`, "The answer is 4."},
		{"responses_stream_reasoning.sse", "/api/v1/responses/", `{"model":"m","stream":true,"input":[{"role":"user","content":"2+2?"}]}`, "The answer is 4."},
	} {
		t.Run(f.file+" "+f.route, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "capture", f.file))
			if err != nil {
				t.Fatal(err)
			}
			body := string(reframe(raw, "\r"))
			tap := &recordingTap{}
			_, front, _ := newRawProxy(t, &rawIncumbent{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}},
				pieces: []string{body[:len(body)/3], body[len(body)/3:]}}, tap)
			resp, err := http.Post(front.URL+f.route, "application/json", strings.NewReader(f.body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != body {
				t.Fatalf("the client got other bytes than the incumbent sent")
			}
			waitFor(t, "the copy", func() bool { return len(tap.all()) == 1 })
			r := tap.all()[0].Response
			if r.Content != f.want || r.Reasoning != "Two plus two is four." || r.Usage != cached || r.Status != 200 || r.Failed() {
				t.Fatalf("stored %+v", r)
			}
		})
	}
}

// TestProxyStoresIncumbentFailures: a non-2xx answer reaches the client unchanged
// and is stored with its status, error body and rate-limit headers.
func TestProxyStoresIncumbentFailures(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		header      http.Header
		body        string
		wantHeaders map[string]string
	}{
		{"openai 429", 429, http.Header{"Retry-After": {"20"}, "X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"20s"},
			"X-Request-Id": {"req_abc"}, "Content-Type": {"application/json"}, "Set-Cookie": {"s=1"}},
			`{"error":{"message":"Rate limit reached for gpt-5","type":"requests","code":"rate_limit_exceeded"}}`,
			map[string]string{"retry-after": "20", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20s", "x-request-id": "req_abc"}},
		{"anthropic 529", 529, http.Header{"Retry-After": {"5"}, "Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Request-Id": {"req_01"}},
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			map[string]string{"retry-after": "5", "anthropic-ratelimit-requests-remaining": "0", "request-id": "req_01"}},
		{"azure 429", 429, http.Header{"Retry-After-Ms": {"1500"}, "X-Ms-Ratelimit-Remaining-Tokens": {"0"}, "Apim-Request-Id": {"a-1"}},
			`{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded call rate limit"}}`,
			map[string]string{"retry-after-ms": "1500", "x-ms-ratelimit-remaining-tokens": "0", "apim-request-id": "a-1"}},
		{"ietf ratelimit 503", 503, http.Header{"Ratelimit": {"limit=100, remaining=0, reset=50"}, "Ratelimit-Policy": {"100;w=60"}},
			``, map[string]string{"ratelimit": "limit=100, remaining=0, reset=50", "ratelimit-policy": "100;w=60"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tap := &recordingTap{}
			inc, front, stats := newRawProxy(t, &rawIncumbent{status: tt.status, header: tt.header, pieces: []string{tt.body}}, tap)
			const body = `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`
			direct, _ := http.Post(inc.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			db, _ := io.ReadAll(direct.Body)
			direct.Body.Close()
			resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			pb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || string(pb) != string(db) || resp.Header.Get("Retry-After") != direct.Header.Get("Retry-After") {
				t.Fatalf("client got %d %q, incumbent sent %d %q", resp.StatusCode, pb, direct.StatusCode, db)
			}
			waitFor(t, "the copy", func() bool { return len(tap.all()) == 1 })
			ex := tap.all()[0]
			r := ex.Response
			if r.Status != tt.status || !reflect.DeepEqual(r.Headers, tt.wantHeaders) || !r.Failed() {
				t.Fatalf("stored status %d headers %v, want %d %v", r.Status, r.Headers, tt.status, tt.wantHeaders)
			}
			if tt.body != "" && r.Error != tt.body {
				t.Errorf("error body %q, want %q", r.Error, tt.body)
			}
			run, _ := IncumbentRun(ex, nil)
			if run.Status != store.StatusError || run.HTTPStatus != int32(tt.status) || !strings.Contains(run.Error, fmt.Sprintf("HTTP %d", tt.status)) {
				t.Errorf("run status %q http %d error %q", run.Status, run.HTTPStatus, run.Error)
			}
			if stats.Snapshot(0).Mirrored[ProxyOutcomeNotOK] != 1 {
				t.Errorf("outcomes %v", stats.Snapshot(0).Mirrored)
			}
		})
	}
}

// TestProxyStoresWhatArrivedWhenTheClientHangsUp: the client reads the first
// chunks of a stream and hangs up; the copy holds what arrived, marked partial
// and cancelled by the client.
func TestProxyStoresWhatArrivedWhenTheClientHangsUp(t *testing.T) {
	for _, le := range lineEnds {
		t.Run(le.name, func(t *testing.T) {
			first := reframe([]byte("data: {\"id\":\"c1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"Thinking.\"}}]}\n\n"+
				"data: {\"id\":\"c1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The answer \"}}]}\n\n"), le.eol)
			rest := reframe([]byte("data: {\"id\":\"c1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"is 4.\"}}]}\n\ndata: [DONE]\n\n"), le.eol)
			release := make(chan struct{})
			defer close(release)
			tap := &recordingTap{}
			_, front, _ := newRawProxy(t, &rawIncumbent{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}},
				pieces: []string{string(first), string(rest)}, stall: 1, release: release}, tap)
			u := strings.TrimPrefix(front.URL, "http://")
			conn, err := net.Dial("tcp", u)
			if err != nil {
				t.Fatal(err)
			}
			body := `{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"2+2?"}]}`
			fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nX-Request-Id: hangup-1\r\nContent-Length: %d\r\n\r\n%s", u, len(body), body)
			buf := make([]byte, 0, 4096)
			tmp := make([]byte, 4096)
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			for !bytes.Contains(buf, []byte("The answer")) {
				n, err := conn.Read(tmp)
				if err != nil {
					t.Fatalf("reading the first chunks: %v (got %q)", err, buf)
				}
				buf = append(buf, tmp[:n]...)
			}
			conn.Close() // the client hangs up mid-stream
			waitFor(t, "the partial copy", func() bool { return len(tap.all()) == 1 })
			ex := tap.all()[0]
			r := ex.Response
			if r.Content != "The answer " || r.Reasoning != "Thinking." || !r.Partial || !r.CancelledByClient {
				t.Fatalf("stored %+v; want what arrived, partial and cancelled by the client", r)
			}
			run, _ := IncumbentRun(ex, nil)
			if run.Status != store.StatusCancelledByClient || !run.Partial || run.FinalOutput != "The answer " {
				t.Fatalf("run status %q partial %v output %q", run.Status, run.Partial, run.FinalOutput)
			}
		})
	}
}

// brokenIncumbent streams first and then drops the connection mid-answer.
type brokenIncumbent struct{ first string }

func (h brokenIncumbent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	_, _ = io.WriteString(w, h.first)
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// TestProxyStoresWhatArrivedWhenTheIncumbentBreaksOff: the incumbent drops the
// connection mid-stream; the copy holds what arrived, partial, as an incumbent
// failure (not a client cancellation).
func TestProxyStoresWhatArrivedWhenTheIncumbentBreaksOff(t *testing.T) {
	tap := &recordingTap{}
	first := "data: {\"id\":\"c1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The answer \"}}]}\r\r"
	_, front, stats := newRawProxy(t, brokenIncumbent{first: first}, tap)
	resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"2+2?"}]}`))
	if err == nil {
		_, _ = io.ReadAll(resp.Body) // ends with an error: the answer was cut
		resp.Body.Close()
	}
	waitFor(t, "the partial copy", func() bool { return len(tap.all()) == 1 })
	ex := tap.all()[0]
	r := ex.Response
	if r.Content != "The answer " || !r.Partial || r.CancelledByClient || r.Error != "the incumbent broke off mid-answer" {
		t.Fatalf("stored %+v", r)
	}
	run, _ := IncumbentRun(ex, nil)
	if run.Status != store.StatusError || !run.Partial {
		t.Fatalf("run status %q partial %v", run.Status, run.Partial)
	}
	if stats.Snapshot(0).Mirrored[ProxyOutcomeClientGone] != 1 {
		t.Errorf("outcomes %v", stats.Snapshot(0).Mirrored)
	}
}

// BenchmarkCaptureExchange measures turning one captured streamed answer into
// a tap copy, the capture workers' per-copy CPU cost, per API: a chat
// completion (tool calls, reasoning, usage; bare CR line ends), an Anthropic
// Messages stream (tool calls as input_json_delta, cache usage), and the same
// with a 195 KB image in the request: go test -run '^$' -bench CaptureExchange ./ingest/
func BenchmarkCaptureExchange(b *testing.B) {
	img := make([]byte, 195_000)
	for i := range img {
		img[i] = byte(i * 7)
	}
	image := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + base64.StdEncoding.EncodeToString(img) + `"}},`
	for _, bc := range []struct {
		name, route, file, req string
	}{
		{"chat", "/v1/chat/completions", "chat_stream_tools.sse", `{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"weather?"}]}`},
		{"anthropic", "/v1/messages", "anthropic_stream_tools.sse", `{"model":"claude-sonnet-4","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"weather?"}]}`},
		{"chat_image", "/v1/chat/completions", "chat_stream_tools.sse",
			`{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` +
				base64.StdEncoding.EncodeToString(img) + `"}},{"type":"text","text":"weather?"}]}]}`},
		{"anthropic_image", "/v1/messages", "anthropic_stream_tools.sse",
			`{"model":"claude-sonnet-4","max_tokens":64,"stream":true,"messages":[{"role":"user","content":[` + image + `{"type":"text","text":"weather?"}]}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			raw, err := os.ReadFile(filepath.Join("testdata", "capture", bc.file))
			if err != nil {
				b.Fatal(err)
			}
			c := capture{path: bc.route, app: "a", reqBody: []byte(bc.req), respBody: reframe(raw, "\r"), status: 200,
				respHeader: http.Header{"Content-Type": {"text/event-stream"}}, start: time.Now(), latency: time.Second}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.exchange(nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
