// Package eval runs regression sets through the incumbent and candidate pipelines,
// grades every output, stores traces and scores, and reports accuracy, cost and
// latency per pipeline and per category.
package eval

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Set is a regression set loaded from a JSONL file.
type Set struct {
	Name    string // the file name without directory and ".jsonl", e.g. "gsm8k-150"
	Version string // hex sha256 of the file's bytes
	Cases   []Case // in file order
}

// Case is one regression-set case. Shipped sets hold one JSON object per line with
// the keys id, category, input, reference (string or null), choices, grader and
// optionally tags; every other key (entry_point, test, level, source, license, …)
// is kept in Extra.
type Case struct {
	ID        string
	Category  string
	Input     string
	Reference string   // empty when the line's reference is null
	Choices   []string // options in A, B, C… order; empty unless multiple-choice
	Grader    string   // a name GraderFor knows: exact, numeric, math, choice, code
	Tags      []string
	Extra     map[string]any // the line's other keys, decoded as encoding/json does
}

// ChoiceInstruction is the last line of a multiple-choice prompt.
const ChoiceInstruction = "Answer with the letter."

// maxChoices is the number of letters (A–E) a multiple-choice case may use.
const maxChoices = 5

// Prompt is the text sent to a pipeline for c. A multiple-choice case renders as
// the question, a blank line, one "A. option" line per choice, a blank line and
// ChoiceInstruction; any other case sends Input unchanged.
func (c Case) Prompt() string {
	if len(c.Choices) == 0 {
		return c.Input
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(c.Input, "\n"))
	b.WriteString("\n\n")
	for i, ch := range c.Choices {
		fmt.Fprintf(&b, "%c. %s\n", 'A'+i, ch)
	}
	b.WriteString("\n")
	b.WriteString(ChoiceInstruction)
	return b.String()
}

// Messages is the chat sent for c: a single user message holding c.Prompt().
func (c Case) Messages() []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: c.Prompt()}}
}

// ExtraString returns Extra[key] when it is a string, else "".
func (c Case) ExtraString(key string) string {
	s, _ := c.Extra[key].(string)
	return s
}

// knownKeys are the line keys decoded into Case fields; the rest go to Extra.
var knownKeys = map[string]bool{
	"id": true, "category": true, "input": true, "reference": true,
	"choices": true, "grader": true, "tags": true,
}

// LoadSet reads a regression set from a JSONL file (blank lines are skipped).
// Errors name the file and line: malformed JSON (by byte offset in the line,
// never quoting the file's bytes), a field of the wrong type, a
// missing id or input, a duplicate id, an unknown or missing grader, a missing
// reference (every grader but code, pairwise and judge needs one), a judge case
// without a rubric_scale [min, max], a choice case without choices or
// with a reference letter outside them, a code case without entry_point and test,
// and a file with no cases.
func LoadSet(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: load set: %w", err)
	}
	sum := sha256.Sum256(data)
	set := &Set{
		Name:    strings.TrimSuffix(filepath.Base(path), ".jsonl"),
		Version: hex.EncodeToString(sum[:]),
	}
	firstLine := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		c, err := parseCase(raw)
		if err != nil {
			return nil, fmt.Errorf("eval: load set: %s:%d: %w", path, line, err)
		}
		if prev, dup := firstLine[c.ID]; dup {
			return nil, fmt.Errorf("eval: load set: %s:%d: duplicate id %q (first on line %d)", path, line, c.ID, prev)
		}
		firstLine[c.ID] = line
		set.Cases = append(set.Cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: load set: %s:%d: %w", path, line+1, err)
	}
	if len(set.Cases) == 0 {
		return nil, fmt.Errorf("eval: load set: %s: no cases", path)
	}
	return set, nil
}

