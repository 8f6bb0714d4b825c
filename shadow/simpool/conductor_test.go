package simpool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// pool is the order the platform shows the workers to the conductor in the tests.
var testPool = []string{"gemini-2.5-pro", "claude-sonnet-4", "gpt-5", "deepseek-r1-distill-qwen-32b", "gemma-3-27b", "qwen3-32b", "qwen3-32b-thinking"}

func TestConductorPlans(t *testing.T) {
	cfg := instant()
	cfg.MalformedPlanProb = 0
	client, _ := start(t, cfg)
	for _, tc := range []struct {
		prefix             string
		minSteps, maxSteps int
		minMean, maxMean   float64
	}{
		{"mmlu-", 1, 2, 1, 2},
		{"HumanEval/", 3, 4, 3, 4},
		{"gsm8k-", 2, 3, 2.5, 3.0},
		{"math500-", 2, 3, 2.5, 3.0},
		{"aime2025-", 3, 4, 3, 4},
	} {
		t.Run(strings.TrimSuffix(tc.prefix, "-"), func(t *testing.T) {
			total, n, finalStrong := 0, 0, 0
			workers := map[int]bool{}
			for _, c := range shipped(t, tc.prefix) {
				question := askCase(c)
				r, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
					Model: ConductorModel, Messages: userMsg(conductorPrompt(testPool, question)),
				})
				if err != nil {
					t.Fatal(err)
				}
				text := r.Choices[0].Message.Content
				p, err := parsePlan(text, len(testPool))
				if err != nil {
					t.Fatalf("%s: %v\n%s", c.ID, err, text)
				}
				if before, _, _ := strings.Cut(text, "model_id"); len(strings.TrimSpace(before)) < 20 {
					t.Fatalf("%s: no reasoning before the lists", c.ID)
				}
				if len(p.IDs) < tc.minSteps || len(p.IDs) > tc.maxSteps {
					t.Fatalf("%s: %d steps, want %d–%d", c.ID, len(p.IDs), tc.minSteps, tc.maxSteps)
				}
				for i, s := range p.Subtasks {
					if !strings.Contains(s, question) {
						t.Fatalf("%s: subtask %d does not contain the question verbatim", c.ID, i)
					}
				}
				last := len(p.IDs) - 1
				if !strings.Contains(p.Subtasks[last], "final answer") {
					t.Fatalf("%s: last subtask %q does not ask for the final answer", c.ID, p.Subtasks[last][:80])
				}
				if name := testPool[p.IDs[last]]; name == "gpt-5" || name == "gemini-2.5-pro" || name == "claude-sonnet-4" {
					finalStrong++
				}
				for _, id := range p.IDs {
					workers[id] = true
				}
				total += len(p.IDs)
				n++
			}
			if mean := float64(total) / float64(n); mean < tc.minMean || mean > tc.maxMean {
				t.Errorf("mean %.2f steps, want %.1f–%.1f", mean, tc.minMean, tc.maxMean)
			}
			if finalStrong != n {
				t.Errorf("%d of %d plans end with a strong verifier", finalStrong, n)
			}
			if len(workers) < 3 {
				t.Errorf("only %d distinct workers used: want seeded variety", len(workers))
			}
		})
	}
}

