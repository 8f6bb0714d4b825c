package eval

import (
	"context"
	"regexp"
	"strings"

	"golang.org/x/text/width"
)

// NumericGrader extracts the final number from an output and compares it with the
// reference number. The answer span is, in order: the last \boxed{…} (or \fbox{…});
// else the last GSM8K answer line "#### N" (notes after it are not read); else
// the text after the last answer cue ("final answer is", "answer:", "answer
// is", and the cues of other languages in answerCueRe: 答案是, Antwort:, Réponse :,
// Respuesta:, Ответ:, 정답 …); else the whole output, of which the last number is
// taken. Within a span the first number is read, unless the span opens with an
// expression chain ("m+n = 7+109 = 116"): then the value it ends in (chainValue). Before reading numbers the text is
// cleaned (see cleanNumberText): every dash (U+2212 minus, en and em dashes,
// fullwidth forms) reads as "-", fullwidth digits as ASCII, thousands separators
// (commas, \, \; \: \! {,}, thin and no-break spaces, apostrophes) are dropped
// between groups of three digits, \frac{a}{b} (\dfrac, \tfrac, \frac34) of
// numbers becomes a/b, and "$", "\$", "%" and trailing words are ignored. Numbers
// compare with numbersEqual: exactly, so 1000001 never equals 1000000.
type NumericGrader struct{}

// Name returns "numeric".
func (NumericGrader) Name() string { return GraderNumeric }

// Grade compares the extracted number with the reference; a reference that is not
// a number is a grader error.
func (NumericGrader) Grade(_ context.Context, c Case, output string) Grade {
	want, ok := firstNumber(c.Reference)
	if !ok {
		return gradeErr("eval: numeric grader: case %s: reference %q is not a number", c.ID, c.Reference)
	}
	got, from, ok := extractNumber(output)
	if !ok {
		return fail("no number found in output; reference %s", want)
	}
	g := verdict(numbersEqual(got, want), "extracted %s (%s), reference %s", got, from, want)
	g.Extracted = got.String()
	return g
}

// extractNumber finds the final answer in output and says where it came from.
func extractNumber(output string) (number, string, bool) {
	if box, ok := lastBoxed(output); ok {
		if f, ok := spanNumber(box); ok {
			return f, `from \boxed{}`, true
		}
	}
	if line, ok := hashAnswer(output); ok {
		if f, ok := spanNumber(line); ok {
			return f, `after "####"`, true
		}
	}
	if span, ok := answerPhrase(output); ok {
		if f, ok := spanNumber(span); ok {
			return f, `after "answer"`, true
		}
	}
	nums := findNumbers(output)
	if len(nums) == 0 {
		return number{}, "", false
	}
	return nums[len(nums)-1], "last number", true
}

// answerCueRe matches an answer cue: "final answer is X", "answer: X", "answer is
// X", "answer = X" and the same cue in other languages (Chinese 答案是/答案为/答案：,
// German Antwort:, French Réponse :, Spanish Respuesta:, Portuguese Resposta:,
// Italian Risposta:, Russian Ответ:, Korean 정답/정답은, Japanese 答え:/解答:).
// Markdown bold around the cue ("**Answer:**") is allowed.
var answerCueRe = regexp.MustCompile(`(?i)(?:\b(?:final\s+answer|answer)\s*\**\s*(?:is\b|:|=)|答案\s*(?:是|为|為|:|：)|(?:答え|解答)\s*(?:は|:|：)|\b(?:antwort|r[ée]ponse(?:\s+finale)?|respuesta(?:\s+final)?|resposta|risposta)\s*\**\s*[:：]|ответ\s*\**\s*[:：]|정답\s*(?:은|는|:|：)?)\s*\**\s*[:：]?`)

// answerPhrase returns the text after the last answer cue, to the end of its line.
func answerPhrase(s string) (string, bool) {
	locs := answerCueRe.FindAllStringIndex(s, -1)
	for i := len(locs) - 1; i >= 0; i-- {
		rest := s[locs[i][1]:]
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		if span := strings.TrimSpace(rest); span != "" {
			return span, true
		}
	}
	return "", false
}

// lastBoxed returns the content of the last \boxed{…} or \fbox{…} in s, with
// nested braces matched. "\boxed 5" (no braces) yields "5".
func lastBoxed(s string) (string, bool) {
	idx, kw := -1, ""
	for _, k := range []string{`\boxed`, `\fbox`} {
		if i := strings.LastIndex(s, k); i > idx {
			idx, kw = i, k
		}
	}
	if idx < 0 {
		return "", false
	}
	rest := s[idx+len(kw):]
	if strings.HasPrefix(rest, " ") {
		f := strings.Fields(rest)
		if len(f) == 0 {
			return "", false
		}
		return strings.TrimRight(f[0], "$."), true
	}
	if !strings.HasPrefix(rest, "{") {
		return "", false
	}
	inner, _, ok := braced(rest)
	return inner, ok
}

