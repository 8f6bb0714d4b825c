package shadow

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Input modalities: what a worker takes (WorkerConfig.InputModalities) and what
// a request's content parts carry.
const (
	ModalityText  = "text"
	ModalityImage = "image" // image_url parts: a data: URL or an http(s) URL
	ModalityAudio = "audio" // input_audio parts
	ModalityFile  = "file"  // file parts: documents such as PDFs, as data: URLs
)

// Modalities lists every modality a worker may declare, in a fixed order.
func Modalities() []string {
	return []string{ModalityText, ModalityImage, ModalityAudio, ModalityFile}
}

// Content-part types of the chat completions API that go-openai has no field
// for. In memory such a part is an openai.ChatMessagePart whose ImageURL.URL
// carries the data as a data: URL (AudioPart, FilePart); MarshalMessages and the
// pool's transport write them in the API's own shapes:
//
//	{"type":"input_audio","input_audio":{"data":"<base64>","format":"wav"}}
//	{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,…"}}
const (
	PartTypeInputAudio openai.ChatMessagePartType = "input_audio"
	PartTypeFile       openai.ChatMessagePartType = "file"
)

// FileIDScheme prefixes the URL of a part that names a file in the incumbent
// provider's own file store ({"file":{"file_id":"file-abc"}}, Anthropic's
// {"source":{"type":"file","file_id":…}}) instead of carrying it: no candidate
// can read it, so it is never sent (see Transferable).
const FileIDScheme = "file-id:"

// ImagePart is an image_url part (url: a data: URL or an http(s) URL; detail
// "", "low", "high" or "auto").
func ImagePart(url, detail string) openai.ChatMessagePart {
	return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
		ImageURL: &openai.ChatMessageImageURL{URL: url, Detail: openai.ImageURLDetail(detail)}}
}

// AudioPart is an input_audio part: base64 data in format ("wav", "mp3", …).
func AudioPart(b64, format string) openai.ChatMessagePart {
	if format == "" {
		format = "wav"
	}
	return openai.ChatMessagePart{Type: PartTypeInputAudio,
		ImageURL: &openai.ChatMessageImageURL{URL: "data:audio/" + format + ";base64," + b64}}
}

// FilePart is a file part: dataURL is the file as a data: URL
// ("data:application/pdf;base64,…"), an http(s) URL, or else a provider file
// id (stored under FileIDScheme). Only inline files are ever sent to a
// candidate (Media.Transferable); the others are kept to say what was asked.
func FilePart(filename, dataURL string) openai.ChatMessagePart {
	if !strings.HasPrefix(dataURL, "data:") && !strings.HasPrefix(dataURL, FileIDScheme) &&
		!strings.HasPrefix(dataURL, "http://") && !strings.HasPrefix(dataURL, "https://") {
		dataURL = FileIDScheme + dataURL
	}
	return openai.ChatMessagePart{Type: PartTypeFile,
		ImageURL: &openai.ChatMessageImageURL{URL: dataURL, Detail: openai.ImageURLDetail(filename)}}
}

// Media describes one media part of a request: what is shown instead of its
// bytes in spans and stored steps, and how a part is recognised across calls.
type Media struct {
	Modality string `json:"modality"`           // ModalityImage, ModalityAudio or ModalityFile
	MIME     string `json:"mime_type"`          // from the data: URL ("image/png"); "" for a remote URL
	Bytes    int    `json:"bytes"`              // decoded size of inline (data: URL) data, bytes; 0 for a remote URL
	SHA256   string `json:"sha256"`             // hex SHA-256 of the part's URL text (the data: URL or the remote URL)
	URL      string `json:"url,omitempty"`      // the remote URL (http, https) or provider file id; "" for inline data
	Filename string `json:"filename,omitempty"` // a file part's filename
}

// Label is a short description: "image image/png, 146,000 bytes, sha256
// 3f9a1c2b4d5e" or "image https://example.com/cat.png".
func (m Media) Label() string {
	if m.URL != "" {
		return m.Modality + " " + m.URL
	}
	s := fmt.Sprintf("%s %s, %s bytes, sha256 %s", m.Modality, m.MIME, groupDigits(m.Bytes), m.SHA256[:min(12, len(m.SHA256))])
	if m.Filename != "" {
		s += ", " + m.Filename
	}
	return s
}

