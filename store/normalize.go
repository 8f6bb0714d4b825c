package store

import (
	"regexp"
	"strings"
)

var (
	answerEdges = regexp.MustCompile(`^\s+|[\s.]+$`)
	answerSpace = regexp.MustCompile(`\s+`)
)

// NormalizeAnswer is the form in which two final answers are compared for
// agreement: lower case, no leading white space, no trailing white space or
// full stops, inner runs of white space as one space. Overview computes the same
// in SQL (the regular expressions are RE2 in both).
func NormalizeAnswer(s string) string {
	return answerSpace.ReplaceAllString(answerEdges.ReplaceAllString(strings.ToLower(s), ""), " ")
}
