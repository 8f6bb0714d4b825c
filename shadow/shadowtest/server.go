// Package shadowtest provides a scripted fake OpenAI-compatible chat server for
// tests: it answers /v1/chat/completions (streamed or not) with what a script
// returns for each request, and records every request body it received.
package shadowtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is the scripted answer to one request.
type Reply struct {
	Content          string
	PromptTokens     int
	CompletionTokens int
	OmitUsage        bool          // send no usage object, even when include_usage was asked
	Fingerprint      string        // system_fingerprint of every chunk; default "fp_shadowtest"
	Delay            time.Duration // wait before the first byte (ends early if the client goes away)
	Chunks           int           // the content is streamed in this many pieces; default 3
	Status           int           // non-zero: answer with this HTTP status and an OpenAI error body
	ErrorMessage     string        // the error body's message (with Status)
	Header           http.Header   // extra response headers, e.g. Retry-After
	CachedTokens     int           // usage.prompt_tokens_details.cached_tokens, sent when > 0
	// ExtraUsage adds fields to the streamed usage object, e.g. Fugu's
	// "orchestration_input_tokens".
	ExtraUsage map[string]int
	// Reasoning is streamed before the content as reasoning deltas, in one chunk
	// under ReasoningKey ("reasoning_content" when empty, or "reasoning").
	Reasoning    string
	ReasoningKey string
	// ToolCalls are streamed after the content, each as fragments: the id and
	// name first, then the arguments in two pieces; finish_reason is then
	// "tool_calls".
	ToolCalls []openai.ToolCall
}

// Request is one request the server received.
type Request struct {
	Seq          int       // 0-based arrival order
	ReceivedAt   time.Time // when the handler started
	FinishedAt   time.Time // when the handler wrote the last byte
	Path         string
	Auth         string // the Authorization header
	Body         []byte // the raw request body
	Messages     []byte // the raw JSON of the body's "messages" field, byte for byte
	Decoded      openai.ChatCompletionRequest
	IncludeUsage bool // stream_options.include_usage was set
}

// LastUserContent returns the content of the request's last user message.
func (r Request) LastUserContent() string {
	for i := len(r.Decoded.Messages) - 1; i >= 0; i-- {
		if r.Decoded.Messages[i].Role == openai.ChatMessageRoleUser {
			return r.Decoded.Messages[i].Content
		}
	}
	return ""
}

// Script decides the reply to each request. It is called concurrently.
type Script func(Request) Reply

// Server is the fake. Close it when done.
type Server struct {
	srv    *httptest.Server
	script Script
	mu     sync.Mutex
	reqs   []Request
}

// NewServer starts a fake server answering with script.
func NewServer(script Script) *Server {
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// BaseURL is the API base URL to configure a client with (ends in /v1).
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Close stops the server, waiting for in-flight requests, and closes its connections.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// RequestsFor returns the requests whose body named the model, in arrival order.
func (s *Server) RequestsFor(model string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Decoded.Model == model {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{ReceivedAt: received, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req.Messages = fields["messages"]
	_ = json.Unmarshal(body, &req.Decoded)
	req.IncludeUsage = req.Decoded.StreamOptions != nil && req.Decoded.StreamOptions.IncludeUsage

	s.mu.Lock()
	req.Seq = len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.reqs[req.Seq].FinishedAt = time.Now()
		s.mu.Unlock()
	}()

	reply := s.script(req)
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if reply.Fingerprint == "" {
		reply.Fingerprint = "fp_shadowtest"
	}
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if reply.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		msg, _ := json.Marshal(reply.ErrorMessage)
		fmt.Fprintf(w, `{"error":{"message":%s,"type":"server_error","code":null}}`, msg)
		return
	}
	usage := &openai.Usage{PromptTokens: reply.PromptTokens, CompletionTokens: reply.CompletionTokens,
		TotalTokens: reply.PromptTokens + reply.CompletionTokens}
	if !req.Decoded.Stream {
		resp := openai.ChatCompletionResponse{
			ID: fmt.Sprintf("chatcmpl-%d", req.Seq), Object: "chat.completion", Created: received.Unix(),
			Model: req.Decoded.Model, SystemFingerprint: reply.Fingerprint,
			Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{
				Role: openai.ChatMessageRoleAssistant, Content: reply.Content}, FinishReason: openai.FinishReasonStop}},
		}
		if !reply.OmitUsage {
			resp.Usage = *usage
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(chunk openai.ChatCompletionStreamResponse) {
		chunk.ID = fmt.Sprintf("chatcmpl-%d", req.Seq)
		chunk.Object = "chat.completion.chunk"
		chunk.Created = received.Unix()
		chunk.Model = req.Decoded.Model
		chunk.SystemFingerprint = reply.Fingerprint
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	sendRaw := func(b []byte) {
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if reply.Reasoning != "" {
		key := reply.ReasoningKey
		if key == "" {
			key = "reasoning_content"
		}
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", req.Seq), "object": "chat.completion.chunk",
			"model": req.Decoded.Model, "choices": []any{map[string]any{"index": 0, "delta": map[string]any{key: reply.Reasoning}}}})
		sendRaw(b)
	}
	for _, piece := range split(reply.Content, reply.Chunks) {
		send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{
			Delta: openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant, Content: piece}}}})
	}
	for i, tc := range reply.ToolCalls {
		idx := i
		args := tc.Function.Arguments
		half := len(args) / 2
		frags := []openai.ToolCall{
			{Index: &idx, ID: tc.ID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: tc.Function.Name}},
			{Index: &idx, Function: openai.FunctionCall{Arguments: args[:half]}},
			{Index: &idx, Function: openai.FunctionCall{Arguments: args[half:]}},
		}
		for _, f := range frags {
			send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{
				Delta: openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{f}}}}})
		}
	}
	finish := openai.FinishReasonStop
	if len(reply.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{FinishReason: finish}}})
	if req.IncludeUsage && !reply.OmitUsage {
		if reply.CachedTokens > 0 {
			usage.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: reply.CachedTokens}
		}
		if len(reply.ExtraUsage) == 0 {
			send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{}, Usage: usage})
		} else {
			sendRaw(withExtraUsage(req, reply, usage))
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// withExtraUsage is the final usage chunk with reply.ExtraUsage merged into the
// usage object.
func withExtraUsage(req Request, reply Reply, usage *openai.Usage) []byte {
	u := map[string]any{}
	b, _ := json.Marshal(usage)
	_ = json.Unmarshal(b, &u)
	for k, v := range reply.ExtraUsage {
		u[k] = v
	}
	chunk := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", req.Seq), "object": "chat.completion.chunk", "created": req.ReceivedAt.Unix(),
		"model": req.Decoded.Model, "system_fingerprint": reply.Fingerprint, "choices": []any{}, "usage": u,
	}
	out, _ := json.Marshal(chunk)
	return out
}

// split cuts s into n pieces on rune boundaries (n <= 0 means 3); empty s gives none.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 0 {
		n = 3
	}
	runes := []rune(s)
	if n > len(runes) {
		n = len(runes)
	}
	out := make([]string, 0, n)
	size := (len(runes) + n - 1) / n
	for i := 0; i < len(runes); i += size {
		out = append(out, string(runes[i:min(i+size, len(runes))]))
	}
	return out
}
