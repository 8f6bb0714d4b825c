package shadow_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// End to end through the real HTTP client path against the simulated pool (no
// latency): the simulated conductor's plans parse and run, every run is marked
// simulated, and with malformed plans forced the fallback answers.
func TestConductorAgainstSimulatedPool(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "shared", "datasets", "gsm8k_test_150.jsonl"))
	if err != nil {
		t.Skipf("dataset not available: %v", err)
	}
	cases, err := simpool.ReadCases(f, "gsm8k")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	cases = cases[:5]
	for _, malformed := range []float64{0, 1} {
		scfg := simpool.NewDefaultConfig()
		scfg.LatencyScale = 0
		scfg.Cases = cases
		scfg.MalformedPlanProb = malformed
		sim, err := simpool.New(scfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(sim)
		cfg := shadow.NewDefaultConfig()
		for i := range cfg.Workers {
			cfg.Workers[i].BaseURL = srv.URL + "/v1"
		}
		pool, err := shadow.NewPool(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cond, err := shadow.NewConductor(pool, cfg.Conductor)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			res := cond.Run(context.Background(), shadow.Request{RequestID: c.ID,
				Messages: []openai.ChatCompletionMessage{{Role: "user", Content: c.Input}}}, store.ModeCandidate)
			run := res.Run
			if !run.Simulated || run.FinalOutput == "" || run.TokensIn == 0 || run.CostUSD <= 0 {
				t.Errorf("malformed=%v %s: run %+v", malformed, c.ID, run)
			}
			switch malformed {
			case 0:
				if run.Status != store.StatusOK || run.Plan == "" || len(res.Steps) < 2 {
					t.Errorf("%s: status %q error %q plan %q raw %q", c.ID, run.Status, run.Error, run.Plan, run.PlanRaw)
				}
				for _, st := range res.Steps[1:] {
					if !strings.Contains(st.Subtask, c.Input[:40]) {
						t.Errorf("%s: subtask %q is not self-contained", c.ID, st.Subtask)
					}
				}
			case 1:
				last := res.Steps[len(res.Steps)-1]
				if run.Status != store.StatusPlanUnparsable || last.Role != shadow.RoleFallback {
					t.Errorf("%s: status %q error %q raw %q", c.ID, run.Status, run.Error, run.PlanRaw)
				}
			}
		}
		pool.Close()
		srv.Close()
	}
}

// A worker whose answer hits max_tokens on the simulated pool reports
// finish_reason "length": the step records it and the run is marked truncated;
// with room to answer the step finishes with "stop" and the run is not.
func TestTruncationRecordedFromSimulatedPool(t *testing.T) {
	cases, err := simpool.LoadSets(filepath.Join("..", "regression-sets"))
	if err != nil {
		t.Fatal(err)
	}
	var aime simpool.Case
	for _, c := range cases {
		if strings.HasPrefix(c.ID, "aime") {
			aime = c
			break
		}
	}
	scfg := simpool.NewDefaultConfig()
	scfg.LatencyScale = 0
	scfg.Cases = []simpool.Case{aime}
	sim, err := simpool.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	defer srv.Close()
	for _, tt := range []struct {
		maxTokens int
		finish    string
		truncated bool
	}{{64, store.FinishLength, true}, {0, store.FinishStop, false}} {
		cfg := shadow.NewDefaultConfig()
		for i := range cfg.Workers {
			cfg.Workers[i].BaseURL = srv.URL + "/v1"
			cfg.Workers[i].MaxOutputTokens = tt.maxTokens
		}
		pool, err := shadow.NewPool(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := shadow.NewSingle(pool, "gpt-5")
		if err != nil {
			t.Fatal(err)
		}
		res := p.Run(context.Background(), shadow.Request{RequestID: aime.ID,
			Messages: []openai.ChatCompletionMessage{{Role: "user", Content: aime.Input}}}, store.ModeCandidate)
		pool.Close()
		st := res.Steps[0]
		if st.FinishReason != tt.finish || res.Run.Truncated != tt.truncated || res.Run.TruncatedSteps != map[bool]int32{true: 1}[tt.truncated] {
			t.Errorf("max_tokens %d: step finish %q, run truncated %v (%d steps); want %q, %v",
				tt.maxTokens, st.FinishReason, res.Run.Truncated, res.Run.TruncatedSteps, tt.finish, tt.truncated)
		}
		if tt.truncated && (res.Run.Status != store.StatusOK || st.OutputTokens != int64(tt.maxTokens)) {
			t.Errorf("truncated call: status %q, %d output tokens, want ok and %d", res.Run.Status, st.OutputTokens, tt.maxTokens)
		}
	}
}
