// Package judge grades outputs with an LLM judge called through
// shadow.Caller: a single-answer rubric score on the scale the set declares,
// and pairwise judgments of a candidate's answer against the incumbent's,
// asked in both orders (eval.PairJudge). Every explanation starts with the
// judge worker, its model and the prompt version, so they are stored with
// each score; every judgment carries its calls' tokens and cost.
package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Prompt versions; they change whenever the prompt text changes.
const (
	RubricPromptVersion   = "judge-rubric-v2"
	PairwisePromptVersion = "judge-pairwise-v2"
)

// DefaultRubric is used when a case has no "rubric" extra field.
const DefaultRubric = "The answer is correct, complete and directly addresses the request, consistent with the reference answer when one is given."

// MaxCanaries caps Config.Canaries.
const MaxCanaries = 50

// Config configures the judges.
type Config struct {
	// Worker is the pool worker that judges (shadow.Config.Workers name).
	// Prefer a model of another family than the incumbent's and the
	// candidates' workers: judges favour their own family's answers; reports
	// warn about it and gate policies may refuse it (judge.same_family).
	Worker string `yaml:"worker"`
	// PassScore is the rubric score, on a 1..10 scale, at or above which an
	// answer passes; on a set's other rubric scale the same share of its
	// maximum (7 of 10: 70 of 100, 3.5 of 5). Default 7.
	PassScore int `yaml:"pass_score"`
	// Canaries is how many canaries of each kind every judged suite run asks
	// per candidate (eval.SuiteOptions.Canaries): identical answers, a padded
	// answer and, for pairwise cases, a pair with the labels swapped. Each
	// pairwise canary costs two judge calls, a rubric canary one. Default 2
	// (12 calls per candidate with pairwise cases), 1..MaxCanaries.
	Canaries int `yaml:"canaries"`
}

// NewDefaultConfig returns worker "gpt-5", pass score 7 and 2 canaries of
// each kind.
func NewDefaultConfig() Config {
	return Config{Worker: "gpt-5", PassScore: 7, Canaries: eval.DefaultCanaries}
}

// Validate reports an empty worker, a pass score outside 1..10 or a canary
// count outside 1..MaxCanaries.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Worker) == "" {
		errs = append(errs, errors.New("judge: worker is required"))
	}
	if c.PassScore < 1 || c.PassScore > 10 {
		errs = append(errs, fmt.Errorf("judge: pass_score must be in 1..10, got %d", c.PassScore))
	}
	if c.Canaries < 1 || c.Canaries > MaxCanaries {
		errs = append(errs, fmt.Errorf("judge: canaries must be in 1..%d (every judged suite run checks its judge), got %d", MaxCanaries, c.Canaries))
	}
	return errors.Join(errs...)
}

// Graders returns a grader resolver for eval.SuiteOptions.Graders: the names
// eval.GraderJudge and eval.GraderPairwise resolve to the judges (the
// pairwise one is an eval.PairJudge), every other name to
// eval.GraderForConfig with code, the code grader's sandbox (the configured
// suite.code: interpreter, timeout, memory cap). Errors: a nil caller, an
// invalid judge config or an invalid code config.
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

// usageOf is one call's JudgeUsage: the model the API answered with, else
// the one asked for.
func usageOf(worker string, c shadow.Call) eval.JudgeUsage {
	model := c.ResponseModel
	if model == "" {
		model = c.Model
	}
	return eval.JudgeUsage{Worker: worker, Model: model, Calls: 1, TokensIn: c.PromptTokens, TokensOut: c.CompletionTokens, CostUSD: c.CostUSD,
		Host: c.Host, Requests: c.Attempts, SentBytes: c.SentBytes, ReceivedBytes: c.ReceivedBytes}
}

