package simpool

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
)

// Conductor model names served besides the workers.
const (
	// ConductorModel writes workflows in the paper's format: free-text reasoning,
	// then model_id, subtasks and access_list as three Python lists.
	ConductorModel = "conductor"
	// ConductorJSONModel writes the JSON equivalent:
	// {"steps":[{"worker":"<name>","subtask":"...","access":"all"|[...]}]}.
	ConductorJSONModel = "conductor-json"
)

// plan is a simulated workflow.
type plan struct {
	Workers  []int    // indices into the pool shown to the conductor
	Subtasks []string // each contains the user's question verbatim
	Access   []any    // "all" or []int
}

var poolLineRE = regexp.MustCompile(`(?m)^[ \t>*\-]*Model[ \t]+(\d+)[ \t]*[:\-–][ \t]*([^\s,()]+)`)

// parsePool reads the worker pool from lines "Model 0: <name> ..." in any message.
// Names are returned by index; a missing index is "".
func parsePool(msgs []message) []string {
	var pool []string
	for _, m := range msgs {
		for _, sm := range poolLineRE.FindAllStringSubmatch(outsideUserRequest(m.Content), -1) {
			i, err := strconv.Atoi(sm[1])
			if err != nil || i > 64 {
				continue
			}
			for len(pool) <= i {
				pool = append(pool, "")
			}
			if pool[i] == "" {
				pool[i] = strings.Trim(sm[2], ".;:`*\"'")
			}
		}
	}
	return pool
}

var (
	taggedRE   = regexp.MustCompile(`(?s)<(question|user_request|request|query|task)>\s*(.*?)\s*</(?:question|user_request|request|query|task)>`)
	questionRE = regexp.MustCompile(`(?im)^[ \t#*]*(?:user question|user request|user query|question|request|query|task)[ \t]*:[ \t]*\n?`)
	planLineRE = regexp.MustCompile(`(?m)^\s*model_id\s*=`)
	// optionLineRE finds "A. …" / "(B) …" option lines of a multiple-choice question.
	optionLineRE = regexp.MustCompile(`(?m)^\s*\(?[A-D][.)]\s`)
)

// extractQuestion finds the user's question in a conductor prompt. In order: a
// <question>…</question> (or <user_request>, <request>, <query>, <task>) block;
// the last user message when the pool is listed in another message; the matched
// regression-set question (with its choices as "A. …" lines); the text after the
// last "Question:" (or "User request:", "Task:" …) line; else the last user
// message without its "Model N:" lines.
func extractQuestion(msgs []message, c *Case) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := taggedRE.FindStringSubmatch(msgs[i].Content); m != nil && strings.TrimSpace(m[2]) != "" {
			if locs := questionRE.FindAllStringIndex(m[2], -1); len(locs) > 0 {
				if q := strings.TrimSpace(m[2][locs[len(locs)-1][1]:]); q != "" {
					return q
				}
			}
			return m[2]
		}
	}
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			last = i
			break
		}
	}
	if last >= 0 && !poolLineRE.MatchString(msgs[last].Content) {
		for i, m := range msgs {
			if i != last && poolLineRE.MatchString(m.Content) {
				return msgs[last].Content
			}
		}
	}
	if c != nil {
		q := c.Input
		for i, ch := range c.Choices {
			q += fmt.Sprintf("\n%c. %s", 'A'+i, ch)
		}
		return q
	}
	if last < 0 {
		return ""
	}
	text := msgs[last].Content
	if locs := questionRE.FindAllStringIndex(text, -1); len(locs) > 0 {
		if q := strings.TrimSpace(text[locs[len(locs)-1][1]:]); q != "" {
			return q
		}
	}
	return strings.TrimSpace(poolLineRE.ReplaceAllStringFunc(text, func(string) string { return "" }))
}

// userRequestRE is a <user_request> block of the conductor prompt: the user's
// text, delimited as data.
var userRequestRE = regexp.MustCompile(`(?s)<user_request>.*?</user_request>`)

