package eval

import (
	"context"
	"regexp"
	"strings"

	"golang.org/x/text/width"
)

// MathGrader compares LaTeX answers (MATH-500, AIME). The answer span is the last
// \boxed{…}; else the last GSM8K answer line "#### …"; else the text after the
// last "final answer is"/"answer:"; else a one-line output itself; else the last
// $…$ in the output; else its last number. When the reference has no "=", an
// answer "x = …" is read after the variable and an expression chain
// ("m+n = 7+109 = 116") for the value it ends in.
// Both sides are normalised (see NormalizeMath); they match when the strings are
// equal, when both parse as numbers (integers, decimals, a/b) equal within
// RelTolerance, when both are tuples or intervals with the same brackets whose
// elements match pairwise, or when the reference is a number and the answer is
// that number followed only by a unit word.
type MathGrader struct{}

// Name returns "math".
func (MathGrader) Name() string { return GraderMath }

// Grade compares the normalised extracted answer with the normalised reference.
func (MathGrader) Grade(_ context.Context, c Case, output string) Grade {
	want := NormalizeMath(c.Reference)
	if want == "" {
		return gradeErr("eval: math grader: case %s: empty reference", c.ID)
	}
	span, ok := extractMathAnswer(output)
	if !ok {
		return fail("no answer found in output; reference %q", want)
	}
	got := NormalizeMath(span)
	if !strings.Contains(want, "=") {
		got = chainEnd(stripVariablePrefix(got))
	}
	g := verdict(mathEqual(got, want), "extracted %q, reference %q", clip(got, 200), want)
	g.Extracted = got
	return g
}

var inlineMathRe = regexp.MustCompile(`\$([^$]+)\$|\\\((.+?)\\\)`)

func extractMathAnswer(output string) (string, bool) {
	if box, ok := lastBoxed(output); ok {
		return box, true
	}
	if line, ok := hashAnswer(output); ok {
		return cutProse(line), true
	}
	if span, ok := answerPhrase(output); ok {
		return cutProse(span), true
	}
	trimmed := strings.TrimSpace(output)
	if trimmed == "" {
		return "", false
	}
	if !strings.Contains(trimmed, "\n") && len(trimmed) <= 120 && !hasProse(trimmed) {
		return trimmed, true
	}
	if m := inlineMathRe.FindAllStringSubmatch(trimmed, -1); len(m) > 0 {
		last := m[len(m)-1]
		return last[1] + last[2], true
	}
	if nums := findNumbers(trimmed); len(nums) > 0 {
		return nums[len(nums)-1].String(), true
	}
	if !strings.Contains(trimmed, "\n") && len(trimmed) <= 120 {
		return trimmed, true // a short answer in words, e.g. \text{even function}
	}
	return "", false
}

// proseWordRe matches a word of prose: two or more letters not part of a LaTeX
// command (\frac) nor right after a brace (a braced argument such as ^{th}).
var proseWordRe = regexp.MustCompile(`(?:^|[^\\A-Za-z{])([A-Za-z]{2,})`)

// hasProse reports whether s holds two or more words of prose outside $…$,
// i.e. is a sentence rather than an answer such as "145 degrees" or "x = 2".
func hasProse(s string) bool {
	s = inlineMathRe.ReplaceAllString(s, " ")
	for _, cmd := range textCmds {
		s = unwrapCommand(s, cmd)
	}
	return len(proseWordRe.FindAllString(s, 3)) >= 2
}

// cutProse shortens an answer span to its answer: "72 apples, in total." gives
// "72 apples"; a span that is all prose, or has a single unit word after the
// answer, is kept.
func cutProse(span string) string {
	if !hasProse(span) {
		return span
	}
	if m := inlineMathRe.FindStringSubmatch(span); m != nil {
		return m[1] + m[2]
	}
	// Cut at the first punctuation that ends a clause after the answer.
	for _, sep := range []string{", ", "; ", ". ", " since ", " because ", " so ", " which "} {
		if i := strings.Index(span, sep); i > 0 {
			head := strings.TrimSpace(span[:i])
			if head != "" && !hasProse(head) {
				return head
			}
		}
	}
	if nums := findNumbers(span); len(nums) > 0 {
		return nums[0].String()
	}
	return span
}

var (
	mathDrop = strings.NewReplacer(
		`\left`, "", `\right`, "", `\displaystyle`, "",
		`\!`, "", `\,`, "", `\;`, "", `\:`, "", `\qquad`, "", `\quad`, "",
		`^{\circ}`, "", `^\circ`, "", `\circ`, "", "°", "", `\%`, "", "%", "",
		`\$`, "", "$", "", `\dfrac`, `\frac`, `\tfrac`, `\frac`,
		`\leq`, `\le`, `\geq`, `\ge`, `\neq`, `\ne`, "{,}", ",",
	)
	textCmds      = []string{`\text`, `\textbf`, `\textit`, `\textnormal`, `\mathrm`, `\mathbf`, `\mbox`, `\operatorname`}
	thousandsRe   = regexp.MustCompile(`^-?\d{1,3}([,'\x{2019}]\d{3})+(\.\d+)?$`)
	singleParenRe = regexp.MustCompile(`^\(([A-Za-z])\)$`)
	scriptBraceRe = regexp.MustCompile(`([\^_])\{([A-Za-z0-9])\}`)
	sqrtShortRe   = regexp.MustCompile(`\\sqrt([0-9A-Za-z])`)
	varPrefixRe   = regexp.MustCompile(`^[A-Za-z]=`)
	unitSuffixRe  = regexp.MustCompile(`^(-?[0-9.]+)([A-Za-z]+)$`)
)

