package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Anthropic Messages API (POST /v1/messages, docs.anthropic.com/en/api/messages)
// in the tap's terms: the request becomes chat messages (system prompt,
// messages with their text, image and document blocks, tool calls and tool
// results) and tool definitions, so candidates get what the incumbent got; the
// answer, whole or streamed as named SSE events, becomes an answer like a chat
// completion's.

// anthropicBlock is one content block of a request (blockOf) or an answer
// (decoded from its JSON).
type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// image, document (requests)
	Source *anthropicSource `json:"-"`
	Title  string           `json:"-"`
	// tool_use (request and answer)
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result (requests)
	ToolUseID string `json:"-"`
	content   any    // its content: a string or text blocks
	IsError   bool   `json:"-"`
	// thinking
	Thinking string `json:"thinking"`
}

// anthropicSource is an image or document block's source.
type anthropicSource struct {
	Type      string // base64, url, text, content, file
	MediaType string
	Data      string
	URL       string
	FileID    string
	content   any // a "content" source: text blocks
}

// anthropicContent reads a decoded content value (a request's message content,
// a tool result's content, a "content" document source, the system prompt): a
// string is one text block, a list of objects its blocks. The request is
// decoded once into untyped values, so a large inline image is scanned twice,
// not four times.
func anthropicContent(v any) ([]anthropicBlock, error) {
	switch c := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []anthropicBlock{{Type: "text", Text: c}}, nil
	case []any:
		out := make([]anthropicBlock, 0, len(c))
		for i, x := range c {
			m, ok := x.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("block %d is not an object", i)
			}
			out = append(out, blockOf(m))
		}
		return out, nil
	}
	return nil, fmt.Errorf("content is a %T, want a string or a list of blocks", v)
}

// blockOf reads one decoded block; a tool_use block's input is written back as
// JSON (its keys sorted).
func blockOf(m map[string]any) anthropicBlock {
	b := anthropicBlock{Type: str(m, "type"), Text: str(m, "text"), Title: str(m, "title"), ID: str(m, "id"), Name: str(m, "name"),
		ToolUseID: str(m, "tool_use_id"), Thinking: str(m, "thinking"), content: m["content"]}
	b.IsError, _ = m["is_error"].(bool)
	if in, ok := m["input"]; ok {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(in) // decoded JSON values: cannot fail
		b.Input = bytes.TrimSpace(buf.Bytes())
	}
	if src, ok := m["source"].(map[string]any); ok {
		b.Source = &anthropicSource{Type: str(src, "type"), MediaType: str(src, "media_type"), Data: str(src, "data"),
			URL: str(src, "url"), FileID: str(src, "file_id"), content: src["content"]}
	}
	return b
}

// str reads a string field of a decoded JSON object ("" when absent or not a string).
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// blocksText joins the text of text blocks of a decoded content value.
func blocksText(v any) string {
	blocks, _ := anthropicContent(v)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// mediaPart turns an image or document block into a content part: images by
// base64 data (a data: URL) or URL; PDF documents as file parts; plain-text
// and content documents as text. A file id (the Files API) is kept as such and
// never sent to a candidate (shadow.Media.Transferable).
func (b anthropicBlock) mediaPart() (openai.ChatMessagePart, bool) {
	src := b.Source
	if src == nil {
		return openai.ChatMessagePart{}, false
	}
	text := func(s string) (openai.ChatMessagePart, bool) {
		if b.Title != "" {
			s = b.Title + ":\n" + s
		}
		return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: s}, true
	}
	switch {
	case b.Type == "image" && src.Type == "base64":
		return shadow.ImagePart("data:"+src.MediaType+";base64,"+src.Data, ""), true
	case b.Type == "image" && src.Type == "url":
		return shadow.ImagePart(src.URL, ""), true
	case b.Type == "image" && src.Type == "file":
		return shadow.ImagePart(shadow.FileIDScheme+src.FileID, ""), true
	case src.Type == "base64":
		return shadow.FilePart(b.Title, "data:"+src.MediaType+";base64,"+src.Data), true
	case src.Type == "text":
		return text(src.Data)
	case src.Type == "content":
		return text(blocksText(src.content))
	case src.Type == "url":
		return shadow.FilePart(b.Title, src.URL), true
	case src.Type == "file":
		return shadow.FilePart(b.Title, shadow.FileIDScheme+src.FileID), true
	}
	return openai.ChatMessagePart{}, false
}

