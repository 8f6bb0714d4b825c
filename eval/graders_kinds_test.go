package eval

import (
	"context"
	"strings"
	"testing"
	"time"
)

type kindCase struct {
	name, ref, output string
	pass              bool
}

func runKindCases(t *testing.T, g Grader, tests []kindCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := g.Grade(context.Background(), Case{ID: tt.name, Reference: tt.ref}, tt.output)
			if got.Err != nil {
				t.Fatalf("grader error: %v", got.Err)
			}
			if got.Passed != tt.pass {
				t.Errorf("ref %q output %q: passed=%v, want %v (%s)", tt.ref, tt.output, got.Passed, tt.pass, got.Explanation)
			}
		})
	}
}

// The failing inputs reported against the numeric grader, and their kinds:
// every dash as a sign, every thousands separator, LaTeX fractions with the
// sign inside or outside, trailing words, and exact comparison of integers.
func TestNumericGraderKinds(t *testing.T) {
	runKindCases(t, NumericGrader{}, []kindCase{
		// reported
		{"en dash minus", "-3", "The answer is \u20133.", true},
		{"en dash minus against 3", "3", "The answer is \u20133.", false},
		{"latex thick space groups", "1234567", `The total is 1\;234\;567.`, true},
		{"latex medium space groups", "1234567", `The total is 1\:234\:567.`, true},
		{"thin space groups", "1234567", "The total is 1\u2009234\u2009567.", true},
		{"negative frac", "-0.75", `The slope is $-\frac{3}{4}$.`, true},
		// other dashes
		{"minus sign U+2212", "-3", "The answer is \u22123.", true},
		{"figure dash U+2012", "-3", "Answer: \u20123", true},
		{"em dash U+2014", "-3", "The answer is \u20143", true},
		{"small hyphen-minus U+FE63", "-3", "The answer is \uFE633", true},
		{"fullwidth hyphen-minus U+FF0D", "-3", "The answer is \uFF0D3", true},
		{"minus sign against positive", "3", "Answer: \u22123", false},
		{"en dash range is not a sign", "4", "between 3\u20134", true},
		// other separators
		{"latex thin space", "1234567", `1\,234\,567`, true},
		{"latex negative space", "1234567", `1\!234\!567`, true},
		{"latex braced comma", "1234567", `\boxed{1{,}234{,}567}`, true},
		{"narrow no-break space", "1234567", "1\u202F234\u202F567", true},
		{"no-break space", "1234567", "Answer: 1\u00A0234\u00A0567", true},
		{"apostrophes", "1234567", "Answer: 1'234'567", true},
		{"right single quotes", "1234567", "Answer: 1\u2019234\u2019567", true},
		{"commas", "1234567", "Answer: 1,234,567 dollars", true},
		{"groups of two are not thousands", "1234567", "Answer: 1\u200923\u200945", false},
		{"comma list is not one number", "3", "The values are 1,2,3", true},
		// fractions
		{"dfrac", "-0.75", `\boxed{-\dfrac{3}{4}}`, true},
		{"tfrac", "0.75", `So it is $\tfrac{3}{4}$`, true},
		{"frac shorthand", "0.5", `\boxed{\frac12}`, true},
		{"sign inside numerator", "-0.75", `Answer: \frac{-3}{4}`, true},
		{"sign inside denominator", "-0.75", `Answer: \frac{3}{-4}`, true},
		{"two minus signs", "0.75", `Answer: -\frac{-3}{4}`, true},
		{"negative frac against positive", "0.75", `$-\frac{3}{4}$`, false},
		{"plain fraction after answer", "0.5", "The answer is 1/2.", true},
		{"fraction against fraction reference", "3/4", "Answer: 0.75", true},
		{"repeating decimal close to fraction", "1/3", "Answer: 0.3333333333", true},
		{"date is not a fraction", "2020", "It ended on 12/25/2020", true},
		// trailing words and exactness
		{"trailing words", "72", "So we have 72, in total, so we are done.", true},
		{"answer with trailing words", "72", "The answer is 72 apples, in total.", true},
		{"different integers", "1000001", "The answer is 1000000.", false},
		{"different large integers", "123456789012", "Answer: 123456789013", false},
		{"different decimals", "2.5", "Answer: 2.5000001", false},
		{"same decimal other form", "2.5", "Answer: 2.50", true},
		// answer cues in other languages
		{"chinese cue", "42", "计算得 40 + 2。答案是 42", true},
		{"chinese colon cue", "42", "答案：42（个）", true},
		{"german cue", "42", "Antwort: 42 Äpfel, nicht 43", true},
		{"french cue", "42", "Réponse : 42 pommes, pas 43", true},
		{"spanish cue", "42", "Respuesta: 42 manzanas y no 43", true},
		{"russian cue", "42", "Ответ: 42 яблока, а не 43", true},
		{"korean cue", "42", "정답: 42개, 43개 아님", true},
		{"fullwidth digits", "42", "答案是４２", true},
	})
}

