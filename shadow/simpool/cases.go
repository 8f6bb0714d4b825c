package simpool

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Case is one regression-set question as shipped in regression-sets/*.jsonl.
// Reference is "" when the line has null. Grader is one of "numeric", "math",
// "choice", "code" (or "" for sets without a reference).
type Case struct {
	ID         string   `json:"id"`
	Category   string   `json:"category"`
	Input      string   `json:"input"`
	Reference  string   `json:"reference"`
	Choices    []string `json:"choices"`
	Grader     string   `json:"grader,omitempty"`
	EntryPoint string   `json:"entry_point,omitempty"` // HumanEval: function name
	Test       string   `json:"test,omitempty"`        // HumanEval: check(candidate) code
	Level      int      `json:"level,omitempty"`       // MATH-500 difficulty 1–5
	Source     string   `json:"source,omitempty"`
	License    string   `json:"license,omitempty"`
	// Attack marks an adversarial probe (regression-sets/probe-*.jsonl):
	// AttackHijack, AttackInjection or AttackRefusal; "" for ordinary cases.
	Attack string `json:"attack,omitempty"`
	// Injection is the instruction an injection probe's first worker answer
	// carries to later workers; Canary is what a worker that obeys it writes.
	Injection string `json:"injection,omitempty"`
	Canary    string `json:"canary,omitempty"`
	// Expect is what a refusal probe expects of a safe model: "refuse" (a
	// harmful request) or "comply" (a harmless one that sounds harmful).
	Expect string `json:"expect,omitempty"`
}

// Kinds of adversarial probes (Case.Attack).
const (
	AttackHijack    = "hijack"
	AttackInjection = "injection"
	AttackRefusal   = "refusal"
)

// ReadCases reads JSONL cases from r, one object per line; blank lines are skipped.
// name labels errors ("gsm8k-150.jsonl:12: ..."). A line without id or input is an
// error.
func ReadCases(r io.Reader, name string) ([]Case, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	var out []Case
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var c Case
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("simpool: read cases %s:%d: %w", name, line, err)
		}
		if c.ID == "" || c.Input == "" {
			return nil, fmt.Errorf("simpool: read cases %s:%d: missing id or input", name, line)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("simpool: read cases %s: %w", name, err)
	}
	return out, nil
}

// LoadSets reads every *.jsonl file directly inside dir (sub-folders such as
// replay/ are not read), in name order. Duplicate ids across files are an error.
func LoadSets(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("simpool: list sets in %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("simpool: no *.jsonl regression sets in %s", dir)
	}
	sort.Strings(files)
	seen := map[string]string{}
	var all []Case
	for _, f := range files {
		cs, err := readCaseFile(f)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if prev, dup := seen[c.ID]; dup {
				return nil, fmt.Errorf("simpool: case id %q in both %s and %s", c.ID, prev, f)
			}
			seen[c.ID] = f
		}
		all = append(all, cs...)
	}
	return all, nil
}

func readCaseFile(path string) ([]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("simpool: open set: %w", err)
	}
	defer f.Close()
	return ReadCases(f, filepath.Base(path))
}

// normalizeWS collapses every run of white space to one space and trims the ends.
func normalizeWS(s string) string { return strings.Join(strings.Fields(s), " ") }

// keyLen is the length in bytes of the normalized prefix the index is keyed by.
const keyLen = 24

// index finds which case's question a text contains. Questions are indexed by the
// first keyLen bytes of their normalized text; a lookup slides over the normalized
// text once (one map probe per byte) and confirms candidates with a prefix check,
// so it costs O(len(text)) regardless of the number of cases. A multiple-choice
// question matches only when every option text appears too, so a short generic
// stem ("Which of the following is true?") does not match an unrelated prompt.
type index struct {
	cases   []Case
	norm    []string         // normalized inputs, parallel to cases
	choices [][]string       // normalized options, parallel to cases
	byKey   map[string][]int // normalized prefix → case positions
	short   []int            // questions shorter than keyLen
}

func newIndex(cases []Case) *index {
	ix := &index{cases: cases, norm: make([]string, len(cases)), choices: make([][]string, len(cases)), byKey: map[string][]int{}}
	for i, c := range cases {
		n := normalizeWS(c.Input)
		ix.norm[i] = n
		for _, ch := range c.Choices {
			if o := normalizeWS(ch); o != "" {
				ix.choices[i] = append(ix.choices[i], o)
			}
		}
		if len(n) < keyLen {
			ix.short = append(ix.short, i)
			continue
		}
		ix.byKey[n[:keyLen]] = append(ix.byKey[n[:keyLen]], i)
	}
	return ix
}

// find returns the position of the longest question contained in text, or -1.
func (ix *index) find(text string) int {
	h := normalizeWS(text)
	best, bestLen := -1, 0
	for i := 0; i+keyLen <= len(h); i++ {
		ids, ok := ix.byKey[h[i:i+keyLen]]
		if !ok {
			continue
		}
		for _, id := range ids {
			if n := ix.norm[id]; len(n) > bestLen && strings.HasPrefix(h[i:], n) && ix.hasChoices(id, h) {
				best, bestLen = id, len(n)
			}
		}
	}
	for _, id := range ix.short {
		if n := ix.norm[id]; len(n) > bestLen && n != "" && strings.Contains(h, n) && ix.hasChoices(id, h) {
			best, bestLen = id, len(n)
		}
	}
	return best
}

// hasChoices reports whether every option of case id appears in the normalized
// text h (true for cases without options).
func (ix *index) hasChoices(id int, h string) bool {
	for _, o := range ix.choices[id] {
		if !strings.Contains(h, o) {
			return false
		}
	}
	return true
}

// match returns the case whose question appears in the messages, searching the
// latest message first (the current subtask) and then earlier turns, and its
// position among the loaded cases.
func (ix *index) match(msgs []message) (Case, int, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if id := ix.find(msgs[i].Content); id >= 0 {
			return ix.cases[id], id, true
		}
	}
	return Case{}, -1, false
}
