package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// UsagePricer prices a usage with its cached prompt tokens at the cached rate
// (shadow.Price.Cost). A Pricer that also implements it is asked first, so a
// tapped incumbent gets the same cache discount as a pool candidate.
type UsagePricer interface {
	CostUsage(model string, u shadow.Usage) (usd float64, known bool)
}

// RequestRecord turns an exchange into the stored request row: the messages as
// JSON (content parts in the chat completions API's shapes; "[]" for a
// metadata copy, ex.BodyOmitted), their sha256, the tools as JSON, what the
// input lacks, the category from metadata["category"], the route from
// metadata["route"], why it is not shadowed (ex.StoreOnly), the provider's
// answer id and the bodies' sizes.
func RequestRecord(ex Exchange) (store.Request, error) {
	input := []byte("[]")
	if ex.BodyOmitted == "" {
		var err error
		if input, err = shadow.MarshalMessages(ex.Request.Messages); err != nil {
			return store.Request{}, fmt.Errorf("ingest: encode messages: %w", err)
		}
		input = unescapeHTMLInJSON(input)
	}
	sum := sha256.Sum256(input)
	source := store.SourceTap
	if ex.Metadata["source"] == store.SourceReplay {
		source = store.SourceReplay
	}
	received := ex.ReceivedAt
	if received.IsZero() {
		received = time.Now()
	}
	r := store.Request{
		RequestID:   ex.RequestID,
		SubjectHash: ex.SubjectHash,
		ReceivedAt:  received.UTC(),
		Source:      source,
		App:         ex.App,
		Input:       string(input),
		InputHash:   hex.EncodeToString(sum[:]),
		Category:    ex.Metadata["category"],
		Metadata:    ex.Metadata,
	}
	r.InputReduced = ex.Request.InputReduced
	r.NotShadowed, r.BodyOmitted, r.Route = ex.StoreOnly, ex.BodyOmitted, ex.Metadata["route"]
	r.RequestBytes, r.ResponseBytes = ex.RequestBytes, ex.ResponseBytes
	if ex.Response != nil {
		r.ResponseID = ex.Response.ID
	}
	if len(ex.Request.Tools) > 0 {
		tools, err := json.Marshal(ex.Request.Tools)
		if err != nil {
			return store.Request{}, fmt.Errorf("ingest: encode tools: %w", err)
		}
		r.Tools = string(tools)
	}
	return r, nil
}

// exchangeRecords builds what a copy is stored as before any candidate runs,
// for every queue and the recorder: the request row (RequestRecord) with the
// segments of its user messages (seg; none for a metadata copy, whose novelty
// is -1), and, when the incumbent answered, the incumbent's run
// and step priced by pricer (incumbentRun). A zero ex.ReceivedAt is set to
// now first, so the request and the incumbent run share it. unpriced is the
// base id of an incumbent model without a price ("" otherwise); the error is
// RequestRecord's.
func exchangeRecords(ex *Exchange, seg *segment.Segmenter, pricer Pricer) (b store.Batch, unpriced string, err error) {
	req, err := RequestRecord(*ex)
	if err != nil {
		return store.Batch{}, "", err
	}
	ex.ReceivedAt = req.ReceivedAt
	if ex.BodyOmitted == "" {
		SetSegments(&req, seg.Of(UserText(ex.Request.Messages)))
	} else {
		req.Novelty = -1
	}
	b.Requests = []store.Request{req}
	if ex.Response != nil {
		run, step, model := incumbentRun(*ex, pricer)
		b.Runs, b.Steps, unpriced = []store.Run{run}, []store.Step{step}, model
	}
	return b, unpriced, nil
}

// incumbentStatus is the run status of the incumbent's answer:
// store.StatusCancelledByClient when the client hung up mid-answer,
// store.StatusError for a non-2xx status, an error or an answer cut off by the
// incumbent, store.StatusOK otherwise.
func incumbentStatus(r *ExchangeResponse) string {
	switch {
	case r.CancelledByClient:
		return store.StatusCancelledByClient
	case r.Failed():
		return store.StatusError
	}
	return store.StatusOK
}

// incumbentError is the run's error text: the HTTP status with the error body,
// or why the answer is incomplete.
func incumbentError(r *ExchangeResponse) string {
	var msg string
	if r.Status != 0 && (r.Status < 200 || r.Status > 299) {
		msg = fmt.Sprintf("the incumbent answered HTTP %d %s", r.Status, http.StatusText(r.Status))
		if r.Error != "" {
			msg += ": " + r.Error
		}
		if ra := r.Headers["retry-after"]; ra != "" {
			msg += " (Retry-After: " + ra + ")"
		}
	} else if r.Error != "" {
		msg = r.Error
	}
	if r.CancelledByClient {
		note := fmt.Sprintf("the client hung up mid-answer: the run holds the %d characters that arrived", len([]rune(r.Content)))
		if msg != "" {
			return note + "; " + msg
		}
		return note
	}
	return msg
}

// detailJSON encodes the choices and the tool calls of an answer for the run's
// Choices and ToolCalls columns ("" when there are none).
func detailJSON(r *ExchangeResponse) (choices, toolCalls string) {
	if len(r.Choices) == 0 {
		return "", ""
	}
	b, _ := json.Marshal(r.Choices) // plain structs: cannot fail
	choices = string(b)
	type flatCall struct {
		Choice int `json:"choice"`
		ToolCall
	}
	var calls []flatCall
	for _, c := range r.Choices {
		for _, tc := range c.ToolCalls {
			calls = append(calls, flatCall{Choice: c.Index, ToolCall: tc})
		}
	}
	if len(calls) > 0 {
		b, _ = json.Marshal(calls)
		toolCalls = string(b)
	}
	return choices, toolCalls
}

