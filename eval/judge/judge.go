// Package judge grades outputs with an LLM judge called through
// shadow.Caller: a single-answer rubric score, and a pairwise comparison with
// the case's reference answer (e.g. the incumbent's answer kept by `set
// build`) asked in both orders (position swap), a tie when the orders
// disagree. Every explanation starts with the judge worker, its model and the
// prompt version, so they are stored with each score.
package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// Prompt versions; they change whenever the prompt text changes.
const (
	RubricPromptVersion   = "judge-rubric-v1"
	PairwisePromptVersion = "judge-pairwise-v1"
)

// DefaultRubric is used when a case has no "rubric" extra field.
const DefaultRubric = "The answer is correct, complete and directly addresses the request, consistent with the reference answer when one is given."

// Config configures the judges.
type Config struct {
	// Worker is the pool worker that judges (shadow.Config.Workers name).
	Worker string `yaml:"worker"`
	// PassScore is the rubric score (1..10) at or above which an answer passes.
	// Default 7.
	PassScore int `yaml:"pass_score"`
}

// NewDefaultConfig returns worker "gpt-5" and pass score 7.
func NewDefaultConfig() Config { return Config{Worker: "gpt-5", PassScore: 7} }

// Validate reports an empty worker or a pass score outside 1..10.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Worker) == "" {
		errs = append(errs, errors.New("judge: worker is required"))
	}
	if c.PassScore < 1 || c.PassScore > 10 {
		errs = append(errs, fmt.Errorf("judge: pass_score must be in 1..10, got %d", c.PassScore))
	}
	return errors.Join(errs...)
}

// Graders returns a grader resolver for eval.SuiteOptions.Graders: the names
// eval.GraderJudge and eval.GraderPairwise resolve to the judges, every other
// name to eval.GraderForConfig with code, the code grader's sandbox (the
// configured suite.code: interpreter, timeout, memory cap). Errors: a nil
// caller, an invalid judge config or an invalid code config.
func Graders(caller shadow.Caller, cfg Config, code eval.CodeConfig) (func(name string) (eval.Grader, error), error) {
	if caller == nil {
		return nil, errors.New("judge: nil caller")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := code.Validate(); err != nil {
		return nil, fmt.Errorf("judge: graders: %w", err)
	}
	rubric := &Rubric{caller: caller, cfg: cfg}
	pair := &Pairwise{caller: caller, cfg: cfg}
	return func(name string) (eval.Grader, error) {
		switch name {
		case eval.GraderJudge:
			return rubric, nil
		case eval.GraderPairwise:
			return pair, nil
		}
		return eval.GraderForConfig(name, code)
	}, nil
}

// Rubric is the single-answer judge: the judge scores the answer 1..10
// against the rubric (Extra["rubric"] or DefaultRubric) and the reference;
// Value is score/10 and the answer passes at Config.PassScore. A failed call
// or a reply without a readable score (see ParseScore) is a grader error.
type Rubric struct {
	caller shadow.Caller
	cfg    Config
}

// Name returns eval.GraderJudge.
func (*Rubric) Name() string { return eval.GraderJudge }

var (
	jsonFenceRe   = regexp.MustCompile("(?s)```[ \t]*(?:json)?[ \t]*\n(.*?)```")
	jsonObjectRe  = regexp.MustCompile(`(?s)\{[^{}]*\}`)
	bracketRe     = regexp.MustCompile(`\[\[\s*(\d+(?:\.\d+)?)\s*\]\]`)
	scoreLabelRe  = regexp.MustCompile(`(?i)\b(?:score|rating)\b\s*\**\s*[:=]?\s*\**\s*\[{0,2}\s*(\d+(?:\.\d+)?)\s*\]{0,2}(?:\s*(?:/|out\s+of)\s*(\d+))?`)
	outOfTenRe    = regexp.MustCompile(`\b(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*10\b`)
	jsonScoreKeys = []string{"score", "rating", "grade"}
)

// ParseScore reads a judge's score on the 1..10 scale from its reply. Forms, in
// order: a JSON object with "score" (or "rating", "grade") in a ```json fence or
// bare in the text (the last one); MT-Bench's "Rating: [[9]]" / "[[9]]"; a
// labelled score "SCORE: 9", "Score: 9/10", "**Score:** 9", "score = 8 out of 10"
// (the last one); else an unlabelled "8/10" or "8 out of 10" (the last one). A
// score given out of another maximum ("4/5") is scaled to 10. ok is false when
// no score in 1..10 is found.
func ParseScore(reply string) (float64, bool) {
	in := func(v float64) (float64, bool) { return v, v >= 1 && v <= 10 }
	var objs []string
	for _, m := range jsonFenceRe.FindAllStringSubmatch(reply, -1) {
		objs = append(objs, strings.TrimSpace(m[1]))
	}
	objs = append(objs, jsonObjectRe.FindAllString(reply, -1)...)
	for i := len(objs) - 1; i >= 0; i-- {
		var obj map[string]any
		if json.Unmarshal([]byte(objs[i]), &obj) != nil {
			continue
		}
		for _, k := range jsonScoreKeys {
			for key, v := range obj {
				if !strings.EqualFold(key, k) {
					continue
				}
				switch x := v.(type) {
				case float64:
					return in(x)
				case string:
					if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
						return in(f)
					}
				}
			}
		}
	}
	if ms := bracketRe.FindAllStringSubmatch(reply, -1); len(ms) > 0 {
		f, _ := strconv.ParseFloat(ms[len(ms)-1][1], 64)
		return in(f)
	}
	if ms := scoreLabelRe.FindAllStringSubmatch(reply, -1); len(ms) > 0 {
		m := ms[len(ms)-1]
		f, _ := strconv.ParseFloat(m[1], 64)
		if m[2] != "" {
			if scale, _ := strconv.ParseFloat(m[2], 64); scale > 0 && scale != 10 {
				f = f / scale * 10
			}
		}
		return in(f)
	}
	if ms := outOfTenRe.FindAllStringSubmatch(reply, -1); len(ms) > 0 {
		f, _ := strconv.ParseFloat(ms[len(ms)-1][1], 64)
		return in(f)
	}
	return 0, false
}

