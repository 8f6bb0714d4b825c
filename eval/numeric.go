package eval

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// RelTolerance is the relative tolerance of numeric comparisons: a and b are equal
// when |a-b| <= RelTolerance·max(|a|,|b|).
const RelTolerance = 1e-6

// NumericGrader extracts the final number from an output and compares it with the
// reference number. The answer span is, in order: the last \boxed{…} (or \fbox{…});
// else the text after the last "final answer is" / "answer:" / "answer is"; else
// the whole output, of which the last number is taken (within a span, the first
// number). "$", "\$", thousands commas, "%" and trailing units are ignored.
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
		return fail("no number found in output; reference %s", fmtNum(want))
	}
	return verdict(closeEnough(got, want), "extracted %s (%s), reference %s", fmtNum(got), from, fmtNum(want))
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func closeEnough(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= RelTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// extractNumber finds the final answer in output and says where it came from.
func extractNumber(output string) (float64, string, bool) {
	if box, ok := lastBoxed(output); ok {
		if f, ok := firstNumber(box); ok {
			return f, `from \boxed{}`, true
		}
	}
	if span, ok := answerPhrase(output); ok {
		if f, ok := firstNumber(span); ok {
			return f, `after "answer"`, true
		}
	}
	nums := findNumbers(output)
	if len(nums) == 0 {
		return 0, "", false
	}
	return nums[len(nums)-1], "last number", true
}

// answerPhraseRe matches "final answer is X", "answer: X", "answer is X" and
// captures the rest of the line.
var answerPhraseRe = regexp.MustCompile(`(?i)\b(?:final\s+answer|answer)\s*(?:is|:|=)\s*:?([^\n]*)`)

// answerPhrase returns the text after the last answer phrase.
func answerPhrase(s string) (string, bool) {
	m := answerPhraseRe.FindAllStringSubmatch(s, -1)
	for i := len(m) - 1; i >= 0; i-- {
		if span := strings.TrimSpace(m[i][1]); span != "" {
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

// numberRe matches a decimal number with optional sign and thousands commas.
var numberRe = regexp.MustCompile(`-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+`)

// cleanNumberText removes currency signs and LaTeX spacing that split numbers.
var cleanNumberText = strings.NewReplacer(`\$`, "", "$", "", "{,}", ",", `\!`, "", `\,`, "", "−", "-")

// findNumbers returns every number in s in order. A minus sign glued to a
// preceding letter or digit (as in "3-4" or "x-1") is not a sign.
func findNumbers(s string) []float64 {
	s = cleanNumberText.Replace(s)
	var out []float64
	for _, loc := range numberRe.FindAllStringIndex(s, -1) {
		tok := s[loc[0]:loc[1]]
		if tok[0] == '-' && loc[0] > 0 && isAlnum(s[loc[0]-1]) {
			tok = tok[1:]
		}
		if loc[0] > 0 && isLetter(s[loc[0]-1]) && loc[1] < len(s) && isLetter(s[loc[1]]) {
			continue // part of an identifier such as "x2y"
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(tok, ",", ""), 64)
		if err == nil {
			out = append(out, f)
		}
	}
	return out
}

func firstNumber(s string) (float64, bool) {
	n := findNumbers(s)
	if len(n) == 0 {
		return 0, false
	}
	return n[0], true
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }
func isAlnum(b byte) bool  { return isLetter(b) || (b >= '0' && b <= '9') }