func TestMathGraderKinds(t *testing.T) {
	runKindCases(t, MathGrader{}, []kindCase{
		{"trailing words", "72", "So we have 72, in total, so we are done.", true},
		{"one-line answer with unit", "145", "145 degrees", true},
		{"different integers", "1000001", "The answer is 1000000.", false},
		{"different integers boxed", "1000001", `\boxed{1000000}`, false},
		{"different fractions", "1000000/1000001", `\boxed{\frac{999999}{1000000}}`, false},
		{"same fraction other form", "\\frac{6}{8}", `\boxed{\frac{3}{4}}`, true},
		{"decimal for fraction", "\\frac{14}{3}", `\boxed{4.666666666666667}`, true},
		{"rounded decimal is not the fraction", "\\frac{14}{3}", `\boxed{4.67}`, false},
		{"minus sign U+2212", "-\\frac{\\pi}{6}", "\\boxed{\u2212\\frac{\\pi}{6}}", true},
		{"en dash sign", "-5", "The answer is \u20135.", true},
		{"en dash against positive", "5", "The answer is \u20135.", false},
		{"thin space groups", "1234567", "\\boxed{1\u2009234\u2009567}", true},
		{"latex space groups", "1234567", `\boxed{1\;234\;567}`, true},
		{"apostrophe groups", "1234567", `\boxed{1'234'567}`, true},
		{"answer phrase with trailing prose", "\\frac{3}{4}", "The final answer is $\\frac{3}{4}$, which we checked.", true},
		{"chinese cue", "12", "答案是 12", true},
		{"russian cue", "12", "Ответ: 12", true},
		{"fbox", "12", `\fbox{12}`, true},
		{"words as the answer", "\\text{even function}", `\text{even function}`, true},
	})
}

// The failing inputs reported against the choice grader (reference B), and
// their kinds: wrappers, fullwidth forms and answer cues in other languages.
func TestChoiceGraderKinds(t *testing.T) {
	runKindCases(t, ChoiceGrader{}, []kindCase{
		// reported
		{"dollars", "B", "$B$", true},
		{"fullwidth parens", "B", "（B）", true},
		{"chinese cue", "B", "答案是B", true},
		{"bold cue then boxed", "B", `**Answer:** \boxed{B}`, true},
		{"cue after a tempting option", "B", "Option (A) is tempting.\nANSWER: $B$", true},
		// other wrappers
		{"fullwidth letter", "B", "（Ｂ）", true},
		{"fullwidth letter alone", "B", "Ｂ", true},
		{"fbox", "B", `\fbox{B}`, true},
		{"boxed text", "B", `$\boxed{\text{B}}$`, true},
		{"bold", "B", "The best fit is **B**", true},
		{"text command", "B", `Answer: \text{(B)}`, true},
		{"inline math paren", "B", `The answer is $(B)$.`, true},
		{"bold letter after cue", "B", "**Answer:** **B**", true},
		{"wrong letter in wrapper", "B", "ANSWER: $C$", false},
		{"wrong fullwidth", "B", "答案是Ｃ", false},
		// other languages
		{"chinese colon", "B", "分析如上。答案：B", true},
		{"chinese fullwidth colon and letter", "B", "答案：Ｂ", true},
		{"german", "B", "Option A ist falsch.\nAntwort: B", true},
		{"french", "B", "L'option (A) est fausse.\nRéponse : B", true},
		{"spanish", "B", "La opción (A) no.\nRespuesta: (B)", true},
		{"russian", "B", "Вариант (A) неверен.\nОтвет: B", true},
		{"korean", "B", "(A)는 틀렸다. 정답은 B", true},
		{"japanese", "B", "(A)は違う。答え：B", true},
	})
}

