package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval"
)

// Choice is a pairwise judge's verdict on one order: the answer shown first,
// the one shown second, or a tie.
type Choice int

// Choices.
const (
	ChoiceFirst Choice = iota
	ChoiceSecond
	ChoiceTie
)

func (c Choice) String() string { return [...]string{"first", "second", "tie"}[c] }

// ErrNoVerdict: the reply names no winner in any format ParseVerdict reads.
var ErrNoVerdict = errors.New("judge reply has no verdict")

// ErrAmbiguousVerdict: the reply claims more than one verdict (both answers,
// or an answer and a tie) in the same kind of statement.
var ErrAmbiguousVerdict = errors.New("judge reply is ambiguous")

var (
	winnerLineRe = regexp.MustCompile(`(?im)^[ \t>*_#-]*(?:final\s+)?(?:winner|verdict|better\s+(?:answer|response)|preferred(?:\s+(?:answer|response))?)[ \t*_]*[:=\-–][ \t*_]*(.+?)[ \t*_.!]*$`)
	bracketedRe  = regexp.MustCompile(`\[\[\s*([^\[\]\n]{1,24}?)\s*\]\]`)
	jsonVerdict  = []string{"winner", "verdict", "better", "preferred", "choice"}
	tieWords     = []string{"tie", "draw", "equal", "equally good", "both", "neither", "same", "none"}
	nounWords    = []string{"assistant", "answer", "response", "output", "model", "option"}
	tiePhraseRe  = regexp.MustCompile(`(?i)\b(?:both\s+(?:answers|responses|are)\s+(?:are\s+)?equally\s+(?:good|correct|helpful|valid)|(?:they\s+are|are)\s+equally\s+(?:good|correct|helpful)|neither\s+(?:answer|response|one)?\s*is\s+better|it'?s\s+a\s+tie)\b`)
	betterWordRe = `(?:is|was)\s+(?:clearly\s+|slightly\s+|much\s+|significantly\s+)?(?:better|superior|preferred|preferable|the\s+better\s+(?:one|answer|response)|more\s+(?:correct|helpful|accurate|complete))`
)

// token is the word of a label that tells it apart: the last word ("A" of
// "A", "2" of "Response 2").
func token(label string) string {
	f := strings.Fields(label)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// classify reads one claimed verdict value ("A", "Assistant B", "Response 2",
// "tie", MT-Bench's "C" with labels A/B). ok is false for a value that names
// neither label nor a tie.
func classify(v string, labels eval.Labels) (Choice, bool) {
	v = strings.ToLower(strings.Trim(strings.TrimSpace(v), " \t\"'`*_.,;:!()[]{}<>"))
	v = strings.Join(strings.Fields(v), " ")
	if slices.Contains(tieWords, v) || strings.HasPrefix(v, "tie ") || (v == "c" && labels == eval.LabelsAB) {
		return ChoiceTie, true
	}
	for i, l := range []string{labels.First, labels.Second} {
		lab, tok := strings.ToLower(l), strings.ToLower(token(l))
		if v == lab || v == tok {
			return Choice(i), true
		}
		for _, n := range nounWords {
			if v == n+" "+tok {
				return Choice(i), true
			}
		}
	}
	return 0, false
}

// ParseVerdict reads a pairwise judge's verdict from its reply, for the
// labels the prompt used, in the formats judges write:
//   - JSON, in a ```json fence or bare: {"winner": "A"} (also "verdict",
//     "better", "preferred", "choice"; "tie" for a tie);
//   - a verdict line: "WINNER: A", "**Winner:** B", "Final verdict: tie",
//     "Better answer: Response 2";
//   - MT-Bench's "[[A]]", "[[B]]" and "[[C]]" (C = tie, with labels A/B) or
//     "[[tie]]";
//   - the reply being just the label ("B", "Response 2", "Tie");
//   - only when none of those is present, a sentence: "Assistant A is
//     better", "Response 2 is more helpful", "Both answers are equally good".
//
// Values name a label by its word ("A", "Response 2"), its last word ("2")
// or with a noun ("Assistant A", "Answer B"). A reply that claims two
// different verdicts in explicit statements (or, without any, in sentences)
// is ErrAmbiguousVerdict; one with none is ErrNoVerdict. Both are judge
// errors, never a verdict.
func ParseVerdict(reply string, labels eval.Labels) (Choice, error) {
	var claims []Choice
	var unread []string
	claim := func(v string) {
		if c, ok := classify(v, labels); ok {
			claims = append(claims, c)
		} else {
			unread = append(unread, v)
		}
	}
	for _, obj := range jsonObjects(reply) {
		for k, v := range obj {
			if !slices.Contains(jsonVerdict, strings.ToLower(k)) {
				continue
			}
			if s, ok := v.(string); ok {
				claim(s)
			}
		}
	}
	for _, m := range winnerLineRe.FindAllStringSubmatch(reply, -1) {
		claim(m[1])
	}
	for _, m := range bracketedRe.FindAllStringSubmatch(reply, -1) {
		claim(m[1])
	}
	if c, ok := classify(reply, labels); ok && len(strings.Fields(reply)) <= 3 {
		claims = append(claims, c)
	}
	if len(claims) == 0 {
		claims = sentenceClaims(reply, labels)
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(claims)))
	switch {
	case len(distinct) == 1:
		return distinct[0], nil
	case len(distinct) > 1:
		names := make([]string, len(distinct))
		for i, c := range distinct {
			names[i] = c.String()
		}
		return 0, fmt.Errorf("%w: it claims %s (labels %s)", ErrAmbiguousVerdict, strings.Join(names, " and "), labels)
	case len(unread) > 0:
		return 0, fmt.Errorf("%w: %q names neither %q, %q nor a tie", ErrNoVerdict, clip(unread[len(unread)-1], 40), labels.First, labels.Second)
	}
	return 0, ErrNoVerdict
}

// sentenceClaims reads verdicts stated in prose: "<label> is better", and
// tie phrases.
func sentenceClaims(reply string, labels eval.Labels) []Choice {
	var out []Choice
	for i, l := range []string{labels.First, labels.Second} {
		forms := []string{regexp.QuoteMeta(l)}
		for _, n := range nounWords {
			forms = append(forms, n+`\s+`+regexp.QuoteMeta(token(l)))
		}
		re := regexp.MustCompile(`(?i)\b(?:` + strings.Join(forms, "|") + `)\s+` + betterWordRe)
		if re.MatchString(reply) {
			out = append(out, Choice(i))
		}
	}
	if tiePhraseRe.MatchString(reply) {
		out = append(out, ChoiceTie)
	}
	return out
}

// jsonObjects returns the JSON objects of a reply: every ```json (or bare
// ```) fence's content, then every brace-delimited object without nesting.
func jsonObjects(reply string) []map[string]any {
	var texts []string
	for _, m := range jsonFenceRe.FindAllStringSubmatch(reply, -1) {
		texts = append(texts, strings.TrimSpace(m[1]))
	}
	texts = append(texts, jsonObjectRe.FindAllString(reply, -1)...)
	var out []map[string]any
	for _, t := range texts {
		var obj map[string]any
		if json.Unmarshal([]byte(t), &obj) == nil {
			out = append(out, obj)
		}
	}
	return out
}