// Grade asks the judge once.
func (j *Rubric) Grade(ctx context.Context, c eval.Case, output string) eval.Grade {
	rubric := c.ExtraString("rubric")
	if rubric == "" {
		rubric = DefaultRubric
	}
	prompt := fmt.Sprintf("You are grading an answer.\n\nRubric: %s\n\n<question>\n%s\n</question>\n\n<reference>\n%s\n</reference>\n\n<answer>\n%s\n</answer>\n\n"+
		"Judge only the answer. Reply with one short reason, then a last line \"SCORE: n\" with n from 1 (wrong) to 10 (fully meets the rubric).",
		rubric, c.Prompt(), c.Reference, output)
	call, err := j.caller.Call(ctx, j.cfg.Worker, []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}})
	tag := fmt.Sprintf("[judge %s model %s prompt %s]", j.cfg.Worker, call.Model, RubricPromptVersion)
	if err != nil {
		return errGrade("%s judge call failed: %w", tag, err)
	}
	score, ok := ParseScore(call.Output)
	if !ok {
		return errGrade("%s judge reply has no score from 1 to 10: %q", tag, clip(call.Output, 200))
	}
	return eval.Grade{Value: score / 10, Passed: score >= float64(j.cfg.PassScore), Extracted: strconv.FormatFloat(score, 'g', 3, 64),
		Explanation: fmt.Sprintf("%s score %s/10 (pass at %d)", tag, strconv.FormatFloat(score, 'g', 3, 64), j.cfg.PassScore)}
}

// Pairwise compares the answer with the case's reference answer, asking the
// judge twice with the positions swapped. Both orders prefer the answer: win
// (Value 1); both prefer the reference: loss (0); otherwise tie (0.5). It
// passes unless it loses, i.e. when it is not worse than the reference. A
// failed call or a reply without "WINNER: A|B|TIE" is a grader error.
type Pairwise struct {
	caller shadow.Caller
	cfg    Config
}

// Name returns eval.GraderPairwise.
func (*Pairwise) Name() string { return eval.GraderPairwise }

var winnerRe = regexp.MustCompile(`(?i)WINNER:\s*(A|B|TIE)\b`)

// Grade asks the judge in both orders.
func (j *Pairwise) Grade(ctx context.Context, c eval.Case, output string) eval.Grade {
	ask := func(a, b string) (string, string, error) {
		prompt := fmt.Sprintf("Compare two answers to the same question.\n\n<question>\n%s\n</question>\n\n<answer_a>\n%s\n</answer_a>\n\n<answer_b>\n%s\n</answer_b>\n\n"+
			"Which answer is more correct and helpful? Ignore length and style. Reply with one short reason, then a last line \"WINNER: A\", \"WINNER: B\" or \"WINNER: TIE\".",
			c.Prompt(), a, b)
		call, err := j.caller.Call(ctx, j.cfg.Worker, []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}})
		if err != nil {
			return "", call.Model, err
		}
		ms := winnerRe.FindAllStringSubmatch(call.Output, -1)
		if len(ms) == 0 {
			return "", call.Model, fmt.Errorf("judge reply has no WINNER line: %q", clip(call.Output, 200))
		}
		return strings.ToUpper(ms[len(ms)-1][1]), call.Model, nil
	}
	// Order 1: the answer is A. Order 2: the answer is B.
	w1, model, err := ask(output, c.Reference)
	tag := fmt.Sprintf("[judge %s model %s prompt %s]", j.cfg.Worker, model, PairwisePromptVersion)
	if err != nil {
		return errGrade("%s answer first: %w", tag, err)
	}
	w2, _, err := ask(c.Reference, output)
	if err != nil {
		return errGrade("%s reference first: %w", tag, err)
	}
	first := map[string]string{"A": "answer", "B": "reference", "TIE": "tie"}[w1]
	second := map[string]string{"A": "reference", "B": "answer", "TIE": "tie"}[w2]
	switch {
	case first == "answer" && second == "answer":
		return eval.Grade{Value: 1, Passed: true, Explanation: fmt.Sprintf("%s win: preferred in both orders", tag)}
	case first == "reference" && second == "reference":
		return eval.Grade{Value: 0, Passed: false, Explanation: fmt.Sprintf("%s loss: the reference preferred in both orders", tag)}
	}
	return eval.Grade{Value: 0.5, Passed: true, Explanation: fmt.Sprintf("%s tie: answer first → %s, reference first → %s", tag, first, second)}
}

func errGrade(format string, args ...any) eval.Grade {
	err := fmt.Errorf("eval: "+format, args...)
	return eval.Grade{Err: err, Explanation: err.Error()}
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