// IncumbentRun turns the incumbent's recorded answer into a run with one step.
// The step keeps the model id as the API answered it (response.model, else
// request.model, e.g. "gpt-4o-2024-08-06"); the run's pipeline is named
// "incumbent:<base id>" with shadow.BaseModelID ("incumbent:gpt-4o"), so every
// dated snapshot of one model is one incumbent pipeline. Its cost is the
// recorded usage priced by pricer (see incumbentCost), cached prompt tokens at
// the cached rate when pricer implements UsagePricer; a model with no price is
// recorded at 0 USD, noted in the step's error and counted in
// StatsSnapshot.Unpriced by the callers that hold stats.
// A failed answer (non-2xx, error event, cut off) is a run with status "error"
// or "cancelled_by_client", its HTTP status, error text and rate-limit headers,
// and whatever text arrived: candidates are compared against it like any run.
func IncumbentRun(ex Exchange, pricer Pricer) (store.Run, store.Step) {
	run, step, _ := incumbentRun(ex, pricer)
	return run, step
}

// incumbentCost prices the incumbent's usage in USD: first by response.model, then,
// when that has no price, by request.model (a client that asks for
// "claude-sonnet-4" is answered by "claude-sonnet-4-20250514"). A Pricer resolves
// each id itself (the server's does with shadow.ResolvePrice). unpriced is true
// when tokens were used but neither id has a price: cost is then 0.
func incumbentCost(ex Exchange, pricer Pricer) (cost float64, unpriced bool) {
	resp := ex.Response
	if pricer == nil {
		return 0, false
	}
	for _, model := range []string{resp.Model, ex.Request.Model} {
		if model == "" {
			continue
		}
		var known bool
		if up, ok := pricer.(UsagePricer); ok {
			cost, known = up.CostUsage(model, resp.Usage.Shadow())
		} else {
			cost, known = pricer.Cost(model, resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
		}
		if known {
			return cost, false
		}
	}
	return 0, !(resp.Usage.PromptTokens == 0 && resp.Usage.CompletionTokens == 0)
}

// incumbentRun is IncumbentRun that also returns the base id of a model that
// had no price ("" when it was priced or used no tokens).
func incumbentRun(ex Exchange, pricer Pricer) (store.Run, store.Step, string) {
	resp := ex.Response
	model := resp.Model
	if model == "" {
		model = ex.Request.Model
	}
	base := shadow.BaseModelID(model)
	name := "incumbent:" + base
	runID := shadow.RunID(ex.RequestID, "", name)
	cost, unpriced := incumbentCost(ex, pricer)
	var note, unpricedModel string
	if unpriced {
		unpricedModel = base
		note = fmt.Sprintf("no price for model %q: cost recorded as 0", model)
		if ex.Request.Model != "" && ex.Request.Model != model {
			note = fmt.Sprintf("no price for model %q (nor requested %q): cost recorded as 0", model, ex.Request.Model)
		}
	}
	received := ex.ReceivedAt
	if received.IsZero() {
		received = time.Now()
	}
	status, errText := incumbentStatus(resp), incumbentError(resp)
	choices, toolCalls := detailJSON(resp)
	messages, _ := shadow.MarshalMessages(shadow.RedactMedia(ex.Request.Messages)) // the request row keeps the media's bytes
	run := store.Run{
		RunID:           runID,
		RequestID:       ex.RequestID,
		Pipeline:        name,
		PipelineVersion: "production",
		Mode:            store.ModeIncumbent,
		StartedAt:       received.UTC(),
		LatencyMs:       resp.LatencyMs,
		Status:          status,
		HTTPStatus:      int32(resp.Status),
		ResponseHeaders: resp.Headers,
		Partial:         resp.Partial,
		FinalOutput:     resp.Content,
		Reasoning:       resp.Reasoning,
		Choices:         choices,
		ToolCalls:       toolCalls,
		TokensIn:        resp.Usage.PromptTokens,
		TokensOut:       resp.Usage.CompletionTokens,
		CostUSD:         cost,
		Calls:           1,
		Error:           errText,
		Simulated:       ex.Simulated,
	}
	stepErr := errText
	if note != "" {
		stepErr = joinNonEmpty(stepErr, note)
	}
	step := store.Step{
		RunID:                   runID,
		Index:                   0,
		Parent:                  -1,
		Role:                    "incumbent",
		Worker:                  "incumbent",
		Model:                   model,
		Access:                  `"all"`,
		Messages:                string(messages),
		InputTokens:             resp.Usage.PromptTokens,
		OutputTokens:            resp.Usage.CompletionTokens,
		CachedInputTokens:       resp.Usage.CachedPromptTokens,
		CacheWriteInputTokens:   resp.Usage.CacheWritePromptTokens,
		CacheWrite1hInputTokens: resp.Usage.CacheWrite1hPromptTokens,
		CostUSD:                 cost,
		StartedAt:               received.UTC(),
		LatencyMs:               resp.LatencyMs,
		TTFTMs:                  resp.TTFTMs,
		Status:                  status,
		Output:                  resp.Content,
		Reasoning:               resp.Reasoning,
		FinishReason:            resp.FinishReason,
		Error:                   stepErr,
		Attempt:                 1,
	}
	if resp.FinishReason == store.FinishLength {
		run.Truncated, run.TruncatedSteps = true, 1
	}
	return run, step, unpricedModel
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
