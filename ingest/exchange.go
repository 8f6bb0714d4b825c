// Package ingest is the tap: it takes copies of production exchanges (the request,
// the incumbent's answer, its latency and usage), validates them, queues them without
// ever slowing production, and hands them to shadow workers that store the incumbent
// run and run every candidate on the same request.
package ingest

import (
	"encoding/json"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// SchemaVersion is the version of the Exchange JSON format written by producers.
const SchemaVersion = 1

// Exchange is one tapped production exchange, the body of POST /v1/tap and one line
// of a replay file (JSONL).
//
//	{"schema_version":1,"request_id":"gsm8k-test-0","app":"math-tutor",
//	 "received_at":"2026-11-30T09:00:00Z",
//	 "request":{"model":"gpt-4-1106-preview","messages":[{"role":"user","content":"..."}]},
//	 "response":{"model":"gpt-4-1106-preview","content":"...","latency_ms":812,
//	             "ttft_ms":95,"usage":{"prompt_tokens":120,"completion_tokens":240}},
//	 "metadata":{"category":"math_word_problem"},"simulated":false}
//
// RequestID is the idempotency key: a copy sent twice is stored once. Response may
// be absent in a replay file, in which case the replayer asks the configured
// incumbent for the answer and marks the exchange Simulated.
type Exchange struct {
	SchemaVersion int               `json:"schema_version"`
	RequestID     string            `json:"request_id"`
	App           string            `json:"app"`
	ReceivedAt    time.Time         `json:"received_at"`
	Request       ExchangeRequest   `json:"request"`
	Response      *ExchangeResponse `json:"response,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	// Simulated marks an incumbent answer produced by the simulated worker pool.
	Simulated bool `json:"simulated,omitempty"`
	// Subject names the data subject (an end-user or account id) so that
	// `conductor-shadow forget --subject` can delete their rows later. It is
	// never stored or queued: the tap replaces it with SubjectHash.
	Subject string `json:"subject,omitempty"`
	// SubjectHash is the keyed hash of Subject (see SubjectHash), set by the
	// tap; a value sent by the client is replaced.
	SubjectHash string `json:"subject_hash,omitempty"`
	// TraceParent is the W3C traceparent of the production request, so the
	// shadow runs' spans join its trace. The tap fills it from the request's
	// trace context when the body has none.
	TraceParent string `json:"traceparent,omitempty"`
	// StoreOnly, set by the tap, is why the copy is stored (request and
	// incumbent run) but no candidate runs on it (SkipIncumbentNotOK); "" for
	// a copy to shadow. A value sent by the client is replaced.
	StoreOnly string `json:"store_only,omitempty"`
	// BodyOmitted, set by the tap, says why the copy carries no text: it is
	// the metadata of an exchange recorded without its request and answer
	// (BodyTooLarge, BodyCaptureBusy, BodyRecordBudget, …), stored as a
	// metadata row and never shadowed; "" for a copy with its text. Request
	// then holds only the model, Response the status, latency, usage and
	// model. A value sent to POST /v1/tap is dropped (DecodeExchange).
	BodyOmitted string `json:"body_omitted,omitempty"`
	// RequestBytes and ResponseBytes are the sizes of the request and answer
	// bodies as they travelled (bytes; 0 when not known).
	RequestBytes  int64 `json:"request_bytes,omitempty"`
	ResponseBytes int64 `json:"response_bytes,omitempty"`
}

// SkipIncumbentNotOK is the StoreOnly reason of a copy whose incumbent did not
// answer 2xx while ingest.shadow_incumbent_errors is off.
const SkipIncumbentNotOK = "incumbent_not_2xx"

// incumbentNot2xx reports whether the incumbent answered with a status
// outside 2xx (0, not recorded, counts as 200).
func (e *Exchange) incumbentNot2xx() bool {
	return e.Response != nil && e.Response.Status != 0 && (e.Response.Status < 200 || e.Response.Status > 299)
}

// ExchangeRequest is the production request as the incumbent received it, in
// the chat completions API's terms whatever API it came through (the proxy
// turns Responses API and Anthropic Messages API requests into these).
//
//	{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
//	  {"type":"image_url","image_url":{"url":"data:image/png;base64,…"}}]}],
//	 "tools":[{"type":"function","function":{"name":"get_weather","parameters":{…}}}]}
//
// Messages keep their content parts: text, image_url, input_audio and file
// (read and written in the API's shapes, shadow.MarshalMessages).
type ExchangeRequest struct {
	Model    string                         `json:"model"`
	Messages []openai.ChatCompletionMessage `json:"messages"`
	// Tools are the request's tool definitions (function tools); single and
	// blackbox candidates send them to their worker.
	Tools []openai.Tool `json:"tools,omitempty"`
	// InputReduced says what production sent that Messages lack, e.g. the
	// conversation before a Responses API previous_response_id the tap never
	// saw; "" when the request is whole. Candidate runs of the request are
	// marked input_reduced with it.
	InputReduced string `json:"input_reduced,omitempty"`
}

// exchangeRequestJSON is ExchangeRequest with its messages as raw JSON
// (written) or as wire messages (read in one pass, shadow.WireMessage).
type exchangeRequestJSON struct {
	Model        string          `json:"model"`
	Messages     json.RawMessage `json:"messages"`
	Tools        []openai.Tool   `json:"tools,omitempty"`
	InputReduced string          `json:"input_reduced,omitempty"`
}

type exchangeRequestWire struct {
	Model        string               `json:"model"`
	Messages     []shadow.WireMessage `json:"messages"`
	Tools        []openai.Tool        `json:"tools"`
	InputReduced string               `json:"input_reduced"`
}

func (j exchangeRequestWire) request() (ExchangeRequest, error) {
	msgs, err := shadow.FromWire(j.Messages)
	return ExchangeRequest{Model: j.Model, Messages: msgs, Tools: j.Tools, InputReduced: j.InputReduced}, err
}

// MarshalJSON writes the messages in the chat completions API's shapes
// (input_audio and file parts included).
func (r ExchangeRequest) MarshalJSON() ([]byte, error) {
	msgs, err := shadow.MarshalMessages(r.Messages)
	if err != nil {
		return nil, err
	}
	if r.Messages == nil {
		msgs = []byte("null")
	}
	return json.Marshal(exchangeRequestJSON{Model: r.Model, Messages: msgs, Tools: r.Tools, InputReduced: r.InputReduced})
}

// UnmarshalJSON reads the messages with every content part
// (shadow.UnmarshalMessages).
func (r *ExchangeRequest) UnmarshalJSON(b []byte) error {
	var j exchangeRequestWire
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	out, err := j.request()
	if err != nil {
		return err
	}
	*r = out
	return nil
}

// ShadowRequest is what candidates run on: the messages (media parts
// included), the tools and what the request lacks.
func (ex Exchange) ShadowRequest() shadow.Request {
	return shadow.Request{RequestID: ex.RequestID, Messages: ex.Request.Messages, Tools: ex.Request.Tools, InputReduced: ex.Request.InputReduced}
}

// ExchangeResponse is the incumbent's answer to the request: what the client got,
// including a failure (Status non-2xx with Error and the rate-limit Headers) or an
// answer cut off (Partial, CancelledByClient).
//
//	{"model":"gpt-5","content":"...","reasoning":"...","latency_ms":812,"ttft_ms":95,
//	 "usage":{"prompt_tokens":1000,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":800}},
//	 "choices":[{"index":0,"content":"...","tool_calls":[{"index":0,"id":"call_1","type":"function",
//	            "name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]}],
//	 "status":429,"error":"{\"error\":{...}}","headers":{"retry-after":"20"}}
type ExchangeResponse struct {
	// ID is the provider's id of the answer ("chatcmpl-…", "msg_…",
	// "resp_…"): stored as requests.response_id, never a key (gateways answer
	// cache hits, and some servers every answer, with one id).
	ID      string `json:"id,omitempty"`
	Model   string `json:"model"`
	Content string `json:"content"` // the answer text of choice 0
	// Reasoning is choice 0's reasoning text (delta.reasoning / reasoning_content,
	// the Responses API's reasoning summary), kept apart from Content.
	Reasoning string `json:"reasoning,omitempty"`
	// Choices holds every choice with its tool calls, by index, when the answer
	// had more than one choice or any tool call; empty otherwise.
	Choices   []Choice `json:"choices,omitempty"`
	LatencyMs float64  `json:"latency_ms"` // wall time from request to last byte, ms; 0 when unknown
	TTFTMs    float64  `json:"ttft_ms,omitempty"`
	Usage     Usage    `json:"usage"`
	// UsageEstimated is true when Usage was estimated from text length (≈4 characters
	// per token) because the recording had none.
	UsageEstimated bool `json:"usage_estimated,omitempty"`
	// FinishReason is choice 0's finish_reason ("stop", "length", "tool_calls",
	// ...), optional; "length" marks the incumbent's answer as truncated at its
	// token cap (a Responses API answer incomplete for max_output_tokens reads
	// as "length").
	FinishReason string `json:"finish_reason,omitempty"`
	// Status is the HTTP status the incumbent answered with; 0 means not recorded
	// (taken as 200). A status outside 2xx makes the incumbent run a failure.
	Status int `json:"status,omitempty"`
	// Error is the incumbent's error: the body of a non-2xx answer (at most
	// MaxErrorBodyBytes), an error event inside a stream, or why the answer broke off.
	Error string `json:"error,omitempty"`
	// Headers are the incumbent's rate-limit and retry headers, lower-cased
	// (retry-after, x-ratelimit-*, anthropic-ratelimit-*, ...); see RateLimitHeaders.
	Headers map[string]string `json:"headers,omitempty"`
	// Partial is true when the answer was cut off before its end; Content then
	// holds what arrived.
	Partial bool `json:"partial,omitempty"`
	// CancelledByClient is true when the client hung up mid-answer (Partial too).
	CancelledByClient bool `json:"cancelled_by_client,omitempty"`
}

// Failed reports whether the incumbent's answer is a failure: a non-2xx status,
// an error, or an answer cut off.
func (r *ExchangeResponse) Failed() bool {
	return (r.Status != 0 && (r.Status < 200 || r.Status > 299)) || r.Error != "" || r.Partial
}

// Choice is one choice of a chat answer, merged from its stream deltas.
type Choice struct {
	Index        int        `json:"index"`
	Content      string     `json:"content"`
	Reasoning    string     `json:"reasoning,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one tool (function) call of a choice, merged from its stream
// fragments: the name arrives in one chunk, the arguments over several.
type ToolCall struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Type      string `json:"type,omitempty"` // "function" for function calls
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // the JSON text of the arguments, as the model wrote it
}

// Usage is the token usage the incumbent's API reported, in tokens. It reads
// every spelling shadow.ParseUsage knows (prompt_tokens_details.cached_tokens,
// Anthropic's cache_read_input_tokens / cache_creation_input_tokens, the Responses
// API's input_tokens_details.cached_tokens, ...) and writes OpenAI's, with cache
// writes as cache_creation_input_tokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"` // cached ones included
	CompletionTokens int64 `json:"completion_tokens"`
	// CachedPromptTokens are the PromptTokens served from the provider's prompt
	// cache, priced at the cached rate.
	CachedPromptTokens int64 `json:"-"`
	// CacheWritePromptTokens are the PromptTokens written to the provider's
	// prompt cache (Anthropic's cache_creation_input_tokens), priced at the
	// cache-write rate.
	CacheWritePromptTokens int64 `json:"-"`
	// CacheWrite1hPromptTokens are, of CacheWritePromptTokens, those written
	// to a 1-hour cache (Anthropic's cache_creation.ephemeral_1h_input_tokens),
	// priced at the 1-hour cache-write rate (2× input).
	CacheWrite1hPromptTokens int64 `json:"-"`
}

