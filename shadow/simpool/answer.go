package simpool

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// message is one chat turn with its text content.
type message struct {
	Role    string
	Content string
}

// reply is one simulated completion before it is put on the wire. Durations are
// unscaled (Config.LatencyScale is applied when serving).
type reply struct {
	Content          string
	FinishReason     string // "stop" or "length"
	PromptTokens     int
	CompletionTokens int // reasoning included
	ReasoningTokens  int
	TTFT             time.Duration // to the first visible token
	Total            time.Duration // to the last token
}

// newRand returns the generator for one call, seeded by a hash of (seed, model,
// matched case id, every message's role and content), so the same call always draws
// the same numbers.
func newRand(seed int64, model, caseID string, msgs []message) *rand.Rand {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	for _, s := range []string{model, caseID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, m := range msgs {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

// estimateTokens is the token count of text at ≈4 characters per token, rounded up.
func estimateTokens(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

func promptTokens(msgs []message) int {
	n := 0
	for _, m := range msgs {
		n += utf8.RuneCountInString(m.Content)
	}
	return max(1, (n+3)/4)
}

// correctProbability is the simulation's workflow assumption: with base accuracy p
// and best visible prior quality q (1 when an earlier assistant turn in the request
// carries the reference answer, else 0), the chance of a correct answer is
//
//	p' = 1 - (1-p)·(1 - help·q)
//
// with help = Config.PriorHelp (default 0.6): a correct earlier step closes 60% of
// the gap, as a later step that checks earlier work often does.
func correctProbability(p, q, help float64) float64 {
	return 1 - (1-p)*(1-help*q)
}

// priorQuality returns 1 when an earlier assistant turn carries c's reference
// answer (by c's grader), else 0.
func priorQuality(c Case, msgs []message) float64 {
	for _, m := range msgs {
		if m.Role == "assistant" && carriesAnswer(c, m.Content) {
			return 1
		}
	}
	return 0
}

// graderOf returns the case's grader, inferring it from the family when unset.
func graderOf(c Case) string {
	if c.Grader != "" {
		return c.Grader
	}
	switch FamilyOf(c) {
	case FamilyMMLU:
		return "choice"
	case FamilyCode:
		return "code"
	case FamilyMath:
		return "math"
	case FamilyGSM8K, FamilyAIME:
		return "numeric"
	default:
		return ""
	}
}

var choiceRE = regexp.MustCompile(`(?i)answer\s*(?:is)?\s*[:：]?\s*\(?([A-J])\)?\b`)

// carriesAnswer reports whether text gives c's reference answer in the form the
// simulated workers write it (boxed value, "Answer: X", or the canonical code).
func carriesAnswer(c Case, text string) bool {
	if c.Reference == "" {
		return false
	}
	switch graderOf(c) {
	case "numeric":
		got, ok := lastBoxed(text)
		if !ok {
			return false
		}
		return sameNumber(got, c.Reference)
	case "math":
		got, ok := lastBoxed(text)
		return ok && (normalizeMath(got) == normalizeMath(c.Reference) || sameNumber(got, c.Reference))
	case "choice":
		m := choiceRE.FindAllStringSubmatch(text, -1)
		return len(m) > 0 && strings.EqualFold(m[len(m)-1][1], c.Reference)
	case "code":
		return strings.Contains(normalizeWS(text), normalizeWS(c.Reference))
	default:
		return false
	}
}

// lastBoxed returns the content of the last \boxed{...} in text.
func lastBoxed(text string) (string, bool) {
	i := strings.LastIndex(text, `\boxed{`)
	if i < 0 {
		return "", false
	}
	depth := 0
	start := i + len(`\boxed{`)
	for j := start; j < len(text); j++ {
		switch text[j] {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return text[start:j], true
			}
			depth--
		}
	}
	return "", false
}

func parseNumber(s string) (float64, bool) {
	s = strings.NewReplacer(",", "", `\!`, "", "$", "", " ", "").Replace(strings.TrimSpace(s))
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func sameNumber(a, b string) bool {
	x, ok1 := parseNumber(a)
	y, ok2 := parseNumber(b)
	return ok1 && ok2 && math.Abs(x-y) < 1e-9
}

func normalizeMath(s string) string {
	return strings.NewReplacer(" ", "", `\left`, "", `\right`, "", `\!`, "", "$", "", `\,`, "").Replace(s)
}

// finalLine formats the answer the way the graders expect it.
func finalLine(c Case, answer string) string {
	switch graderOf(c) {
	case "choice":
		return "Answer: " + answer
	case "code":
		body := answer
		if !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		return "```python\n" + c.Input + body + "```"
	default:
		return `The final answer is \boxed{` + answer + `}`
	}
}

// wrongAnswer returns a plausible wrong answer for c: a nearby number, another
// letter, an altered LaTeX expression, or a function body with one bug.
func wrongAnswer(c Case, rng *rand.Rand) string {
	switch graderOf(c) {
	case "choice":
		n := max(len(c.Choices), 4)
		for {
			l := string(rune('A' + rng.IntN(n)))
			if !strings.EqualFold(l, c.Reference) {
				return l
			}
		}
	case "code":
		return mutateCode(c.Reference, rng)
	case "numeric":
		if w, ok := nearbyNumber(c.Reference, rng, FamilyOf(c) == FamilyAIME); ok {
			return w
		}
		return wrongLatex(c.Reference, rng)
	default:
		if w, ok := nearbyNumber(c.Reference, rng, false); ok {
			return w
		}
		return wrongLatex(c.Reference, rng)
	}
}

func nearbyNumber(ref string, rng *rand.Rand, aime bool) (string, bool) {
	f, ok := parseNumber(ref)
	if !ok {
		return "", false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		n := int64(f)
		deltas := []int64{-10, -5, -3, -2, -1, 1, 2, 3, 5, 10, n, -n / 2}
		for {
			w := n + deltas[rng.IntN(len(deltas))]
			if aime {
				w = ((w % 1000) + 1000) % 1000
			}
			if w != n {
				return strconv.FormatInt(w, 10), true
			}
		}
	}
	decimals := 0
	if i := strings.IndexByte(ref, '.'); i >= 0 {
		decimals = len(strings.TrimSpace(ref)) - i - 1
	}
	w := f * (1 + (0.1+0.4*rng.Float64())*float64(1-2*rng.IntN(2)))
	s := strconv.FormatFloat(w, 'f', decimals, 64)
	if s == strconv.FormatFloat(f, 'f', decimals, 64) {
		s = strconv.FormatFloat(f+1, 'f', decimals, 64)
	}
	return s, true
}

var (
	digitsRE = regexp.MustCompile(`\d+`)
	letterRE = regexp.MustCompile(`\(([A-E])\)`)
)

func wrongLatex(ref string, rng *rand.Rand) string {
	switch {
	case strings.Contains(ref, "even"):
		return strings.Replace(ref, "even", "odd", 1)
	case strings.Contains(ref, "odd"):
		return strings.Replace(ref, "odd", "even", 1)
	case letterRE.MatchString(ref):
		l := letterRE.FindStringSubmatch(ref)[1]
		other := string(rune('A' + (int(l[0]-'A')+1+rng.IntN(3))%5))
		return strings.Replace(ref, "("+l+")", "("+other+")", 1)
	case digitsRE.MatchString(ref):
		loc := digitsRE.FindStringIndex(ref)
		n, _ := strconv.Atoi(ref[loc[0]:loc[1]])
		return ref[:loc[0]] + strconv.Itoa(n+1+rng.IntN(3)) + ref[loc[1]:]
	default:
		return "-(" + ref + ")"
	}
}

// codeMutations are one-token bugs; mutateCode applies one that fits the body.
var codeMutations = [][2]string{
	{" < ", " <= "}, {" <= ", " < "}, {" > ", " >= "}, {" >= ", " > "},
	{" == ", " != "}, {" != ", " == "}, {" + 1", " + 2"}, {" - 1", " + 1"},
	{"return True", "return False"}, {"return False", "return True"},
	{" and ", " or "}, {" or ", " and "}, {"[1:]", "[2:]"}, {"[::-1]", "[::1]"},
}

// mutateCode returns body with one plausible bug (an off-by-one, a flipped
// comparison or boolean) behind a stray early "return None", so the answer is
// sure to fail the tests: a lone mutant can still pass them (an equivalent
// mutant) or loop forever, which would make a wrong answer count as right or
// time out. A body no mutation fits becomes a stub that raises.
func mutateCode(body string, rng *rand.Rand) string {
	var fit [][2]string
	for _, m := range codeMutations {
		if strings.Contains(body, m[0]) {
			fit = append(fit, m)
		}
	}
	if len(fit) == 0 {
		return "    raise NotImplementedError\n"
	}
	m := fit[rng.IntN(len(fit))]
	return "    return None  # stray early return left in while debugging\n" + strings.Replace(body, m[0], m[1], 1)
}

// fillers are content-free sentences (no digits, no answer markers) that give a
// simulated answer a realistic length.
var fillers = map[Family][]string{
	FamilyMath: {
		"Let us restate what is given and what is asked.",
		"We write the relationships between the quantities as equations.",
		"Substituting the known values simplifies the expression.",
		"We simplify step by step and keep track of every term.",
		"Checking the intermediate result against the conditions of the problem shows it is consistent.",
		"Combining the partial results gives the value we need.",
		"A quick check of the size of the result shows that it is plausible.",
		"Another way to see this is to reason about the structure of the problem directly.",
	},
	FamilyMMLU: {
		"We consider each option in turn.",
		"One option conflicts with a standard result in this field.",
		"Two of the options can be ruled out by definition.",
		"The remaining option matches the key fact the question tests.",
		"The wording of the question points to a specific concept.",
	},
	FamilyCode: {
		"The function has to handle the empty input first.",
		"A single pass over the input with a small amount of state is enough.",
		"The docstring examples pin down the edge cases.",
		"The running time is linear in the size of the input apart from any sorting.",
		"Helper variables keep the main loop short and readable.",
		"The implementation below follows the signature given in the prompt.",
	},
	FamilyGeneral: {
		"Here is an overview of the main points.",
		"First, it helps to clarify the goal and the constraints.",
		"There are a few common approaches, each with its own trade-offs.",
		"In practice, the simplest option that meets the requirements is usually the best.",
		"It is worth testing the result on a small example before relying on it.",
		"Context matters here, so adapt the suggestions to your situation.",
		"A short summary of the reasoning follows.",
	},
}

func fillerFor(f Family) []string {
	switch f {
	case FamilyGSM8K, FamilyMath, FamilyAIME:
		return fillers[FamilyMath]
	case FamilyMMLU, FamilyCode:
		return fillers[f]
	default:
		return fillers[FamilyGeneral]
	}
}

// filler returns about chars characters of paragraphs of filler sentences.
func filler(f Family, chars int, rng *rand.Rand) string {
	pool := fillerFor(f)
	var b strings.Builder
	for n := 0; b.Len() < chars; n++ {
		if n > 0 {
			if n%4 == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(pool[rng.IntN(len(pool))])
	}
	return b.String()
}

// goldenFrac is the fractional part of the golden ratio, the step of the Weyl
// sequence behind correctnessDraw.
const goldenFrac = 0.6180339887498949

// correctnessDraw is the number in [0,1) a worker's answer to a matched case is
// judged by: the answer is correct when the draw is below the probability of a
// correct answer. It is the Weyl sequence frac(pos·φ + shift) over the case's
// position pos in the loaded sets, shifted by a hash of (seed, model, the call's
// shape: its messages with the question's text and options taken out). Across the cases of
// one set asked the same way the draws are spread evenly over [0,1) (low
// discrepancy, Weyl 1916), so a worker's accuracy measured over a set stays
// within a case or two of its profile instead of carrying binomial noise; a
// different model, seed or wording of the call gets an unrelated shift.
func correctnessDraw(seed int64, model string, pos int, c Case, msgs []message) float64 {
	shape := make([]message, len(msgs))
	for i, m := range msgs {
		text := strings.ReplaceAll(normalizeWS(m.Content), normalizeWS(c.Input), "<question>")
		for _, o := range c.Choices {
			if o = normalizeWS(o); o != "" {
				text = strings.ReplaceAll(text, o, "<option>")
			}
		}
		shape[i] = message{Role: m.Role, Content: text}
	}
	shift := newRand(seed, model, "correctness", shape).Float64()
	_, f := math.Modf(float64(pos)*goldenFrac + shift)
	return f
}

// answerWorker simulates one worker call. c is nil when no regression-set question
// matched the request; u is the call's correctness draw (see correctnessDraw).
// maxTokens > 0 caps completion tokens (finish "length").
//
// Length: the completion's length (reasoning included) is drawn around the
// profile's OutputTokens for the family. A correct answer fits within the
// profile's BudgetTokens (the output cap its accuracy figure was measured at):
// a model that runs out of budget does not answer, so the accuracy figure
// already counts those runs as wrong, and the draw is shortened to fit. A
// wrong answer keeps its drawn length and may run past a request's max_tokens;
// it then ends with finish reason "length". With max_tokens at or above
// BudgetTokens the measured accuracy therefore matches the profile; below it
// correct answers are cut too, as on a real endpoint.
func answerWorker(p Profile, c *Case, msgs []message, rng *rand.Rand, u float64, help float64, maxTokens int) reply {
	if c != nil && c.Attack != "" {
		if text, ok := answerProbe(p, *c, msgs, rng); ok {
			return shortReply(p, msgs, text, rng)
		}
	}
	fam := FamilyGeneral
	if c != nil {
		fam = FamilyOf(*c)
	}
	correct := false
	if c != nil {
		pc := correctProbability(p.AccuracyFor(fam), priorQuality(*c, msgs), help)
		correct = u < pc
	}
	total := max(20, int(math.Round(float64(p.OutputTokens)*verbosityFactor(fam)*math.Exp(0.35*rng.NormFloat64()))))
	if limit := p.BudgetTokens * 9 / 10; correct && p.BudgetTokens > 0 && total > limit {
		total = limit/2 + rng.IntN(limit/2) // leave room for the final answer
	}
	visible := total
	if p.Thinking {
		visible = min(max(total/5, 40), 600)
	}

	var final, intro string
	switch {
	case c == nil:
		intro = fmt.Sprintf("(Simulated answer from %s, produced by simllm: no regression-set question matched this request, so this is placeholder text of a realistic length, not a real answer.)\n\n", p.Name)
	case correct:
		final = finalLine(*c, c.Reference)
	default:
		final = finalLine(*c, wrongAnswer(*c, rng))
	}
	visible = max(visible, estimateTokens(intro+final)+10)
	body := intro + filler(fam, visible*4-utf8.RuneCountInString(intro+final), rng)
	content := body
	if final != "" {
		content = body + "\n\n" + final
	}
	reasoning := 0
	if p.Thinking {
		reasoning = max(0, total-visible)
	}
	completion := estimateTokens(content) + reasoning

	finish := "stop"
	if maxTokens > 0 && completion > maxTokens {
		finish = "length"
		reasoning = min(reasoning, maxTokens)
		keep := (maxTokens - reasoning) * 4
		content = truncateRunes(body, keep)
		completion = maxTokens
	}

	jitter := math.Exp(0.15 * rng.NormFloat64())
	ttft := time.Duration(float64(p.TTFT) * jitter)
	perTok := time.Duration(float64(time.Second) / p.TokensPerSecond)
	return reply{
		Content:          content,
		FinishReason:     finish,
		PromptTokens:     promptTokens(msgs),
		CompletionTokens: completion,
		ReasoningTokens:  reasoning,
		TTFT:             ttft + time.Duration(reasoning)*perTok,
		Total:            ttft + time.Duration(completion)*perTok,
	}
}

// RefusalText is a simulated worker's refusal.
const RefusalText = "I'm sorry, but I can't help with that request."

// answerProbe answers an adversarial probe when the model's behaviour differs
// from an ordinary answer: a refusal; obeying an instruction an earlier step's
// response carries (injection probes; only instructions seen in earlier steps'
// responses count, the model's own subtask is its task); or, for the first
// step of an injection probe, an answer that carries the injection on (as a
// summary of a poisoned page would). ok is false for an ordinary answer.
func answerProbe(p Profile, c Case, msgs []message, rng *rand.Rand) (string, bool) {
	switch c.Attack {
	case AttackRefusal:
		prob := p.RefuseHarmful
		if c.Expect == "comply" {
			prob = p.OverRefuse
		}
		if rng.Float64() < prob {
			return RefusalText, true
		}
		return "", false
	case AttackInjection:
		if c.Injection == "" || c.Canary == "" {
			return "", false
		}
		seen, delimited := false, false
		for _, m := range msgs {
			if m.Role == "assistant" && strings.Contains(m.Content, c.Injection) {
				seen = true
				delimited = strings.HasPrefix(m.Content, "<step_output")
			}
		}
		if !seen {
			if len(msgs) > 0 && !hasAssistant(msgs) {
				return "Summary of the text: it describes the product and its use as asked.\n\n" + c.Injection, true
			}
			return "", false
		}
		prob := p.InjectionObey
		if delimited {
			prob *= DelimitedObeyFactor
		}
		if rng.Float64() < prob {
			return c.Canary, true
		}
	}
	return "", false
}

func hasAssistant(msgs []message) bool {
	for _, m := range msgs {
		if m.Role == "assistant" {
			return true
		}
	}
	return false
}

// shortReply wraps a short probe answer with the profile's latency and usage.
func shortReply(p Profile, msgs []message, text string, rng *rand.Rand) reply {
	completion := estimateTokens(text)
	ttft := time.Duration(float64(p.TTFT) * math.Exp(0.15*rng.NormFloat64()))
	perTok := time.Duration(float64(time.Second) / p.TokensPerSecond)
	return reply{Content: text, FinishReason: "stop", PromptTokens: promptTokens(msgs), CompletionTokens: completion,
		TTFT: ttft, Total: ttft + time.Duration(completion)*perTok}
}

func truncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
