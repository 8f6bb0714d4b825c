// Package ingest is the tap: it takes copies of production exchanges (the request,
// the incumbent's answer, its latency and usage), validates them, queues them without
// ever slowing production, and hands them to shadow workers that store the incumbent
// run and run every candidate on the same request.
package ingest

import (
	"time"

	openai "github.com/sashabaranov/go-openai"
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
}

// ExchangeRequest is the production request as the incumbent received it.
type ExchangeRequest struct {
	Model    string                         `json:"model"`
	Messages []openai.ChatCompletionMessage `json:"messages"`
}

// ExchangeResponse is the incumbent's answer to the request.
type ExchangeResponse struct {
	Model     string  `json:"model"`
	Content   string  `json:"content"`
	LatencyMs float64 `json:"latency_ms"` // wall time from request to last byte, ms
	TTFTMs    float64 `json:"ttft_ms,omitempty"`
	Usage     Usage   `json:"usage"`
	// UsageEstimated is true when Usage was estimated from text length (≈4 characters
	// per token) because the recording had none.
	UsageEstimated bool `json:"usage_estimated,omitempty"`
}

// Usage is the token usage the incumbent's API reported, in tokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}