type usageJSON struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
	// CacheCreationInputTokens keeps cache writes, which OpenAI's spelling has
	// no field for, under Anthropic's name (as gateways such as LiteLLM do),
	// and CacheCreation their 1-hour share.
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheCreation            *struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation,omitempty"`
}

// MarshalJSON writes OpenAI's spelling (cache writes as
// cache_creation_input_tokens, 1-hour writes as
// cache_creation.ephemeral_1h_input_tokens).
func (u Usage) MarshalJSON() ([]byte, error) {
	j := usageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		CacheCreationInputTokens: u.CacheWritePromptTokens}
	if u.CachedPromptTokens > 0 {
		j.PromptTokensDetails = &struct {
			CachedTokens int64 `json:"cached_tokens"`
		}{u.CachedPromptTokens}
	}
	if u.CacheWrite1hPromptTokens > 0 {
		j.CacheCreation = &struct {
			Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		}{u.CacheWrite1hPromptTokens}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads any spelling shadow.ParseUsage knows.
func (u *Usage) UnmarshalJSON(b []byte) error {
	su, _, err := shadow.ParseUsage(b)
	if err != nil {
		return err
	}
	*u = usageFrom(su)
	return nil
}

func usageFrom(su shadow.Usage) Usage {
	return Usage{PromptTokens: su.PromptTokens, CompletionTokens: su.CompletionTokens, CachedPromptTokens: su.CachedPromptTokens,
		CacheWritePromptTokens: su.CacheWritePromptTokens, CacheWrite1hPromptTokens: su.CacheWrite1hPromptTokens}
}

// Shadow returns u in the shadow package's terms, for pricing.
func (u Usage) Shadow() shadow.Usage {
	return shadow.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedPromptTokens: u.CachedPromptTokens,
		CacheWritePromptTokens: u.CacheWritePromptTokens, CacheWrite1hPromptTokens: u.CacheWrite1hPromptTokens}
}
