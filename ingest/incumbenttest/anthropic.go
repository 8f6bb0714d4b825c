package incumbenttest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// AnthropicUsage is the usage every Messages API answer reports besides its
// output tokens: 12 fresh input tokens, 800 read from the prompt cache and 100
// written to it, 40 of those to the 1-hour cache (docs.anthropic.com, "Prompt
// caching": input_tokens exclude cache reads and writes).
const (
	AnthropicInputTokens   = 12
	AnthropicCacheRead     = 800
	AnthropicCacheWrite    = 100
	AnthropicCacheWrite1h  = 40
	anthropicCacheWrite5m  = AnthropicCacheWrite - AnthropicCacheWrite1h
	anthropicVersionHeader = "anthropic-version"
)

// anthropicRequest is the part of a Messages API request the fake reads.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string `json:"name"`
		InputSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"input_schema"`
	} `json:"tools"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
}

// anthropicTurn reads the last user turn: its text, its images and documents,
// and whether it carries a tool result (then the fake answers it in text).
func anthropicTurn(content json.RawMessage) (text string, media int, toolResult string) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s, 0, ""
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(content, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			b.WriteString(bl.Text)
		case "image", "document":
			media++
		case "tool_result":
			if json.Unmarshal(bl.Content, &toolResult) != nil {
				toolResult = string(bl.Content)
			}
		}
	}
	return b.String(), media, toolResult
}

// messages answers POST /v1/messages as Anthropic's Messages API does
// (docs.anthropic.com/en/api/messages, …/messages-streaming): without x-api-key
// 401, without anthropic-version 400; with tools and a fresh question a
// tool_use block calling the first tool (its first property set to the
// question), after a tool result "echo: tool said …", else "echo: <question>"
// (" (saw N media)" when the turn carried images or documents); a thinking
// block first when thinking is enabled. Streamed: message_start, ping,
// content_block_start/delta/stop (thinking_delta and signature_delta,
// text_delta, input_json_delta), message_delta with the output usage,
// message_stop.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request, n string, body []byte) {
	w.Header().Set("request-id", "req_fake_"+n)
	w.Header().Set("anthropic-ratelimit-requests-remaining", "999")
	if r.Header.Get("x-api-key") == "" && r.Header.Get("Authorization") == "" {
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return
	}
	if r.Header.Get(anthropicVersionHeader) == "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "messages: at least one message is required")
		return
	}
	text, media, toolResult := anthropicTurn(req.Messages[len(req.Messages)-1].Content)
	type block struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text,omitempty"`
		Thinking  *string         `json:"thinking,omitempty"`
		Signature *string         `json:"signature,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
	}
	var blocks []block
	if req.Thinking != nil && req.Thinking.Type == "enabled" {
		th, sig := "Thinking about: "+text, "sig_fake_"+n
		blocks = append(blocks, block{Type: "thinking", Thinking: &th, Signature: &sig})
	}
	stop := "end_turn"
	switch {
	case toolResult != "":
		t := "echo: tool said " + toolResult
		blocks = append(blocks, block{Type: "text", Text: &t})
	case len(req.Tools) > 0:
		prop := "input"
		if props := slices.Sorted(maps.Keys(req.Tools[0].InputSchema.Properties)); len(props) > 0 {
			prop = props[0]
		}
		in, _ := json.Marshal(map[string]string{prop: text})
		blocks = append(blocks, block{Type: "tool_use", ID: "toolu_fake_" + n, Name: req.Tools[0].Name, Input: in})
		stop = "tool_use"
	default:
		t := "echo: " + text
		if media > 0 {
			t += fmt.Sprintf(" (saw %d media)", media)
		}
		blocks = append(blocks, block{Type: "text", Text: &t})
	}
	out := 0
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			out += tokens(*b.Text)
		case b.Thinking != nil:
			out += tokens(*b.Thinking)
		default:
			out += tokens(string(b.Input))
		}
	}
	id := "msg_fake_" + n
	usage := func(output int) string {
		return fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":%d},"output_tokens":%d,"service_tier":"standard"}`,
			AnthropicInputTokens, AnthropicCacheWrite, AnthropicCacheRead, anthropicCacheWrite5m, AnthropicCacheWrite1h, output)
	}
	if !req.Stream {
		content, _ := json.Marshal(blocks)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"stop_sequence":null,"usage":%s}`+"\n",
			id, req.Model, content, stop, usage(out))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	chunk := 0
	event := func(name, data string) {
		h.gap(chunk)
		chunk++
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if f != nil {
			f.Flush()
		}
	}
	event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`,
		id, req.Model, usage(1)))
	event("ping", `{"type": "ping"}`)
	delta := func(i int, typ, key, piece string) {
		p, _ := json.Marshal(piece)
		event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":%q,%q:%s}}`, i, typ, key, p))
	}
	for i, b := range blocks {
		switch {
		case b.Thinking != nil:
			event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, i))
			for _, piece := range Split(*b.Thinking, h.Chunks) {
				delta(i, "thinking_delta", "thinking", piece)
			}
			delta(i, "signature_delta", "signature", *b.Signature)
		case b.Text != nil:
			event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
			for _, piece := range Split(*b.Text, h.Chunks) {
				delta(i, "text_delta", "text", piece)
			}
		default:
			event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, b.ID, b.Name))
			for _, piece := range Split(string(b.Input), h.Chunks) {
				delta(i, "input_json_delta", "partial_json", piece)
			}
		}
		event("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, out))
	event("message_stop", `{"type":"message_stop"}`)
}

// anthropicError writes an error in the Messages API's shape.
func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_fake"}`+"\n", typ, msg)
}
