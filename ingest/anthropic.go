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

// anthropicBlock is one content block of a request or answer.
type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// image, document
	Source *struct {
		Type      string          `json:"type"` // base64, url, text, content, file
		MediaType string          `json:"media_type"`
		Data      string          `json:"data"`
		URL       string          `json:"url"`
		FileID    string          `json:"file_id"`
		Content   json.RawMessage `json:"content"` // a "content" source: text blocks
	} `json:"source"`
	Title string `json:"title"`
	// tool_use (request and answer)
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// thinking
	Thinking string `json:"thinking"`
}

// anthropicBlocks reads a content value: a string (one text block) or a list of blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// blocksText joins the text of text blocks (a tool result's content, a
// "content" document source).
func blocksText(raw json.RawMessage) string {
	blocks, _ := anthropicBlocks(raw)
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
		return text(blocksText(src.Content))
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
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
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
		blocks, err := anthropicBlocks(m.Content)
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
				text := blocksText(b.Content)
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