// Rubric is the single-answer judge: the judge scores the answer on the
// case's rubric_scale against the rubric (Extra["rubric"] or DefaultRubric)
// and the reference; Value is score / max and the answer passes at
// Config.PassScore tenths of the maximum. A failed call, a reply without a
// score, or a score outside the scale or given out of another maximum
// (ParseScore) is a grader error: never clamped or rescaled.
type Rubric struct {
	caller shadow.Caller
	cfg    Config
}

// Name returns eval.GraderJudge.
func (*Rubric) Name() string { return eval.GraderJudge }

var (
	jsonFenceRe   = regexp.MustCompile("(?s)```[ \t]*(?:json)?[ \t]*\n(.*?)```")
	jsonObjectRe  = regexp.MustCompile(`(?s)\{[^{}]*\}`)
	bracketRe     = regexp.MustCompile(`\[\[\s*([^\[\]]*?)\s*\]\]`)
	scoreLabelRe  = regexp.MustCompile(`(?i)\b(?:score|rating)\b\s*\**\s*[:=]?\s*\**\s*\[{0,2}\s*(-?\d+(?:\.\d+)?)\s*\]{0,2}(?:\s*(?:/|out\s+of)\s*(\d+))?`)
	outOfRe       = regexp.MustCompile(`\b(-?\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*(\d+)\b`)
	jsonScoreKeys = []string{"score", "rating", "grade"}
)

// ParseScore reads a judge's score on scale from its reply. Forms, in order:
// a JSON object with "score" (or "rating", "grade") in a ```json fence or bare
// in the text (the last one); MT-Bench's "Rating: [[9]]" / "[[9]]" (the last;
// "[[]]" is no score); a labelled score "SCORE: 9", "Score: 9/10", "**Score:**
// 9", "score = 8 out of 10" (the last one); else an unlabelled "8/10" or "8
// out of 10" (the last one). Errors: no score; a score outside the scale
// ("Rating: [[85]]" on 1..10); a score out of another maximum than the
// scale's ("4/5" on 1..10) — it is never clamped or rescaled.
func ParseScore(reply string, scale eval.RubricScale) (float64, error) {
	check := func(v float64, outOf string) (float64, error) {
		if outOf != "" {
			if m, _ := strconv.Atoi(outOf); m != scale.Max {
				return 0, fmt.Errorf("judge gave %s out of %s; the set's rubric scale is %s", strconv.FormatFloat(v, 'g', -1, 64), outOf, scale)
			}
		}
		if v < float64(scale.Min) || v > float64(scale.Max) {
			return 0, fmt.Errorf("judge score %s is outside the set's rubric scale %s", strconv.FormatFloat(v, 'g', -1, 64), scale)
		}
		return v, nil
	}
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
					return check(x, "")
				case string:
					if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
						return check(f, "")
					}
					return 0, fmt.Errorf("judge score %q is not a number", clip(x, 40))
				case nil:
					return 0, errors.New("judge score is empty (null)")
				}
			}
		}
	}
	if ms := bracketRe.FindAllStringSubmatch(reply, -1); len(ms) > 0 {
		inner := strings.TrimSpace(ms[len(ms)-1][1])
		if inner == "" {
			return 0, errors.New("judge score is empty ([[]])")
		}
		f, err := strconv.ParseFloat(inner, 64)
		if err != nil {
			return 0, fmt.Errorf("judge score [[%s]] is not a number", clip(inner, 40))
		}
		return check(f, "")
	}
	if ms := scoreLabelRe.FindAllStringSubmatch(reply, -1); len(ms) > 0 {
		m := ms[len(ms)-1]
		f, _ := strconv.ParseFloat(m[1], 64)
		return check(f, m[2])
	}
	if ms := outOfRe.FindAllStringSubmatch(reply, -1); len(ms) > 0 {
		m := ms[len(ms)-1]
		f, _ := strconv.ParseFloat(m[1], 64)
		return check(f, m[2])
	}
	return 0, fmt.Errorf("judge reply has no score on the scale %s", scale)
}