func TestConductorMalformed(t *testing.T) {
	cfg := instant()
	cfg.MalformedPlanProb = 1
	client, _ := start(t, cfg)
	for _, c := range shipped(t, "gsm8k-test-")[:40] {
		r, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
			Model: ConductorModel, Messages: userMsg(conductorPrompt(testPool, c.Input)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parsePlan(r.Choices[0].Message.Content, len(testPool)); err == nil {
			t.Fatalf("%s: malformed plan parsed:\n%s", c.ID, r.Choices[0].Message.Content)
		}
	}
}

// TestConductorDefaultMalformedRate checks the default 2% rate over many prompts.
func TestConductorDefaultMalformedRate(t *testing.T) {
	var bad int
	for i, c := range shipped(t, "") {
		msgs := []message{{Role: "user", Content: conductorPrompt(testPool, askCase(c))}}
		rep := answerConductor(ConductorModel, &c, msgs, newRand(int64(i), ConductorModel, c.ID, msgs), NewDefaultConfig().MalformedPlanProb)
		if _, err := parsePlan(rep.Content, len(testPool)); err != nil {
			bad++
		}
	}
	if n := len(shipped(t, "")); !withinBinomial(bad, n, 0.02, 4) || bad == 0 {
		t.Fatalf("%d of %d plans malformed, want about 2%%", bad, n)
	}
}

func TestConductorJSON(t *testing.T) {
	cfg := instant()
	cfg.MalformedPlanProb = 0
	client, _ := start(t, cfg)
	c := caseByID(t, "HumanEval/8")
	r, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: ConductorJSONModel, Messages: userMsg(conductorPrompt(testPool, c.Input)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Steps []struct {
			Worker  string `json:"worker"`
			Subtask string `json:"subtask"`
			Access  any    `json:"access"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.Choices[0].Message.Content), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) < 3 {
		t.Fatalf("%d steps for a code task", len(plan.Steps))
	}
	for i, s := range plan.Steps {
		if !strings.Contains(strings.Join(testPool, " "), s.Worker) || !strings.Contains(s.Subtask, c.Input) {
			t.Fatalf("step %d: worker %q, subtask lacks the question", i, s.Worker)
		}
		if a, ok := s.Access.(string); i > 0 && (!ok || a != "all") {
			t.Fatalf("step %d: access %v", i, s.Access)
		}
	}
}

func TestConductorQuestionExtraction(t *testing.T) {
	pool := "Model 0: gpt-5 strong\nModel 1: gemma-3-27b cheap"
	user := "Écris un poème sur la mer, avec \"guillemets\" et \\backslash\\ et\nune nouvelle ligne."
	for _, tc := range []struct {
		name string
		msgs []message
	}{
		{"system pool, user question", []message{{Role: "system", Content: "Plan a workflow.\n" + pool}, {Role: "user", Content: user}}},
		{"tagged", []message{{Role: "user", Content: pool + "\n<question>\n" + user + "\n</question>\nAnswer with three lists."}}},
		{"after Question:", []message{{Role: "user", Content: "Plan.\n" + pool + "\n\nQuestion: " + user}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := answerConductor(ConductorModel, nil, tc.msgs, newRand(3, "c", "", tc.msgs), 0)
			p, err := parsePlan(rep.Content, 2)
			if err != nil {
				t.Fatalf("%v\n%s", err, rep.Content)
			}
			for i, s := range p.Subtasks {
				if !strings.Contains(s, user) {
					t.Fatalf("subtask %d lacks the user's text: %q", i, s)
				}
				if strings.Contains(s, "Model 0:") {
					t.Fatalf("subtask %d contains the pool listing", i)
				}
			}
		})
	}
}

func TestConductorRecursive(t *testing.T) {
	c := caseByID(t, "gsm8k-test-7")
	keeps, corrects := 0, 0
	for seed := range int64(40) {
		msgs := []message{
			{Role: "user", Content: conductorPrompt(testPool, c.Input) + "\n\nParent workflow:\nmodel_id = [2]\nsubtasks = [\"x\"]\naccess_list = [[]]\n\nLast response: The final answer is \\boxed{3}"},
		}
		rep := answerConductor(ConductorModel, &c, msgs, newRand(seed, ConductorModel, c.ID, msgs), 0)
		p, err := parsePlan(rep.Content, len(testPool))
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, rep.Content)
		}
		switch len(p.IDs) {
		case 0:
			keeps++
		case 1:
			corrects++
		default:
			t.Fatalf("seed %d: %d steps in a corrective workflow", seed, len(p.IDs))
		}
	}
	if keeps == 0 || corrects == 0 {
		t.Fatalf("recursive calls: %d keep, %d corrective; want both", keeps, corrects)
	}
}

func TestPoolParsing(t *testing.T) {
	got := parsePool([]message{{Role: "user", Content: "intro\nModel 0: gpt-5 (fast)\n- Model 2 - qwen3:32b, cheap\n  Model 1: `claude-sonnet-4`.\nnot a Model 3 line"}})
	want := []string{"gpt-5", "claude-sonnet-4", "qwen3:32b"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("parsePool = %q, want %q", got, want)
	}
}

func TestGoldenOutputs(t *testing.T) {
	c := caseByID(t, "gsm8k-test-0")
	msgs := []message{{Role: "user", Content: conductorPrompt(testPool, c.Input)}}
	plan := answerConductor(ConductorModel, &c, msgs, newRand(1, ConductorModel, c.ID, msgs), 0)
	readGolden(t, "conductor_gsm8k-test-0.golden", []byte(plan.Content))

	var gpt5 Profile
	for _, p := range DefaultProfiles() {
		if p.Name == "gpt-5" {
			gpt5 = p
		}
	}
	h := caseByID(t, "HumanEval/0")
	wm := []message{{Role: "user", Content: h.Input}}
	rep := answerWorker(gpt5, &h, wm, newRand(1, "gpt-5", h.ID, wm), 0.5, 0.6, 0)
	readGolden(t, "gpt-5_HumanEval-0.golden", []byte(rep.Content))
}
