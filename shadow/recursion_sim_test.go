package shadow

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestRecursiveCallAgainstSimulatedPool sends the recursive conductor call to the
// simulated pool, which reads a prompt holding a "model_id =" line as recursive:
// every reply must be either "keep" (three empty lists) or a corrective
// workflow that resolves and runs one level deeper; over 20 questions both occur.
func TestRecursiveCallAgainstSimulatedPool(t *testing.T) {
	scfg := simpool.NewDefaultConfig()
	scfg.LatencyScale = 0
	sim, err := simpool.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := testConfig(srv.URL + "/v1")
	cfg.Conductor.Pool = append(cfg.Conductor.Pool, "conductor")
	pool, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p, err := NewConductor(pool, cfg.Conductor)
	if err != nil {
		t.Fatal(err)
	}
	c := p.(*conductorPipeline)
	plan, err := ParsePlan(selfPlan)
	if err != nil {
		t.Fatal(err)
	}
	if plan, err = plan.resolve(c.cfg.Pool, c.cfg.Worker, c.cfg.MaxSteps, true); err != nil {
		t.Fatal(err)
	}
	kept, corrected := 0, 0
	for i := range 20 {
		q := fmt.Sprintf("What is %d times %d?", i+3, i+7)
		w := &workflowRun{c: c, req: Request{RequestID: q, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: q}}}}
		previous := fmt.Sprintf("The answer is %d.", (i+3)*(i+7))
		msgs := []openai.ChatCompletionMessage{
			{Role: "user", Content: "Solve it."}, {Role: "assistant", Content: previous}, {Role: "user", Content: "Check the workflow."}}
		call, response, nested, err := w.recurse(context.Background(), plan, selfPlan, 1, plan.Steps[1], msgs, 0)
		if err != nil {
			t.Fatalf("%s: %v (conductor said %q)", q, err, call.Output)
		}
		switch {
		case nested == nil:
			if response != previous {
				t.Errorf("%s: kept %q, want the previous answer %q", q, response, previous)
			}
			kept++
		default:
			last := nested[len(nested)-1]
			if last.Status != store.StatusOK || response != last.Response || response == "" {
				t.Errorf("%s: nested workflow %+v gave %q", q, last, response)
			}
			corrected++
		}
	}
	if kept == 0 || corrected == 0 {
		t.Errorf("kept %d, corrected %d of 20: want both outcomes", kept, corrected)
	}
}
