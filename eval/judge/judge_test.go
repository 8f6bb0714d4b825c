package judge

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// judgeServer answers judge prompts through the real pool with what the
// test scripts: reply(prompt) gives the reply text.
func judgeServer(t *testing.T, reply func(prompt string) string) (*shadowtest.Server, *shadow.Pool, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var prompts []string
	srv := shadowtest.NewServer(func(r shadowtest.Request) shadowtest.Reply {
		p := r.LastUserContent()
		mu.Lock()
		prompts = append(prompts, p)
		mu.Unlock()
		return shadowtest.Reply{Content: reply(p), PromptTokens: 100, CompletionTokens: 10}
	})
	cfg := shadow.NewDefaultConfig()
	for i := range cfg.Workers {
		cfg.Workers[i].BaseURL = srv.BaseURL()
	}
	cfg.CallTimeout = 5 * time.Second
	cfg.Resilience.MaxAttempts = 1
	pool, err := shadow.NewPool(cfg)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close(); srv.Close() })
	return srv, pool, &prompts
}

func cases(t *testing.T) map[string]eval.Case {
	t.Helper()
	set, err := eval.LoadSet("testdata/judge-cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]eval.Case{}
	for _, c := range set.Cases {
		out[c.ID] = c
	}
	return out
}

// answerIn returns which position ("A" or "B") holds text in a pairwise prompt.
func answerIn(prompt, text string) string {
	a := prompt[strings.Index(prompt, "<answer_a>"):strings.Index(prompt, "</answer_a>")]
	if strings.Contains(a, text) {
		return "A"
	}
	return "B"
}

func TestPairwisePositionSwap(t *testing.T) {
	c := cases(t)["capital-fr"]
	const good, bad = "Paris is the capital of France.", "The capital of France is Lyon."
	tests := []struct {
		name   string
		output string
		judge  func(prompt string) string // reply for each order
		value  float64
		passed bool
		expl   string
	}{
		{"judge prefers the correct answer in both orders: win", good,
			func(p string) string { return "Both right; the answer is crisper.\nWINNER: " + answerIn(p, good) }, 1, true, "win"},
		{"judge prefers the reference in both orders: loss", bad,
			func(p string) string { return "Lyon is wrong.\nWINNER: " + answerIn(p, c.Reference) }, 0, false, "loss"},
		{"judge always picks position A (position bias): tie", bad,
			func(string) string { return "WINNER: A" }, 0.5, true, "tie: answer first → answer, reference first → reference"},
		{"judge says tie once: tie", good,
			func(p string) string {
				if answerIn(p, good) == "A" {
					return "WINNER: A"
				}
				return "WINNER: TIE"
			}, 0.5, true, "tie"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, pool, prompts := judgeServer(t, tt.judge)
			resolve, err := Graders(pool, Config{Worker: "gpt-5", PassScore: 7}, eval.NewDefaultCodeConfig())
			if err != nil {
				t.Fatal(err)
			}
			g, err := resolve(c.Grader)
			if err != nil {
				t.Fatal(err)
			}
			got := g.Grade(context.Background(), c, tt.output)
			if got.Err != nil || got.Value != tt.value || got.Passed != tt.passed || !strings.Contains(got.Explanation, tt.expl) {
				t.Errorf("got %+v, want value %v passed %v containing %q", got, tt.value, tt.passed, tt.expl)
			}
			if !strings.Contains(got.Explanation, "[judge gpt-5 model gpt-5 prompt judge-pairwise-v1]") {
				t.Errorf("judge model and prompt version not recorded: %q", got.Explanation)
			}
			if len(*prompts) != 2 || answerIn((*prompts)[0], tt.output) != "A" || answerIn((*prompts)[1], tt.output) != "B" {
				t.Errorf("want two prompts with the answer in A then B; got %d", len(*prompts))
			}
		})
	}
}

