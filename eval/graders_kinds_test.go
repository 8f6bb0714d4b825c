package eval

import (
	"context"
	"testing"
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
