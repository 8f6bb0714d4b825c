package gate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// CoverageCounts is one cell of one segment dimension (all, lang, len, table,
// code, app): what became of the production exchanges received in a window,
// for one candidate version (store.CoverageCell).
type CoverageCounts struct {
	Dimension, Value string
	// Recorded ⊇ Shadowed ⊇ Answered ⊇ Judged + JudgeErrors + NotJudged
	// (the sampled pairs); Shed, Skipped, Owed and Missing are the recorded
	// exchanges not shadowed, by why; NotJudged were sampled but never
	// judged (judge budget, full queue, stop).
	Recorded, Shed, Shadowed, Skipped, Owed, Missing int64
	Answered, Judged, JudgeErrors, NotJudged         int64
}

// sampled is the answered pairs sampled for judging.
func (c CoverageCounts) sampled() int64 { return c.Judged + c.JudgeErrors + c.NotJudged }

// Lost is the recorded exchanges not shadowed for good: shed, skipped and
// missing (owed work is shadowed again and is left out).
func (c CoverageCounts) Lost() int64 { return c.Shed + c.Skipped + c.Missing }

// CoverageCheck is one chi-square test of the coverage check.
type CoverageCheck struct {
	Stage     string                `json:"stage"`     // "shadowed", "sampled for judging" or "judged"
	Dimension string                `json:"dimension"` // lang, len, table, code, app
	Test      stats.ChiSquareResult `json:"test"`
	// Lowest and Highest are the cells with the smallest and largest share
	// reaching the stage, as "ru 61%".
	Lowest  string `json:"lowest"`
	Highest string `json:"highest"`
}

// CheckCoverage is the live verdict's coverage check, the sample-ratio
// check of experimentation platforms (GrowthBook: a chi-square test of the
// observed split against the planned one, flagged at p < 0.001) applied to
// what is lost between stages. Per dimension with two or more cells it tests
// whether the cells share one split (stats.ChiSquareIndependence):
//   - shadowed: of the recorded exchanges (owed work left out), shadowed
//     against shed, skipped or missing;
//   - sampled for judging: of the answered pairs, sampled (judged or judge
//     error) against not — only when every judged pair of the window had one
//     inclusion probability (constantInclusion): a design that judges some
//     segments more is weighted for (Horvitz–Thompson) and not a loss;
//   - judged: of the sampled pairs, judged against judge errors and pairs
//     never judged (budget, full queue, stop).
//
// Each test runs at live.coverage_p divided by the number of tests run
// (Bonferroni). Loss that differs by segment means the live pairs are not a
// random sample of the traffic, so the verdict is INCONCLUSIVE, whatever the
// tests say (withheld names the stage, dimension and cells). rows has the
// one "coverage" row: the share of the recorded exchanges shadowed
// (figure.Coverage) and every test.
func CheckCoverage(p Policy, cells []CoverageCounts, constantInclusion bool) (rows []Result, withheld []string, checks []CoverageCheck) {
	level := p.LiveRules().CoverageP
	var all CoverageCounts
	byDim := map[string][]CoverageCounts{}
	for _, c := range cells {
		if c.Dimension == "all" {
			all = c
			continue
		}
		byDim[c.Dimension] = append(byDim[c.Dimension], c)
	}
	dims := slices.Sorted(func(yield func(string) bool) {
		for d := range byDim {
			if !yield(d) {
				return
			}
		}
	})
	type stage struct {
		name       string
		reach, out func(CoverageCounts) int64
	}
	stages := []stage{
		{"shadowed", func(c CoverageCounts) int64 { return c.Shadowed }, CoverageCounts.Lost},
		{"judged", func(c CoverageCounts) int64 { return c.Judged }, func(c CoverageCounts) int64 { return c.JudgeErrors + c.NotJudged }},
	}
	if constantInclusion {
		stages = slices.Insert(stages, 1, stage{"sampled for judging", CoverageCounts.sampled,
			func(c CoverageCounts) int64 { return c.Answered - c.sampled() }})
	}
	for _, st := range stages {
		for _, d := range dims {
			var table [][]int64
			type share struct {
				value string
				f     float64
			}
			var shares []share
			for _, c := range byDim[d] {
				r, o := st.reach(c), st.out(c)
				table = append(table, []int64{r, o})
				if r+o > 0 {
					shares = append(shares, share{cmp.Or(c.Value, "(none)"), figure.Coverage(r, r+o)})
				}
			}
			res := stats.ChiSquareIndependence(table)
			if res.DF == 0 {
				continue
			}
			slices.SortFunc(shares, func(a, b share) int { return cmp.Compare(a.f, b.f) })
			checks = append(checks, CoverageCheck{Stage: st.name, Dimension: d, Test: res,
				Lowest:  fmt.Sprintf("%s %.0f%%", shares[0].value, 100*shares[0].f),
				Highest: fmt.Sprintf("%s %.0f%%", shares[len(shares)-1].value, 100*shares[len(shares)-1].f)})
		}
	}
	r := Result{Gate: GateCoverage, Status: Pass, Figure: figure.Coverage(all.Shadowed, all.Recorded), Threshold: level}
	summary := fmt.Sprintf("of %d production exchanges recorded, %d shadowed (%.1f%%), %d shed, %d skipped by the daily cap, %d missing, %d owed (shadowed again); %d answered pairs, %d judged, %d judge errors, %d sampled but not judged",
		all.Recorded, all.Shadowed, 100*r.Figure, all.Shed, all.Skipped, all.Missing, all.Owed, all.Answered, all.Judged, all.JudgeErrors, all.NotJudged)
	var bad []string
	if len(checks) > 0 {
		each := level / float64(len(checks))
		for _, c := range checks {
			if c.Test.P < each {
				bad = append(bad, fmt.Sprintf("%s differs by %s (χ² %.1f, df %d, p %.2g < %.2g): lowest %s, highest %s",
					c.Stage, c.Dimension, c.Test.Stat, c.Test.DF, c.Test.P, each, c.Lowest, c.Highest))
			}
		}
		summary += fmt.Sprintf("; %d chi-square tests across segments at %.2g each (%.2g Bonferroni)", len(checks), each, level)
	}
	if len(bad) > 0 {
		r.Status = Inconclusive
		r.Reason = "coverage differs by segment, so the live pairs are not a random sample of the traffic: " + strings.Join(bad, "; ") + "; " + summary + "; no verdict"
		withheld = append(withheld, r.Reason)
	} else {
		r.Reason = summary + "; no loss that differs by segment"
	}
	return []Result{r}, withheld, checks
}
