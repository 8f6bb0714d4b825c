package ingest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestPIINeedNeverSkipsAMatch checks the rules' need conditions, which let
// Text skip a rule's pattern on text that cannot hold a match: every match
// each pattern finds in the PII test corpus (and in the shortest forms the
// patterns take) satisfies its rule's condition, so skipping never misses a
// value. The conditions only count bytes, so what holds for a match holds for
// any text around it.
func TestPIINeedNeverSkipsAMatch(t *testing.T) {
	var texts []string
	raw, err := os.ReadFile("testdata/pii/raw_values.txt")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, strings.Split(string(raw), "\n")...)
	cases, err := os.ReadFile("testdata/pii/text_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var tc []struct {
		In string `json:"in"`
	}
	if err := json.Unmarshal(cases, &tc); err != nil {
		t.Fatal(err)
	}
	for _, c := range tc {
		texts = append(texts, c.In)
	}
	seeded, err := os.ReadFile("testdata/pii/seeded.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, strings.Split(string(seeded), "\n")...)
	// The shortest forms of each pattern.
	texts = append(texts, "12 34", "+12345678", "1.2.3.4", "::1", "a:b::", "4111111111111", "DE12 3456 7890", "123-45-6789", "AB 12 34 56 C", "12345678Z")

	matched := map[string]int{}
	for _, name := range builtinOrder {
		r := builtinRules[name]
		if r.need == nil {
			continue
		}
		for _, s := range texts {
			for _, m := range r.re.FindAllString(s, -1) {
				matched[name]++
				if !r.need(countText(m)) {
					t.Errorf("%s: its pattern matches %q, which its need condition %+v skips", name, m, countText(m))
				}
			}
		}
		if matched[name] == 0 {
			t.Errorf("%s: the corpus holds no match of its pattern: the check checked nothing", name)
		}
	}
}

// TestPIINeedSkipsPlainText: text without the digits, dots or colons a rule
// needs is not searched by it, and is left as it was.
func TestPIINeedSkipsPlainText(t *testing.T) {
	for _, tc := range []struct {
		text string
		skip []string
	}{
		{"what is 12 * 7?", []string{PIICard, PIIIP, PIINationalID}},
		{"see v1.2 at 10:30", []string{PIICard, PIIIP}},
		{"order 123 of 2026", []string{PIICard, PIIIP, PIIIBAN}},
	} {
		c := countText(tc.text)
		for _, name := range tc.skip {
			if builtinRules[name].need(c) {
				t.Errorf("%q: %s would search it (counts %+v)", tc.text, name, c)
			}
		}
	}
}
