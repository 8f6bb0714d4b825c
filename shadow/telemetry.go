package shadow

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// InstrumentationName is the OpenTelemetry instrumentation scope of the shadow side.
const InstrumentationName = "github.com/conductor-shadow/conductor-shadow/shadow"

// ProviderName is the gen_ai.provider.name of every worker call: workers are
// reached through the OpenAI chat-completions API (OpenTelemetry GenAI semantic
// conventions v1.41.0, "openai" for the OpenAI API and compatible endpoints).
const ProviderName = "openai"

// Attributes of our own, next to the GenAI semantic-convention ones.
const (
	AttrCandidate       = attribute.Key("conductor_shadow.candidate")        // pipeline name, e.g. "conductor"
	AttrPipelineVersion = attribute.Key("conductor_shadow.pipeline_version") // Pipeline.Version()
	AttrMode            = attribute.Key("conductor_shadow.mode")             // store.ModeIncumbent or store.ModeCandidate
	AttrRequestID       = attribute.Key("conductor_shadow.request_id")       // the trace's request id
	AttrRunID           = attribute.Key("conductor_shadow.run_id")
	AttrRunStatus       = attribute.Key("conductor_shadow.status") // store.Status*
	AttrCalls           = attribute.Key("conductor_shadow.calls")  // model calls of the run
	AttrCostUSD         = attribute.Key("conductor_shadow.cost_usd")
	AttrWorker          = attribute.Key("conductor_shadow.worker")       // worker name in the pool
	AttrStepIndex       = attribute.Key("conductor_shadow.step.index")   // the step's index in its workflow
	AttrStepAccess      = attribute.Key("conductor_shadow.step.access")  // access list as JSON: "all", [] or [0,2]
	AttrStepDepth       = attribute.Key("conductor_shadow.step.depth")   // recursion depth, 0 at top level
	AttrAttempts        = attribute.Key("conductor_shadow.attempts")     // tries the call took
	AttrSimulated       = attribute.Key("conductor_shadow.simulated")    // answered by the simulated pool
	AttrSuiteRunID      = attribute.Key("conductor_shadow.suite_run_id") // set for suite traffic
)

// Telemetry is how the shadow side reports through OpenTelemetry. The zero value
// reports nothing. Providers are handed in, never taken from globals.
type Telemetry struct {
	// Tracers makes one "invoke_workflow {pipeline}" span per run (see
	// Instrument) and one "chat {model}" span per worker call; nil: no spans.
	Tracers trace.TracerProvider
	// Meters records the GenAI client metrics gen_ai.client.token.usage
	// ({token}) and gen_ai.client.operation.duration (s) per worker call, and
	// conductor_shadow.runs ({run}, by candidate, mode and status) and
	// conductor_shadow.cost_usd (USD) per run; nil: no metrics.
	Meters metric.MeterProvider
	// CaptureContent adds the prompt (gen_ai.input.messages) and the answer
	// (gen_ai.output.messages) to spans. Off by default, as the GenAI
	// conventions advise: they hold user text. Media parts are shown by type,
	// size and hash, never their bytes, and each attribute is cut to
	// MaxContentBytes (see ContentJSON).
	CaptureContent bool
	// MaxContentBytes caps each captured content attribute, bytes of JSON;
	// 0 means DefaultMaxContentBytes.
	MaxContentBytes int
}

// instruments are the tracer and meters built from a Telemetry.
type instruments struct {
	tracer     trace.Tracer
	capture    bool
	maxContent int // bytes per content attribute
	tokenUsage genaiconv.ClientTokenUsage
	duration   genaiconv.ClientOperationDuration
	runs       metric.Int64Counter
	cost       metric.Float64Counter
}

