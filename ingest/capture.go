package ingest

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/propagation"

	"github.com/conductor-shadow/conductor-shadow/shadow"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// MaxErrorBodyBytes caps the incumbent's error body kept in ExchangeResponse.Error.
const MaxErrorBodyBytes = 16 << 10

// captureWriter passes everything to the client and keeps a copy of the body up
// to limit bytes. It implements http.Flusher so ReverseProxy flushes every chunk.
// A failed write to the client (it hung up) is remembered in clientErr.
type captureWriter struct {
	http.ResponseWriter
	limit     int64
	start     time.Time
	status    int
	firstByte time.Time
	buf       bytes.Buffer
	overflow  bool
	written   int64 // bytes of the answer body written to the client
	clientErr error
	// clientGone: the client left before the incumbent answered (set by the
	// proxy's error handler).
	clientGone bool
}

func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.firstByte.IsZero() && len(b) > 0 {
		w.firstByte = time.Now()
	}
	if !w.overflow {
		if int64(w.buf.Len()+len(b)) > w.limit {
			w.overflow = true
			w.buf = bytes.Buffer{}
		} else {
			w.buf.Write(b)
		}
	}
	n, err := w.ResponseWriter.Write(b)
	w.written += int64(n)
	if err != nil && w.clientErr == nil {
		w.clientErr = err
	}
	return n, err
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// captureEnd says how a proxied answer ended.
type captureEnd int

const (
	endComplete      captureEnd = iota // the whole answer reached the client
	endClientGone                      // the client hung up mid-answer
	endIncumbentGone                   // the incumbent broke off mid-answer
)

// capture is one finished or broken-off proxied exchange, read by the background copier.
type capture struct {
	path, app, requestID string
	subject, traceParent string // the data subject (SubjectHeader) and the W3C traceparent sent
	// callerRequestID and callerApp are what an untrusted caller sent as its
	// request id and app (kept in the metadata, see Proxy.UseGuard).
	callerRequestID, callerApp string
	reqBody, respBody          []byte
	reqBytes, respBytes        int64 // the bodies' sizes as they travelled
	status                     int
	respHeader                 http.Header
	start                      time.Time
	latency, ttft              time.Duration
	end                        captureEnd
}

// newCapture records what cw saw of the answer to r, which ended at end.
func newCapture(r *http.Request, app string, reqBody []byte, cw *captureWriter, finished time.Time, end captureEnd) capture {
	c := capture{
		path:        r.URL.Path,
		app:         app,
		requestID:   r.Header.Get("X-Request-Id"),
		subject:     r.Header.Get(SubjectHeader),
		traceParent: TraceParentOf(traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))),
		reqBody:     reqBody,
		respBody:    cw.buf.Bytes(),
		reqBytes:    int64(len(reqBody)),
		respBytes:   cw.written,
		status:      cw.status,
		respHeader:  cw.Header().Clone(),
		start:       cw.start,
		latency:     finished.Sub(cw.start),
		end:         end,
	}
	if !cw.firstByte.IsZero() {
		c.ttft = cw.firstByte.Sub(cw.start)
	}
	if c.status == 0 {
		c.status = http.StatusOK // headers never sent: the answer broke off before its first byte
	}
	return c
}

// metadata is the record of c without its texts (why names what kept them
// out): a copy id, the app, time, route, the request's model when its body
// names it early (modelOf), the answer's status, latency, time to first byte,
// rate-limit headers, how it ended, and the bodies' sizes. Nothing is parsed
// beyond the first bytes of the request: it is built on the production path.
func (c capture) metadata(why string) Exchange {
	id := c.requestID
	if id == "" {
		id = newCopyID()
	}
	md := map[string]string{"source": "proxy", "route": c.path}
	for k, v := range map[string]string{MetaCallerRequestID: c.callerRequestID, MetaCallerApp: c.callerApp} {
		if v != "" {
			md[k] = v
		}
	}
	resp := &ExchangeResponse{Status: c.status, LatencyMs: float64(c.latency.Microseconds()) / 1000,
		TTFTMs: float64(c.ttft.Microseconds()) / 1000, Partial: c.end != endComplete, CancelledByClient: c.end == endClientGone}
	if c.status < 200 || c.status > 299 {
		resp.Headers = RateLimitHeaders(c.respHeader)
	}
	return Exchange{SchemaVersion: SchemaVersion, RequestID: id, App: c.app, ReceivedAt: c.start.UTC(),
		Request: ExchangeRequest{Model: modelOf(c.reqBody)}, Response: resp, Metadata: md,
		Subject: c.subject, TraceParent: c.traceParent, BodyOmitted: why, RequestBytes: c.reqBytes, ResponseBytes: c.respBytes}
}