// rubricPromptRe reads a prompt written by Rubric.Grade back.
var rubricPromptRe = regexp.MustCompile(`(?s)^You are grading an answer\..*?\n<answer>\n(.*?)\n</answer>\n\n.*?from (\d+) \(does not meet the rubric\) to (\d+) \(fully meets it\)`)

// ReadRubricPrompt reads a prompt written by Rubric.Grade back: the answer
// (escaped as sent) and the scale asked for (for test judges,
// eval/judge/judgetest). ok is false for any other text.
func ReadRubricPrompt(prompt string) (answer string, min, max int, ok bool) {
	m := rubricPromptRe.FindStringSubmatch(prompt)
	if m == nil {
		return "", 0, 0, false
	}
	min, _ = strconv.Atoi(m[2])
	max, _ = strconv.Atoi(m[3])
	return m[1], min, max, true
}

// Grade asks the judge once.
func (j *Rubric) Grade(ctx context.Context, c eval.Case, output string) eval.Grade {
	scale, ok, err := c.RubricScale()
	if err != nil || !ok {
		if err == nil {
			err = errors.New("no rubric_scale")
		}
		return errGrade(nil, "judge %s: case %s: %w", j.cfg.Worker, c.ID, err)
	}
	rubric := c.ExtraString("rubric")
	if rubric == "" {
		rubric = DefaultRubric
	}
	prompt := fmt.Sprintf("You are grading an answer.\n\nRubric: %s\n\n<question>\n%s\n</question>\n\n<reference>\n%s\n</reference>\n\n<answer>\n%s\n</answer>\n\n"+
		"Judge only the answer; its length and repetition add nothing. Reply with one short reason, then a last line \"SCORE: n\" with n a whole number from %d (does not meet the rubric) to %d (fully meets it).",
		rubric, escape(c.Prompt()), escape(c.Reference), escape(output), scale.Min, scale.Max)
	call, err := j.caller.Call(ctx, j.cfg.Worker, []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}})
	u := usageOf(j.cfg.Worker, call)
	tag := fmt.Sprintf("[judge %s model %s prompt %s]", j.cfg.Worker, u.Model, RubricPromptVersion)
	if err != nil {
		return errGrade(&u, "%s judge call failed: %w", tag, err)
	}
	score, err := ParseScore(call.Output, scale)
	if err != nil {
		return errGrade(&u, "%s %w: %q", tag, err, clip(call.Output, 200))
	}
	value := scale.Value(score)
	pass := float64(j.cfg.PassScore) / 10
	return eval.Grade{Value: value, Passed: value >= pass, Extracted: strconv.FormatFloat(score, 'g', 3, 64), Judge: &u,
		Explanation: fmt.Sprintf("%s score %s on %s (pass at %g)", tag, strconv.FormatFloat(score, 'g', 3, 64), scale, pass*float64(scale.Max))}
}

// Pairwise is the pairwise judge (eval.PairJudge). JudgePair shows the judge
// the request, the case's reference when it has one (as context), and the two
// answers labelled (eval.LabelsAB: "A" and "B"), once with the incumbent's
// answer first and once with the candidate's, and reads each reply with
// ParseVerdict: a win or a loss needs both orders to agree, a tie both ties,
// anything else is inconsistent, and a failed call or an unreadable or
// ambiguous reply is an error (eval.PairOutcome). Both orders are asked at
// once.
type Pairwise struct {
	caller shadow.Caller
	cfg    Config
}

// Name returns eval.GraderPairwise.
func (*Pairwise) Name() string { return eval.GraderPairwise }