// The four kinds graders misread on unseen real-shaped answers: a final number
// at the end of an expression chain, notes with numbers after a "#### N"
// answer line, and LaTeX mixed numbers (the code kind is TestAnswerCodeKinds).
func TestNumericGraderAnswerShapes(t *testing.T) {
	runKindCases(t, NumericGrader{}, []kindCase{
		// expression chains that end in the answer
		{"chain after cue", "116", "The answer is m+n = 7+109 = 116.", true},
		{"chain after cue, wrong value", "7", "The answer is m+n = 7+109 = 116.", false},
		{"chain in latex after cue", "116", "So the final answer is $m+n = 7+109 = 116$.", true},
		{"chain boxed", "116", `\boxed{m+n = 7 + 109 = 116}`, true},
		{"chain of numbers boxed", "18", `\boxed{9 \times 2 = 18}`, true},
		{"chain with unit after value", "18", "Answer: 9*2 = 18 dollars", true},
		{"chain stops at prose", "116", "Answer: x = 7+109 = 116, and y = 3", true},
		{"value first, working after", "18", "Answer: 18 = 9 eggs × $2", true},
		{"not a chain: working ends in a term", "18", "Answer: 18 (9 * 2 = 9 * 2)", true},
		{"comparison is not a chain", "3", "The answer is x <= 3", true},
		{"chain with minus sign value", "-4", "The answer is a-b = 3-7 = \u22124.", true},
		// notes after the GSM8K answer line
		{"note with numbers after ####", "18", "16 - 3 - 4 = 9 eggs, 9 * 2 = 18\n#### 18\n\nNote: I assumed 3 eggs for breakfast and 4 for muffins.", true},
		{"note with a cue after ####", "18", "9 * 2 = 18\n#### 18\nNote: the answer is not 20, that would double-count.", true},
		{"#### with dollar and comma", "70000", "#### $70,000\n(The 150% increase is on the house's value of 80,000.)", true},
		{"#### wrong", "18", "#### 20\nNote: 18 was my first guess.", false},
		{"last #### line wins", "18", "#### 20\nWait, I double counted.\n#### 18\nNote: 2 eggs left.", true},
		{"#### chain", "116", "#### m+n = 7+109 = 116\n(checked with 3 examples)", true},
		// LaTeX mixed numbers
		{"mixed frac", "2.5", `The answer is $2\frac{1}{2}$ cups.`, true},
		{"mixed frac as fraction", "5/2", `\boxed{2\frac{1}{2}}`, true},
		{"mixed tfrac with space", "2.5", `She needs 2 \tfrac{1}{2} cups.`, true},
		{"mixed with thin space", "3.75", `The answer is $3\,\frac{3}{4}$.`, true},
		{"mixed dfrac boxed", "15/4", `\boxed{3\dfrac{3}{4}}`, true},
		{"mixed shorthand", "10.5", `Answer: $10\frac12$`, true},
		{"negative mixed", "-2.5", `The answer is $-2\frac{1}{2}$.`, true},
		{"mixed is not the whole alone", "2", `The answer is $2\frac{1}{2}$.`, false},
		{"mixed is not glued digits", "10.5", `The answer is $2\frac{1}{2}$.`, false},
		{"improper frac after number is not mixed", "3.5", `Answer: $2\frac{3}{2}$`, false},
		{"power before frac is not mixed", "2.5", `Answer: $x^2\frac{1}{2}$`, false},
	})
}

func TestMathGraderAnswerShapes(t *testing.T) {
	runKindCases(t, MathGrader{}, []kindCase{
		{"aime chain after cue", "116", "Thus the answer is $m+n = 7+109 = 116$.", true},
		{"aime chain boxed", "116", `\boxed{m+n=116}`, true},
		{"chain wrong", "117", `\boxed{m+n=7+109=116}`, false},
		{"equation reference kept", "y=2x+1", `\boxed{y=2x+1}`, true},
		{"comparison kept", "3", `\boxed{x\le 3}`, false},
		{"mixed frac", "\\frac{5}{2}", `\boxed{2\frac{1}{2}}`, true},
		{"mixed tfrac with space", "\\frac{5}{2}", `The answer is $2 \tfrac{1}{2}$.`, true},
		{"mixed thin space", "\\frac{15}{4}", `\boxed{3\,\frac{3}{4}}`, true},
		{"mixed against decimal", "3.75", `\boxed{3\,\frac{3}{4}}`, true},
		{"mixed reference", "2\\frac{1}{2}", `\boxed{\frac{5}{2}}`, true},
		{"mixed is not 21/2", "\\frac{21}{2}", `\boxed{2\frac{1}{2}}`, false},
		{"negative mixed", "-\\frac{5}{2}", `\boxed{-2\frac{1}{2}}`, true},
		{"coefficient times pi fraction", "\\frac{2\\pi}{3}", `\boxed{\frac{2\pi}{3}}`, true},
		{"#### line", "18", "9 * 2 = 18\n#### 18\nNote: 3 eggs, 4 muffins.", true},
	})
}