// groupDigits writes n with thousands separators (146000 → "146,000").
func groupDigits(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[0] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PartMedia describes a media part (image_url, input_audio, file); ok is false
// for text and unknown parts.
func PartMedia(p openai.ChatMessagePart) (Media, bool) {
	var modality string
	switch p.Type {
	case openai.ChatMessagePartTypeImageURL:
		modality = ModalityImage
	case PartTypeInputAudio:
		modality = ModalityAudio
	case PartTypeFile:
		modality = ModalityFile
	default:
		return Media{}, false
	}
	if p.ImageURL == nil {
		return Media{}, false
	}
	u := p.ImageURL.URL
	sum := sha256.Sum256([]byte(u))
	m := Media{Modality: modality, SHA256: hex.EncodeToString(sum[:])}
	if modality == ModalityFile {
		m.Filename = string(p.ImageURL.Detail)
	}
	mime, b64, ok := splitDataURL(u)
	if !ok {
		m.URL = u
		return m, true
	}
	m.MIME, m.Bytes = mime, base64Len(b64)
	return m, true
}

// splitDataURL splits "data:<mime>;base64,<data>" (RFC 2397).
func splitDataURL(u string) (mime, b64 string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, _, _ = strings.Cut(head, ";")
	if !strings.Contains(head, ";base64") {
		return mime, "", true // percent-encoded text data: its size is not decoded here
	}
	return mime, data, true
}

// base64Len is the decoded size of standard or URL base64 text s, padding and
// line breaks discounted.
func base64Len(s string) int {
	n := 0
	for i := range len(s) {
		switch s[i] {
		case '=', '\n', '\r', ' ':
		default:
			n++
		}
	}
	return n * 3 / 4
}

// RequestMedia lists the media parts of msgs, each distinct part (by SHA256)
// once, in order of appearance.
func RequestMedia(msgs []openai.ChatCompletionMessage) []Media {
	var out []Media
	for _, m := range msgs {
		for _, p := range m.MultiContent {
			md, ok := PartMedia(p)
			if ok && !slices.ContainsFunc(out, func(x Media) bool { return x.SHA256 == md.SHA256 }) {
				out = append(out, md)
			}
		}
	}
	return out
}

// MediaParts returns the media parts of msgs, each distinct part once, in
// order of appearance: what a workflow step gets with its subtask.
func MediaParts(msgs []openai.ChatCompletionMessage) []openai.ChatMessagePart {
	var out []openai.ChatMessagePart
	seen := map[string]bool{} // by URL text: the same bytes, the same part
	for _, m := range msgs {
		for _, p := range m.MultiContent {
			if isMediaPart(p) && !seen[p.ImageURL.URL] {
				seen[p.ImageURL.URL] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// isMediaPart reports whether p is an image_url, input_audio or file part
// with its URL set (PartMedia without hashing it).
func isMediaPart(p openai.ChatMessagePart) bool {
	switch p.Type {
	case openai.ChatMessagePartTypeImageURL, PartTypeInputAudio, PartTypeFile:
		return p.ImageURL != nil
	}
	return false
}

// hasMedia reports whether any message carries a media part.
func hasMedia(msgs []openai.ChatCompletionMessage) bool {
	for _, m := range msgs {
		if slices.ContainsFunc(m.MultiContent, isMediaPart) {
			return true
		}
	}
	return false
}

// withParts returns the user turn text followed by parts: a multi-part message
// when there are parts, a plain one otherwise.
func withParts(role, text string, parts []openai.ChatMessagePart) openai.ChatCompletionMessage {
	if len(parts) == 0 {
		return openai.ChatCompletionMessage{Role: role, Content: text}
	}
	mc := append([]openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: text}}, parts...)
	return openai.ChatCompletionMessage{Role: role, MultiContent: mc}
}

// Transferable reports whether a candidate can be sent the part: not when it
// names a file in the incumbent provider's file store (FileIDScheme), nor a
// file (document) by remote URL, which the chat completions API has no field
// for; images by http(s) URL are sent as they are.
func (m Media) Transferable() bool {
	if strings.HasPrefix(m.URL, FileIDScheme) {
		return false
	}
	return m.Modality != ModalityFile || m.URL == ""
}

// Accepts reports whether the worker takes input of modality m: text always;
// image, audio and file only when InputModalities names them.
func (w WorkerConfig) Accepts(m string) bool {
	return m == ModalityText || slices.Contains(w.InputModalities, m)
}

// withheldText is the text sent in place of a media part a worker cannot take.
func withheldText(md Media) string {
	why := "this model does not take " + md.Modality + " input"
	if !md.Transferable() {
		why = "it is held by the incumbent's provider and cannot be sent"
	}
	return fmt.Sprintf("[%s not shown: %s; %s]", article(md.Modality), md.Label(), why)
}

func article(modality string) string {
	switch modality {
	case ModalityImage:
		return "an image"
	case ModalityAudio:
		return "an audio clip"
	}
	return "a file"
}

// fitMessages returns msgs as worker w can take them: every media part of a
// modality w does not accept, and every part no candidate can be sent
// (Media.Transferable), replaced by a text part saying what was left out
// (withheldText); a message left with text parts only becomes a plain one.
// sent and withheld describe the media parts kept and left out. msgs without
// media are returned as they are.
func fitMessages(msgs []openai.ChatCompletionMessage, w WorkerConfig) (out []openai.ChatCompletionMessage, sent, withheld []Media) {
	if !hasMedia(msgs) {
		return msgs, nil, nil
	}
	out = make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m
		if len(m.MultiContent) == 0 {
			continue
		}
		parts := make([]openai.ChatMessagePart, 0, len(m.MultiContent))
		onlyText := true
		for _, p := range m.MultiContent {
			md, ok := PartMedia(p)
			switch {
			case !ok:
				onlyText = onlyText && p.Type == openai.ChatMessagePartTypeText
				parts = append(parts, p)
			case w.Accepts(md.Modality) && md.Transferable():
				onlyText = false
				sent = append(sent, md)
				parts = append(parts, p)
			default:
				withheld = append(withheld, md)
				parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: withheldText(md)})
			}
		}
		if onlyText {
			texts := make([]string, len(parts))
			for j, p := range parts {
				texts[j] = p.Text
			}
			out[i].MultiContent, out[i].Content = nil, strings.Join(texts, "\n")
			if out[i].Content == "" {
				out[i].Content = " "
			}
			continue
		}
		out[i].MultiContent = parts
	}
	return out, sent, withheld
}

