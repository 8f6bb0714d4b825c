// Package judgetest holds LLM judges that lie, for tests of everything a
// verdict rests on: each is a shadow.Caller answering the real prompts of
// eval/judge (read back with judge.ReadPairPrompt and ReadRubricPrompt) by a
// fixed rule — always "A", always "B", the answer shown first, a coin flip,
// the longer answer, an honest reading of the answers' quality markers, or
// one honest on a given share of the pairs only —
// so suites run through the product's own code path (eval.RunSuite,
// judge.Graders) with a judge whose bias is known. Pipeline is a candidate
// or incumbent whose answers carry those markers.
package judgetest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Judge is a scripted LLM judge. Pair answers pairwise prompts, Rubric
// rubric prompts; a prompt of a kind without its rule is a failed call. Safe
// for concurrent use.
type Judge struct {
	// Model is the model id the judge answers with (default "fake-judge").
	Model string
	// Pair returns the reply to a pairwise prompt.
	Pair func(p judge.ShownPair, rng *rand.Rand) string
	// Rubric returns the reply to a rubric prompt for answer on the scale.
	Rubric func(answer string, min, max int) string
	// Fail, when set and true for a prompt's answers, fails the call
	// (shadow's error) instead of replying.
	Fail func(answers ...string) bool
	// Seed seeds the rng Pair gets (Random).
	Seed uint64

	mu    sync.Mutex
	rng   *rand.Rand
	calls int
}

// CostPerCall is what each fake call costs (USD), with 200 prompt and 20
// completion tokens, so judge costs add up in reports.
const CostPerCall = 0.0005

// Call implements shadow.Caller.
func (j *Judge) Call(_ context.Context, worker string, msgs []openai.ChatCompletionMessage) (shadow.Call, error) {
	j.mu.Lock()
	j.calls++
	if j.rng == nil {
		j.rng = rand.New(rand.NewPCG(j.Seed, 0x70d9e))
	}
	model := j.Model
	if model == "" {
		model = "fake-judge"
	}
	call := shadow.Call{Worker: worker, Model: model, ResponseModel: model, PromptTokens: 200, CompletionTokens: 20, UsageReported: true,
		CostUSD: CostPerCall, StartedAt: time.Now().UTC(), LatencyMs: 1, Attempts: 1}
	prompt := ""
	if len(msgs) > 0 {
		prompt = msgs[len(msgs)-1].Content
	}
	defer j.mu.Unlock()
	if p, ok := judge.ReadPairPrompt(prompt); ok && j.Pair != nil {
		if j.Fail != nil && j.Fail(p.First, p.Second) {
			return call, fmt.Errorf("judgetest: judge %s refused the call", model)
		}
		call.Output = j.Pair(p, j.rng)
		return call, nil
	}
	if answer, lo, hi, ok := judge.ReadRubricPrompt(prompt); ok && j.Rubric != nil {
		if j.Fail != nil && j.Fail(answer) {
			return call, fmt.Errorf("judgetest: judge %s refused the call", model)
		}
		call.Output = j.Rubric(answer, lo, hi)
		return call, nil
	}
	return call, fmt.Errorf("judgetest: judge %s has no rule for this prompt", model)
}

// Calls is how many calls the judge got.
func (j *Judge) Calls() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls
}

// AlwaysA replies "WINNER: A" to every pairwise prompt, whatever it shows: a
// judge with complete position bias (under other labels its reply names no
// label).
func AlwaysA() *Judge {
	return &Judge{Pair: func(judge.ShownPair, *rand.Rand) string { return "A is clearly better.\nWINNER: A" }}
}

// AlwaysB replies "WINNER: B" to every pairwise prompt.
func AlwaysB() *Judge {
	return &Judge{Pair: func(judge.ShownPair, *rand.Rand) string { return "B is clearly better.\nWINNER: B" }}
}

// First prefers the answer shown first, under whatever label it has.
func First() *Judge {
	return &Judge{Pair: func(p judge.ShownPair, _ *rand.Rand) string { return "WINNER: " + p.Labels.First }}
}

// Random flips a fair coin between the two labels for every prompt.
func Random(seed uint64) *Judge {
	return &Judge{Seed: seed, Pair: func(p judge.ShownPair, rng *rand.Rand) string {
		if rng.IntN(2) == 0 {
			return "WINNER: " + p.Labels.First
		}
		return "WINNER: " + p.Labels.Second
	}}
}

// Longer prefers the longer answer (ties on equal length): a judge with
// verbosity bias.
func Longer() *Judge {
	return &Judge{Pair: func(p judge.ShownPair, _ *rand.Rand) string {
		return "WINNER: " + pick(p, float64(len(p.First)), float64(len(p.Second)))
	}}
}

