package eval

import (
	"context"
	"regexp"
	"strings"

	"golang.org/x/text/width"
)

// ChoiceGrader extracts the chosen letter from an output and compares it with the
// reference letter. The output is first normalised: fullwidth forms become ASCII
// ("（Ｂ）" → "(B)"), "$" signs go and \text{…}, \textbf{…}, \mathrm{…}, \mathbf{…}
// are unwrapped. Forms recognised, in order of precedence (the last occurrence
// of the first form found wins): \boxed{B} or \fbox{B}; an answer cue followed by
// the letter ("Answer: B", "answer is (B)", "**Answer:** **B**", "ANSWER: $B$",
// and the cues of other languages: 答案是B, 答案：B, Antwort: B, Réponse : B,
// Respuesta: B, Ответ: B, 정답: B …); "**B**" or "**(B)**"; "(B)"; a lone letter
// ending the output ("… B", "B."); an output that starts with "B." / "B)" / "B:"
// or is just "B". Only letters of the case's choices count (A–E when the case has
// none).
type ChoiceGrader struct{}

// Name returns "choice".
func (ChoiceGrader) Name() string { return GraderChoice }

var (
	choiceAfterCueRe = regexp.MustCompile(`^[\s*(\[{:]*([A-J])(?:$|[^A-Za-z0-9])`)
	choiceBoldRe     = regexp.MustCompile(`\*\*\s*\(?([A-J])\)?[.:)]?\s*\*\*`)
	choiceParenRe    = regexp.MustCompile(`\(([A-J])\)`)
	choiceEndRe      = regexp.MustCompile(`(?:^|[\s:*(\[])([A-J])[.)\]*]*$`)
	choiceStartRe    = regexp.MustCompile(`^\(?([A-J])(?:[.):]|$)`)
	choiceBoxedRe    = regexp.MustCompile(`^\(?([A-J])\)?$`)
	choiceTextCmds   = []string{`\text`, `\textbf`, `\textit`, `\mathrm`, `\mathbf`, `\mbox`}
)

// normalizeChoiceText folds fullwidth forms to ASCII, drops "$" and unwraps
// \text-like commands, so wrappers do not hide the letter.
func normalizeChoiceText(s string) string {
	s = width.Fold.String(s)
	s = strings.NewReplacer(`\$`, "", "$", "", `\(`, "", `\)`, "").Replace(s)
	for _, cmd := range choiceTextCmds {
		s = unwrapCommand(s, cmd)
	}
	return strings.TrimSpace(s)
}

// Grade compares the extracted letter with the reference; a reference that is
// not a letter of the case's choices is a grader error.
func (ChoiceGrader) Grade(_ context.Context, c Case, output string) Grade {
	n := len(c.Choices)
	if n == 0 {
		n = maxChoices
	}
	maxLetter := byte('A' + n - 1)
	ref := strings.ToUpper(strings.Trim(strings.TrimSpace(width.Fold.String(c.Reference)), "()"))
	if len(ref) != 1 || ref[0] < 'A' || ref[0] > maxLetter {
		return gradeErr("eval: choice grader: case %s: reference %q is not a letter A–%c", c.ID, c.Reference, maxLetter)
	}
	letter, how := extractChoice(output, maxLetter)
	if letter == 0 {
		return fail("no choice letter A–%c found in output; reference %s", maxLetter, ref)
	}
	g := verdict(letter == ref[0], "extracted %c (%s), reference %s", letter, how, ref)
	g.Extracted = string(letter)
	return g
}

// extractChoice returns the chosen letter (0 when none) and the form it came in.
func extractChoice(output string, maxLetter byte) (byte, string) {
	s := normalizeChoiceText(output)
	if box, ok := lastBoxed(s); ok {
		if m := choiceBoxedRe.FindStringSubmatch(NormalizeMath(box)); m != nil && m[1][0] <= maxLetter {
			return m[1][0], `\boxed{}`
		}
	}
	locs := answerCueRe.FindAllStringIndex(s, -1)
	for i := len(locs) - 1; i >= 0; i-- {
		if m := choiceAfterCueRe.FindStringSubmatch(s[locs[i][1]:]); m != nil && m[1][0] <= maxLetter {
			return m[1][0], `"answer"`
		}
	}
	forms := []struct {
		re  *regexp.Regexp
		how string
	}{
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