// mediaRef is the URL a stored or traced copy of a media part carries instead
// of its data: "media:<mime>;bytes=<n>;sha256=<hex>" (a remote URL is kept).
func mediaRef(md Media) string {
	if md.URL != "" {
		return md.URL
	}
	return fmt.Sprintf("media:%s;bytes=%d;sha256=%s", md.MIME, md.Bytes, md.SHA256)
}

// RedactMedia returns msgs with the data of every inline media part replaced by
// a reference naming its type, size and SHA-256 (mediaRef): what a stored step
// keeps of the messages it sent (the request row keeps the data once). msgs
// without media are returned as they are.
func RedactMedia(msgs []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	if !hasMedia(msgs) {
		return msgs
	}
	out := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m
		if len(m.MultiContent) == 0 {
			continue
		}
		parts := slices.Clone(m.MultiContent)
		for j, p := range parts {
			if md, ok := PartMedia(p); ok {
				u := *p.ImageURL
				u.URL = mediaRef(md)
				parts[j].ImageURL = &u
			}
		}
		out[i].MultiContent = parts
	}
	return out
}

// wirePart is a content part in the chat completions API's JSON.
type wirePart struct {
	Type       string                      `json:"type"`
	Text       string                      `json:"text,omitempty"`
	ImageURL   *openai.ChatMessageImageURL `json:"image_url,omitempty"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio,omitempty"`
	File *struct {
		Filename string `json:"filename,omitempty"`
		FileData string `json:"file_data,omitempty"`
		FileID   string `json:"file_id,omitempty"`
	} `json:"file,omitempty"`
}