// modelHead matches a top-level-looking "model" string field.
var modelHead = regexp.MustCompile(`"model"\s*:\s*"([^"\\]{1,256})"`)

// modelOf is the model a request body names within its first 4 KiB (SDKs
// write it first), "" when it names none there.
func modelOf(body []byte) string {
	if m := modelHead.FindSubmatch(body[:min(len(body), 4<<10)]); m != nil && utf8.Valid(m[1]) {
		return string(m[1])
	}
	return ""
}

// newCopyID is a fresh id for a copy the proxy makes: each forwarded
// exchange is its own copy, whatever the provider answered as its id.
func newCopyID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "proxy-" + hex.EncodeToString(b[:])
}

// brokenEnd says who broke off an aborted answer: the client when writing to it
// failed or its request context ended, the incumbent otherwise.
func brokenEnd(r *http.Request, cw *captureWriter) captureEnd {
	if cw.clientErr != nil || r.Context().Err() != nil {
		return endClientGone
	}
	return endIncumbentGone
}

// rateLimitPrefixes and rateLimitNames select the answer headers kept with a
// failed exchange (lower-cased): retries, rate limits and the provider's request
// id, in the spellings of OpenAI, Anthropic, Azure, the IETF RateLimit draft and
// common gateways.
var (
	rateLimitPrefixes = []string{"x-ratelimit-", "ratelimit-", "anthropic-ratelimit-", "x-ms-ratelimit-", "llm_provider-x-ratelimit-"}
	rateLimitNames    = []string{"retry-after", "retry-after-ms", "x-retry-after", "x-ms-retry-after-ms", "ratelimit",
		"x-request-id", "request-id", "apim-request-id", "x-should-retry"}
)

