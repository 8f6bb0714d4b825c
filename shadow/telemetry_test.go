package shadow_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A conductor run through the simulated pool makes one invoke_workflow span
// whose children are one chat span per model call, carrying the GenAI
// semantic-convention attributes, and the text only when content capture is on.
func TestConductorRunSpans(t *testing.T) {
	for _, capture := range []bool{false, true} {
		scfg := simpool.NewDefaultConfig()
		scfg.LatencyScale = 0
		sim, err := simpool.New(scfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(sim)
		cfg := shadow.NewDefaultConfig()
		for i := range cfg.Workers {
			cfg.Workers[i].BaseURL = srv.URL + "/v1"
		}
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		tel := shadow.Telemetry{Tracers: tp, Meters: mp, CaptureContent: capture}
		pool, err := shadow.NewPool(cfg, shadow.WithTelemetry(tel))
		if err != nil {
			t.Fatal(err)
		}
		cond, err := shadow.NewConductor(pool, cfg.Conductor)
		if err != nil {
			t.Fatal(err)
		}
		p, err := shadow.Instrument(cond, tel)
		if err != nil {
			t.Fatal(err)
		}
		question := "Natalia sold clips to 48 of her friends in April. How many clips?"
		res := p.Run(context.Background(), shadow.Request{RequestID: "r1",
			Messages: []openai.ChatCompletionMessage{{Role: "user", Content: question}}}, store.ModeCandidate)
		srv.Close()
		pool.Close()

		spans := exp.GetSpans().Snapshots()
		var root sdktrace.ReadOnlySpan
		var chats []sdktrace.ReadOnlySpan
		for _, s := range spans {
			switch {
			case s.Name() == "invoke_workflow conductor":
				root = s
			case strings.HasPrefix(s.Name(), "chat "):
				chats = append(chats, s)
			}
		}
		if root == nil {
			t.Fatalf("capture=%v: no invoke_workflow span among %d", capture, len(spans))
		}
		ra := attrs(root)
		if ra["gen_ai.operation.name"].AsString() != "invoke_workflow" || ra["conductor_shadow.candidate"].AsString() != "conductor" ||
			ra["conductor_shadow.run_id"].AsString() != res.Run.RunID || ra["gen_ai.usage.input_tokens"].AsInt64() != res.Run.TokensIn ||
			ra["conductor_shadow.cost_usd"].AsFloat64() != res.Run.CostUSD {
			t.Errorf("capture=%v: run span attributes %v, run %+v", capture, ra, res.Run)
		}
		if len(chats) != int(res.Run.Calls) {
			t.Errorf("capture=%v: %d chat spans, run made %d calls", capture, len(chats), res.Run.Calls)
		}
		withStep := 0
		for _, c := range chats {
			if c.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Errorf("chat span %s is not a child of the run span", c.Name())
			}
			a := attrs(c)
			if a["gen_ai.operation.name"].AsString() != "chat" || a["gen_ai.provider.name"].AsString() != "openai" ||
				a["gen_ai.request.model"].AsString() == "" || a["gen_ai.response.model"].AsString() == "" ||
				a["gen_ai.usage.output_tokens"].AsInt64() <= 0 || len(a["gen_ai.response.finish_reasons"].AsStringSlice()) == 0 {
				t.Errorf("chat span %s attributes %v", c.Name(), a)
			}
			if _, ok := a["conductor_shadow.step.index"]; ok {
				withStep++
				if a["conductor_shadow.step.access"].AsString() == "" {
					t.Errorf("chat span %s has a step index but no access list", c.Name())
				}
			}
			_, hasIn := a["gen_ai.input.messages"]
			_, hasOut := a["gen_ai.output.messages"]
			if hasIn != capture || hasOut != capture {
				t.Errorf("capture=%v: chat span carries input=%v output=%v", capture, hasIn, hasOut)
			}
			if capture && !strings.Contains(a["gen_ai.input.messages"].AsString(), `"parts"`) {
				t.Errorf("input messages not in the conventions' shape: %s", a["gen_ai.input.messages"].AsString())
			}
		}
		if res.Run.Status == store.StatusOK && withStep == 0 {
			t.Errorf("capture=%v: no chat span names its workflow step", capture)
		}

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				seen[m.Name] = true
			}
		}
		for _, name := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "conductor_shadow.runs", "conductor_shadow.cost_usd"} {
			if !seen[name] {
				t.Errorf("metric %s not recorded (have %v)", name, seen)
			}
		}
	}
}
