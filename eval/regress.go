package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Regression is a pipeline whose accuracy on a segment ("overall" or
// "category:<c>") dropped since the previous suite run, on the cases both
// runs graded. Before and After are accuracies (0..1) over those cases;
// McNemarP is the exact two-sided p-value of the paired change and
// Significant means McNemarP < 0.05.
type Regression struct {
	Pipeline    string  `json:"pipeline"`
	Segment     string  `json:"segment"`
	Cases       int     `json:"cases"`
	Before      float64 `json:"before"`
	After       float64 `json:"after"`
	McNemarP    float64 `json:"mcnemar_p"`
	Significant bool    `json:"significant"`
}

// PreviousRun is the comparison with the previous suite run of the same set
// for one candidate: the regressions of the candidate and of the incumbent,
// overall first, then by category.
type PreviousRun struct {
	Candidate   string       `json:"candidate"`
	SuiteRunID  string       `json:"suite_run_id"`
	StartedAt   time.Time    `json:"started_at"`
	Regressions []Regression `json:"regressions"`
}

// ComparePrevious fills r.Previous: for each candidate, the newest earlier
// "done" suite run of the same set with that candidate (h.PreviousSuiteRun,
// before r.StartedAt), decoded from its stored report JSON. Candidates without
// a previous run are skipped. It returns an error when the store fails or a
// previous report cannot be decoded.
func (r *Report) ComparePrevious(ctx context.Context, h store.EvalHistory) error {
	r.Previous = nil
	for _, cand := range r.Candidates {
		sr, err := h.PreviousSuiteRun(ctx, r.SetName, cand, r.StartedAt)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("eval: compare with previous run: %w", err)
		}
		var prev Report
		if err := json.Unmarshal([]byte(sr.ReportJSON), &prev); err != nil {
			return fmt.Errorf("eval: compare with previous run %s: decode report: %w", sr.SuiteRunID, err)
		}
		pr := PreviousRun{Candidate: cand, SuiteRunID: sr.SuiteRunID, StartedAt: sr.StartedAt, Regressions: []Regression{}}
		for _, p := range []string{cand, r.Incumbent} {
			pr.Regressions = append(pr.Regressions, regressions(p, prev.Outcomes, r.Outcomes)...)
		}
		r.Previous = append(r.Previous, pr)
	}
	return nil
}

// regressions pairs pipeline's graded outcomes by case id across two runs and
// returns the segments whose accuracy dropped.
func regressions(pipeline string, before, after []Outcome) []Regression {
	old := map[string]Outcome{}
	for _, o := range before {
		if o.Pipeline == pipeline && o.GraderError == "" {
			old[o.CaseID] = o
		}
	}
	type tally struct{ n, pb, pa, b, c int }
	seg := map[string]*tally{}
	add := func(name string, was, now bool) {
		t := seg[name]
		if t == nil {
			t = &tally{}
			seg[name] = t
		}
		t.n++
		if was {
			t.pb++
		}
		if now {
			t.pa++
		}
		if was && !now {
			t.b++
		}
		if now && !was {
			t.c++
		}
	}
	for _, o := range after {
		if o.Pipeline != pipeline || o.GraderError != "" {
			continue
		}
		prev, ok := old[o.CaseID]
		if !ok {
			continue
		}
		add("overall", prev.Passed, o.Passed)
		add("category:"+o.Category, prev.Passed, o.Passed)
	}
	names := make([]string, 0, len(seg))
	for n := range seg {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "overall":
			return -1
		case b == "overall":
			return 1
		case a < b:
			return -1
		}
		return 1
	})
	var out []Regression
	for _, n := range names {
		t := seg[n]
		if t.pa >= t.pb {
			continue
		}
		p := stats.McNemarExact(t.b, t.c)
		out = append(out, Regression{Pipeline: pipeline, Segment: n, Cases: t.n,
			Before: float64(t.pb) / float64(t.n), After: float64(t.pa) / float64(t.n), McNemarP: p, Significant: p < 0.05})
	}
	return out
}

// previousMarkdown renders r.Previous: one section per candidate with a table
// of regressions (significant ones in bold).
func (r *Report) previousMarkdown(b *strings.Builder) {
	for _, pr := range r.Previous {
		fmt.Fprintf(b, "\n## Since the previous run %s (%s), candidate %s\n\n", mdCode(pr.SuiteRunID), mdTime(pr.StartedAt), mdCode(pr.Candidate))
		if len(pr.Regressions) == 0 {
			b.WriteString("No accuracy dropped on the cases both runs graded.\n")
			continue
		}
		b.WriteString("| pipeline | segment | cases | before | after | McNemar p |\n|---|---|--:|--:|--:|--:|\n")
		for _, g := range pr.Regressions {
			mark := ""
			if g.Significant {
				mark = "**"
			}
			fmt.Fprintf(b, "| %s%s%s | %s | %d | %s | %s%s%s | %.4g |\n", mark, mdText(g.Pipeline), mark, mdText(g.Segment), g.Cases,
				pct(g.Before), mark, pct(g.After), mark, g.McNemarP)
		}
		b.WriteString("\nRegressions: accuracy lower than in the previous run on the same cases; **bold** when McNemar's exact p < 0.05.\n")
	}
}