// outsideUserRequest drops the <user_request> blocks of text: the simulated
// conductor reads its pool and any earlier workflow only from the prompt's own
// parts, never from the user's text (a user who writes "model_id = [6, 6, 6]"
// or "Model 0: ..." does not plan for it).
func outsideUserRequest(text string) string { return userRequestRE.ReplaceAllString(text, "") }

// guessFamily classifies an unmatched question for planning.
func guessFamily(q string) Family {
	lq := strings.ToLower(q)
	switch {
	case strings.Contains(q, "```") || strings.Contains(q, "def ") || strings.Contains(lq, "function") ||
		strings.Contains(lq, "code") || strings.Contains(lq, "implement") || strings.Contains(lq, "script"):
		return FamilyCode
	case optionLineRE.MatchString(q):
		return FamilyMMLU
	case strings.ContainsAny(q, "0123456789=$") && (strings.Contains(lq, "how many") || strings.Contains(lq, "find") ||
		strings.Contains(lq, "compute") || strings.Contains(lq, "solve") || strings.Contains(lq, "calculate") || strings.Contains(q, `\`)):
		return FamilyMath
	default:
		return FamilyGeneral
	}
}

// Role preferences per kind of step, strongest-but-cheapest first. Names missing
// from the pool are skipped.
var (
	strongModels = []string{"gpt-5", "gemini-2.5-pro", "claude-sonnet-4"}
	solverModels = []string{"qwen3-32b-thinking", "deepseek-r1-distill-qwen-32b", "claude-sonnet-4", "gemini-2.5-pro"}
	cheapModels  = []string{"qwen3-32b", "gemma-3-27b", "qwen3-32b-thinking", "claude-sonnet-4"}
	coderModels  = []string{"gemini-2.5-pro", "claude-sonnet-4", "gpt-5"}
)

// pick returns the pool index of one of the first two available preferred models
// (seeded variety), or a random pool index when none is in the pool.
func pick(pool []string, prefs []string, rng *rand.Rand) int {
	var avail []int
	for _, name := range prefs {
		for i, p := range pool {
			if p == name {
				avail = append(avail, i)
				break
			}
		}
	}
	if len(avail) > 0 {
		if len(avail) > 1 && rng.Float64() < 0.3 {
			return avail[1]
		}
		return avail[0]
	}
	var others []int
	for i, p := range pool {
		if p != "" && p != ConductorModel && p != ConductorJSONModel {
			others = append(others, i)
		}
	}
	if len(others) == 0 {
		return 0
	}
	return others[rng.IntN(len(others))]
}

const (
	subSolve    = "Solve the following problem step by step and state the result clearly.\n\n"
	subSolve2   = "Solve the following problem independently of any earlier attempt, by a different method if possible, and state the result.\n\n"
	subVerify   = "Check the previous solutions of the problem below, correct any error, and give the final answer in the format the problem asks for.\n\n"
	subChoice   = "Answer the following multiple-choice question; explain briefly and give the final answer as \"Answer: <letter>\".\n\n"
	subChoiceV  = "Verify the previous answer to the multiple-choice question below and give the final answer as \"Answer: <letter>\".\n\n"
	subCodePlan = "Outline an algorithm and the edge cases for the task below; do not write the full code yet.\n\n"
	subCodeImpl = "Implement the complete function for the task below in Python, following the outline above.\n\n"
	subCodeRev  = "Review the implementation above against the task below: trace the examples in the docstring and list any bug.\n\n"
	subCodeFin  = "Verify the implementation and the review, fix any bug, and give the final answer: the complete function in one python code block.\n\n"
	subDraft    = "Write a first, complete answer to the request below.\n\n"
	subRefine   = "Improve the previous answer to the request below: fix mistakes, fill gaps, and give the final answer.\n\n"
)

// makePlan writes a workflow for question q of family fam over pool: 1–2 steps
// for multiple choice, about 3 for maths, 3–4 for code, 2 otherwise. Every subtask
// contains q verbatim and the last step verifies and gives the final answer.
func makePlan(pool []string, q string, fam Family, rng *rand.Rand) plan {
	var p plan
	add := func(prefs []string, prefix string, access any) {
		p.Workers = append(p.Workers, pick(pool, prefs, rng))
		p.Subtasks = append(p.Subtasks, prefix+q)
		p.Access = append(p.Access, access)
	}
	switch fam {
	case FamilyMMLU:
		if rng.Float64() < 0.5 {
			add(strongModels, subChoice, []int{})
		} else {
			add(cheapModels, subChoice, []int{})
			add(strongModels, subChoiceV, "all")
		}
	case FamilyCode:
		add(cheapModels, subCodePlan, []int{})
		add(coderModels, subCodeImpl, "all")
		if rng.Float64() < 0.5 {
			add(solverModels, subCodeRev, "all")
		}
		add(strongModels, subCodeFin, "all")
	case FamilyGSM8K, FamilyMath, FamilyAIME:
		add(solverModels, subSolve, []int{})
		if fam == FamilyAIME || rng.Float64() < 0.8 {
			add(solverModels[1:], subSolve2, []int{})
		}
		if fam == FamilyAIME && rng.Float64() < 0.5 {
			add(strongModels[1:], subSolve2, []int{})
		}
		add(strongModels, subVerify, "all")
	default:
		add(cheapModels, subDraft, []int{})
		add(strongModels, subRefine, "all")
	}
	return p
}

// pyString encodes s as a double-quoted Python string literal that is also a valid
// JSON string: backslash, quote and control characters are escaped, other
// characters are kept as they are.
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func pyAccess(a any) string {
	switch v := a.(type) {
	case string:
		return pyString(v)
	case []int:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = strconv.Itoa(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return "[]"
	}
}

// formatPlanPython renders p in the paper's format after a short reasoning.
func formatPlanPython(p plan, pool []string, fam Family) string {
	ids := make([]string, len(p.Workers))
	subs := make([]string, len(p.Subtasks))
	acc := make([]string, len(p.Access))
	for i := range p.Workers {
		ids[i] = strconv.Itoa(p.Workers[i])
		subs[i] = pyString(p.Subtasks[i])
		acc[i] = pyAccess(p.Access[i])
	}
	return planReasoning(p, pool, fam) + "\n\n" +
		"model_id = [" + strings.Join(ids, ", ") + "]\n" +
		"subtasks = [" + strings.Join(subs, ", ") + "]\n" +
		"access_list = [" + strings.Join(acc, ", ") + "]\n"
}

func planReasoning(p plan, pool []string, fam Family) string {
	kind := map[Family]string{
		FamilyMMLU: "a knowledge question with fixed options", FamilyCode: "a coding task",
		FamilyGSM8K: "a maths word problem", FamilyMath: "a maths problem",
		FamilyAIME: "a hard competition maths problem", FamilyGeneral: "an open request",
	}[fam]
	names := make([]string, len(p.Workers))
	for i, w := range p.Workers {
		names[i] = poolName(pool, w)
	}
	return fmt.Sprintf("This is %s. I will use %d step(s): %s; the last step checks the earlier work and gives the final answer.",
		kind, len(p.Workers), strings.Join(names, " → "))
}

func poolName(pool []string, i int) string {
	if i >= 0 && i < len(pool) && pool[i] != "" {
		return pool[i]
	}
	return "model " + strconv.Itoa(i)
}

// formatPlanJSON renders p as {"steps":[{"worker","subtask","access"}]}.
func formatPlanJSON(p plan, pool []string) string {
	type step struct {
		Worker  string `json:"worker"`
		Subtask string `json:"subtask"`
		Access  any    `json:"access"`
	}
	steps := make([]step, len(p.Workers))
	for i := range p.Workers {
		steps[i] = step{Worker: poolName(pool, p.Workers[i]), Subtask: p.Subtasks[i], Access: p.Access[i]}
	}
	b, _ := json.Marshal(map[string]any{"steps": steps}) // plain strings, ints and slices: cannot fail
	return string(b)
}

// malformPlan breaks a rendered plan in one of the ways real planners fail:
// unequal list lengths, a cut-off output, a worker index outside the pool, an
// access index that is not earlier, or a missing list.
func malformPlan(text string, p plan, pool []string, jsonForm bool, rng *rand.Rand) string {
	if jsonForm {
		switch rng.IntN(3) {
		case 0:
			return text[:len(text)/2]
		case 1:
			return strings.Replace(text, `"steps"`, `"stepz"`, 1)
		default:
			return strings.Replace(text, `"access":"all"`, `"access":[99]`, 1) + "\n"
		}
	}
	switch rng.IntN(5) {
	case 0: // unequal lengths
		i := strings.LastIndex(text, "access_list = [")
		return text[:i] + "access_list = [" + pyAccess(p.Access[0]) + strings.Repeat(", []", len(p.Access)) + "]\n"
	case 1: // cut off in the middle of the subtasks
		i := strings.Index(text, "subtasks = [")
		return text[:i+len("subtasks = [")+min(40, len(text)-i-len("subtasks = ["))]
	case 2: // worker index outside the pool
		return strings.Replace(text, "model_id = [", "model_id = ["+strconv.Itoa(len(pool)+3)+", ", 1)
	case 3: // access to a later step
		i := strings.LastIndex(text, "access_list = [")
		acc := make([]string, len(p.Access))
		for j := range acc {
			acc[j] = "[" + strconv.Itoa(j+1) + "]"
		}
		return text[:i] + "access_list = [" + strings.Join(acc, ", ") + "]\n"
	default: // missing list
		i := strings.LastIndex(text, "access_list = [")
		return text[:i]
	}
}

// keepPrevious is the recursive conductor's "keep the previous answer" reply.
const keepPrevious = "The previous workflow already answers the question; keep its answer.\n\nmodel_id = []\nsubtasks = []\naccess_list = []\n"

// answerConductor simulates the planner. pool comes from the prompt's "Model N:"
// lines (the seven workers in WorkerModels order when there are none). A prompt
// that already contains a workflow ("model_id = [...]") outside the
// <user_request> block is a recursive call: it keeps the previous answer (70%)
// or returns a one-step corrective workflow. Text inside the block is the
// question only: a workflow or routing request written there is never followed.
func answerConductor(model string, c *Case, msgs []message, rng *rand.Rand, malformedProb float64) reply {
	pool := parsePool(msgs)
	if len(pool) == 0 {
		pool = WorkerModels()
	}
	q := extractQuestion(msgs, c)
	fam := guessFamily(q)
	if c != nil {
		fam = FamilyOf(*c)
	}
	jsonForm := model == ConductorJSONModel
	recursive := false
	for _, m := range msgs {
		if planLineRE.MatchString(outsideUserRequest(m.Content)) || (jsonForm && m.Role == "assistant" && strings.Contains(m.Content, `"steps"`)) {
			recursive = true
		}
	}
	var text string
	p := makePlan(pool, q, fam, rng)
	switch {
	case recursive && rng.Float64() < 0.7:
		if jsonForm {
			text = `{"steps":[]}`
		} else {
			text = keepPrevious
		}
	case recursive:
		p = plan{Workers: []int{pick(pool, strongModels, rng)}, Subtasks: []string{subVerify + q}, Access: []any{"all"}}
		fallthrough
	default:
		if jsonForm {
			text = formatPlanJSON(p, pool)
		} else {
			text = formatPlanPython(p, pool, fam)
		}
		if rng.Float64() < malformedProb {
			text = malformPlan(text, p, pool, jsonForm, rng)
		}
	}
	completion := estimateTokens(text)
	perTok := conductorProfile.TokensPerSecond
	return reply{
		Content:          text,
		FinishReason:     "stop",
		PromptTokens:     promptTokens(msgs),
		CompletionTokens: completion,
		TTFT:             conductorProfile.TTFT,
		Total:            conductorProfile.TTFT + secondsToDuration(float64(completion)/perTok),
	}
}