// toWire writes one in-memory part in the API's shape.
func toWire(p openai.ChatMessagePart) wirePart {
	w := wirePart{Type: string(p.Type), Text: p.Text, ImageURL: p.ImageURL}
	if p.ImageURL == nil {
		return w
	}
	switch p.Type {
	case PartTypeInputAudio:
		w.ImageURL = nil
		mime, b64, _ := splitDataURL(p.ImageURL.URL)
		w.InputAudio = &struct {
			Data   string `json:"data"`
			Format string `json:"format"`
		}{Data: b64, Format: strings.TrimPrefix(mime, "audio/")}
	case PartTypeFile:
		w.ImageURL = nil
		f := &struct {
			Filename string `json:"filename,omitempty"`
			FileData string `json:"file_data,omitempty"`
			FileID   string `json:"file_id,omitempty"`
		}{Filename: string(p.ImageURL.Detail)}
		if id, ok := strings.CutPrefix(p.ImageURL.URL, FileIDScheme); ok {
			f.FileID = id
		} else {
			f.FileData = p.ImageURL.URL
		}
		w.File = f
	}
	return w
}

// carriesExtraParts reports whether a message has parts go-openai cannot
// encode itself (input_audio, file).
func carriesExtraParts(m openai.ChatCompletionMessage) bool {
	for _, p := range m.MultiContent {
		if p.Type == PartTypeInputAudio || p.Type == PartTypeFile {
			return true
		}
	}
	return false
}

// MarshalMessages encodes msgs as the chat completions API's messages array,
// input_audio and file parts in their own shapes (go-openai encodes the rest).
func MarshalMessages(msgs []openai.ChatCompletionMessage) ([]byte, error) {
	if !slices.ContainsFunc(msgs, carriesExtraParts) {
		return json.Marshal(msgs)
	}
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		b, err := marshalMessage(m)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return json.Marshal(out)
}

func marshalMessage(m openai.ChatCompletionMessage) ([]byte, error) {
	if !carriesExtraParts(m) {
		return json.Marshal(m)
	}
	wire := make([]wirePart, len(m.MultiContent))
	for i, p := range m.MultiContent {
		wire[i] = toWire(p)
	}
	// go-openai's own multi-part shape, with the parts in the API's shapes.
	return json.Marshal(struct {
		Role             string               `json:"role"`
		Content          []wirePart           `json:"content"`
		Refusal          string               `json:"refusal,omitempty"`
		Name             string               `json:"name,omitempty"`
		ReasoningContent string               `json:"reasoning_content,omitempty"`
		FunctionCall     *openai.FunctionCall `json:"function_call,omitempty"`
		ToolCalls        []openai.ToolCall    `json:"tool_calls,omitempty"`
		ToolCallID       string               `json:"tool_call_id,omitempty"`
	}{m.Role, wire, m.Refusal, m.Name, m.ReasoningContent, m.FunctionCall, m.ToolCalls, m.ToolCallID})
}

// WireMessage is a chat message as the API's JSON has it; Content is a
// string, an array of parts or null, decoded in the same pass (as any) so a
// large inline image is scanned once, not once per decoding attempt. Decode
// a messages array into []WireMessage as part of a larger value and convert
// it with FromWire.
type WireMessage struct {
	Role             string               `json:"role"`
	Content          any                  `json:"content"`
	Refusal          string               `json:"refusal"`
	Name             string               `json:"name"`
	ReasoningContent string               `json:"reasoning_content"`
	FunctionCall     *openai.FunctionCall `json:"function_call"`
	ToolCalls        []openai.ToolCall    `json:"tool_calls"`
	ToolCallID       string               `json:"tool_call_id"`
}

