package shadow_test

import (
	"context"
	"slices"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
)

// TestPoolRecordsSimulatedLatencyScale: the simulated pool says by what factor
// it scaled latencies, and the worker pool collects it for the suite report.
func TestPoolRecordsSimulatedLatencyScale(t *testing.T) {
	if shadow.SimulatedLatencyScaleHeader != simpool.LatencyScaleHeader {
		t.Fatalf("the pool reads %q, the simulated pool writes %q", shadow.SimulatedLatencyScaleHeader, simpool.LatencyScaleHeader)
	}
	for _, scale := range []struct {
		f    float64
		want string
	}{{0, "0"}, {0.001, "0.001"}} {
		scfg := simpool.NewDefaultConfig()
		scfg.LatencyScale = scale.f
		pool, _ := simulatedPool(t, scfg)
		if got := pool.SimulatedLatencyScales(); len(got) != 0 {
			t.Fatalf("scales %v before any call", got)
		}
		if _, err := pool.Call(context.Background(), "gpt-5", []openai.ChatCompletionMessage{{Role: "user", Content: "What is 2+2?"}}); err != nil {
			t.Fatal(err)
		}
		if got := pool.SimulatedLatencyScales(); !slices.Equal(got, []string{scale.want}) {
			t.Errorf("scales %v, want [%s]", got, scale.want)
		}
	}
}