// RateLimitHeaders returns the retry and rate-limit headers of h (see
// rateLimitPrefixes and rateLimitNames), lower-cased, several values joined by
// ", "; nil when there are none.
func RateLimitHeaders(h http.Header) map[string]string {
	var out map[string]string
	for k, vs := range h {
		lk := strings.ToLower(k)
		keep := slices.Contains(rateLimitNames, lk)
		for _, p := range rateLimitPrefixes {
			keep = keep || strings.HasPrefix(lk, p)
		}
		if !keep {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[lk] = strings.Join(vs, ", ")
	}
	return out
}

// decodedBody undoes a gzip Content-Encoding. A cut-off gzip stream gives what
// could be inflated; another encoding is an error.
func decodedBody(body []byte, h http.Header) ([]byte, error) {
	enc := strings.ToLower(strings.TrimSpace(h.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		return body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("gunzip answer: %w", err)
		}
		out, err := io.ReadAll(zr)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return out, fmt.Errorf("gunzip answer: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("answer encoded as %q", enc)
	}
}

// errorText is an error body as stored: valid UTF-8, at most MaxErrorBodyBytes.
func errorText(body []byte) string {
	if len(body) > MaxErrorBodyBytes {
		body = body[:MaxErrorBodyBytes]
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// exchange builds the tapped Exchange from the raw request and answer. A non-2xx
// answer becomes a failed response (status, error body, rate-limit headers); an
// answer cut off keeps what arrived, marked Partial (and CancelledByClient when
// the client hung up). A Responses API request naming previous_response_id gets
// the conversation before it from convs (nil: none is kept), and a complete
// Responses API answer is remembered there for the next turn.
func (c capture) exchange(convs *conversations) (Exchange, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	api := routeOf(c.path)
	var (
		req ExchangeRequest
		rr  responsesRequest
		err error
	)
	if api == apiResponses {
		rr, err = parseResponsesRequest(c.reqBody)
		req = rr.exchangeRequest(convs)
	} else {
		req, err = parseProxyRequest(c.reqBody, api)
	}
	if err != nil {
		return Exchange{}, err
	}
	resp := &ExchangeResponse{
		Status:    c.status,
		LatencyMs: float64(c.latency.Microseconds()) / 1000,
		TTFTMs:    float64(c.ttft.Microseconds()) / 1000,
	}
	body, bodyErr := decodedBody(c.respBody, c.respHeader)
	streamed := strings.HasPrefix(strings.ToLower(c.respHeader.Get("Content-Type")), "text/event-stream")
	if c.end != endComplete && c.status >= 200 && c.status <= 299 && bodyErr == nil && answerEnded(body, api, streamed) {
		// The whole answer arrived (its end marker, or all of a JSON body):
		// whoever closed the connection after it, the record is complete.
		c.end = endComplete
	}
	partial := c.end != endComplete
	var a answer
	if c.status >= 200 && c.status <= 299 {
		if bodyErr != nil {
			return Exchange{}, bodyErr
		}
		a, err = parseAnswer(body, api, streamed, partial)
		if err != nil {
			return Exchange{}, err
		}
		resp.Content, resp.Reasoning, resp.Error = a.content(), a.reasoning(), a.errMsg
		if c0 := a.choice0(); c0 != nil {
			resp.FinishReason = chatFinishReason(c0.FinishReason)
		}
		if a.detailed() {
			resp.Choices = a.choices
		}
		resp.Usage = a.usage
		if !a.hasUsage {
			resp.Usage, resp.UsageEstimated = estimateUsage(req.Messages, a.generated()), true
		}
	} else {
		if bodyErr != nil {
			body = c.respBody
		}
		resp.Error = errorText(body)
		if resp.Error == "" {
			resp.Error = fmt.Sprintf("HTTP %d with an empty body", c.status)
		}
		resp.Headers = RateLimitHeaders(c.respHeader)
	}
	switch c.end {
	case endClientGone:
		resp.Partial, resp.CancelledByClient = true, true
	case endIncumbentGone:
		resp.Partial = true
		if resp.Error == "" {
			resp.Error = "the incumbent broke off mid-answer"
		}
	}
	// The copy's id: the trusted caller's X-Request-Id, else a fresh one. The
	// provider's answer id is kept as such, never a key: gateways answer cache
	// hits, and some servers every answer, with one id.
	id := c.requestID
	if id == "" {
		id = newCopyID()
	}
	resp.ID = a.id
	resp.Model = a.model
	if resp.Model == "" {
		resp.Model = req.Model
	}
	ex := Exchange{
		SchemaVersion: SchemaVersion,
		RequestID:     id,
		App:           c.app,
		ReceivedAt:    c.start.UTC(),
		Request:       req,
		Response:      resp,
		Metadata:      map[string]string{"source": "proxy", "route": c.path},
		Subject:       c.subject,
		TraceParent:   c.traceParent,
	}
	if err := ex.Validate(1<<20, true); err != nil {
		return Exchange{}, err
	}
	if api == apiResponses && !resp.Failed() && a.id != "" {
		turn := slices.Clone(rr.input)
		if m, ok := answerMessage(resp); ok {
			turn = append(turn, m)
		}
		convs.remember(a.id, rr.previousID, turn)
	}
	return ex, nil
}

// answerEnded reports whether body holds a whole 2xx answer: a JSON body
// that parses whole, or a stream whose last event is its API's end: "[DONE]"
// (chat completions), message_stop (Anthropic), response.completed,
// .incomplete or .failed (Responses API).
func answerEnded(body []byte, kind api, streamed bool) bool {
	if !streamed {
		return len(bytes.TrimSpace(body)) > 0 && json.Valid(body)
	}
	if kind == apiChat {
		return bytes.HasSuffix(bytes.TrimRight(body, "\r\n "), []byte("[DONE]"))
	}
	var last struct {
		Type string `json:"type"`
	}
	closed := false
	_ = sseEvents(body, func(d []byte, unclosed bool) error {
		last.Type, closed = "", !unclosed
		_ = json.Unmarshal(d, &last)
		return nil
	})
	if !closed {
		return false
	}
	switch last.Type {
	case "message_stop":
		return kind == apiMessages
	case "response.completed", "response.incomplete", "response.failed":
		return kind == apiResponses
	}
	return false
}

// answerMessage is the assistant turn of a recorded answer: its text and
// tool calls (choice 0); ok is false for an answer with neither.
func answerMessage(r *ExchangeResponse) (m openai.ChatCompletionMessage, ok bool) {
	m = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: r.Content}
	for _, c := range r.Choices {
		if c.Index != 0 {
			continue
		}
		for _, tc := range c.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
	}
	return m, strings.TrimSpace(m.Content) != "" || len(m.ToolCalls) > 0
}

// estimateUsage guesses token counts at ≈4 characters per token.
func estimateUsage(msgs []openai.ChatCompletionMessage, answer string) Usage {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, p := range m.MultiContent {
			n += len(p.Text)
		}
	}
	return Usage{PromptTokens: int64((n + 3) / 4), CompletionTokens: int64((len(answer) + 3) / 4)}
}

// answer is what was read from the incumbent's reply.
type answer struct {
	id, model string
	choices   []Choice // by index
	usage     Usage
	hasUsage  bool
	errMsg    string // an error event inside a 2xx answer
}

// chatFinishReason writes a finish reason in the chat completions vocabulary:
// the Responses API's incomplete reason "max_output_tokens" (and Anthropic-style
// "max_tokens") is "length"; others are kept.
func chatFinishReason(r string) string {
	switch r {
	case "max_output_tokens", "max_tokens":
		return store.FinishLength
	}
	return r
}

func (a answer) choice0() *Choice {
	for i := range a.choices {
		if a.choices[i].Index == 0 {
			return &a.choices[i]
		}
	}
	if len(a.choices) > 0 {
		return &a.choices[0]
	}
	return nil
}

func (a answer) content() string {
	if c := a.choice0(); c != nil {
		return c.Content
	}
	return ""
}

func (a answer) reasoning() string {
	if c := a.choice0(); c != nil {
		return c.Reasoning
	}
	return ""
}

// generated is every text the model wrote, over all choices: content,
// reasoning, tool names and arguments (for estimating completion tokens).
func (a answer) generated() string {
	var b strings.Builder
	for _, c := range a.choices {
		b.WriteString(c.Content)
		b.WriteString(c.Reasoning)
		for _, tc := range c.ToolCalls {
			b.WriteString(tc.Name)
			b.WriteString(tc.Arguments)
		}
	}
	return b.String()
}

// detailed reports whether the answer needs its choices stored: more than one,
// or any tool call.
func (a answer) detailed() bool {
	if len(a.choices) > 1 {
		return true
	}
	for _, c := range a.choices {
		if len(c.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// api is the API a mirrored route speaks.
type api int

const (
	apiNone      api = iota
	apiChat          // POST …/chat/completions
	apiResponses     // POST …/responses
	apiMessages      // POST …/v1/messages (Anthropic)
)

// routeOf names the API of a mirrored path: …/chat/completions, …/responses,
// or Anthropic's …/v1/messages (not …/messages/batches or count_tokens, nor the
// Assistants API's …/threads/{id}/messages). apiNone for every other path.
func routeOf(path string) api {
	p := strings.TrimSuffix(path, "/")
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return apiChat
	case strings.HasSuffix(p, "/responses"):
		return apiResponses
	case strings.HasSuffix(p, "/v1/messages"):
		return apiMessages
	}
	return apiNone
}

// parseAnswer reads a 2xx answer of the chat completions, Responses or
// Anthropic Messages API, streamed or not. With partial set (the answer was cut
// off), an event or body that cannot be read is taken as cut off and what came
// before is kept.
func parseAnswer(body []byte, kind api, streamed, partial bool) (answer, error) {
	var (
		a   answer
		err error
	)
	switch {
	case kind == apiMessages && streamed:
		a, err = parseAnthropicStream(body, partial)
	case kind == apiMessages:
		a, err = parseAnthropicBody(body)
	case kind == apiResponses && streamed:
		a, err = parseResponsesStream(body, partial)
	case kind == apiResponses:
		a, err = parseResponsesBody(body)
	case streamed:
		a, err = parseChatStream(body, partial)
	default:
		a, err = parseChatBody(body)
	}
	if err != nil && partial {
		return a, nil
	}
	return a, err
}

// parseProxyRequest reads the request of a mirrored route as chat messages
// (content parts kept) and tools: a chat completions request as it is, a
// Responses API request (parseResponsesRequest) or an Anthropic Messages API
// request (parseAnthropicRequest).
func parseProxyRequest(body []byte, kind api) (ExchangeRequest, error) {
	switch kind {
	case apiMessages:
		return parseAnthropicRequest(body)
	case apiResponses:
		r, err := parseResponsesRequest(body)
		return r.exchangeRequest(nil), err
	}
	var j exchangeRequestWire // straight into wire messages: a large image is scanned twice, not six times
	if err := json.Unmarshal(body, &j); err != nil {
		return ExchangeRequest{}, fmt.Errorf("chat request: %w", err)
	}
	j.InputReduced = "" // ours to set, never the client's
	r, err := j.request()
	if err != nil {
		return r, fmt.Errorf("chat request: %w", err)
	}
	return r, nil
}

// textOf reads a content value: a string, null, or a list of parts whose text
// (text, input_text, output_text parts) is joined.
func textOf(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// usageOf reads a usage object in any spelling (shadow.ParseUsage).
func usageOf(raw json.RawMessage) (Usage, bool, error) {
	su, ok, err := shadow.ParseUsage(raw)
	return usageFrom(su), ok, err
}

// apiError is the error object of an OpenAI-style error ({"error":{"message":..}})
// or an error event ({"type":"error","message":..}).
type apiError struct {
	Message string `json:"message"`
	Code    any    `json:"code"`
	Type    string `json:"type"`
}

func (e *apiError) text() string {
	if e == nil || e.Message == "" && e.Type == "" {
		return ""
	}
	s := e.Message
	if e.Code != nil {
		s = fmt.Sprintf("%v: %s", e.Code, s)
	} else if e.Type != "" && e.Type != "error" {
		s = e.Type + ": " + s
	}
	return s
}

// chatFunction is a tool call's function, whole or a stream fragment.
type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatToolCall is a tool call, whole (message.tool_calls) or a stream fragment
// (delta.tool_calls, whose index says which call it continues).
type chatToolCall struct {
	Index    *int         `json:"index"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

// chatMessage is a choice's message or delta.
type chatMessage struct {
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"` // DeepSeek, vLLM, Qwen
	Reasoning        string          `json:"reasoning"`         // OpenRouter, Ollama, Groq
	Thinking         string          `json:"thinking"`          // some gateways for Anthropic models
	ToolCalls        []chatToolCall  `json:"tool_calls"`
	FunctionCall     *chatFunction   `json:"function_call"` // the legacy single function call
}

func (m chatMessage) reasoningText() string {
	switch {
	case m.ReasoningContent != "":
		return m.ReasoningContent
	case m.Reasoning != "":
		return m.Reasoning
	}
	return m.Thinking
}

// choiceAcc merges the deltas of one choice.
type choiceAcc struct {
	index        int
	content      strings.Builder
	reasoning    strings.Builder
	finishReason string
	calls        []*ToolCall
}

// addCall merges one tool-call fragment: by its index, else by its id, else it
// continues the last call (or starts the first).
func (c *choiceAcc) addCall(f chatToolCall) {
	var call *ToolCall
	switch {
	case f.Index != nil:
		for _, x := range c.calls {
			if x.Index == *f.Index {
				call = x
			}
		}
		if call == nil {
			call = &ToolCall{Index: *f.Index}
			c.calls = append(c.calls, call)
		}
	case f.ID != "":
		for _, x := range c.calls {
			if x.ID == f.ID {
				call = x
			}
		}
		if call == nil {
			call = &ToolCall{Index: len(c.calls)}
			c.calls = append(c.calls, call)
		}
	case len(c.calls) > 0:
		call = c.calls[len(c.calls)-1]
	default:
		call = &ToolCall{}
		c.calls = append(c.calls, call)
	}
	if f.ID != "" {
		call.ID = f.ID
	}
	if f.Type != "" {
		call.Type = f.Type
	}
	if f.Function.Name != "" {
		call.Name = f.Function.Name
	}
	call.Arguments += f.Function.Arguments
}

func (c *choiceAcc) add(m chatMessage) error {
	text, err := textOf(m.Content)
	if err != nil {
		return err
	}
	c.content.WriteString(text)
	c.reasoning.WriteString(m.reasoningText())
	for _, f := range m.ToolCalls {
		c.addCall(f)
	}
	if f := m.FunctionCall; f != nil {
		zero := 0
		c.addCall(chatToolCall{Index: &zero, Type: "function", Function: *f})
	}
	return nil
}

func (c *choiceAcc) choice() Choice {
	out := Choice{Index: c.index, Content: c.content.String(), Reasoning: c.reasoning.String(), FinishReason: c.finishReason}
	for _, x := range c.calls {
		out.ToolCalls = append(out.ToolCalls, *x)
	}
	slices.SortStableFunc(out.ToolCalls, func(a, b ToolCall) int { return a.Index - b.Index })
	return out
}

// choices merges deltas by choice index.
type choices struct{ byIndex []*choiceAcc }

func (cs *choices) get(i int) *choiceAcc {
	for _, c := range cs.byIndex {
		if c.index == i {
			return c
		}
	}
	c := &choiceAcc{index: i}
	cs.byIndex = append(cs.byIndex, c)
	return c
}

func (cs *choices) list() []Choice {
	out := make([]Choice, 0, len(cs.byIndex))
	for _, c := range cs.byIndex {
		out = append(out, c.choice())
	}
	slices.SortStableFunc(out, func(a, b Choice) int { return a.Index - b.Index })
	return out
}

// chatChunk is a chat completions answer (message) or stream chunk (delta).
type chatChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index        *int        `json:"index"`
		Message      chatMessage `json:"message"`
		Delta        chatMessage `json:"delta"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error *apiError       `json:"error"`
}

// merge adds the chunk's choices to cs; stream chunks carry deltas, answers messages.
func (ch chatChunk) merge(a *answer, cs *choices) error {
	if a.id == "" {
		a.id = ch.ID
	}
	if a.model == "" {
		a.model = ch.Model
	}
	for pos, c := range ch.Choices {
		i := pos
		if c.Index != nil {
			i = *c.Index
		}
		acc := cs.get(i)
		if err := acc.add(c.Message); err != nil {
			return fmt.Errorf("choice %d content: %w", i, err)
		}
		if err := acc.add(c.Delta); err != nil {
			return fmt.Errorf("choice %d content: %w", i, err)
		}
		if c.FinishReason != "" {
			acc.finishReason = c.FinishReason
		}
	}
	if u, ok, err := usageOf(ch.Usage); err != nil {
		return err
	} else if ok {
		a.usage, a.hasUsage = u, true
	}
	if msg := ch.Error.text(); msg != "" {
		a.errMsg = msg
	}
	return nil
}

func parseChatBody(body []byte) (answer, error) {
	var ch chatChunk
	if err := json.Unmarshal(body, &ch); err != nil {
		return answer{}, fmt.Errorf("chat answer: %w", err)
	}
	var a answer
	var cs choices
	if err := ch.merge(&a, &cs); err != nil {
		return a, fmt.Errorf("chat answer: %w", err)
	}
	a.choices = cs.list()
	return a, nil
}

// parseChatStream merges the chunks of a streamed chat completion by choice
// index and, within a choice, tool calls by their index.
func parseChatStream(body []byte, partial bool) (answer, error) {
	var a answer
	var cs choices
	err := sseEvents(body, func(d []byte, last bool) error {
		var ch chatChunk
		if err := json.Unmarshal(d, &ch); err != nil {
			if partial && last {
				return nil // the event the answer was cut off in
			}
			return fmt.Errorf("chat stream chunk: %w", err)
		}
		if err := ch.merge(&a, &cs); err != nil {
			return fmt.Errorf("chat stream chunk: %w", err)
		}
		return nil
	})
	a.choices = cs.list()
	return a, err
}

// responsesItem is one output item of a Responses API response.
type responsesItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"` // message, reasoning, function_call, ...
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Summary []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"summary"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// responsesObject is the part of a Responses API response object read here.
type responsesObject struct {
	ID     string          `json:"id"`
	Model  string          `json:"model"`
	Status string          `json:"status"`
	Output []responsesItem `json:"output"`
	Usage  json.RawMessage `json:"usage"`
	Error  *apiError       `json:"error"`
	// IncompleteDetails says why a response stopped early (max_output_tokens, content_filter).
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

func (o responsesObject) answer() (answer, error) {
	a := answer{id: o.ID, model: o.Model}
	c := Choice{Index: 0}
	var content, reasoning strings.Builder
	for _, it := range o.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				if p.Type == "output_text" || p.Type == "text" {
					content.WriteString(p.Text)
				}
			}
		case "reasoning":
			parts := it.Summary
			if len(parts) == 0 {
				parts = it.Content // reasoning_text, where the provider sends the raw reasoning
			}
			for _, p := range parts {
				if reasoning.Len() > 0 {
					reasoning.WriteString("\n\n")
				}
				reasoning.WriteString(p.Text)
			}
		case "function_call", "custom_tool_call":
			c.ToolCalls = append(c.ToolCalls, ToolCall{Index: len(c.ToolCalls), ID: it.CallID, Type: "function", Name: it.Name, Arguments: it.Arguments})
		}
	}
	c.Content, c.Reasoning = content.String(), reasoning.String()
	if o.Status == "incomplete" && o.IncompleteDetails != nil {
		c.FinishReason = o.IncompleteDetails.Reason
	}
	a.choices = []Choice{c}
	u, ok, err := usageOf(o.Usage)
	if err != nil {
		return a, err
	}
	a.usage, a.hasUsage = u, ok
	a.errMsg = o.Error.text()
	return a, nil
}

func parseResponsesBody(body []byte) (answer, error) {
	var o responsesObject
	if err := json.Unmarshal(body, &o); err != nil {
		return answer{}, fmt.Errorf("responses answer: %w", err)
	}
	a, err := o.answer()
	if err != nil {
		return a, fmt.Errorf("responses answer: %w", err)
	}
	return a, nil
}

// parseResponsesStream reads a streamed Responses API answer. The final
// response.completed (or .incomplete / .failed) event, when present, carries the
// whole response and is taken as it is; otherwise (a cut-off stream) the answer is
// pieced together from the delta events: output text, reasoning summary and
// reasoning text, function-call items and their argument deltas.
func parseResponsesStream(body []byte, partial bool) (answer, error) {
	var a answer
	var content, reasoning strings.Builder
	var calls []*ToolCall
	callByItem := map[string]*ToolCall{}
	var final *responsesObject
	var errMsg string
	lastSummary := -1
	err := sseEvents(body, func(d []byte, last bool) error {
		var ev struct {
			Type         string           `json:"type"`
			Delta        string           `json:"delta"`
			ItemID       string           `json:"item_id"`
			SummaryIndex int              `json:"summary_index"`
			Item         *responsesItem   `json:"item"`
			Response     *responsesObject `json:"response"`
			Message      string           `json:"message"`
			Code         any              `json:"code"`
		}
		if err := json.Unmarshal(d, &ev); err != nil {
			if partial && last {
				return nil
			}
			return fmt.Errorf("responses stream event: %w", err)
		}
		switch ev.Type {
		case "response.output_text.delta":
			content.WriteString(ev.Delta)
		case "response.reasoning_summary_text.delta":
			if lastSummary >= 0 && ev.SummaryIndex != lastSummary {
				reasoning.WriteString("\n\n")
			}
			lastSummary = ev.SummaryIndex
			reasoning.WriteString(ev.Delta)
		case "response.reasoning_text.delta", "response.reasoning.delta":
			reasoning.WriteString(ev.Delta)
		case "response.output_item.added":
			if it := ev.Item; it != nil && (it.Type == "function_call" || it.Type == "custom_tool_call") {
				c := &ToolCall{Index: len(calls), ID: it.CallID, Type: "function", Name: it.Name, Arguments: it.Arguments}
				calls = append(calls, c)
				callByItem[it.ID] = c
			}
		case "response.function_call_arguments.delta":
			if c := callByItem[ev.ItemID]; c != nil {
				c.Arguments += ev.Delta
			}
		case "response.created", "response.in_progress":
			if ev.Response != nil {
				a.id, a.model = ev.Response.ID, ev.Response.Model
			}
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Response
		case "error":
			errMsg = (&apiError{Message: ev.Message, Code: ev.Code}).text()
		}
		return nil
	})
	c := Choice{Index: 0, Content: content.String(), Reasoning: reasoning.String()}
	for _, x := range calls {
		c.ToolCalls = append(c.ToolCalls, *x)
	}
	a.choices = []Choice{c}
	a.errMsg = errMsg
	if final == nil {
		return a, err
	}
	fa, ferr := final.answer()
	if ferr != nil {
		return fa, fmt.Errorf("responses stream: %w", ferr)
	}
	// The final event's response is whole; what it lacks (a failed response
	// carries no output) comes from the deltas.
	fc := &fa.choices[0]
	if fc.Content == "" {
		fc.Content = c.Content
	}
	if fc.Reasoning == "" {
		fc.Reasoning = c.Reasoning
	}
	if len(fc.ToolCalls) == 0 {
		fc.ToolCalls = c.ToolCalls
	}
	if fa.id == "" {
		fa.id, fa.model = a.id, a.model
	}
	if fa.errMsg == "" {
		fa.errMsg = errMsg
	}
	return fa, err
}
