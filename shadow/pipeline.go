// Package shadow runs candidate pipelines (and the incumbent, when asked) on one
// request: the conductor client and plan parser, the workflow executor, the worker
// pool reached through OpenAI-compatible chat APIs, pricing and fallback.
package shadow

import (
	"context"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/trace"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Request is one input to run a pipeline on.
type Request struct {
	RequestID  string                         // the trace this run belongs to
	SuiteRunID string                         // set when a suite run sends it
	Messages   []openai.ChatCompletionMessage // the user's chat, as production received it, media parts included
	// Tools are the request's tool definitions. Candidates that answer the
	// request as it is (single, blackbox) send them to their worker; workflow
	// steps answer subtasks in text and get none.
	Tools []openai.Tool
	// InputReduced says what production received that Messages lack (a
	// conversation the tap could not rebuild); "" when they are whole. Every
	// run of the request is then marked input_reduced with this reason.
	InputReduced string
}

// Result is what one pipeline run produced, ready to store: the run row and its
// steps (Run.RunID is set on every step).
type Result struct {
	Run   store.Run
	Steps []store.Step
	// Span is the run's "invoke_workflow" span (Instrument); invalid when the
	// pipeline is not instrumented. Live judging parents its evaluation
	// events to it.
	Span trace.SpanContext
}

// Pipeline is anything that answers a request: the conductor, a single model, or a
// fixed chain. Run never returns a Go error for model or plan failures: they are
// recorded in Result.Run.Status and Result.Run.Error (and in the failing step), so
// a failed run is still stored. Run sets Run.RunID deterministically from
// (RequestID, SuiteRunID, Name) so a re-delivered request maps to the same row.
type Pipeline interface {
	Name() string    // e.g. "conductor", "single:gpt-5"
	Version() string // changes when the pipeline's config changes
	Run(ctx context.Context, req Request, mode string) Result
}