func newInstruments(t Telemetry) (*instruments, error) {
	tp, mp := t.Tracers, t.Meters
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m := mp.Meter(InstrumentationName)
	maxContent := t.MaxContentBytes
	if maxContent <= 0 {
		maxContent = DefaultMaxContentBytes
	}
	in := &instruments{tracer: tp.Tracer(InstrumentationName), capture: t.CaptureContent, maxContent: maxContent}
	var err error
	// Bucket boundaries as the GenAI metric conventions advise.
	if in.tokenUsage, err = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(
		1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)); err != nil {
		return nil, fmt.Errorf("shadow: telemetry: %w", err)
	}
	if in.duration, err = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(
		0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil {
		return nil, fmt.Errorf("shadow: telemetry: %w", err)
	}
	if in.runs, err = m.Int64Counter("conductor_shadow.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Pipeline runs finished, by candidate, mode and status.")); err != nil {
		return nil, fmt.Errorf("shadow: telemetry: %w", err)
	}
	if in.cost, err = m.Float64Counter("conductor_shadow.cost_usd", metric.WithUnit("{USD}"),
		metric.WithDescription("Cost of pipeline runs in USD (tokens × the worker's list price), by candidate and mode.")); err != nil {
		return nil, fmt.Errorf("shadow: telemetry: %w", err)
	}
	return in, nil
}

// stepInfo is what the executor knows about the step a call belongs to.
type stepInfo struct {
	index  int
	access string
	depth  int
}

type stepKey struct{}

// withStep marks ctx as belonging to workflow step i.
func withStep(ctx context.Context, i int, st PlanStep, depth int) context.Context {
	return context.WithValue(ctx, stepKey{}, stepInfo{index: i, access: st.Access.String(), depth: depth})
}

// startChat opens the "chat {model}" span of one worker call.
func (in *instruments) startChat(ctx context.Context, w WorkerConfig, msgs []openai.ChatCompletionMessage) (context.Context, trace.Span) {
	ctx, span := in.tracer.Start(ctx, "chat "+w.Model, trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span // no attributes to build for a span nobody records
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(ProviderName),
		semconv.GenAIRequestModel(w.Model),
		semconv.GenAIRequestStream(true),
		AttrWorker.String(w.Name),
	}
	if w.Temperature != 0 {
		attrs = append(attrs, semconv.GenAIRequestTemperature(float64(w.Temperature)))
	}
	if w.MaxOutputTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(w.MaxOutputTokens))
	}
	if s, ok := ctx.Value(stepKey{}).(stepInfo); ok {
		attrs = append(attrs, AttrStepIndex.Int(s.index), AttrStepAccess.String(s.access), AttrStepDepth.Int(s.depth))
	}
	if in.capture {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(ContentJSON(msgs, "", in.maxContent)))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endChat records the call's outcome on its span and in the GenAI client metrics.
func (in *instruments) endChat(ctx context.Context, span trace.Span, w WorkerConfig, c Call, err error) {
	if span.IsRecording() {
		in.setChatOutcome(span, c, err)
	}
	metricAttrs := []attribute.KeyValue{in.duration.AttrRequestModel(w.Model)}
	if c.ResponseModel != "" {
		metricAttrs = append(metricAttrs, in.duration.AttrResponseModel(c.ResponseModel))
	}
	if err != nil {
		metricAttrs = append(metricAttrs, semconv.ErrorTypeOther)
	}
	in.duration.Record(ctx, c.LatencyMs/1000, genaiconv.OperationNameChat, genaiconv.ProviderNameOpenAI, metricAttrs...)
	if c.UsageReported {
		in.tokenUsage.Record(ctx, c.PromptTokens, genaiconv.OperationNameChat, genaiconv.ProviderNameOpenAI, genaiconv.TokenTypeInput, metricAttrs...)
		in.tokenUsage.Record(ctx, c.CompletionTokens, genaiconv.OperationNameChat, genaiconv.ProviderNameOpenAI, genaiconv.TokenTypeOutput, metricAttrs...)
	}
	span.End()
}

// setChatOutcome puts the response's model, id, finish reasons, usage, cost
// and error on a recording chat span.
func (in *instruments) setChatOutcome(span trace.Span, c Call, err error) {
	attrs := []attribute.KeyValue{AttrAttempts.Int(c.Attempts), AttrCostUSD.Float64(c.CostUSD), AttrSimulated.Bool(c.Simulated)}
	if c.ResponseModel != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(c.ResponseModel))
	}
	if c.ResponseID != "" {
		attrs = append(attrs, semconv.GenAIResponseID(c.ResponseID))
	}
	if c.FinishReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(c.FinishReason))
	}
	if c.UsageReported {
		attrs = append(attrs, semconv.GenAIUsageInputTokensKey.Int64(c.PromptTokens), semconv.GenAIUsageOutputTokensKey.Int64(c.CompletionTokens))
	}
	if c.TTFTMs > 0 {
		attrs = append(attrs, semconv.GenAIResponseTimeToFirstChunk(c.TTFTMs/1000))
	}
	if c.UsageReported && c.CachedPromptTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(int(c.CachedPromptTokens)))
	}
	if c.UsageReported && c.CacheWritePromptTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheCreationInputTokens(int(c.CacheWritePromptTokens)))
	}
	if in.capture && err == nil {
		out := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: c.Output, ToolCalls: c.ToolCalls}
		attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(ContentJSON([]openai.ChatCompletionMessage{out}, c.FinishReason, in.maxContent)))
	}
	span.SetAttributes(attrs...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeOther)
	}
}

