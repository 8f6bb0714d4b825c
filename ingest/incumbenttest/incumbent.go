// Package incumbenttest is a fake incumbent LLM API for tests and load runs: it
// answers POST /v1/chat/completions, POST /v1/responses and Anthropic's POST
// /v1/messages (anthropic.go), streamed (SSE) or not, with "echo: <last user
// message>", and GET /v1/models. Every answer carries the
// header X-Incumbent: fake so a proxy's pass-through can be checked.
package incumbenttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Handler is the fake. The zero value answers at once in 3 chunks.
type Handler struct {
	// Delay is waited before the first byte (ends early if the client goes away).
	Delay time.Duration
	// ChunkGap is waited between streamed chunks.
	ChunkGap time.Duration
	// Chunks is how many pieces a streamed answer is cut into; 0 means 3.
	Chunks int
	// BeforeChunk, when set, is called before streamed chunk i (0-based) is written;
	// tests block in it to prove earlier chunks reached the client already.
	BeforeChunk func(i int)
	// Status, when non-zero, answers every request with this status and an error body.
	Status int

	seq atomic.Int64
}

// Requests is how many requests were answered.
func (h *Handler) Requests() int64 { return h.seq.Load() }

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func lastUser(msgs []message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(msgs[i].Content, &s) == nil {
			return s
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(msgs[i].Content, &parts)
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.seq.Add(1)
	w.Header().Set("X-Incumbent", "fake")
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model","created":0,"owned_by":"fake"}]}`)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Ids derive from the body, so the same request gets the same bytes back.
	sum := sha256.Sum256(body)
	n := hex.EncodeToString(sum[:6])
	if h.Delay > 0 {
		t := time.NewTimer(h.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if h.Status != 0 && strings.HasSuffix(path, "/v1/messages") {
		anthropicError(w, h.Status, "rate_limit_error", "scripted failure")
		return
	}
	if h.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(h.Status)
		fmt.Fprint(w, `{"error":{"message":"scripted failure","type":"server_error"}}`)
		return
	}
	var req struct {
		Model         string          `json:"model"`
		Stream        bool            `json:"stream"`
		Messages      []message       `json:"messages"`
		Input         json.RawMessage `json:"input"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`)
		return
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/v1/messages"):
		h.messages(w, r, n, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		h.chat(w, n, req.Model, "echo: "+lastUser(req.Messages), req.Stream, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		var input string
		if json.Unmarshal(req.Input, &input) != nil {
			var items []message
			_ = json.Unmarshal(req.Input, &items)
			input = lastUser(items)
		}
		h.responses(w, n, req.Model, "echo: "+input, req.Stream)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`)
	}
}

// Split cuts s into n pieces on rune boundaries (n <= 0 means 3).
func Split(s string, n int) []string {
	if n <= 0 {
		n = 3
	}
	runes := []rune(s)
	n = max(1, min(n, len(runes)))
	size := max(1, (len(runes)+n-1)/n)
	var out []string
	for i := 0; i < len(runes); i += size {
		out = append(out, string(runes[i:min(i+size, len(runes))]))
	}
	return out
}

func tokens(s string) int { return (len(s) + 3) / 4 }

func (h *Handler) chat(w http.ResponseWriter, n string, model, content string, stream, includeUsage bool) {
	id := "chatcmpl-fake-" + n
	usage := fmt.Sprintf(`{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}`, tokens(content), 12+tokens(content))
	c, _ := json.Marshal(content)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1764493200,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":%s,"system_fingerprint":"fp_fake"}`+"\n", id, model, c, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	for i, piece := range Split(content, h.Chunks) {
		h.gap(i)
		p, _ := json.Marshal(piece)
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1764493200,\"model\":%q,\"system_fingerprint\":\"fp_fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"logprobs\":null,\"finish_reason\":null}]}\n\n", id, model, p)
		if f != nil {
			f.Flush()
		}
	}
	fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1764493200,\"model\":%q,\"system_fingerprint\":\"fp_fake\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n", id, model)
	if includeUsage {
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1764493200,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", id, model, usage)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (h *Handler) gap(i int) {
	if h.BeforeChunk != nil {
		h.BeforeChunk(i)
	}
	if i > 0 && h.ChunkGap > 0 {
		time.Sleep(h.ChunkGap)
	}
}

func (h *Handler) responses(w http.ResponseWriter, n string, model, content string, stream bool) {
	id := "resp_fake_" + n
	c, _ := json.Marshal(content)
	obj := func(status string, text []byte) string {
		out := `[]`
		if text != nil {
			out = fmt.Sprintf(`[{"type":"message","id":"msg_%s","status":"completed","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}]`, n, text)
		}
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1764493200,"status":%q,"model":%q,"output":%s,"usage":{"input_tokens":12,"output_tokens":%d,"total_tokens":%d}}`, id, status, model, out, tokens(content), 12+tokens(content))
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, obj("completed", c))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f, _ := w.(http.Flusher)
	seq := 0
	event := func(typ, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		seq++
		if f != nil {
			f.Flush()
		}
	}
	event("response.created", fmt.Sprintf(`{"type":"response.created","sequence_number":%d,"response":%s}`, seq, obj("in_progress", nil)))
	for i, piece := range Split(content, h.Chunks) {
		h.gap(i)
		p, _ := json.Marshal(piece)
		event("response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_%s","output_index":0,"content_index":0,"delta":%s}`, seq, n, p))
	}
	event("response.completed", fmt.Sprintf(`{"type":"response.completed","sequence_number":%d,"response":%s}`, seq, obj("completed", c)))
}
