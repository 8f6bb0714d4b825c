package store

import (
	"regexp"
	"strings"
)

var (
	// boxedAnswer is the last \boxed{...} of a maths answer (no nested braces).
	boxedAnswer = regexp.MustCompile(`\\boxed\{([^{}]*)\}`)
	// statedAnswer is "answer: X", "answer is X" or "answer = X" (lower-cased text).
	statedAnswer = regexp.MustCompile(`answer(?: is)?\s*[:=]?\s*[($]*([a-z0-9.,/\-]+)`)
	answerMarks  = regexp.MustCompile(`[,$]`)
	answerEdges  = regexp.MustCompile(`^\s+|[\s.]+$`)
	answerSpace  = regexp.MustCompile(`\s+`)
)

// NormalizeAnswer is the form in which two final answers are compared for
// agreement. On the lower-cased text it takes the final answer where one is
// marked — the last \boxed{...} (the MATH/GSM8K convention), else the last
// "answer: X" / "answer is X" — and otherwise the whole text; then it drops commas
// and dollar signs, leading white space, trailing white space and full stops, and
// folds inner runs of white space to one space. So "The answer is $1,000." and
// "…so \boxed{1000}" agree. Overview computes the same in SQL (normalizeSQL; the
// regular expressions are RE2 in both, and a test checks they agree).
func NormalizeAnswer(s string) string {
	s = strings.ToLower(s)
	if m := boxedAnswer.FindAllStringSubmatch(s, -1); len(m) > 0 {
		s = m[len(m)-1][1]
	} else if m := statedAnswer.FindAllStringSubmatch(s, -1); len(m) > 0 {
		s = m[len(m)-1][1]
	}
	s = answerMarks.ReplaceAllString(s, "")
	return answerSpace.ReplaceAllString(answerEdges.ReplaceAllString(s, ""), " ")
}
