package eval

import (
	"context"
	"regexp"
	"strings"
)

// ChoiceGrader extracts the chosen letter from an output and compares it with the
// reference letter. Forms recognised, in order of precedence (the last occurrence
// of the first form found wins): "Answer: B" / "answer is (B)" / "Answer: **B**";
// "**B**" or "**(B)**"; "(B)"; a lone letter ending the output ("… B", "B."); an
// output that starts with "B." / "B)" / "B:" or is just "B". Only letters of the
// case's choices count (A–E when the case has none).
type ChoiceGrader struct{}

// Name returns "choice".
func (ChoiceGrader) Name() string { return GraderChoice }

var (
	choiceAnswerRe = regexp.MustCompile(`(?i:answer)(?:\s+(?i:is))?\s*[:：]?\s*[\*\(\[]*\s*([A-E])\b`)
	choiceBoldRe   = regexp.MustCompile(`\*\*\s*\(?([A-E])\)?[.:)]?\s*\*\*`)
	choiceParenRe  = regexp.MustCompile(`\(([A-E])\)`)
	choiceEndRe    = regexp.MustCompile(`(?:^|[\s:*(\[])([A-E])[.)\]*]*$`)
	choiceStartRe  = regexp.MustCompile(`^\(?([A-E])(?:[.):]|$)`)
	choiceBoxedRe  = regexp.MustCompile(`^\(?([A-E])\)?$`)
)

// Grade compares the extracted letter with the reference; a reference that is
// not a letter of the case's choices is a grader error.
func (ChoiceGrader) Grade(_ context.Context, c Case, output string) Grade {
	n := len(c.Choices)
	if n == 0 {
		n = maxChoices
	}
	maxLetter := byte('A' + n - 1)
	ref := strings.ToUpper(strings.TrimSpace(c.Reference))
	if len(ref) != 1 || ref[0] < 'A' || ref[0] > maxLetter {
		return gradeErr("eval: choice grader: case %s: reference %q is not a letter A–%c", c.ID, c.Reference, maxLetter)
	}
	letter, how := extractChoice(output, maxLetter)
	if letter == 0 {
		return fail("no choice letter A–%c found in output; reference %s", maxLetter, ref)
	}
	return verdict(letter == ref[0], "extracted %c (%s), reference %s", letter, how, ref)
}

// extractChoice returns the chosen letter (0 when none) and the form it came in.
func extractChoice(output string, maxLetter byte) (byte, string) {
	s := strings.TrimSpace(output)
	if box, ok := lastBoxed(s); ok {
		if m := choiceBoxedRe.FindStringSubmatch(NormalizeMath(box)); m != nil && m[1][0] <= maxLetter {
			return m[1][0], `\boxed{}`
		}
	}
	forms := []struct {
		re  *regexp.Regexp
		how string
	}{
		{choiceAnswerRe, `"answer"`},
		{choiceBoldRe, "bold"},
		{choiceParenRe, "parenthesised"},
	}
	for _, f := range forms {
		ms := f.re.FindAllStringSubmatch(s, -1)
		for i := len(ms) - 1; i >= 0; i-- {
			if l := ms[i][1][0]; l <= maxLetter {
				return l, f.how
			}
		}
	}
	if m := choiceEndRe.FindStringSubmatch(s); m != nil && m[1][0] <= maxLetter {
		return m[1][0], "letter at the end"
	}
	if m := choiceStartRe.FindStringSubmatch(s); m != nil && m[1][0] <= maxLetter {
		return m[1][0], "letter at the start"
	}
	return 0, ""
}
