package shadow

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// TestContentJSON: span content is the GenAI conventions' message shape, the
// text of every part shown, media by type, size and hash, tool calls as
// tool_call parts; past the cap it stays valid JSON, each long text cut alike
// with a marker and its original length, multi-byte characters never split.
func TestContentJSON(t *testing.T) {
	long := strings.Repeat("é", 50_000) // 100,000 bytes
	tests := []struct {
		name string
		msgs []openai.ChatCompletionMessage
		max  int
		want []string // substrings of the result
	}{
		{"parts and tool calls", []openai.ChatCompletionMessage{
			{Role: "user", MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "Look:"}, ImagePart("https://example.com/a.png", "")}},
			{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c1", Function: openai.FunctionCall{Name: "f", Arguments: `{"x":1}`}}}},
			{Role: "tool", ToolCallID: "c1", Content: "42"},
		}, 0, []string{`{"type":"text","content":"Look:"}`, `{"type":"uri","modality":"image","uri":"https://example.com/a.png"}`,
			`{"type":"tool_call","id":"c1","name":"f","arguments":{"x":1}}`, `{"type":"tool_call_response","id":"c1","response":"42"}`}},
		{"long texts cut alike", []openai.ChatCompletionMessage{
			{Role: "system", Content: "short"}, {Role: "user", Content: long}, {Role: "assistant", Content: long},
		}, 4096, []string{`"content":"short"`, "…[truncated: kept ", " of 100000 bytes]"}},
		{"too many messages for the cap", func() []openai.ChatCompletionMessage {
			var ms []openai.ChatCompletionMessage
			for range 400 {
				ms = append(ms, openai.ChatCompletionMessage{Role: "user", Content: "hello there"})
			}
			return ms
		}(), 2048, []string{"earlier messages left out]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ContentJSON(tt.msgs, "", tt.max)
			limit := tt.max
			if limit == 0 {
				limit = DefaultMaxContentBytes
			}
			if len(got) > limit || !json.Valid([]byte(got)) || !utf8.ValidString(got) {
				t.Fatalf("%d bytes (cap %d), valid JSON %v, valid UTF-8 %v", len(got), limit, json.Valid([]byte(got)), utf8.ValidString(got))
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %s in %.600s", w, got)
				}
			}
		})
	}
	// Both long texts keep the same share of the cap, and most of it.
	var msgs []struct {
		Parts []struct {
			Content string `json:"content"`
		} `json:"parts"`
	}
	_ = json.Unmarshal([]byte(ContentJSON(tests[1].msgs, "", 4096)), &msgs)
	if a, b := len(msgs[1].Parts[0].Content), len(msgs[2].Parts[0].Content); a != b || a < 1500 {
		t.Errorf("kept %d and %d bytes of the two long texts", a, b)
	}
}
