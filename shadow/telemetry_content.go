package shadow

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultMaxContentBytes caps each captured content attribute of a span
// (gen_ai.input.messages, gen_ai.output.messages): 16 KiB of JSON. Collectors
// and backends limit attribute sizes too (the OpenTelemetry SDK's
// attribute_value_length_limit, Jaeger, Tempo); past this a prompt is cut, not
// dropped, and says how long it was.
const DefaultMaxContentBytes = 16 << 10

// contentPart is one part of a message in the GenAI conventions' message
// shape (semconv v1.41.0, gen_ai.input.messages): text, a blob or uri for
// media (content omitted: type, size and hash only), tool_call and
// tool_call_response.
type contentPart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	Modality  string `json:"modality,omitempty"`
	MIMEType  string `json:"mime_type,omitempty"`
	URI       string `json:"uri,omitempty"`
	SizeBytes *int   `json:"size_bytes,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
}

type contentMessage struct {
	Role         string        `json:"role"`
	Parts        []contentPart `json:"parts"`
	FinishReason string        `json:"finish_reason,omitempty"`
}

// ContentJSON renders msgs as the GenAI conventions' messages JSON
// ([{"role":"user","parts":[{"type":"text","content":"…"}]}]) for a span:
//
//   - text parts show their text (a multi-part message shows each part);
//   - a media part is {"type":"blob","modality":"image","mime_type":"image/png",
//     "size_bytes":146000,"sha256":"…"} — never its bytes — or {"type":"uri",…}
//     for a remote URL;
//   - tool calls are tool_call parts, a tool message a tool_call_response.
//
// finishReason, when set, goes on every message (an answer). The result is at
// most maxBytes (DefaultMaxContentBytes when ≤ 0) and always valid JSON: past
// the cap the longest texts are cut alike, each ending in "…[truncated: kept
// K of N bytes]" with N its original length; when even empty texts do not fit,
// the earliest messages are left out and the first kept part says how many.
func ContentJSON(msgs []openai.ChatCompletionMessage, finishReason string, maxBytes int) string {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxContentBytes
	}
	out := make([]contentMessage, len(msgs))
	for i, m := range msgs {
		out[i] = contentMessage{Role: m.Role, Parts: messageParts(m), FinishReason: finishReason}
	}
	b, _ := json.Marshal(out) // plain structs: cannot fail
	if len(b) <= maxBytes {
		return string(b)
	}
	return truncateContent(out, maxBytes, len(b))
}

func messageParts(m openai.ChatCompletionMessage) []contentPart {
	var parts []contentPart
	if m.Role == openai.ChatMessageRoleTool {
		return []contentPart{{Type: "tool_call_response", ID: m.ToolCallID, Response: MessageText(m)}}
	}
	if m.Content != "" || len(m.MultiContent) == 0 && len(m.ToolCalls) == 0 {
		parts = append(parts, contentPart{Type: "text", Content: m.Content})
	}
	for _, p := range m.MultiContent {
		md, ok := PartMedia(p)
		switch {
		case !ok:
			parts = append(parts, contentPart{Type: "text", Content: p.Text})
		case md.URL != "":
			parts = append(parts, contentPart{Type: "uri", Modality: md.Modality, URI: md.URL})
		default:
			n := md.Bytes
			parts = append(parts, contentPart{Type: "blob", Modality: md.Modality, MIMEType: md.MIME, SizeBytes: &n, SHA256: md.SHA256})
		}
	}
	for _, tc := range m.ToolCalls {
		var args any = tc.Function.Arguments
		if json.Valid([]byte(tc.Function.Arguments)) {
			args = json.RawMessage(tc.Function.Arguments)
		}
		parts = append(parts, contentPart{Type: "tool_call", ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	return parts
}

// truncMarker ends a text cut to kept of its total bytes.
func truncMarker(kept, total int) string {
	return fmt.Sprintf("…[truncated: kept %d of %d bytes]", kept, total)
}

// cutText returns s cut to at most keep bytes on a rune boundary, with the
// marker; s itself when it is no longer than keep.
func cutText(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	k := keep
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + truncMarker(k, len(s))
}

// capTexts returns msgs with every text (content, response) cut to keep bytes.
func capTexts(msgs []contentMessage, keep int) []contentMessage {
	out := make([]contentMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Parts = make([]contentPart, len(m.Parts))
		for j, p := range m.Parts {
			p.Content, p.Response = cutText(p.Content, keep), cutText(p.Response, keep)
			out[i].Parts[j] = p
		}
	}
	return out
}

// truncateContent is ContentJSON past its cap: the largest per-text keep
// (binary search) whose JSON fits, else earlier messages dropped; when not
// even the last message fits, one text part saying how long the JSON was
// (total bytes).
func truncateContent(msgs []contentMessage, maxBytes, total int) string {
	fits := func(ms []contentMessage, keep int) ([]byte, bool) {
		b, _ := json.Marshal(capTexts(ms, keep))
		return b, len(b) <= maxBytes
	}
	for dropped := 0; dropped < len(msgs); dropped++ {
		ms := msgs[dropped:]
		if dropped > 0 {
			ms = append([]contentMessage{}, ms...)
			ms[0].Parts = append([]contentPart{{Type: "text", Content: fmt.Sprintf("[truncated: %d earlier messages left out]", dropped)}}, ms[0].Parts...)
		}
		best, ok := fits(ms, 0)
		if !ok {
			continue
		}
		lo, hi := 0, maxBytes
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if b, ok := fits(ms, mid); ok {
				lo, best = mid, b
			} else {
				hi = mid - 1
			}
		}
		return string(best)
	}
	b, _ := json.Marshal([]contentMessage{{Role: msgs[len(msgs)-1].Role, Parts: []contentPart{{Type: "text", Content: truncMarker(0, total)}}}})
	return string(b)
}
