package ingest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestPIINeedNeverSkipsAMatch checks the rules' need conditions, which let
// Text skip a rule's pattern on text that cannot hold a value: every match
// each pattern finds in the PII test corpus (and in the shortest forms the
// patterns take) that the rule's check accepts satisfies its rule's
// condition, so skipping never misses a value. The conditions only count bytes, so what holds for a match holds for
// any text around it.
func TestPIINeedNeverSkipsAMatch(t *testing.T) {
	texts := piiCorpus(t)
	// The shortest forms of each pattern.
	texts = append(texts, "12 34", "+12345678", "1.2.3.4", "::1", "a:b::", "4111111111111", "DE12 3456 7890", "123-45-6789", "AB 12 34 56 C", "12345678Z",
		"+123456789", "415 555 267", "1.2.3.4", "GB82 WEST 1234 5698 7654 32")

	matched := map[string]int{}
	for _, name := range builtinOrder {
		r := builtinRules[name]
		if r.need == nil {
			continue
		}
		for _, s := range texts {
			for _, m := range r.re.FindAllString(s, -1) {
				if r.check != nil && !r.check(m) {
					continue // not a value: nothing is missed by skipping it
				}
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

// piiCorpus is every text of the PII test data: the raw values, the text
// cases and the seeded exchanges (as JSON lines).
func piiCorpus(t *testing.T) []string {
	t.Helper()
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
	return append(texts, strings.Split(string(seeded), "\n")...)
}

// TestPIINeedSkipsPlainText: text without the digits, dots or colons a rule
// needs is not searched by it, and is left as it was; the digits and capitals
// of a pseudonym already in the text count for no rule.
func TestPIINeedSkipsPlainText(t *testing.T) {
	for _, tc := range []struct {
		text string
		skip []string
	}{
		{"what is 12 * 7?", []string{PIICard, PIIIP, PIINationalID}},
		{"see v1.2 at 10:30", []string{PIICard, PIIIP}},
		{"order 123 of 2026", []string{PIICard, PIIIP, PIIIBAN}},
		{"Customer <EMAIL_0123456789abcdef> asks: what is 12 * 7?", []string{PIICard, PIIPhone, PIINationalID, PIIIBAN}},
	} {
		c := countOutside(tc.text, tokenRE.FindAllStringIndex(tc.text, -1))
		for _, name := range tc.skip {
			if builtinRules[name].need(c) {
				t.Errorf("%q: %s would search it (counts %+v)", tc.text, name, c)
			}
		}
	}
}

// TestFindEmailsEqualsThePattern: the windowed e-mail search finds exactly
// what the pattern run over the whole text finds, on the corpus and on
// addresses that touch, share a domain run or lack a top-level domain.
func TestFindEmailsEqualsThePattern(t *testing.T) {
	texts := append(piiCorpus(t),
		"a@b.com.c@d.com", "x@y@z.org", "@@a@b.co@", "mail: jo@ex.ample.com, al+1@ex.io; bad@nodot, @lead.com trail@",
		"a.b@c-d.e-f.gh.ij.", "user_1@host", "..@..", "é@ü.de ok@fine.de", strings.Repeat("a", 300)+"@"+strings.Repeat("b.", 100)+"cc")
	for _, s := range texts {
		got := findEmails(s)
		var want [][2]int
		for _, m := range emailRE.FindAllStringIndex(s, -1) {
			want = append(want, [2]int{m[0], m[1]})
		}
		if len(got) != len(want) {
			t.Errorf("%q: found %v, the pattern finds %v", s, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%q: found %v, the pattern finds %v", s, got, want)
				break
			}
		}
	}
}