// instrumentedPipeline wraps a Pipeline with its run span and run metrics.
type instrumentedPipeline struct {
	Pipeline
	in *instruments
}

// Instrument wraps p so every Run makes one "invoke_workflow {name}" span
// (gen_ai.operation.name = invoke_workflow, gen_ai.workflow.name = the pipeline
// name; usage with the steps' cache reads and writes summed, cost, status and
// the run id as attributes) whose children are the run's "chat" spans, and
// counts the run in conductor_shadow.runs and its cost in
// conductor_shadow.cost_usd. The span's parent is whatever span ctx carries (the
// production request's, when the tap received a traceparent).
func Instrument(p Pipeline, t Telemetry) (Pipeline, error) {
	in, err := newInstruments(t)
	if err != nil {
		return nil, err
	}
	return &instrumentedPipeline{Pipeline: p, in: in}, nil
}

// Run implements Pipeline.
func (p *instrumentedPipeline) Run(ctx context.Context, req Request, mode string) Result {
	name := p.Name()
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeWorkflow,
		semconv.GenAIWorkflowNameKey.String(name),
		AttrCandidate.String(name),
		AttrPipelineVersion.String(p.Version()),
		AttrRequestID.String(req.RequestID),
	}
	if req.SuiteRunID != "" {
		attrs = append(attrs, AttrSuiteRunID.String(req.SuiteRunID))
	}
	if p.in.capture {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(ContentJSON(req.Messages, "", p.in.maxContent)))
	}
	ctx, span := p.in.tracer.Start(ctx, "invoke_workflow "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	res := p.Pipeline.Run(ctx, req, mode)
	r := res.Run
	span.SetAttributes(
		AttrMode.String(r.Mode), AttrRunID.String(r.RunID), AttrRunStatus.String(r.Status),
		AttrCalls.Int(int(r.Calls)), AttrCostUSD.Float64(r.CostUSD), AttrSimulated.Bool(r.Simulated),
		semconv.GenAIUsageInputTokensKey.Int64(r.TokensIn), semconv.GenAIUsageOutputTokensKey.Int64(r.TokensOut),
	)
	var cacheRead, cacheWrite int64
	for _, st := range res.Steps {
		cacheRead += st.CachedInputTokens
		cacheWrite += st.CacheWriteInputTokens
	}
	if cacheRead > 0 {
		span.SetAttributes(semconv.GenAIUsageCacheReadInputTokens(int(cacheRead)))
	}
	if cacheWrite > 0 {
		span.SetAttributes(semconv.GenAIUsageCacheCreationInputTokens(int(cacheWrite)))
	}
	if p.in.capture && r.Status == store.StatusOK {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(ContentJSON([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleAssistant, Content: r.FinalOutput}}, "", p.in.maxContent)))
	}
	if r.Status != store.StatusOK {
		span.SetStatus(codes.Error, r.Status+": "+r.Error)
	}
	span.End()
	res.Span = span.SpanContext()
	set := metric.WithAttributes(AttrCandidate.String(name), AttrMode.String(r.Mode), AttrRunStatus.String(r.Status))
	p.in.runs.Add(ctx, 1, set)
	p.in.cost.Add(ctx, r.CostUSD, metric.WithAttributes(AttrCandidate.String(name), AttrMode.String(r.Mode)))
	return res
}

func tracerProviderOrNoop(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return tracenoop.NewTracerProvider()
	}
	return tp
}

func meterProviderOrNoop(mp metric.MeterProvider) metric.MeterProvider {
	if mp == nil {
		return metricnoop.NewMeterProvider()
	}
	return mp
}
