package livejudge

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// InstrumentationName is the OpenTelemetry scope of live judging's events.
const InstrumentationName = "github.com/conductor-shadow/conductor-shadow/eval/livejudge"

// EvaluationEvent is the event name of the OpenTelemetry GenAI semantic
// conventions for an evaluation result (semconv v1.41.0 events, stability
// "development"); EvaluationName is its gen_ai.evaluation.name here.
const (
	EvaluationEvent = "gen_ai.evaluation.result"
	EvaluationName  = "pairwise_vs_incumbent"
)

// Attributes of our own on the events, next to the conventions' ones.
const (
	AttrInclusionProb = attribute.Key("conductor_shadow.judge.inclusion_prob")
	AttrJudgeWorker   = attribute.Key("conductor_shadow.judge.worker")
	AttrJudgeModel    = attribute.Key("conductor_shadow.judge.model")
)

// Events exports stored live judgments as gen_ai.evaluation.result log
// events (the OpenTelemetry Logs API, as the GenAI conventions define
// events). Each event is parented to the candidate run's span (its trace and
// span id, from the run's context) and carries:
//
//   - gen_ai.evaluation.name: EvaluationName
//   - gen_ai.evaluation.score.value: the candidate's score against the
//     incumbent, win 1, tie or inconsistent 0.5, loss 0 (eval.PairValue);
//     absent for a judge error
//   - gen_ai.evaluation.score.label: the outcome (win, tie, loss,
//     inconsistent, error)
//   - gen_ai.evaluation.explanation: the judge, its prompt version and each
//     order's verdict; with capture (telemetry.capture_content) also the
//     judge's replies and the reason a pair was decided without it
//   - error.type "judge_error" for an error outcome
//   - conductor_shadow.candidate, .pipeline_version, .run_id (the candidate
//     run), .request_id, .cost_usd, .judge.worker, .judge.model and
//     .judge.inclusion_prob (the sample's probability).
type Events struct {
	logger  otellog.Logger
	capture bool
}

// NewEvents returns the exporter of lp's logger; capture adds content (the
// judge's replies) to the explanation.
func NewEvents(lp otellog.LoggerProvider, capture bool) *Events {
	return &Events{logger: lp.Logger(InstrumentationName), capture: capture}
}

// Emit exports row, parented to span when it is valid.
func (e *Events) Emit(ctx context.Context, span trace.SpanContext, row store.Judgment) {
	if span.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, span)
	}
	var r otellog.Record
	r.SetEventName(EvaluationEvent)
	r.SetTimestamp(row.JudgedAt)
	r.SetObservedTimestamp(time.Now())
	r.SetSeverity(otellog.SeverityInfo)
	attrs := []attribute.KeyValue{
		semconv.GenAIEvaluationName(EvaluationName),
		semconv.GenAIEvaluationScoreLabel(row.Outcome),
		semconv.GenAIEvaluationExplanation(e.explanation(row)),
		shadow.AttrCandidate.String(row.Pipeline),
		shadow.AttrPipelineVersion.String(row.PipelineVersion),
		shadow.AttrRunID.String(row.CandidateRunID),
		shadow.AttrRequestID.String(row.RequestID),
		shadow.AttrCostUSD.Float64(row.CostUSD),
		AttrJudgeWorker.String(row.JudgeWorker),
		AttrJudgeModel.String(row.Judge),
		AttrInclusionProb.Float64(row.InclusionProb),
	}
	if row.Outcome == store.JudgmentError {
		attrs = append(attrs, semconv.ErrorTypeKey.String("judge_error"))
	} else {
		attrs = append(attrs, semconv.GenAIEvaluationScoreValue(eval.PairValue(row.Outcome)))
	}
	r.AddAttributes(attrs...)
	e.logger.Emit(ctx, r)
}

// explanation is the event's gen_ai.evaluation.explanation.
func (e *Events) explanation(row store.Judgment) string {
	if row.Verdict1 == "" && row.Verdict2 == "" && row.Outcome != store.JudgmentError {
		s := row.Outcome + ": a run had no answer; no judge asked"
		if e.capture && row.Note != "" {
			s = row.Note
		}
		return s
	}
	order := func(v string) string {
		if v == "" {
			return "error"
		}
		return v
	}
	s := fmt.Sprintf("[judge %s prompt %s] %s: incumbent shown first → %s, candidate shown first → %s",
		row.Judge, row.PromptVersion, row.Outcome, order(row.Verdict1), order(row.Verdict2))
	if e.capture {
		s += fmt.Sprintf("\nincumbent shown first, the judge replied:\n%s\ncandidate shown first, the judge replied:\n%s", row.Raw1, row.Raw2)
		if row.Error != "" {
			s += "\nerror: " + row.Error
		}
	}
	return s
}