// New returns the pairwise judge for live traffic and other callers: the
// same judge Graders resolves for eval.GraderPairwise. Errors: a nil caller
// or an invalid config.
func New(caller shadow.Caller, cfg Config) (*Pairwise, error) {
	if caller == nil {
		return nil, errors.New("judge: nil caller")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Pairwise{caller: caller, cfg: cfg}, nil
}

// dataTags are the prompt's delimiters; escape neutralises them in data.
var dataTags = strings.NewReplacer("<request", "‹request", "</request", "‹/request", "<reference", "‹reference", "</reference", "‹/reference",
	"<answer", "‹answer", "</answer", "‹/answer", "<question", "‹question", "</question", "‹/question")

// escape makes text safe between the prompt's delimiters: every "<" opening
// one of them becomes "‹" (U+2039), so an answer cannot close its block and
// pose as the judge's instructions.
func escape(text string) string { return dataTags.Replace(text) }

// PairPrompt is the judge prompt for one order: question, optional reference,
// the first and the second answer under labels.
func PairPrompt(question, reference, first, second string, labels eval.Labels) string {
	var b strings.Builder
	b.WriteString("You are comparing two answers to the same request.\n\n<request>\n")
	b.WriteString(escape(question))
	b.WriteString("\n</request>\n\n")
	if strings.TrimSpace(reference) != "" {
		b.WriteString("A reference answer, for context (it may be imperfect):\n<reference>\n")
		b.WriteString(escape(reference))
		b.WriteString("\n</reference>\n\n")
	}
	fmt.Fprintf(&b, "<answer label=%q>\n%s\n</answer>\n\n<answer label=%q>\n%s\n</answer>\n\n", labels.First, escape(first), labels.Second, escape(second))
	fmt.Fprintf(&b, "Which answer is more correct and helpful for the request? Judge the content only: not the order the answers are shown in, "+
		"not their labels and not their length (repeating content adds nothing). If they are equally good, say tie. "+
		"Reply with one short reason, then a last line \"WINNER: %s\", \"WINNER: %s\" or \"WINNER: TIE\".", labels.First, labels.Second)
	return b.String()
}

// pairPromptRe reads a prompt written by PairPrompt back.
var pairPromptRe = regexp.MustCompile(`(?s)^You are comparing two answers to the same request\.\n\n<request>\n(.*?)\n</request>\n\n(?:A reference answer, for context \(it may be imperfect\):\n<reference>\n(.*?)\n</reference>\n\n)?<answer label="([^"]*)">\n(.*?)\n</answer>\n\n<answer label="([^"]*)">\n(.*?)\n</answer>\n\n`)

// ShownPair is what a pairwise prompt shows the judge.
type ShownPair struct {
	Question, Reference string
	Labels              eval.Labels
	First, Second       string // the answers in the order shown (escaped as sent)
}

// ReadPairPrompt reads a prompt written by PairPrompt back (for test judges
// that answer the real prompts, eval/judge/judgetest). ok is false for any
// other text.
func ReadPairPrompt(prompt string) (ShownPair, bool) {
	m := pairPromptRe.FindStringSubmatch(prompt)
	if m == nil {
		return ShownPair{}, false
	}
	return ShownPair{Question: m[1], Reference: m[2], Labels: eval.Labels{First: m[3], Second: m[5]}, First: m[4], Second: m[6]}, true
}

// JudgePair implements eval.PairJudge: candidate against incumbent on c, both
// orders at once.
func (j *Pairwise) JudgePair(ctx context.Context, c eval.Case, incumbent, candidate string, labels eval.Labels) eval.PairJudgment {
	out := eval.PairJudgment{PromptVersion: PairwisePromptVersion, Usage: eval.JudgeUsage{Worker: j.cfg.Worker}}
	orders := [2]struct{ first, second string }{{incumbent, candidate}, {candidate, incumbent}}
	var wg sync.WaitGroup
	var usage [2]eval.JudgeUsage
	for k := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ov := eval.OrderVerdict{IncumbentFirst: k == 0, Labels: labels}
			prompt := PairPrompt(c.Prompt(), c.Reference, orders[k].first, orders[k].second, labels)
			call, err := j.caller.Call(ctx, j.cfg.Worker, []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}})
			usage[k] = usageOf(j.cfg.Worker, call)
			ov.Raw = clip(call.Output, eval.MaxJudgeReply)
			if err != nil {
				ov.Error = fmt.Sprintf("judge call failed: %v", err)
				out.Orders[k] = ov
				return
			}
			choice, err := ParseVerdict(call.Output, labels)
			if err != nil {
				ov.Error = err.Error()
				out.Orders[k] = ov
				return
			}
			// Order 1 shows the incumbent first, order 2 the candidate first.
			ov.Verdict = map[Choice][2]string{
				ChoiceFirst:  {store.VerdictIncumbent, store.VerdictCandidate},
				ChoiceSecond: {store.VerdictCandidate, store.VerdictIncumbent},
				ChoiceTie:    {store.VerdictTie, store.VerdictTie},
			}[choice][k]
			out.Orders[k] = ov
		}()
	}
	wg.Wait()
	out.Usage = out.Usage.Add(usage[0]).Add(usage[1])
	out.Usage.Worker = j.cfg.Worker
	out.Outcome = eval.PairOutcome(out.Orders[0].Verdict, out.Orders[1].Verdict)
	for k, name := range []string{"incumbent shown first", "candidate shown first"} {
		if e := out.Orders[k].Error; e != "" && out.Error == "" {
			out.Error = fmt.Sprintf("[judge %s model %s prompt %s] %s: %s", j.cfg.Worker, out.Usage.Model, PairwisePromptVersion, name, e)
		}
	}
	out.JudgedAt = time.Now().UTC()
	return out
}

