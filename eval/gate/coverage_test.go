package gate

import (
	"strings"
	"testing"
)

// cells builds coverage cells of the "lang" dimension and their total; each
// row is recorded, shed, shadowed, answered, judged, judge errors.
func cells(rows map[string][6]int64) []CoverageCounts {
	all := CoverageCounts{Dimension: "all"}
	var out []CoverageCounts
	for lang, r := range rows {
		c := CoverageCounts{Dimension: "lang", Value: lang, Recorded: r[0], Shed: r[1], Shadowed: r[2], Answered: r[3], Judged: r[4], JudgeErrors: r[5]}
		out = append(out, c)
		all.Recorded += c.Recorded
		all.Shed += c.Shed
		all.Shadowed += c.Shadowed
		all.Answered += c.Answered
		all.Judged += c.Judged
		all.JudgeErrors += c.JudgeErrors
	}
	return append([]CoverageCounts{all}, out...)
}

// Loss that is the same in every segment is no finding; loss concentrated
// in one segment — shed copies, or judge errors — withholds the verdict and
// names the stage, the dimension and the cells. A sampling share that
// differs by segment is a finding only for a one-π (Bernoulli) design.
func TestCheckCoverage(t *testing.T) {
	pol := NewDefaultPolicy()
	cases := []struct {
		name     string
		rows     map[string][6]int64
		constant bool
		withhold string // "" for none, else a word of the reason
	}{
		{"even loss", map[string][6]int64{"en": {1000, 100, 900, 880, 220, 4}, "ru": {1000, 95, 905, 890, 225, 5}}, true, ""},
		{"ru shed", map[string][6]int64{"en": {1000, 50, 950, 940, 235, 4}, "ru": {1000, 400, 600, 590, 150, 3}}, true, "shadowed differs by lang"},
		{"ru judge errors", map[string][6]int64{"en": {1000, 0, 1000, 990, 250, 2}, "ru": {1000, 0, 1000, 990, 150, 100}}, true, "judged differs by lang"},
		{"ru judged more, one π", map[string][6]int64{"en": {1000, 0, 1000, 1000, 100, 0}, "ru": {1000, 0, 1000, 1000, 500, 0}}, true, "sampled for judging differs by lang"},
		{"ru judged more, π by segment", map[string][6]int64{"en": {1000, 0, 1000, 1000, 100, 0}, "ru": {1000, 0, 1000, 1000, 500, 0}}, false, ""},
	}
	for _, c := range cases {
		rows, withheld, checks := CheckCoverage(pol, cells(c.rows), c.constant)
		if len(rows) != 1 || rows[0].Gate != GateCoverage {
			t.Fatalf("%s: rows %+v", c.name, rows)
		}
		switch {
		case c.withhold == "" && len(withheld) > 0:
			t.Errorf("%s: withheld %v", c.name, withheld)
		case c.withhold != "" && (len(withheld) != 1 || !strings.Contains(withheld[0], c.withhold) || rows[0].Status != Inconclusive):
			t.Errorf("%s: withheld %v, row %+v; want %q", c.name, withheld, rows[0], c.withhold)
		}
		if c.withhold != "" && len(checks) == 0 {
			t.Errorf("%s: no test ran", c.name)
		}
	}
	// One cell only: nothing to compare, nothing withheld.
	if _, w, checks := CheckCoverage(pol, cells(map[string][6]int64{"en": {100, 50, 50, 50, 10, 5}}), true); len(w) > 0 || len(checks) > 0 {
		t.Errorf("one cell: withheld %v, checks %v", w, checks)
	}
}
