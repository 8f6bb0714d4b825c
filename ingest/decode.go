package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// Rejection reasons, used as the label of the rejected-copies counter.
const (
	ReasonTooLarge      = "too_large"
	ReasonInvalidUTF8   = "invalid_utf8"
	ReasonMalformedJSON = "malformed_json"
	ReasonWrongType     = "wrong_type"
	ReasonInvalid       = "invalid"
)

// maxRequestIDLen caps request ids (bytes); they become storage keys.
const maxRequestIDLen = 256

// Bounds of the values an exchange may carry; beyond them it is refused (400,
// reason "invalid", the field named) rather than stored to skew every figure.
const (
	// MaxLatencyMs bounds response.latency_ms and response.ttft_ms: 24 h.
	MaxLatencyMs = 24 * 60 * 60 * 1000
	// MaxUsageTokens bounds each response.usage token count, in every spelling
	// (shadow.MaxUsageTokens): 100 million.
	MaxUsageTokens = shadow.MaxUsageTokens
	// MaxFutureSkew is how far after the tap's clock received_at may lie.
	MaxFutureSkew = 24 * time.Hour
)

// MinReceivedAt is the earliest received_at accepted: 2000-01-01T00:00:00Z.
func MinReceivedAt() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }

// knownRoles are the chat roles of the OpenAI chat completions API.
var knownRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// DecodeError says why a tapped copy was refused. Reason is one of the Reason*
// constants; the HTTP status is 413 for ReasonTooLarge and 400 otherwise.
type DecodeError struct {
	Reason string
	Detail string
}

func (e *DecodeError) Error() string { return "ingest: " + e.Reason + ": " + e.Detail }