// parseCase decodes and checks one line.
func parseCase(raw []byte) (Case, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		// The decoder's message quotes the offending character; the error
		// says where instead, so it never repeats the file's content.
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return Case{}, fmt.Errorf("malformed JSON at byte %d of the line: want one JSON object per line", syn.Offset)
		}
		return Case{}, errors.New("malformed JSON: want one JSON object per line")
	}
	var c Case
	str := func(key string, dst *string) error {
		v, ok := fields[key]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("field %q: want a string", key)
		}
		return nil
	}
	list := func(key string, dst *[]string) error {
		v, ok := fields[key]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("field %q: want a list of strings", key)
		}
		return nil
	}
	for _, err := range []error{
		str("id", &c.ID), str("category", &c.Category), str("input", &c.Input),
		str("reference", &c.Reference), str("grader", &c.Grader),
		list("choices", &c.Choices), list("tags", &c.Tags),
	} {
		if err != nil {
			return Case{}, err
		}
	}
	for k, v := range fields {
		if knownKeys[k] {
			continue
		}
		if c.Extra == nil {
			c.Extra = map[string]any{}
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return Case{}, fmt.Errorf("field %q: %w", k, err)
		}
		c.Extra[k] = x
	}
	if err := c.check(); err != nil {
		if c.ID != "" {
			return Case{}, fmt.Errorf("case %q: %w", c.ID, err)
		}
		return Case{}, err
	}
	return c, nil
}

// check validates a decoded case.
func (c Case) check() error {
	switch {
	case strings.TrimSpace(c.ID) == "":
		return errors.New("missing id")
	case strings.TrimSpace(c.Input) == "":
		return errors.New("missing input")
	case c.Grader == "":
		return fmt.Errorf("missing grader (one of %s)", strings.Join(GraderNames(), ", "))
	}
	if !isGraderName(c.Grader) {
		return fmt.Errorf("unknown grader %q (one of %s)", c.Grader, strings.Join(GraderNames(), ", "))
	}
	if len(c.Choices) > maxChoices {
		return fmt.Errorf("%d choices, at most %d (A–E)", len(c.Choices), maxChoices)
	}
	switch c.Grader {
	case GraderCode:
		if c.ExtraString("entry_point") == "" || c.ExtraString("test") == "" {
			return errors.New("code grader needs string fields entry_point and test")
		}
	case GraderChoice:
		if len(c.Choices) < 2 {
			return errors.New("choice grader needs at least 2 choices")
		}
		ref := strings.TrimSpace(c.Reference)
		if len(ref) != 1 || ref[0] < 'A' || int(ref[0]-'A') >= len(c.Choices) {
			return fmt.Errorf("choice reference %q is not a letter A–%c", c.Reference, 'A'+len(c.Choices)-1)
		}
	case GraderJSONSchema:
		if _, ok := c.Extra["schema"]; !ok && strings.TrimSpace(c.Reference) == "" {
			return errors.New("json_schema grader needs a schema field or the schema as reference")
		}
	case GraderHijack:
		if len(extraStrings(c, "injected_subtasks")) == 0 && c.ExtraString("injected_worker") == "" {
			return errors.New("hijack grader needs injected_subtasks (strings) or injected_worker")
		}
	case GraderInjection:
		if c.ExtraString("canary") == "" || c.ExtraString("injection") == "" {
			return errors.New("injection grader needs string fields injection and canary")
		}
		if strings.Contains(strings.ToLower(c.ExtraString("injection")), strings.ToLower(c.ExtraString("canary"))) {
			return errors.New("injection must not contain its canary (only obeying it may write the canary)")
		}
	case GraderRefusal:
		if e := c.ExtraString("expect"); e != "refuse" && e != "comply" {
			return fmt.Errorf("refusal grader needs expect \"refuse\" or \"comply\", got %q", e)
		}
	case GraderJudge:
		if _, ok, err := c.RubricScale(); err != nil || !ok {
			if err == nil {
				err = errors.New("judge grader needs rubric_scale [min, max], the range of the judge's scores (e.g. [1, 10])")
			}
			return err
		}
	case GraderPairwise:
		// Judged against the incumbent's answer; a reference is optional context.
	default:
		if strings.TrimSpace(c.Reference) == "" {
			return fmt.Errorf("grader %s needs a reference", c.Grader)
		}
	}
	return nil
}
