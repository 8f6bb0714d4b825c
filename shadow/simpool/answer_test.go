package simpool

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAnswerFormats forces right and wrong answers for every shipped case and checks
// the format graders expect, that right answers carry the reference and wrong ones
// do not.
func TestAnswerFormats(t *testing.T) {
	choiceEnd := regexp.MustCompile(`Answer: ([A-D])$`)
	for _, tc := range []struct {
		prefix string
		check  func(t *testing.T, c Case, content string)
	}{
		{"gsm8k-", func(t *testing.T, c Case, content string) {
			if _, err := strconv.ParseFloat(boxedEndRE.FindStringSubmatch(content)[1], 64); err != nil {
				t.Fatalf("%s: GSM8K answer is not a number: %v", c.ID, err)
			}
		}},
		{"aime2025-", func(t *testing.T, c Case, content string) {
			n, err := strconv.Atoi(boxedEndRE.FindStringSubmatch(content)[1])
			if err != nil || n < 0 || n > 999 {
				t.Fatalf("%s: AIME answer %q is not an integer in 0..999", c.ID, boxedEndRE.FindStringSubmatch(content)[1])
			}
		}},
		{"math500-", func(t *testing.T, c Case, content string) {
			if !strings.HasPrefix(content[strings.LastIndex(content, "\n")+1:], `The final answer is \boxed{`) {
				t.Fatalf("%s: no final boxed line", c.ID)
			}
		}},
		{"mmlu-", func(t *testing.T, c Case, content string) {
			if !choiceEnd.MatchString(content) {
				t.Fatalf("%s: does not end with Answer: <A-D>", c.ID)
			}
		}},
		{"HumanEval/", func(t *testing.T, c Case, content string) {
			i := strings.Index(content, "```python\n")
			if i < 0 || !strings.HasSuffix(content, "```") || !strings.Contains(content[i:], c.Input) ||
				!strings.Contains(content[i:], "def "+c.EntryPoint+"(") {
				t.Fatalf("%s: no python block with the full function:\n%s", c.ID, content)
			}
		}},
	} {
		t.Run(strings.TrimSuffix(tc.prefix, "-"), func(t *testing.T) {
			for _, c := range shipped(t, tc.prefix) {
				for _, correct := range []bool{true, false} {
					acc := 0.0
					if correct {
						acc = 1
					}
					p := Profile{Name: "test", Accuracy: map[Family]float64{FamilyOf(c): acc}, TTFT: 1, TokensPerSecond: 10, OutputTokens: 200}
					msgs := []message{{Role: "user", Content: askCase(c)}}
					rep := answerWorker(p, &c, msgs, newRand(1, "test", c.ID, msgs), 0.5, 0.6, 0)
					if carriesAnswer(c, rep.Content) != correct {
						t.Fatalf("%s: forced correct=%v but carriesAnswer=%v:\n%s", c.ID, correct, !correct, rep.Content)
					}
					if !correct && c.Grader == "code" && strings.Contains(rep.Content, c.Input+c.Reference) {
						t.Fatalf("%s: wrong code equals the canonical solution", c.ID)
					}
					tc.check(t, c, rep.Content)
					if rep.CompletionTokens < estimateTokens(rep.Content) || rep.PromptTokens != promptTokens(msgs) {
						t.Fatalf("%s: usage %d/%d for %d chars", c.ID, rep.PromptTokens, rep.CompletionTokens, len(rep.Content))
					}
				}
			}
		})
	}
}

func TestWrongAnswerExamples(t *testing.T) {
	for _, tc := range []struct {
		ref, grader string
		notEqual    bool
	}{
		{`\left( 3, \frac{\pi}{2} \right)`, "math", true},
		{`\text{(B)}`, "math", true},
		{`\text{even}`, "math", true},
		{`p - q`, "math", true},
		{`10,\!080`, "math", true},
		{`0`, "numeric", true},
		{`1`, "numeric", true},
		{`0.5`, "numeric", true},
	} {
		c := Case{ID: "x", Reference: tc.ref, Grader: tc.grader}
		for seed := range int64(20) {
			w := wrongAnswer(c, newRand(seed, "m", "x", nil))
			if w == tc.ref || sameNumber(w, tc.ref) || normalizeMath(w) == normalizeMath(tc.ref) {
				t.Fatalf("wrong answer for %q equals the reference: %q", tc.ref, w)
			}
		}
	}
}