// Code answers outside a fenced block: an indented (Markdown) code block, or
// bare code after prose, with prose after it too.
func TestAnswerCodeKinds(t *testing.T) {
	const entry = "add"
	def := "def add(a, b):\n    return a + b\n"
	tests := []struct {
		name, output, want string
	}{
		{"fenced", "Here:\n```python\n" + def + "```\nDone.", def},
		{"fenced without language", "```\n" + def + "```", def},
		{"second fence defines it", "```\nprint(1)\n```\n```python\n" + def + "```", def},
		{"indented block after prose", "Here is my solution:\n\n    def add(a, b):\n        return a + b\n\nIt adds the numbers.", def},
		{"indented block with tab", "Solution:\n\tdef add(a, b):\n\t    return a + b\n", "def add(a, b):\n    return a + b\n"},
		{"bare def after prose", "Sure! Here is the function:\ndef add(a, b):\n    return a + b", def},
		{"bare def with prose after", "Sure.\ndef add(a, b):\n    return a + b\n\nThis function returns the sum of a and b.\nExample usage: add(1, 2)", def},
		{"bare imports and helper kept", "Here you go:\nimport math\n\ndef helper(x):\n    return x\n\ndef add(a, b):\n    return helper(a) + b\nNote: helper is identity.",
			"import math\n\ndef helper(x):\n    return x\n\ndef add(a, b):\n    return helper(a) + b\n"},
		{"bare def with decorator and top-level code", "Code:\n@cache\ndef add(a, b):\n    return a + b\nprint(add(1, 2))\nThat prints 3.", "@cache\ndef add(a, b):\n    return a + b\nprint(add(1, 2))\n"},
		{"completion body stays whole", "    return a + b\n", "    return a + b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answerCode(tt.output, entry); got != tt.want {
				t.Errorf("answerCode:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// The code kinds graded for real: the program built from each answer passes
// HumanEval/4's tests.
func TestCodeGraderUnfencedAnswers(t *testing.T) {
	needPython(t)
	cfg := NewDefaultCodeConfig()
	cfg.Timeout = 30 * time.Second
	g, err := NewCodeGrader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := caseByID(t, "humaneval-small.jsonl", "HumanEval/4")
	body := "def mean_absolute_deviation(numbers: List[float]) -> float:\n    m = sum(numbers) / len(numbers)\n    return sum(abs(x - m) for x in numbers) / len(numbers)\n"
	indent := func(s, by string) string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i := range lines {
			lines[i] = by + lines[i]
		}
		return strings.Join(lines, "\n") + "\n"
	}
	for name, output := range map[string]string{
		"indented block":           "Here is an implementation:\n\n" + indent("from typing import List\n\n"+body, "    ") + "\nIt averages the absolute deviations.",
		"bare def after prose":     "Sure! The mean absolute deviation is the mean distance to the mean:\n" + body + "\nThis runs in O(n).",
		"bare import and def":      "Solution:\nfrom typing import List\n" + body,
		"wrong bare def fails":     "Here:\ndef mean_absolute_deviation(numbers):\n    return 0.0\nDone.",
		"prose only is not code":   "I would compute the mean and then the deviations.",
		"indented wrong one fails": "Try this:\n\n" + indent("def mean_absolute_deviation(numbers):\n    return 1.0", "    "),
	} {
		t.Run(name, func(t *testing.T) {
			got := g.Grade(context.Background(), c, output)
			if got.Err != nil {
				t.Fatalf("grader error: %v", got.Err)
			}
			want := !strings.Contains(name, "fails") && !strings.Contains(name, "not code")
			if got.Passed != want {
				t.Errorf("passed=%v, want %v (%s)", got.Passed, want, got.Explanation)
			}
		})
	}
}