// parseAnthropicRequest reads a Messages API request: system (a string or text
// blocks) becomes the system message; each message's text, image and document
// blocks its content parts; an assistant's tool_use blocks its tool calls; a
// user's tool_result blocks tool messages (before the rest of that turn);
// thinking blocks of earlier turns are left out. Custom tools become function
// tools; Anthropic's server tools (web search, code execution, …) have no
// equivalent a candidate could call and are left out.
func parseAnthropicRequest(body []byte) (ExchangeRequest, error) {
	var r struct {
		Model    string `json:"model"`
		System   any    `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return ExchangeRequest{}, fmt.Errorf("messages request: %w", err)
	}
	out := ExchangeRequest{Model: r.Model}
	if sys := blocksText(r.System); sys != "" {
		out.Messages = append(out.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: sys})
	}
	for i, m := range r.Messages {
		blocks, err := anthropicContent(m.Content)
		if err != nil {
			return out, fmt.Errorf("messages request: messages[%d].content: %w", i, err)
		}
		msg := openai.ChatCompletionMessage{Role: m.Role}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				msg.MultiContent = append(msg.MultiContent, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: b.Text})
			case "image", "document":
				if p, ok := b.mediaPart(); ok {
					msg.MultiContent = append(msg.MultiContent, p)
				}
			case "tool_use":
				msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: b.ID, Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: b.Name, Arguments: compactJSON(b.Input)}})
			case "tool_result":
				text := blocksText(b.content)
				if b.IsError {
					text = "error: " + text
				}
				if strings.TrimSpace(text) == "" {
					text = "(empty result)"
				}
				out.Messages = append(out.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: b.ToolUseID, Content: text})
			}
		}
		if len(msg.MultiContent) == 0 && len(msg.ToolCalls) == 0 {
			continue // a turn of tool results only, or of thinking only
		}
		out.Messages = append(out.Messages, plainIfText(msg))
	}
	for _, t := range r.Tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool (web_search_…, bash_…, text_editor_…)
		}
		var params any = map[string]any{"type": "object"}
		if len(bytes.TrimSpace(t.InputSchema)) > 0 {
			params = json.RawMessage(t.InputSchema)
		}
		out.Tools = append(out.Tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out, nil
}

// plainIfText turns a message whose parts are all text into a plain one
// (Content), as chat completions clients mostly send it.
func plainIfText(m openai.ChatCompletionMessage) openai.ChatCompletionMessage {
	texts := make([]string, 0, len(m.MultiContent))
	for _, p := range m.MultiContent {
		if p.Type != openai.ChatMessagePartTypeText {
			return m
		}
		texts = append(texts, p.Text)
	}
	m.MultiContent, m.Content = nil, strings.Join(texts, "\n")
	return m
}

// compactJSON is raw without insignificant space ("{}" when empty).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// anthropicStopReason writes a Messages API stop_reason in the chat
// completions vocabulary: end_turn and stop_sequence are "stop", max_tokens and
// model_context_window_exceeded "length", tool_use "tool_calls", refusal
// "content_filter"; others (pause_turn) are kept.
func anthropicStopReason(r string) string {
	switch r {
	case "end_turn", "stop_sequence":
		return store.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return store.FinishLength
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return store.FinishContentFilter
	}
	return r
}

// anthropicMessage is a Messages API answer (and message_start's message).
type anthropicMessage struct {
	ID         string           `json:"id"`
	Model      string           `json:"model"`
	Content    []anthropicBlock `json:"content"`
	StopReason string           `json:"stop_reason"`
	Usage      json.RawMessage  `json:"usage"`
	Error      *apiError        `json:"error"`
}

// anthropicAnswer accumulates an answer's blocks in order: text as the
// content, thinking as the reasoning, tool_use as the tool calls.
type anthropicAnswer struct {
	a      answer
	blocks map[int]*anthropicBlock // streamed blocks by index
	order  []int
	args   map[int]*strings.Builder // a tool_use block's input_json_delta fragments
	usage  map[string]json.RawMessage
	stop   string
}

func (aa *anthropicAnswer) choice() Choice {
	c := Choice{Index: 0, FinishReason: anthropicStopReason(aa.stop)}
	var content, reasoning strings.Builder
	for _, i := range aa.order {
		b := aa.blocks[i]
		switch b.Type {
		case "text":
			content.WriteString(b.Text)
		case "thinking":
			if reasoning.Len() > 0 {
				reasoning.WriteString("\n\n")
			}
			reasoning.WriteString(b.Thinking)
		case "tool_use", "server_tool_use":
			args := compactJSON(b.Input)
			if sb := aa.args[i]; sb != nil && sb.Len() > 0 {
				args = compactJSON(json.RawMessage(sb.String())) // kept as it came when cut off
			}
			c.ToolCalls = append(c.ToolCalls, ToolCall{Index: len(c.ToolCalls), ID: b.ID, Type: "function", Name: b.Name, Arguments: args})
		}
	}
	c.Content, c.Reasoning = content.String(), reasoning.String()
	return c
}

// addUsage overlays a usage object's counts on those read so far: message_start
// carries the input counts, message_delta the cumulative output (and, on newer
// API versions, the input counts again).
func (aa *anthropicAnswer) addUsage(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if aa.usage == nil {
		aa.usage = map[string]json.RawMessage{}
	}
	for k, v := range m {
		if string(v) != "null" {
			aa.usage[k] = v
		}
	}
	return nil
}

func (aa *anthropicAnswer) finish() (answer, error) {
	a := aa.a
	a.choices = []Choice{aa.choice()}
	if aa.usage != nil {
		raw, _ := json.Marshal(aa.usage) // raw JSON values: cannot fail
		u, ok, err := usageOf(raw)
		if err != nil {
			return a, err
		}
		a.usage, a.hasUsage = u, ok
	}
	return a, nil
}

func (aa *anthropicAnswer) addBlock(i int, b anthropicBlock) {
	if aa.blocks == nil {
		aa.blocks, aa.args = map[int]*anthropicBlock{}, map[int]*strings.Builder{}
	}
	if _, ok := aa.blocks[i]; !ok {
		aa.order = append(aa.order, i)
	}
	aa.blocks[i] = &b
}

// parseAnthropicBody reads a whole Messages API answer.
func parseAnthropicBody(body []byte) (answer, error) {
	var m anthropicMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return answer{}, fmt.Errorf("messages answer: %w", err)
	}
	aa := anthropicAnswer{a: answer{id: m.ID, model: m.Model, errMsg: m.Error.text()}, stop: m.StopReason}
	for i, b := range m.Content {
		aa.addBlock(i, b)
	}
	if err := aa.addUsage(m.Usage); err != nil {
		return aa.a, fmt.Errorf("messages answer: %w", err)
	}
	a, err := aa.finish()
	if err != nil {
		return a, fmt.Errorf("messages answer: %w", err)
	}
	return a, nil
}

// parseAnthropicStream reads a streamed Messages API answer, its named events
// by the type each event's data carries: message_start (id, model, input
// usage), content_block_start / content_block_delta (text_delta,
// input_json_delta of a tool_use block, thinking_delta; signature_delta and
// citations_delta are not kept) / content_block_stop, message_delta (stop
// reason, cumulative usage), message_stop, ping and error.
func parseAnthropicStream(body []byte, partial bool) (answer, error) {
	var aa anthropicAnswer
	err := sseEvents(body, func(d []byte, last bool) error {
		var ev struct {
			Type         string            `json:"type"`
			Message      *anthropicMessage `json:"message"`
			Index        int               `json:"index"`
			ContentBlock *anthropicBlock   `json:"content_block"`
			Delta        *struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				Thinking    string `json:"thinking"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage json.RawMessage `json:"usage"`
			Error *apiError       `json:"error"`
		}
		if err := json.Unmarshal(d, &ev); err != nil {
			if partial && last {
				return nil // the event the answer was cut off in
			}
			return fmt.Errorf("messages stream event: %w", err)
		}
		switch ev.Type {
		case "message_start":
			if m := ev.Message; m != nil {
				aa.a.id, aa.a.model = m.ID, m.Model
				if err := aa.addUsage(m.Usage); err != nil {
					return fmt.Errorf("messages stream: %w", err)
				}
			}
		case "content_block_start":
			if ev.ContentBlock != nil {
				aa.addBlock(ev.Index, *ev.ContentBlock)
			}
		case "content_block_delta":
			b := aa.blocks[ev.Index]
			if b == nil || ev.Delta == nil {
				return nil // a delta without its start: nothing to add it to
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.Text += ev.Delta.Text
			case "thinking_delta":
				b.Thinking += ev.Delta.Thinking
			case "input_json_delta":
				if aa.args[ev.Index] == nil {
					aa.args[ev.Index] = &strings.Builder{}
				}
				aa.args[ev.Index].WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				aa.stop = ev.Delta.StopReason
			}
			if err := aa.addUsage(ev.Usage); err != nil {
				return fmt.Errorf("messages stream: %w", err)
			}
		case "error":
			aa.a.errMsg = ev.Error.text()
		}
		return nil
	})
	a, ferr := aa.finish()
	if err == nil && ferr != nil {
		err = fmt.Errorf("messages stream: %w", ferr)
	}
	return a, err
}