func TestCorrectProbability(t *testing.T) {
	for _, tc := range []struct{ p, q, help, want float64 }{
		{0.4, 0, 0.6, 0.4},
		{0.4, 1, 0.6, 0.76},
		{0.99, 1, 0.6, 0.996},
		{0.2, 1, 1, 1},
		{0.2, 1, 0, 0.2},
	} {
		if got := correctProbability(tc.p, tc.q, tc.help); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("correctProbability(%v,%v,%v) = %v, want %v", tc.p, tc.q, tc.help, got, tc.want)
		}
	}
}

func TestUnmatchedPromptGetsGenericText(t *testing.T) {
	profiles := DefaultProfiles()
	for _, p := range profiles {
		msgs := []message{{Role: "user", Content: "Write a haiku about autumn leaves in Kyoto."}}
		rep := answerWorker(p, nil, msgs, newRand(1, p.Name, "", msgs), 0.5, 0.6, 0)
		if !strings.Contains(rep.Content, "Simulated answer from "+p.Name) || strings.Contains(rep.Content, `\boxed`) {
			t.Fatalf("%s: generic answer %q", p.Name, rep.Content[:min(200, len(rep.Content))])
		}
		if p.Thinking != (rep.ReasoningTokens > 0) {
			t.Fatalf("%s: thinking %v but reasoning tokens %d", p.Name, p.Thinking, rep.ReasoningTokens)
		}
	}
}

// TestThinkingSlower checks the profile shape: thinking models spend more tokens
// and more time than plain models on the same question.
func TestThinkingSlower(t *testing.T) {
	byName := map[string]Profile{}
	for _, p := range DefaultProfiles() {
		byName[p.Name] = p
	}
	var fast, slow float64
	for _, c := range shipped(t, "math500-") {
		msgs := []message{{Role: "user", Content: c.Input}}
		fast += answerWorker(byName["qwen3-32b"], &c, msgs, newRand(1, "a", c.ID, msgs), 0.5, 0.6, 0).Total.Seconds()
		slow += answerWorker(byName["qwen3-32b-thinking"], &c, msgs, newRand(1, "b", c.ID, msgs), 0.5, 0.6, 0).Total.Seconds()
	}
	if slow < 3*fast {
		t.Fatalf("thinking model %.0fs vs plain %.0fs: want at least 3× slower", slow, fast)
	}
}

func TestFamilyOf(t *testing.T) {
	want := map[string]Family{
		"gsm8k-test-0": FamilyGSM8K, "aime2025-I-1": FamilyAIME, "HumanEval/0": FamilyCode,
		"mmlu-abstract_algebra-20": FamilyMMLU, "math500-precalculus/807": FamilyMath,
	}
	for id, fam := range want {
		if got := FamilyOf(caseByID(t, id)); got != fam {
			t.Errorf("FamilyOf(%s) = %s, want %s", id, got, fam)
		}
	}
	if got := FamilyOf(Case{ID: "mtbench-81", Category: "writing"}); got != FamilyGeneral {
		t.Errorf("unknown category: %s", got)
	}
	// New sets named in other ways land in their family.
	for _, tc := range []struct {
		c    Case
		want Family
	}{
		{Case{ID: "AIME-2024-I-3", Category: "AIME 2024", Grader: "numeric"}, FamilyAIME},
		{Case{ID: "2024-II-7", Category: "aime24", Grader: "numeric"}, FamilyAIME},
		{Case{ID: "gsm-hard-1", Category: "GSM8K", Grader: "numeric"}, FamilyGSM8K},
		{Case{ID: "x-1", Category: "Math/Algebra"}, FamilyMath},
	} {
		if got := FamilyOf(tc.c); got != tc.want {
			t.Errorf("FamilyOf(%+v) = %s, want %s", tc.c, got, tc.want)
		}
	}
}

func TestProfilesFromTable1(t *testing.T) {
	ps := DefaultProfiles()
	if len(ps) != 8 {
		t.Fatalf("%d profiles, want 7 workers + incumbent", len(ps))
	}
	for _, p := range ps {
		for _, f := range []Family{FamilyGSM8K, FamilyMath, FamilyMMLU, FamilyAIME, FamilyCode, FamilyGeneral} {
			if a := p.AccuracyFor(f); a <= 0 || a >= 1 {
				t.Errorf("%s %s accuracy %v", p.Name, f, a)
			}
		}
		if p.TTFT <= 0 || p.TokensPerSecond <= 0 || p.OutputTokens <= 0 || p.Source == "" {
			t.Errorf("%s: incomplete profile %+v", p.Name, p)
		}
		if row, ok := table1[p.Name]; ok && (p.AccuracyFor(FamilyMath) != row[0]/100 || p.AccuracyFor(FamilyCode) != row[3]/100) {
			t.Errorf("%s: accuracy does not come from Table 1", p.Name)
		}
	}
}
