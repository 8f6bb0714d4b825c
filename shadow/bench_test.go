package shadow

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
	"github.com/conductor-shadow/conductor-shadow/store"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// latencyCaller is an in-process worker: it answers after latency (0: at once)
// with a fixed text and usage.
type latencyCaller struct{ latency time.Duration }

func (c latencyCaller) Call(ctx context.Context, worker string, msgs []openai.ChatCompletionMessage) (Call, error) {
	start := time.Now()
	if c.latency > 0 {
		if err := sleepCtx(ctx, c.latency); err != nil {
			return Call{Worker: worker}, err
		}
	}
	return Call{Worker: worker, Model: worker, Output: "answer of " + worker, PromptTokens: int64(10 * len(msgs)),
		CompletionTokens: 3, UsageReported: true, StartedAt: start, LatencyMs: msSince(start), Attempts: 1}, nil
}

// treePlan is 4 independent steps and an aggregator that sees them all.
func treePlan() Plan {
	p := Plan{}
	for i, w := range []string{"gemma-3-27b", "qwen3-32b", "claude-sonnet-4", "gemini-2.5-pro"} {
		p.Steps = append(p.Steps, PlanStep{Worker: w, ModelID: i, Subtask: fmt.Sprintf("part %d of the question", i), Access: AccessSteps()})
	}
	p.Steps = append(p.Steps, PlanStep{Worker: "gpt-5", ModelID: 6, Subtask: "combine the parts", Access: AccessAll()})
	return p
}

// chainPlan5 is 5 steps, each seeing every earlier one.
func chainPlan5() Plan {
	p := Plan{}
	for i := range 5 {
		p.Steps = append(p.Steps, PlanStep{Worker: "gpt-5", ModelID: 6, Subtask: fmt.Sprintf("step %d", i), Access: AccessAll()})
	}
	return p
}

// BenchmarkExecutorOverheadPerStep measures what the executor adds per step
// (scheduling, message building, result bookkeeping) against a zero-latency
// in-process worker. Reported: µs/step (target <= 50).
func BenchmarkExecutorOverheadPerStep(b *testing.B) {
	for _, bc := range []struct {
		name string
		plan Plan
	}{{"tree5", treePlan()}, {"chain5", chainPlan5()}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			caller := latencyCaller{}
			b.ReportAllocs()
			for b.Loop() {
				res := Execute(ctx, caller, bc.plan)
				if res[len(res)-1].Status != store.StatusOK {
					b.Fatal(res[len(res)-1].Err)
				}
			}
			perStep := float64(b.Elapsed().Microseconds()) / float64(b.N) / float64(len(bc.plan.Steps))
			b.ReportMetric(perStep, "µs/step")
		})
	}
}

// BenchmarkRecordOverheadPerStep adds what a pipeline does around each executed
// step: recording it as a store.Step (messages as JSON) and the run totals.
func BenchmarkRecordOverheadPerStep(b *testing.B) {
	ctx := context.Background()
	plan := treePlan()
	caller := latencyCaller{}
	req := userRequest("q")
	b.ReportAllocs()
	for b.Loop() {
		r := newRunRecorder("bench", "v", store.ModeCandidate, req)
		for _, sr := range Execute(ctx, caller, plan) {
			r.add(stepInput{role: RoleWorker, worker: sr.Step.Worker, model: sr.Step.Worker, subtask: sr.Step.Subtask,
				access: sr.Step.Access.String(), msgs: sr.Messages}, sr.Call, sr.Status, sr.Err)
		}
		_ = r.result()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(plan.Steps)), "µs/step")
}

// BenchmarkGuardOverheadPerCall measures a worker call's resilience wrapping
// without the HTTP call: concurrency slot, rate limiters and circuit breaker.
func BenchmarkGuardOverheadPerCall(b *testing.B) {
	g := newGuard("w", NewDefaultResilienceConfig(), WorkerConfig{RequestsPerMinute: 1e9, TokensPerMinute: 1e12})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		release, err := g.admit(ctx, 100)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = g.breaker.Execute(func() (struct{}, error) { return struct{}{}, nil })
		g.charge(10)
		release()
	}
}

