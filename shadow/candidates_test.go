package shadow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"gopkg.in/yaml.v3"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func loadCandidates(t *testing.T) []CandidateConfig {
	t.Helper()
	data, err := os.ReadFile("testdata/candidates.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cs []CandidateConfig
	if err := dec.Decode(&cs); err != nil {
		t.Fatal(err)
	}
	if err := ValidateCandidates(cs, "conductor"); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestCandidatePipelines runs every candidate of testdata/candidates.yaml on a
// fake pool: each step must receive exactly the sequential reference messages of
// the candidate's workflow, and the steps and answers must match the golden file.
func TestCandidatePipelines(t *testing.T) {
	_, pool := newFake(t, scripted{})
	var out strings.Builder
	for _, c := range loadCandidates(t) {
		p, err := NewPipeline(pool, c)
		if err != nil {
			t.Fatalf("%s: %v", c.CandidateName(), err)
		}
		res := p.Run(context.Background(), userRequest("What is 6 times 7?"), store.ModeCandidate)
		if res.Run.Status != store.StatusOK || res.Run.Pipeline != p.Name() || res.Run.RunID != RunID("req-1", "", p.Name()) {
			t.Errorf("%s: run %+v", p.Name(), res.Run)
		}
		if res.Run.Calls != int32(len(res.Steps)) {
			t.Errorf("%s: %d calls for %d steps", p.Name(), res.Run.Calls, len(res.Steps))
		}
		if res.Run.Plan != "" {
			var plan Plan
			if err := json.Unmarshal([]byte(res.Run.Plan), &plan); err != nil {
				t.Fatalf("%s: plan %s: %v", p.Name(), res.Run.Plan, err)
			}
			ref := referenceMessages(t, plan)
			for i, s := range res.Steps {
				want, _ := json.Marshal(ref[i])
				if s.Messages != string(want) {
					t.Errorf("%s: step %d messages\n got %s\nwant %s", p.Name(), i, s.Messages, want)
				}
			}
		}
		fmt.Fprintf(&out, "== %s (%s)\n", p.Name(), c.Kind)
		for _, s := range res.Steps {
			fmt.Fprintf(&out, "  %d %s %s access=%s subtask=%q\n", s.Index, s.Role, s.Worker, s.Access, s.Subtask)
		}
		fmt.Fprintf(&out, "  final: %s\n", res.Run.FinalOutput)
	}
	golden(t, "candidates.golden", out.String())
}

func TestCandidateConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		c    CandidateConfig
		want string // substring of the error; empty: valid
	}{
		{"single ok", CandidateConfig{Kind: KindSingle, Workers: []string{"a"}}, ""},
		{"no kind", CandidateConfig{Workers: []string{"a"}}, "kind: required"},
		{"unknown kind", CandidateConfig{Kind: "magic"}, `kind: "magic" is not one of`},
		{"single with two", CandidateConfig{Kind: KindSingle, Workers: []string{"a", "b"}}, "exactly one worker"},
		{"moa one proposer", CandidateConfig{Kind: KindMoA, Workers: []string{"a"}, Aggregator: "b"}, "at least 2 proposers"},
		{"moa no aggregator", CandidateConfig{Kind: KindMoA, Workers: []string{"a", "b"}}, "aggregator: required"},
		{"refine negative rounds", CandidateConfig{Kind: KindSelfRefine, Workers: []string{"a"}, Rounds: -1}, "rounds"},
		{"chain empty", CandidateConfig{Kind: KindChain}, "at least one step"},
		{"chain forward access", CandidateConfig{Kind: KindChain, Steps: []ChainStep{
			{Worker: "a", Prompt: "x", Access: "[1]"}, {Worker: "b", Prompt: "y"}}}, "forward_reference"},
		{"chain bad access", CandidateConfig{Kind: KindChain, Steps: []ChainStep{{Worker: "a", Prompt: "x", Access: "some"}}}, "steps[0].access"},
		{"chain no prompt", CandidateConfig{Kind: KindChain, Steps: []ChainStep{{Worker: "a"}}}, "prompt are required"},
		{"conductor ok", CandidateConfig{Kind: KindConductor}, ""},
		{"conductor with workers", CandidateConfig{Kind: KindConductor, Workers: []string{"a"}}, "takes none"},
		{"conductor renamed", CandidateConfig{Kind: KindConductor, Name: "planner"}, `named "conductor"`},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if tt.want == "" && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	dup := []CandidateConfig{{Kind: KindSingle, Workers: []string{"a"}}, {Kind: KindSingle, Workers: []string{"a"}}}
	if err := ValidateCandidates(dup); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("duplicate names: err = %v", err)
	}
}

// The conductor is a candidate kind like the others: its short form and
// {kind: conductor} build the pipeline NewConductor builds from the pool's
// conductor config, version included; "single:<worker>" keeps NewSingle's.
func TestConductorIsACandidateKind(t *testing.T) {
	_, pool := newFake(t, scripted{})
	want, err := NewConductor(pool, pool.Config().Conductor)
	if err != nil {
		t.Fatal(err)
	}
	single, err := NewSingle(pool, "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	short, err := ParseCandidate("conductor")
	if err != nil {
		t.Fatal(err)
	}
	shortSingle, err := ParseCandidate("single:gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    CandidateConfig
		want Pipeline
	}{
		{"short conductor", short, want}, {"conductor kind", CandidateConfig{Kind: KindConductor}, want},
		{"short single", shortSingle, single},
	} {
		p, err := NewPipeline(pool, tc.c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.Name() != tc.want.Name() || p.Version() != tc.want.Version() || tc.c.CandidateName() != tc.want.Name() {
			t.Errorf("%s: %s %s (named %s), want %s %s", tc.name, p.Name(), p.Version(), tc.c.CandidateName(), tc.want.Name(), tc.want.Version())
		}
	}
	for _, bad := range []string{"magic", "single:", "conductor:x", ""} {
		if _, err := ParseCandidate(bad); err == nil {
			t.Errorf("ParseCandidate(%q): no error", bad)
		}
	}
	noConductor := pool.Config()
	noConductor.Conductor.Worker = ""
	if err := short.CheckWorkers(noConductor); err == nil || !strings.Contains(err.Error(), "shadow.conductor.worker") {
		t.Errorf("a conductor without its worker: %v", err)
	}
	if err := (CandidateConfig{Kind: KindSingle, Workers: []string{"llama-9000"}}).CheckWorkers(pool.Config()); err == nil || !strings.Contains(err.Error(), "llama-9000") {
		t.Errorf("an unknown worker: %v", err)
	}
}

func TestNewPipelineUnknownWorker(t *testing.T) {
	_, pool := newFake(t, scripted{})
	_, err := NewPipeline(pool, CandidateConfig{Kind: KindMoA, Workers: []string{"gpt-5", "llama-9000"}, Aggregator: "gpt-5"})
	if err == nil || !strings.Contains(err.Error(), "llama-9000") {
		t.Fatalf("err = %v, want it to name the unknown worker", err)
	}
}

func TestQuestionTextMultiTurn(t *testing.T) {
	msgs := []openai.ChatCompletionMessage{
		{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "And 2+2?"}}
	want := "Earlier turns of the conversation:\n[user]\nHi\n[assistant]\nHello!\n\nQuestion:\nAnd 2+2?"
	if got := questionText(msgs); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