// DecodeExchange parses and validates one Exchange from JSON. It refuses, with a
// *DecodeError: bytes that are not valid UTF-8 (JSON requires it; Go would replace
// them silently), malformed JSON, trailing data, values of the wrong type, and
// exchanges failing Validate. requireResponse is true for the HTTP tap, where the
// incumbent's answer must be present.
func DecodeExchange(body []byte, maxMessages int, requireResponse bool) (Exchange, error) {
	var ex Exchange
	if !utf8.Valid(body) {
		return ex, &DecodeError{Reason: ReasonInvalidUTF8, Detail: "body is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&ex); err != nil {
		var typeErr *json.UnmarshalTypeError
		var timeErr *time.ParseError
		var rangeErr *shadow.UsageRangeError
		if errors.As(err, &rangeErr) {
			return ex, &DecodeError{Reason: ReasonInvalid, Detail: fmt.Sprintf("field \"response.usage.%s\": %d is out of range: want 0 to %d",
				rangeErr.Field, rangeErr.Value, MaxUsageTokens)}
		}
		if errors.As(err, &timeErr) {
			return ex, &DecodeError{Reason: ReasonWrongType, Detail: fmt.Sprintf(
				"field \"received_at\": %q is not an RFC 3339 timestamp with a zone (e.g. 2026-11-30T09:00:00Z or 2026-11-30T10:00:00+01:00)", timeErr.Value)}
		}
		if errors.As(err, &typeErr) {
			return ex, &DecodeError{Reason: ReasonWrongType, Detail: fmt.Sprintf("field %q: expected %s, got JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)}
		}
		return ex, &DecodeError{Reason: ReasonMalformedJSON, Detail: err.Error()}
	}
	if dec.More() {
		return ex, &DecodeError{Reason: ReasonMalformedJSON, Detail: "trailing data after the JSON object"}
	}
	ex.BodyOmitted = "" // the tap's to set: a copy sent in carries its text
	if err := ex.Validate(maxMessages, requireResponse); err != nil {
		return ex, &DecodeError{Reason: ReasonInvalid, Detail: err.Error()}
	}
	return ex, nil
}

// Validate checks the fields the shadow side relies on and reports all problems at
// once: schema_version (0 is read as 1), request_id (1–256 bytes, no control
// characters), received_at (zero, or from MinReceivedAt to MaxFutureSkew after
// now), at least one message (none for a metadata copy: BodyOmitted), at most maxMessages, known roles, non-empty
// content, a response when requireResponse is set, and its figures within
// bounds (latency and ttft 0..MaxLatencyMs, token counts 0..MaxUsageTokens with
// cached ≤ prompt, status 0 or 100..599).
func (e *Exchange) Validate(maxMessages int, requireResponse bool) error {
	var errs []error
	if e.SchemaVersion != 0 && e.SchemaVersion != SchemaVersion {
		errs = append(errs, fmt.Errorf("schema_version %d is not supported (want %d)", e.SchemaVersion, SchemaVersion))
	}
	switch {
	case e.RequestID == "":
		errs = append(errs, errors.New("request_id is required (it is the idempotency key)"))
	case len(e.RequestID) > maxRequestIDLen:
		errs = append(errs, fmt.Errorf("request_id is %d bytes, at most %d allowed", len(e.RequestID), maxRequestIDLen))
	case strings.IndexFunc(e.RequestID, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		errs = append(errs, errors.New("request_id contains control characters"))
	}
	msgs := e.Request.Messages
	if len(msgs) == 0 && e.BodyOmitted == "" {
		errs = append(errs, errors.New("request.messages must hold at least one message"))
	}
	if len(msgs) > maxMessages {
		errs = append(errs, fmt.Errorf("request.messages holds %d messages, at most %d allowed", len(msgs), maxMessages))
	}
	for i, m := range msgs {
		if !knownRoles[m.Role] {
			errs = append(errs, fmt.Errorf("request.messages[%d].role %q is not a chat role", i, m.Role))
		}
		if strings.TrimSpace(m.Content) == "" && len(m.MultiContent) == 0 && len(m.ToolCalls) == 0 {
			errs = append(errs, fmt.Errorf("request.messages[%d].content is empty", i))
		}
	}
	if requireResponse && e.Response == nil {
		errs = append(errs, errors.New("response is required: the incumbent's answer to the request"))
	}
	if !e.ReceivedAt.IsZero() {
		latest := time.Now().Add(MaxFutureSkew)
		if e.ReceivedAt.Before(MinReceivedAt()) || e.ReceivedAt.After(latest) {
			errs = append(errs, fmt.Errorf("received_at %s is out of range: want between %s and %s (24 h after the tap's clock)",
				e.ReceivedAt.UTC().Format(time.RFC3339), MinReceivedAt().Format(time.RFC3339), latest.UTC().Format(time.RFC3339)))
		}
	}
	if r := e.Response; r != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"response.latency_ms", r.LatencyMs}, {"response.ttft_ms", r.TTFTMs}} {
			if f.v < 0 || f.v > MaxLatencyMs || math.IsNaN(f.v) {
				errs = append(errs, fmt.Errorf("%s %g is out of range: want 0 to %d ms (24 h)", f.name, f.v, MaxLatencyMs))
			}
		}
		for _, f := range []struct {
			name string
			v    int64
		}{{"response.usage.prompt_tokens", r.Usage.PromptTokens}, {"response.usage.completion_tokens", r.Usage.CompletionTokens},
			{"response.usage cached tokens", r.Usage.CachedPromptTokens},
			{"response.usage cache write tokens", r.Usage.CacheWritePromptTokens}} {
			if f.v < 0 || f.v > MaxUsageTokens {
				errs = append(errs, fmt.Errorf("%s %d is out of range: want 0 to %d", f.name, f.v, MaxUsageTokens))
			}
		}
		if r.Usage.CacheWrite1hPromptTokens > r.Usage.CacheWritePromptTokens {
			errs = append(errs, fmt.Errorf("response.usage 1-hour cache write tokens %d exceed cache write tokens %d",
				r.Usage.CacheWrite1hPromptTokens, r.Usage.CacheWritePromptTokens))
		}
		if r.Usage.CachedPromptTokens > r.Usage.PromptTokens {
			errs = append(errs, fmt.Errorf("response.usage cached tokens %d exceed prompt_tokens %d", r.Usage.CachedPromptTokens, r.Usage.PromptTokens))
		} else if r.Usage.CachedPromptTokens+r.Usage.CacheWritePromptTokens > r.Usage.PromptTokens {
			errs = append(errs, fmt.Errorf("response.usage cached tokens %d + cache write tokens %d exceed prompt_tokens %d",
				r.Usage.CachedPromptTokens, r.Usage.CacheWritePromptTokens, r.Usage.PromptTokens))
		}
		if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
			errs = append(errs, fmt.Errorf("response.status %d is not an HTTP status", r.Status))
		}
	}
	return errors.Join(errs...)
}