// Compare judges a candidate's answer against the incumbent's to one user
// prompt, in both orders: the entry point of live judging (no case, no
// reference). The judgment carries both orders' verdicts and raw replies,
// the calls' tokens and cost (eval.JudgeUsage), and is stored with
// PairJudgment.Record.
func (j *Pairwise) Compare(ctx context.Context, prompt, incumbent, candidate string) eval.PairJudgment {
	return j.JudgePair(ctx, eval.Case{ID: "live", Input: prompt, Grader: eval.GraderPairwise}, incumbent, candidate, eval.LabelsAB)
}

// Grade compares the answer with the case's reference answer (e.g. the
// incumbent's answer kept by `set build`) in both orders, the reference
// taking the incumbent's place: a win (Value 1) passes; a tie or an
// inconsistent pair (0.5) and a loss (0) do not — ties are not passes. A
// failed call or an unreadable reply is a grader error. A case without a
// reference is a grader error (in suite runs, pairwise cases are judged
// against the incumbent's answer instead, JudgePair).
func (j *Pairwise) Grade(ctx context.Context, c eval.Case, output string) eval.Grade {
	if strings.TrimSpace(c.Reference) == "" {
		return errGrade(nil, "judge %s: case %s has no reference answer to compare with", j.cfg.Worker, c.ID)
	}
	ref := c
	ref.Reference = "" // the reference is the other answer, not context
	pj := j.JudgePair(ctx, ref, c.Reference, output, eval.LabelsAB)
	u := pj.Usage
	if pj.Outcome == store.JudgmentError {
		return errGrade(&u, "%s", pj.Error)
	}
	expl := strings.NewReplacer("incumbent", "reference", "candidate", "answer").Replace(eval.DescribeJudgment(pj))
	v := map[string]float64{store.JudgmentWin: 1, store.JudgmentLoss: 0}
	value, ok := v[pj.Outcome]
	if !ok {
		value = 0.5
	}
	return eval.Grade{Value: value, Passed: pj.Outcome == store.JudgmentWin, Extracted: pj.Outcome, Explanation: expl, Judge: &u}
}

func errGrade(u *eval.JudgeUsage, format string, args ...any) eval.Grade {
	err := fmt.Errorf("eval: "+format, args...)
	return eval.Grade{Err: err, Explanation: err.Error(), Judge: u}
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
