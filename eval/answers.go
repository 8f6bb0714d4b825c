package eval

import (
	"math/big"
	"regexp"
	"strings"
)

// This file holds the answer-span rules the numeric and math graders share:
// GSM8K's "#### N" answer line, expression chains that end in the answer
// ("m+n = 7+109 = 116") and LaTeX mixed numbers ("2\frac{1}{2}").

// hashLineRe matches GSM8K's answer line, "#### 18" (the format of the
// dataset's reference solutions, which models trained on it copy).
var hashLineRe = regexp.MustCompile(`(?m)^[ \t]*####[ \t]*(\S.*)$`)

// hashAnswer returns the text of the last "#### …" line of s. Notes after it
// ("Note: I assumed 3 eggs") do not move the answer.
func hashAnswer(s string) (string, bool) {
	ms := hashLineRe.FindAllStringSubmatch(s, -1)
	if len(ms) == 0 {
		return "", false
	}
	return strings.TrimSpace(ms[len(ms)-1][1]), true
}

// leadingNumberRe matches a span that opens with a lone number (after "$" and
// spaces), capturing what follows it.
var leadingNumberRe = regexp.MustCompile(`(?s)^[\s$]*(` + numberRe.String() + `)(.*)$`)

// chainValue reads the value an expression chain ends in: in "m+n = 7+109 =
// 116." it is 116, in "x = 7+109 = 116, and y = 3" also 116 (the chain stops
// at the first segment holding prose). The span must open with an expression
// (an operator or a variable, not a lone number: "18 = 9 × 2" is the answer 18
// and its working), every segment before the value must be free of prose
// words, and the value must stand alone (not "9 * 2"). "<=", ">=", "!=" and
// "==" are not chains. ok is false when span is not such a chain.
func chainValue(span string) (number, bool) {
	segs := strings.Split(span, "=")
	if len(segs) < 2 || !isExpression(segs[0]) {
		return number{}, false
	}
	for _, seg := range segs[:len(segs)-1] {
		if t := strings.TrimSpace(seg); t == "" || strings.ContainsAny(t[len(t)-1:], "<>!:") {
			return number{}, false
		}
	}
	for i := 1; i < len(segs); i++ {
		if i < len(segs)-1 && !proseWordRe.MatchString(segs[i]) {
			continue // the chain goes on
		}
		return loneNumber(segs[i])
	}
	return number{}, false
}

// isExpression reports whether s is a formula without prose that is more than
// a lone number: "m+n", "7+109", "x", "\frac{a}{b}".
func isExpression(s string) bool {
	t := strings.TrimSpace(strings.Trim(strings.TrimSpace(s), "$"))
	if t == "" || proseWordRe.MatchString(t) {
		return false
	}
	if m := leadingNumberRe.FindStringSubmatch(cleanNumberText(t)); m != nil && strings.TrimSpace(m[2]) == "" {
		return false
	}
	return true
}

// loneNumber returns the number a segment opens with when nothing but words
// or punctuation follows it ("116.", "116 apples", "116$"), not another term
// ("9 * 2", "7+109").
func loneNumber(seg string) (number, bool) {
	m := leadingNumberRe.FindStringSubmatch(cleanNumberText(seg))
	if m == nil {
		return number{}, false
	}
	rest := strings.TrimSpace(m[2])
	if rest != "" && (strings.ContainsAny(rest[:1], "+-*/×·^0123456789") || strings.HasPrefix(rest, `\cdot`) || strings.HasPrefix(rest, `\times`)) {
		return number{}, false
	}
	return parseNumber(m[1])
}

// spanNumber reads the answer of an answer span (a \boxed{} content, the text
// after an answer cue or "####"): the value of an expression chain it opens
// with (chainValue), else its first number.
func spanNumber(span string) (number, bool) {
	if n, ok := chainValue(span); ok {
		return n, true
	}
	return firstNumber(span)
}

var (
	uintRe = regexp.MustCompile(`^\d+$`)
	// mixedWholeRe matches a whole number written just before a fraction,
	// with LaTeX spacing between ("2", "2 ", "3\,", "1~"), at the end of the
	// text: not part of a decimal, a power or an identifier.
	mixedWholeRe = regexp.MustCompile(`(?:^|[^0-9A-Za-z.^_}\\])(\d+)(?:\s|\\[,;: !]|~)*$`)
)

// mixedNumber reads "W num/den" as the improper fraction (W·den + num)/den and
// returns its numerator: a LaTeX mixed number such as 2\frac{1}{2} (= 5/2).
// It applies only to a proper fraction of unsigned integers after a whole
// number; ok is false otherwise. before is the text before the fraction;
// start is where the whole number begins in it.
func mixedNumber(before, num, den string) (numerator string, start int, ok bool) {
	if !uintRe.MatchString(num) || !uintRe.MatchString(den) {
		return "", 0, false
	}
	loc := mixedWholeRe.FindStringSubmatchIndex(before)
	if loc == nil {
		return "", 0, false
	}
	w, _ := new(big.Int).SetString(before[loc[2]:loc[3]], 10)
	n, _ := new(big.Int).SetString(num, 10)
	d, _ := new(big.Int).SetString(den, 10)
	if d.Sign() == 0 || n.Cmp(d) >= 0 {
		return "", 0, false
	}
	return new(big.Int).Add(new(big.Int).Mul(w, d), n).String(), loc[2], true
}