// str reads a string field of a decoded JSON object ("" when absent or not a string).
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// partOf reads one decoded content part into its in-memory form: text,
// image_url (an object with url and detail, or the URL alone), input_audio,
// file; other types keep their type and text.
func partOf(m map[string]any) openai.ChatMessagePart {
	typ := str(m, "type")
	switch openai.ChatMessagePartType(typ) {
	case openai.ChatMessagePartTypeImageURL:
		switch u := m["image_url"].(type) {
		case map[string]any:
			return ImagePart(str(u, "url"), str(u, "detail"))
		case string:
			return ImagePart(u, "")
		}
	case PartTypeInputAudio:
		if a, ok := m["input_audio"].(map[string]any); ok {
			return AudioPart(str(a, "data"), str(a, "format"))
		}
	case PartTypeFile:
		if f, ok := m["file"].(map[string]any); ok {
			if data := str(f, "file_data"); data != "" {
				return FilePart(str(f, "filename"), data)
			}
			return FilePart(str(f, "filename"), FileIDScheme+str(f, "file_id"))
		}
	}
	return openai.ChatMessagePart{Type: openai.ChatMessagePartType(typ), Text: str(m, "text")}
}

func isNumber(v any) bool { _, ok := v.(float64); return ok }

// UnmarshalMessages decodes a chat completions messages array with every
// content part: text, image_url, input_audio and file (go-openai alone keeps
// only text and image_url). A content that is neither a string, an array of
// part objects nor null is an error naming the message.
func UnmarshalMessages(b []byte, msgs *[]openai.ChatCompletionMessage) error {
	var wire []WireMessage
	if err := json.Unmarshal(b, &wire); err != nil {
		return err
	}
	out, err := FromWire(wire)
	if err != nil {
		return err
	}
	*msgs = out
	return nil
}

// FromWire turns decoded wire messages into their in-memory form (see
// UnmarshalMessages); nil for nil.
func FromWire(wire []WireMessage) ([]openai.ChatCompletionMessage, error) {
	if wire == nil {
		return nil, nil
	}
	out := make([]openai.ChatCompletionMessage, len(wire))
	for i, w := range wire {
		m := openai.ChatCompletionMessage{Role: w.Role, Refusal: w.Refusal, Name: w.Name, ReasoningContent: w.ReasoningContent,
			FunctionCall: w.FunctionCall, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID}
		switch c := w.Content.(type) {
		case nil:
		case string:
			m.Content = c
		case []any:
			m.MultiContent = make([]openai.ChatMessagePart, 0, len(c))
			for _, p := range c {
				pm, ok := p.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("messages[%d].content: a part is not an object", i)
				}
				m.MultiContent = append(m.MultiContent, partOf(pm))
			}
		default:
			kind := map[bool]string{true: "number", false: "object"}[isNumber(c)]
			if _, ok := c.(bool); ok {
				kind = "bool"
			}
			return nil, &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[string](), Field: fmt.Sprintf("%d.content", i)}
		}
		out[i] = m
	}
	return out, nil
}

// wireRequestBody rewrites the messages of a chat completions request body
// that go-openai encoded, so input_audio and file parts travel in the API's
// shapes; a body without such parts is returned as it is.
func wireRequestBody(body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte(`"type":"input_audio"`)) && !bytes.Contains(body, []byte(`"type":"file"`)) {
		return body, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("shadow: rewrite request parts: %w", err)
	}
	var msgs []openai.ChatCompletionMessage
	if err := json.Unmarshal(obj["messages"], &msgs); err != nil {
		return nil, fmt.Errorf("shadow: rewrite request parts: %w", err)
	}
	m, err := MarshalMessages(msgs)
	if err != nil {
		return nil, fmt.Errorf("shadow: rewrite request parts: %w", err)
	}
	obj["messages"] = m
	return json.Marshal(obj)
}

// partsTransport sends input_audio and file parts in the API's shapes: it
// rewrites the body of a request that carries them (wireRequestBody).
type partsTransport struct{ base http.RoundTripper }

func (t partsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Method != http.MethodPost {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("shadow: read request body: %w", err)
	}
	if body, err = wireRequestBody(body); err != nil {
		return nil, err
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(out)
}
