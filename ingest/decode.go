package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
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
		if errors.As(err, &typeErr) {
			return ex, &DecodeError{Reason: ReasonWrongType, Detail: fmt.Sprintf("field %q: expected %s, got JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)}
		}
		return ex, &DecodeError{Reason: ReasonMalformedJSON, Detail: err.Error()}
	}
	if dec.More() {
		return ex, &DecodeError{Reason: ReasonMalformedJSON, Detail: "trailing data after the JSON object"}
	}
	if err := ex.Validate(maxMessages, requireResponse); err != nil {
		return ex, &DecodeError{Reason: ReasonInvalid, Detail: err.Error()}
	}
	return ex, nil
}

// Validate checks the fields the shadow side relies on and reports all problems at
// once: schema_version (0 is read as 1), request_id (1–256 bytes, no control
// characters), at least one message, at most maxMessages, known roles, non-empty
// content, and a response when requireResponse is set.
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
	if len(msgs) == 0 {
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
	if r := e.Response; r != nil {
		if r.LatencyMs < 0 || r.TTFTMs < 0 {
			errs = append(errs, errors.New("response.latency_ms and response.ttft_ms must not be negative"))
		}
		if r.Usage.PromptTokens < 0 || r.Usage.CompletionTokens < 0 {
			errs = append(errs, errors.New("response.usage token counts must not be negative"))
		}
	}
	return errors.Join(errs...)
}
