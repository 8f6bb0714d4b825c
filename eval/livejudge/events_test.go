package livejudge_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/conductor-shadow/conductor-shadow/eval/judge/judgetest"
	"github.com/conductor-shadow/conductor-shadow/eval/livejudge"
	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// memExporter keeps the log records it is handed.
type memExporter struct {
	mu   sync.Mutex
	recs []sdklog.Record
}

func (e *memExporter) Export(_ context.Context, rs []sdklog.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range rs {
		e.recs = append(e.recs, r.Clone())
	}
	return nil
}
func (e *memExporter) Shutdown(context.Context) error   { return nil }
func (e *memExporter) ForceFlush(context.Context) error { return nil }

// Every stored live judgment is a gen_ai.evaluation.result event parented to
// its candidate run's invoke_workflow span, with the conventions' attributes;
// the judge's replies are in the explanation only with capture on.
func TestLiveEvaluationEvents(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			exp := &memExporter{}
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)))
			defer func() { _ = lp.Shutdown(context.Background()) }()
			cand, err := shadow.Instrument(&livePipeline{name: "cand", answer: qualityAnswers}, shadow.Telemetry{Tracers: tp})
			if err != nil {
				t.Fatal(err)
			}
			r := newRig(t, rigOptions{cfg: liveConfig(1, neverBinds), caller: judgetest.Honest(), events: livejudge.NewEvents(lp, capture)}, cand)
			for _, id := range []string{"r-0", "r-1", "r-2", "r-9"} { // r-9's candidate run fails
				r.send(id, judgetest.Answer(id, 5))
			}
			r.wait()
			runSpans := map[string]string{} // span id -> run id
			for _, s := range spans.Ended() {
				for _, kv := range s.Attributes() {
					if kv.Key == shadow.AttrRunID {
						runSpans[s.SpanContext().SpanID().String()] = kv.Value.AsString()
					}
				}
			}
			exp.mu.Lock()
			defer exp.mu.Unlock()
			if len(exp.recs) != 4 {
				t.Fatalf("%d events, want 4", len(exp.recs))
			}
			labels := map[string]int{}
			for _, rec := range exp.recs {
				attrs := map[attribute.Key]attribute.Value{}
				rec.WalkAttributes(func(kv attribute.KeyValue) bool { attrs[kv.Key] = kv.Value; return true })
				if rec.EventName() != livejudge.EvaluationEvent || attrs["gen_ai.evaluation.name"].AsString() != livejudge.EvaluationName {
					t.Errorf("event %q named %v", rec.EventName(), attrs["gen_ai.evaluation.name"])
				}
				label := attrs["gen_ai.evaluation.score.label"].AsString()
				labels[label]++
				want := map[string]float64{"win": 1, "tie": 0.5, "loss": 0}[label]
				if v, ok := attrs["gen_ai.evaluation.score.value"]; !ok || v.AsFloat64() != want {
					t.Errorf("%s: score value %v, want %v", label, v, want)
				}
				runID := attrs[shadow.AttrRunID].AsString()
				if got := runSpans[rec.SpanID().String()]; got == "" || got != runID {
					t.Errorf("event of run %s is parented to span %s (run %q)", runID, rec.SpanID(), got)
				}
				if attrs[livejudge.AttrInclusionProb].AsFloat64() != 1 {
					t.Errorf("inclusion probability %v", attrs[livejudge.AttrInclusionProb])
				}
				expl := attrs["gen_ai.evaluation.explanation"].AsString()
				if strings.Contains(expl, "WINNER:") != (capture && !strings.Contains(expl, "no judge asked")) {
					t.Errorf("capture %v, explanation %q", capture, expl)
				}
			}
			if labels["win"] != 1 || labels["tie"] != 1 || labels["loss"] != 2 {
				t.Errorf("labels %v, want a win, a tie and two losses (one without a judge)", labels)
			}
		})
	}
}
