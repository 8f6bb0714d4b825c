package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// responsesRequest is an OpenAI Responses API request (POST /v1/responses) read
// as chat messages: instructions apart (a previous response's instructions are
// not carried into the next one, so they never enter the stored
// conversation), the input items as messages, the function tools.
type responsesRequest struct {
	model        string
	instructions string
	input        []openai.ChatCompletionMessage
	tools        []openai.Tool
	// previousID is previous_response_id: the conversation so far is held by
	// the provider, and rebuilt from the exchanges this tap saw (conversations).
	previousID string
	// reduced says what else the request refers to that the tap cannot read
	// (a Conversations API conversation, item references).
	reduced []string
}

// responsesPart is one content part of a Responses API input message.
type responsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
	Detail   string `json:"detail"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Filename string `json:"filename"`
	// input_audio
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
}

// part turns an input part into a chat content part: input_text, output_text
// and refusal as text; input_image (by URL, data: URL or file id) as image_url;
// input_file (inline file_data, a file id or a file URL) as file; input_audio
// as input_audio. ok is false for unknown parts.
func (p responsesPart) part() (openai.ChatMessagePart, bool) {
	switch p.Type {
	case "input_text", "output_text", "text":
		return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p.Text}, true
	case "refusal":
		return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p.Refusal}, true
	case "input_image":
		if p.ImageURL != "" {
			return shadow.ImagePart(p.ImageURL, p.Detail), true
		}
		return shadow.ImagePart(shadow.FileIDScheme+p.FileID, p.Detail), true
	case "input_file":
		switch {
		case p.FileData != "":
			data := p.FileData
			if !strings.HasPrefix(data, "data:") {
				data = "data:application/pdf;base64," + data // the API takes bare base64 for PDFs
			}
			return shadow.FilePart(p.Filename, data), true
		case p.FileURL != "":
			return shadow.FilePart(p.Filename, p.FileURL), true
		}
		return shadow.FilePart(p.Filename, shadow.FileIDScheme+p.FileID), true
	case "input_audio":
		if p.InputAudio != nil {
			return shadow.AudioPart(p.InputAudio.Data, p.InputAudio.Format), true
		}
	}
	return openai.ChatMessagePart{}, false
}

// responsesContent reads a message item's content: a string or a list of parts.
func responsesContent(raw json.RawMessage) ([]openai.ChatMessagePart, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: s}}, nil
	}
	var parts []responsesPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, err
	}
	out := make([]openai.ChatMessagePart, 0, len(parts))
	for _, p := range parts {
		if cp, ok := p.part(); ok {
			out = append(out, cp)
		}
	}
	return out, nil
}

// parseResponsesRequest reads a Responses API request: input as a string or
// a list of items — messages ({role, content}, content a string or
// input_text / input_image / input_file / input_audio parts), function_call
// items (an assistant turn's tool calls) and function_call_output items (tool
// messages); reasoning items are left out, item references noted as
// unreadable. Function tools become chat tools; built-in tools (web_search,
// file_search, …) have no equivalent a candidate could call and are left out.
func parseResponsesRequest(body []byte) (responsesRequest, error) {
	var r struct {
		Model              string          `json:"model"`
		Instructions       string          `json:"instructions"`
		Input              json.RawMessage `json:"input"`
		PreviousResponseID string          `json:"previous_response_id"`
		Conversation       json.RawMessage `json:"conversation"`
		Tools              []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return responsesRequest{}, fmt.Errorf("responses request: %w", err)
	}
	out := responsesRequest{model: r.Model, instructions: r.Instructions, previousID: r.PreviousResponseID}
	if c := bytes.TrimSpace(r.Conversation); len(c) > 0 && string(c) != "null" {
		out.reduced = append(out.reduced, "conversation "+conversationID(c)+": its items are held by the provider, not in the request")
	}
	for _, t := range r.Tools {
		if t.Type != "function" {
			continue
		}
		var params any = map[string]any{"type": "object"}
		if len(bytes.TrimSpace(t.Parameters)) > 0 && string(t.Parameters) != "null" {
			params = json.RawMessage(t.Parameters)
		}
		out.tools = append(out.tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	var s string
	if err := json.Unmarshal(r.Input, &s); err == nil {
		out.input = append(out.input, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: s})
		return out, nil
	}
	var items []struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	}
	if len(bytes.TrimSpace(r.Input)) > 0 {
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return out, fmt.Errorf("responses request input: %w", err)
		}
	}
	references := 0
	for i, it := range items {
		switch {
		case it.Type == "function_call" || it.Type == "custom_tool_call":
			call := openai.ToolCall{ID: it.CallID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: it.Name, Arguments: it.Arguments}}
			if n := len(out.input); n > 0 && out.input[n-1].Role == openai.ChatMessageRoleAssistant && len(out.input[n-1].ToolCalls) > 0 {
				out.input[n-1].ToolCalls = append(out.input[n-1].ToolCalls, call)
			} else {
				out.input = append(out.input, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{call}})
			}
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
			text, err := textOf(it.Output)
			if err != nil {
				return out, fmt.Errorf("responses request input[%d].output: %w", i, err)
			}
			if strings.TrimSpace(text) == "" {
				text = "(empty result)"
			}
			out.input = append(out.input, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: it.CallID, Content: text})
		case it.Type == "item_reference":
			references++
		case it.Role != "" && (it.Type == "" || it.Type == "message"):
			parts, err := responsesContent(it.Content)
			if err != nil {
				return out, fmt.Errorf("responses request input[%d].content: %w", i, err)
			}
			if len(parts) == 0 {
				continue
			}
			out.input = append(out.input, plainIfText(openai.ChatCompletionMessage{Role: it.Role, MultiContent: parts}))
		}
	}
	if references > 0 {
		out.reduced = append(out.reduced, fmt.Sprintf("%d item_reference input item(s): the items they name are held by the provider", references))
	}
	return out, nil
}

// conversationID reads a conversation parameter: an id string or {"id": …}.
func conversationID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.ID
}

// exchangeRequest builds the stored request: the instructions as the system
// message, then the conversation before previous_response_id as convs rebuilds
// it, then the input. A conversation convs cannot rebuild (nil convs, a
// response this tap never saw or has forgotten) leaves the request
// InputReduced, saying so.
func (r responsesRequest) exchangeRequest(convs *conversations) ExchangeRequest {
	out := ExchangeRequest{Model: r.model, Tools: r.tools}
	if r.instructions != "" {
		out.Messages = append(out.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: r.instructions})
	}
	reduced := r.reduced
	if r.previousID != "" {
		prior, ok := convs.rebuild(r.previousID)
		if !ok {
			reduced = append([]string{"previous_response_id " + r.previousID +
				": the conversation before it was not seen by this tap (or no longer held); candidates got only this request's input"}, reduced...)
		}
		out.Messages = append(out.Messages, prior...)
	}
	out.Messages = append(out.Messages, r.input...)
	out.InputReduced = strings.Join(reduced, "; ")
	return out
}