// BenchmarkTreeWallVsCriticalPath runs the 5-step tree (4 independent steps + an
// "all" aggregator) with 200 ms workers. The critical path is 2 × 200 ms; a
// one-after-another run would take 5 × 200 ms. Reported: wall/critical (target
// <= 1.05) and the sequential/wall speed-up.
func BenchmarkTreeWallVsCriticalPath(b *testing.B) {
	const latency = 200 * time.Millisecond
	ctx := context.Background()
	caller := latencyCaller{latency: latency}
	plan := treePlan()
	critical := 2 * latency
	var worst float64
	for b.Loop() {
		start := time.Now()
		res := Execute(ctx, caller, plan)
		wall := time.Since(start)
		if res[4].Status != store.StatusOK {
			b.Fatal(res[4].Err)
		}
		worst = max(worst, float64(wall)/float64(critical))
	}
	mean := float64(b.Elapsed()) / float64(b.N)
	b.ReportMetric(mean/float64(critical), "wall/critical")
	b.ReportMetric(worst, "worst-wall/critical")
	b.ReportMetric(float64(5*latency)/mean, "speedup-vs-sequential")
}

// BenchmarkConcurrentRuns starts 1,000 tree runs at once with 50 ms workers and
// reports the peak goroutines and heap in use while they run, then checks with
// goleak that none is left once they finished.
func BenchmarkConcurrentRuns(b *testing.B) {
	const runs = 1000
	ctx := context.Background()
	caller := latencyCaller{latency: 50 * time.Millisecond}
	plan := treePlan()
	var peakG, peakHeap atomic.Int64
	baseG := runtime.NumGoroutine()
	for b.Loop() {
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() { // sampler
			defer close(sampled)
			var ms runtime.MemStats
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					peakG.Store(max(peakG.Load(), int64(runtime.NumGoroutine())))
					runtime.ReadMemStats(&ms)
					peakHeap.Store(max(peakHeap.Load(), int64(ms.HeapInuse)))
				}
			}
		}()
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range runs {
			wg.Go(func() {
				if res := Execute(ctx, caller, plan); res[4].Status != store.StatusOK {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		close(stop)
		<-sampled
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d runs failed", n)
		}
	}
	b.ReportMetric(float64(peakG.Load()-int64(baseG)), "peak-goroutines")
	b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/1000-runs")
	if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
		b.Fatalf("goroutines left after the runs: %v", err)
	}
}

// BenchmarkConductorRunLocalHTTP runs the whole conductor pipeline (planning
// call, parse, 5-step tree, recording) against a zero-delay fake server on
// loopback: the executor's overhead plus the HTTP/SSE client's, per step.
func BenchmarkConductorRunLocalHTTP(b *testing.B) {
	plan := `model_id = [0, 1, 4, 5, 6]
subtasks = ["a", "b", "c", "d", "combine"]
access_list = [[], [], [], [], "all"]`
	srv := shadowtest.NewServer(func(r shadowtest.Request) shadowtest.Reply {
		if r.Decoded.Model == "conductor" {
			return shadowtest.Reply{Content: plan, PromptTokens: 100, CompletionTokens: 40, Chunks: 1}
		}
		return shadowtest.Reply{Content: "answer", PromptTokens: 10, CompletionTokens: 2, Chunks: 1}
	})
	defer srv.Close()
	pool, err := NewPool(testConfig(srv.BaseURL()))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	p, err := NewConductor(pool, pool.Config().Conductor)
	if err != nil {
		b.Fatal(err)
	}
	req := userRequest("q")
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Run(context.Background(), req, store.ModeCandidate); res.Run.Status != store.StatusOK {
			b.Fatal(res.Run.Error)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/6, "µs/call")
}

// BenchmarkChatTelemetryPerCall measures what the GenAI telemetry adds to one
// worker call without the HTTP call: the chat span with its attributes (SDK
// tracer, in-memory exporter) and the token-usage and duration histograms.
// Reported: µs/call with telemetry on; compare with the noop case.
func BenchmarkChatTelemetryPerCall(b *testing.B) {
	w := WorkerConfig{Name: "gpt-5", Model: "gpt-5", Temperature: 0.2, MaxOutputTokens: 4096}
	call := Call{Worker: "gpt-5", Model: "gpt-5", ResponseModel: "gpt-5", PromptTokens: 120, CompletionTokens: 240,
		UsageReported: true, LatencyMs: 812, TTFTMs: 95, Attempts: 1, CostUSD: 0.0025, FinishReason: "stop"}
	msgs := userRequest("What is 2+2?").Messages
	for _, bc := range []struct {
		name string
		tel  Telemetry
	}{
		{"noop", Telemetry{}},
		{"sdk", Telemetry{Tracers: sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter())),
			Meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in, err := newInstruments(bc.tel)
			if err != nil {
				b.Fatal(err)
			}
			ctx := withStep(context.Background(), 2, PlanStep{Access: AccessAll()}, 0)
			b.ReportAllocs()
			for b.Loop() {
				cctx, span := in.startChat(ctx, w, msgs)
				in.endChat(cctx, span, w, call, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/call")
		})
	}
}