func TestRubric(t *testing.T) {
	c := cases(t)["haiku"]
	tests := []struct {
		reply  string
		value  float64
		passed bool
		err    string
	}{
		{"Three lines, on topic.\nSCORE: 8", 0.8, true, ""},
		{"Not a haiku.\nSCORE: 3", 0.3, false, ""},
		{"SCORE: 10", 1, true, ""},
		{"I think it is pretty good.", 0, false, "no score from 1 to 10"},
		{"```json\n{\"score\": 9, \"reason\": \"clear\"}\n```", 0.9, true, ""},
	}
	for _, tt := range tests {
		_, pool, prompts := judgeServer(t, func(string) string { return tt.reply })
		resolve, err := Graders(pool, NewDefaultConfig(), eval.NewDefaultCodeConfig())
		if err != nil {
			t.Fatal(err)
		}
		g, _ := resolve(eval.GraderJudge)
		got := g.Grade(context.Background(), c, "Grey rain taps the glass / red leaves sink in cold puddles / dusk comes early now")
		if tt.err != "" {
			if got.Err == nil || !strings.Contains(got.Err.Error(), tt.err) {
				t.Errorf("%q: want grader error %q, got %+v", tt.reply, tt.err, got)
			}
			continue
		}
		if got.Err != nil || got.Value != tt.value || got.Passed != tt.passed || !strings.Contains(got.Explanation, "prompt judge-rubric-v1") {
			t.Errorf("%q: got %+v", tt.reply, got)
		}
		if len(*prompts) != 1 || !strings.Contains((*prompts)[0], "roughly 5-7-5 syllables") {
			t.Errorf("rubric not sent: %q", *prompts)
		}
	}
}

func TestJudgeErrors(t *testing.T) {
	if _, err := Graders(nil, NewDefaultConfig(), eval.NewDefaultCodeConfig()); err == nil {
		t.Error("nil caller: want error")
	}
	_, pool, _ := judgeServer(t, func(string) string { return "WINNER: A" })
	if _, err := Graders(pool, Config{Worker: "", PassScore: 11}, eval.NewDefaultCodeConfig()); err == nil ||
		!strings.Contains(err.Error(), "worker is required") || !strings.Contains(err.Error(), "pass_score must be in 1..10") {
		t.Errorf("bad config: %v", err)
	}
	resolve, _ := Graders(pool, Config{Worker: "no-such-worker", PassScore: 7}, eval.NewDefaultCodeConfig())
	g, _ := resolve(eval.GraderPairwise)
	if got := g.Grade(context.Background(), cases(t)["capital-fr"], "Paris"); got.Err == nil || !strings.Contains(got.Err.Error(), "answer first") {
		t.Errorf("unknown judge worker: want grader error, got %+v", got)
	}
	if g, err := resolve(eval.GraderExact); err != nil || g.Name() != eval.GraderExact {
		t.Errorf("fallback to eval.GraderFor: %v", err)
	}
}

// The judge reply forms seen from real judges, each read to its score.
func TestParseScore(t *testing.T) {
	tests := []struct {
		reply string
		score float64
		ok    bool
	}{
		{"```json\n{\"score\": 9, \"reason\": \"clear\"}\n```", 9, true},
		{"```\n{\"score\": 6}\n```", 6, true},
		{`{"reason": "fine", "score": 7}`, 7, true},
		{"My verdict: {\"rating\": \"8\"}", 8, true},
		{`{"Score": 4.5}`, 4.5, true},
		{"Mostly right.\nScore: 9/10", 9, true},
		{"Score: 4/5", 8, true},
		{"**Score:** 9", 9, true},
		{"**Score**: 7", 7, true},
		{"The answer is precise. Rating: [[9]]", 9, true},
		{"[[3]]", 3, true},
		{"SCORE: 10", 10, true},
		{"score = 6 out of 10", 6, true},
		{"An early draft said Score: 2. Final Score: 8", 8, true},
		{"Score: 0", 0, false},
		{"Score: 11", 0, false},
		{`{"score": 42}`, 0, false},
		{"It deserves a good score because it is clear.", 0, false},
		{"no number here", 0, false},
		{"Clear and correct; I'd give it 8/10.", 8, true},
		{"Overall: 7 out of 10", 7, true},
		{"Fine for grade 3 pupils, nothing more.", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseScore(tt.reply)
		if ok != tt.ok || (ok && got != tt.score) {
			t.Errorf("ParseScore(%q) = %v, %v; want %v, %v", tt.reply, got, ok, tt.score, tt.ok)
		}
	}
}