// Honest prefers the answer with the higher quality marker (Quality), ties
// on equal quality, and scores rubric prompts by the marker: the judge every
// other judge is measured against.
func Honest() *Judge {
	return &Judge{
		Pair: func(p judge.ShownPair, _ *rand.Rand) string {
			return "WINNER: " + pick(p, Quality(p.First), Quality(p.Second))
		},
		Rubric: func(answer string, lo, hi int) string {
			return "Judged by its quality.\nSCORE: " + strconv.Itoa(max(lo, min(hi, int(Quality(answer)))))
		},
	}
}

// Agrees is a judge that agrees with the truth — the answers' quality
// markers, which is what simulated reviewers read — on share (0..1) of the
// pairs and is otherwise wrong in a way no other check sees. Which pairs, and
// which wrong verdict (the lower answer wins, or a tie; on equal answers one
// of them wins), follow from a hash of seed and the case the answers name, so the
// verdict is about the answers, never their positions or labels: the same in
// both orders (position consistency 1) and under swapped labels.
// Identical answers and an answer against its own padded copy get the honest
// verdict, so every canary passes. Rubric prompts are scored honestly.
func Agrees(share float64, seed uint64) *Judge {
	j := Honest()
	j.Pair = func(p judge.ShownPair, _ *rand.Rand) string {
		a, b := p.First, p.Second
		if a == b || strings.Contains(a, b) || strings.Contains(b, a) {
			return "WINNER: " + pick(p, Quality(a), Quality(b))
		}
		// In content terms: lo and hi are the answers in text order; the
		// truth is the higher quality winning, or a tie.
		lo, hi := min(a, b), max(a, b)
		outcomes := []string{lo, hi, ""} // lo wins, hi wins, tie
		truth := ""
		switch qa, qb := Quality(lo), Quality(hi); {
		case qa > qb:
			truth = lo
		case qb > qa:
			truth = hi
		}
		sum := sha256.Sum256(fmt.Appendf(nil, "%d/%s", seed, caseOf(a)))
		u := binary.BigEndian.Uint64(sum[:8])
		verdict := truth
		if float64(u>>11)/(1<<53) >= share {
			var wrong []string
			for _, o := range outcomes {
				if o != truth {
					wrong = append(wrong, o)
				}
			}
			verdict = wrong[u&1]
		}
		switch verdict {
		case "":
			return "WINNER: TIE"
		case a:
			return "WINNER: " + p.Labels.First
		}
		return "WINNER: " + p.Labels.Second
	}
	return j
}

var caseRe = regexp.MustCompile(`Answer to (\S+) \(`)

// caseOf is the case id an Answer names ("" for another text).
func caseOf(answer string) string {
	if m := caseRe.FindStringSubmatch(answer); m != nil {
		return m[1]
	}
	return ""
}

// pick is the label of the higher of a (first) and b (second), TIE when equal.
func pick(p judge.ShownPair, a, b float64) string {
	switch {
	case a > b:
		return p.Labels.First
	case b > a:
		return p.Labels.Second
	}
	return "TIE"
}

var qualityRe = regexp.MustCompile(`\bq=(\d+(?:\.\d+)?)`)

// Quality reads an answer's quality marker "q=N" (0 without one).
func Quality(answer string) float64 {
	m := qualityRe.FindStringSubmatch(answer)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// Answer is an answer to case with quality q (1..10).
func Answer(caseID string, q float64) string {
	return fmt.Sprintf("Answer to %s (q=%s).", caseID, strconv.FormatFloat(q, 'g', -1, 64))
}

// Pipeline is an incumbent or candidate whose answer to each case is
// Answers(case id): a quality-marked answer (Answer). Its runs take 1 s and
// cost 0.001 USD, with one step calling Model.
type Pipeline struct {
	PipelineName string
	Model        string // the model its one step calls (default "fake-worker")
	Answers      func(caseID string) string
}

// Name returns PipelineName.
func (p *Pipeline) Name() string { return p.PipelineName }

// Version returns "v1".
func (p *Pipeline) Version() string { return "v1" }

// Run answers the request's case.
func (p *Pipeline) Run(_ context.Context, req shadow.Request, mode string) shadow.Result {
	caseID := req.RequestID[strings.LastIndex(req.RequestID, "/")+1:]
	model := p.Model
	if model == "" {
		model = "fake-worker"
	}
	out := p.Answers(caseID)
	run := store.Run{RunID: req.RequestID + "#" + p.PipelineName, RequestID: req.RequestID, SuiteRunID: req.SuiteRunID,
		Pipeline: p.PipelineName, PipelineVersion: "v1", Mode: mode, StartedAt: time.Now().UTC(), LatencyMs: 1000,
		Status: store.StatusOK, FinalOutput: out, TokensIn: 100, TokensOut: 50, CostUSD: 0.001, Calls: 1}
	step := store.Step{RunID: run.RunID, Index: 0, Parent: -1, Role: "worker", Worker: model, Model: model, Status: store.StatusOK,
		StartedAt: run.StartedAt, LatencyMs: 1000, Output: out}
	return shadow.Result{Run: run, Steps: []store.Step{step}}
}