// braced takes s starting with "{" and returns the content up to the matching
// "}" and the remainder after it.
func braced(s string) (inner, rest string, ok bool) {
	if !strings.HasPrefix(s, "{") {
		return "", s, false
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // skip escaped character, e.g. \{ or \}
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[1:i], s[i+1:], true
			}
		}
	}
	return "", s, false
}

// numberRe matches a decimal number with an optional sign, or a fraction a/b of
// integers, in text cleaned by cleanNumberText.
var numberRe = regexp.MustCompile(`-?(?:\d+(?:\.\d+)?|\.\d+)(?:/\d+)?`)

// cleanNumberText prepares text for numberRe: dashes become "-", fullwidth forms
// ASCII, thousands separators between digit groups go, \frac of numbers becomes
// a/b, and currency signs and leftover LaTeX thin spaces are removed.
func cleanNumberText(s string) string {
	s = width.Fold.String(normalizeDashes(s))
	s = joinDigitGroups(s)
	s = numericFracs(s)
	return strings.NewReplacer(`\$`, "", "$", "", `\!`, "", `\,`, "").Replace(s)
}

var fracNumRe = regexp.MustCompile(`^\s*[-+]?\s*(?:\d+(?:\.\d+)?|\.\d+)\s*$`)

// numericFracs rewrites \frac{a}{b}, \dfrac, \tfrac and \frac34 whose parts are
// numbers as "a/b" (sign in front: \frac{-3}{4} and -\frac{3}{4} give -3/4,
// -\frac{-3}{4} gives 3/4). A proper fraction right after a whole number is a
// mixed number: 2\frac{1}{2}, 2 \tfrac{1}{2} and 3\,\frac{3}{4} give 5/2 and
// 15/4 (mixedNumber; a minus before the whole number applies to all of it).
// Other fractions are left as they are.
func numericFracs(s string) string {
	s = strings.NewReplacer(`\dfrac`, `\frac`, `\tfrac`, `\frac`).Replace(s)
	from := len(s)
	for {
		i := strings.LastIndex(s[:from], `\frac`)
		if i < 0 {
			return s
		}
		from = i
		num, after, ok1 := fracArg(s[i+len(`\frac`):])
		den, after, ok2 := fracArg(after)
		if !ok1 || !ok2 || !fracNumRe.MatchString(num) || !fracNumRe.MatchString(den) {
			continue
		}
		neg := false
		strip := func(x string) string {
			x = strings.ReplaceAll(x, " ", "")
			if strings.HasPrefix(x, "-") {
				neg = !neg
				return x[1:]
			}
			return strings.TrimPrefix(x, "+")
		}
		if whole, at, ok := mixedNumber(s[:i], strings.ReplaceAll(num, " ", ""), strings.ReplaceAll(den, " ", "")); ok {
			// 2\frac{1}{2}, 2 \tfrac{1}{2}, 3\,\frac{3}{4}: a mixed number.
			s = s[:at] + whole + "/" + strings.ReplaceAll(den, " ", "") + after
			from = min(at, len(s))
			continue
		}
		num, den = strip(num), strip(den)
		start := i
		if j := strings.TrimRight(s[:i], " "); strings.HasSuffix(j, "-") {
			neg, start = !neg, len(j)-1
		}
		sign := ""
		if neg {
			sign = "-"
		} else if start < i {
			sign = " " // a cancelled minus must not leave the digits glued to a word
		}
		s = s[:start] + sign + num + "/" + den + after
		from = min(start, len(s))
	}
}

// findNumbers returns every number in s in order. A minus sign glued to a
// preceding letter or digit (as in "3-4" or "x-1") is not a sign; a number
// inside an identifier ("x2y") is skipped; a/b followed by another "/" (a date)
// is read as separate numbers.
func findNumbers(s string) []number {
	s = cleanNumberText(s)
	var out []number
	for _, loc := range numberRe.FindAllStringIndex(s, -1) {
		tok := s[loc[0]:loc[1]]
		if tok[0] == '-' && loc[0] > 0 && isAlnum(s[loc[0]-1]) {
			tok = tok[1:]
		}
		if loc[0] > 0 && isLetter(s[loc[0]-1]) && loc[1] < len(s) && isLetter(s[loc[1]]) {
			continue // part of an identifier such as "x2y"
		}
		if strings.Contains(tok, "/") && loc[1] < len(s) && s[loc[1]] == '/' {
			for _, part := range strings.Split(tok, "/") {
				if n, ok := parseNumber(part); ok {
					out = append(out, n)
				}
			}
			continue
		}
		if n, ok := parseNumber(tok); ok {
			out = append(out, n)
		}
	}
	return out
}

func firstNumber(s string) (number, bool) {
	n := findNumbers(s)
	if len(n) == 0 {
		return number{}, false
	}
	return n[0], true
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }
func isAlnum(b byte) bool  { return isLetter(b) || (b >= '0' && b <= '9') }