// NormalizeMath puts a LaTeX answer in a canonical text form: strips enclosing
// $…$, \(…\) and \[…\]; drops \left/\right, spacing commands, degrees (^\circ),
// percent and dollar signs; unwraps \text{…} and similar; turns \dfrac/\tfrac and
// \frac{a}{b} (also \frac12) into a/b (parenthesised when a part is not a single
// token), and a mixed number 2\frac{1}{2} into 5/2; writes ^{x} as ^x and \sqrt2 as \sqrt{2}; removes whitespace and a
// trailing "."; removes thousands commas from a lone number; and "(B)" becomes "B".
func NormalizeMath(s string) string {
	s = strings.TrimSpace(width.Fold.String(normalizeDashes(s)))
	for _, p := range [][2]string{{"$", "$"}, {`\(`, `\)`}, {`\[`, `\]`}} {
		if len(s) >= len(p[0])+len(p[1]) && strings.HasPrefix(s, p[0]) && strings.HasSuffix(s, p[1]) {
			s = strings.TrimSpace(s[len(p[0]) : len(s)-len(p[1])])
		}
	}
	s = mathDrop.Replace(s)
	for _, cmd := range textCmds {
		s = unwrapCommand(s, cmd)
	}
	s = strings.Join(strings.Fields(s), "")
	s = sqrtShortRe.ReplaceAllString(s, `\sqrt{$1}`)
	s = replaceFracs(s)
	s = scriptBraceRe.ReplaceAllString(s, "$1$2")
	s = strings.TrimRight(s, ".")
	if thousandsRe.MatchString(s) {
		s = strings.NewReplacer(",", "", "'", "", "\u2019", "").Replace(s)
	}
	if m := singleParenRe.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	return s
}

// unwrapCommand replaces every cmd{X} by X.
func unwrapCommand(s, cmd string) string {
	for {
		i := strings.Index(s, cmd+"{")
		if i < 0 {
			return s
		}
		inner, rest, ok := braced(s[i+len(cmd):])
		if !ok {
			return s
		}
		s = s[:i] + inner + rest
	}
}

// replaceFracs rewrites \frac{a}{b} and \fracab as a/b, innermost first.
func replaceFracs(s string) string {
	for {
		i := strings.LastIndex(s, `\frac`)
		if i < 0 {
			return s
		}
		rest := s[i+len(`\frac`):]
		num, after, ok := fracArg(rest)
		if !ok {
			return s
		}
		den, after, ok := fracArg(after)
		if !ok {
			return s
		}
		if whole, at, ok := mixedNumber(s[:i], num, den); ok {
			s = s[:at] + whole + "/" + den + after // 2\frac{1}{2} is 5/2
			continue
		}
		s = s[:i] + wrapToken(num) + "/" + wrapToken(den) + after
	}
}

// fracArg reads one argument of \frac: a braced group or a single character.
func fracArg(s string) (arg, rest string, ok bool) {
	if s == "" {
		return "", s, false
	}
	if s[0] == '{' {
		return braced(s)
	}
	return s[:1], s[1:], true
}

// wrapToken parenthesises x unless it is a plain number, a letter run, or one
// LaTeX command such as \pi.
func wrapToken(x string) string {
	if x == "" {
		return "()"
	}
	simple := true
	for i := 0; i < len(x); i++ {
		b := x[i]
		if !(isAlnum(b) || b == '.' || (b == '\\' && i == 0)) {
			simple = false
			break
		}
	}
	if simple {
		return x
	}
	return "(" + x + ")"
}

func stripVariablePrefix(s string) string {
	return varPrefixRe.ReplaceAllString(s, "")
}

// chainEnd returns what a normalised expression chain ends in: "m+n=7+109=116"
// gives "116". Comparisons ("x<=3", "a!=b", "a==b") and answers without "="
// are returned as they are.
func chainEnd(s string) string {
	i := strings.LastIndex(s, "=")
	if i <= 0 || i == len(s)-1 || strings.ContainsAny(s[i-1:i], "<>!:=") {
		return s
	}
	return s[i+1:]
}

// mathNumber parses a normalised answer as a number: an integer, a decimal or
// a/b of those (optionally parenthesised, with a leading minus).
func mathNumber(s string) (number, bool) { return parseNumber(s) }

// mathEqual compares two normalised answers.
func mathEqual(got, want string) bool {
	if got == want {
		return true
	}
	if a, ok := mathNumber(got); ok {
		if b, ok := mathNumber(want); ok {
			return numbersEqual(a, b)
		}
	}
	if ge, ok := splitTuple(got); ok {
		if we, ok := splitTuple(want); ok && len(ge) == len(we) && got[0] == want[0] && got[len(got)-1] == want[len(want)-1] {
			for i := range ge {
				if !mathEqual(ge[i], we[i]) {
					return false
				}
			}
			return true
		}
	}
	if b, ok := mathNumber(want); ok {
		if m := unitSuffixRe.FindStringSubmatch(got); m != nil {
			if a, ok := mathNumber(m[1]); ok {
				return numbersEqual(a, b)
			}
		}
	}
	return false
}

// splitTuple splits "(a,b)", "[a,b)" etc. at top-level commas.
func splitTuple(s string) ([]string, bool) {
	if len(s) < 2 || !strings.ContainsRune("([", rune(s[0])) || !strings.ContainsRune(")]", rune(s[len(s)-1])) {
		return nil, false
	}
	inner := s[1 : len(s)-1]
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(inner); i++ {
		switch inner[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, inner[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, inner[start:])
	if len(parts) < 2 {
		return nil, false
	}
	return parts, true
}
