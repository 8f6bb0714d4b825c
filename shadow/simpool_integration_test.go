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

// TestDefaultModalitiesMatchSimulatedProfiles: the default pool declares for
// each model the input modalities the simulated pool's profile takes, so no
// default worker is sent a part the simulated model refuses.
func TestDefaultModalitiesMatchSimulatedProfiles(t *testing.T) {
	profiles := map[string]simpool.Profile{}
	for _, p := range simpool.DefaultProfiles() {
		profiles[p.Name] = p
	}
	for _, w := range shadow.NewDefaultConfig().Workers {
		p := profiles[w.Name]
		for _, m := range shadow.Modalities() {
			if w.Accepts(m) != p.Takes(m) {
				t.Errorf("%s: the pool says it takes %s: %v, the simulated profile: %v", w.Name, m, w.Accepts(m), p.Takes(m))
			}
		}
	}
}

// TestConductorWithImageAgainstSimulatedPool: a conductor run on an image
// request through the simulated pool: every step whose worker takes images
// received it (the simulated answer says so), no other did (the pool would
// have refused it), and the run is input_reduced exactly when no step got it.
func TestConductorWithImageAgainstSimulatedPool(t *testing.T) {
	scfg := simpool.NewDefaultConfig()
	scfg.LatencyScale = 0
	pool, cfg := simulatedPool(t, scfg)
	cond, err := shadow.NewConductor(pool, cfg.Conductor)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{"Describe the chart in this image.", "Which city is shown here?", "Transcribe the sign in the photo."} {
		req := shadow.Request{RequestID: "img-" + q, Messages: []openai.ChatCompletionMessage{{Role: "user", MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: q}, shadow.ImagePart("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "")}}}}
		res := cond.Run(context.Background(), req, store.ModeCandidate)
		if res.Run.Status != store.StatusOK {
			t.Fatalf("request %d: status %s: %s", i, res.Run.Status, res.Run.Error)
		}
		saw := false
		for _, s := range res.Steps {
			w, _ := pool.Worker(s.Worker)
			said := strings.HasPrefix(s.Output, "(SIMULATED: simllm saw 1 image.)")
			if w.Accepts(shadow.ModalityImage) != said {
				t.Errorf("request %d step %d (%s, role %s): takes images %v, answer %.60q", i, s.Index, s.Worker, s.Role, w.Accepts(shadow.ModalityImage), s.Output)
			}
			saw = saw || said
		}
		if res.Run.InputReduced == saw {
			t.Errorf("request %d: input_reduced %v although a step saw the image: %v (%s)", i, res.Run.InputReduced, saw, res.Run.InputReducedReason)
		}
	}
}

// simulatedPool starts the simulated pool with scfg and returns the default
// worker pool pointed at it (built with opts) and its config; both are closed
// when the test ends.
func simulatedPool(t *testing.T, scfg simpool.Config, opts ...shadow.PoolOption) (*shadow.Pool, shadow.Config) {
	t.Helper()
	sim, err := simpool.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	cfg := shadow.NewDefaultConfig()
	for i := range cfg.Workers {
		cfg.Workers[i].BaseURL = srv.URL + "/v1"
	}
	pool, err := shadow.NewPool(cfg, opts...)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		srv.Close()
	})
	return pool, cfg
}
