package web

import (
	"math"
	"strconv"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Answers of the overview's "can we cut over?" line per candidate.
const (
	cutoverYes    = "yes"     // the latest suite verdict is PASS and the live test has not found it worse
	cutoverNo     = "no"      // the latest suite verdict is FAIL
	cutoverNotYet = "not yet" // no suite verdict yet, or INCONCLUSIVE
)

// cutoverRow answers "can we cut over?" for one candidate: the latest suite
// verdict (against that suite's baseline, with the suite's intervals), the
// running verdict on production pairs, the figures against the production
// incumbent as ratios (candidate ÷ production incumbent) and the one gate or
// segment that blocks.
type cutoverRow struct {
	Candidate string
	Answer    string // cutoverYes, cutoverNo or cutoverNotYet
	Suite     *suiteVerdict
	Live      *eval.LiveCandidate
	// Against the production incumbent over the window (store figures).
	Agreement  string // "87.5% [83.1%, 90.9%]" (Wilson 95%), "—" without pairs
	CostRatio  string // "0.62×", "—" when either cost is unknown
	P95Ratio   string // "1.40×"
	CostPerReq string // the candidate's cost per request, USD
	P95        string // the candidate's p95, ms
	// From the latest suite run against its baseline, at its decision confidence.
	SuiteQuality string // "+2.0 pts [−1.1, +5.0]" (candidate − suite baseline)
	SuiteCost    string // "0.62× [0.58, 0.66]"
	SuiteP95     string // "1.40× [1.21, 1.63]"
	Blocker      string // the one gate or segment that blocks, "" when nothing does
}

// fmtRatio renders a ratio as "0.62×", "—" when the denominator is unknown.
func fmtRatio(num, den float64) string {
	if den <= 0 || num < 0 {
		return "—"
	}
	return fmtX(num / den)
}

// fmtX renders a ratio already computed.
func fmtX(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "—"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "×"
}

// maxShownRatio is the largest interval bound shown as a number; a bootstrap
// on a handful of cases can reach any bound, said as "unbounded".
const maxShownRatio = 1000

// fmtRatioIv renders a ratio with its interval: "1.81× [1.31, 2.50]".
func fmtRatioIv(r float64, iv stats.Interval) string {
	f := func(v float64) string {
		if v >= maxShownRatio || math.IsInf(v, 1) {
			return "unbounded"
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return fmtX(r) + " [" + f(iv.Low) + ", " + f(iv.High) + "]"
}

// fmtPts renders a difference in proportion (0..1) as signed percentage points.
func fmtPts(d float64) string {
	s := strconv.FormatFloat(100*d, 'f', 1, 64)
	if d >= 0 {
		s = "+" + s
	}
	return s
}

// fmtPctIv renders a proportion (0..1) with its interval: "87.5% [83.1%, 90.9%]".
func fmtPctIv(p float64, iv stats.Interval) string {
	f := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }
	return f(p) + " [" + f(iv.Low) + ", " + f(iv.High) + "]"
}

// productionIncumbent is the window's incumbent pipeline serving production:
// the incumbent with the most runs (several apps may have several), nil when
// none ran in the window.
func productionIncumbent(totals []store.PipelinePoint) *store.PipelinePoint {
	var inc *store.PipelinePoint
	for i := range totals {
		if totals[i].Mode == store.ModeIncumbent && (inc == nil || totals[i].Runs > inc.Runs) {
			inc = &totals[i]
		}
	}
	return inc
}

// newCutoverRow fills one candidate's answer from its window totals, its
// agreement pairs with the production incumbent, its latest suite verdict
// and its running verdict (each may be nil).
func newCutoverRow(p store.PipelinePoint, inc *store.PipelinePoint, a *store.Agreement, sv *suiteVerdict, live *eval.LiveCandidate) cutoverRow {
	r := cutoverRow{Candidate: p.Pipeline, Suite: sv, Live: live, Agreement: "—", CostRatio: "—", P95Ratio: "—",
		CostPerReq: fmtUSD(p.CostPerRequestUSD), P95: fmtMsOrUnknown(p.P95Ms) + " ms",
		SuiteQuality: "—", SuiteCost: "—", SuiteP95: "—"}
	if inc != nil {
		r.CostRatio = fmtRatio(p.CostPerRequestUSD, inc.CostPerRequestUSD)
		if p.P95Ms > 0 {
			r.P95Ratio = fmtRatio(p.P95Ms, inc.P95Ms)
		}
	}
	if a != nil && a.Pairs > 0 {
		r.Agreement = fmtPctIv(float64(a.Agree)/float64(a.Pairs), stats.Wilson(int(a.Agree), int(a.Pairs), stats.ZFor(0.95)))
	}
	r.Answer = cutoverNotYet
	if sv != nil {
		switch gate.Status(sv.Verdict) {
		case gate.Pass:
			r.Answer = cutoverYes
		case gate.Fail:
			r.Answer = cutoverNo
		}
		if c := sv.Comparison; c != nil {
			q := c.Comparison.Quality
			if q.N > 0 {
				r.SuiteQuality = fmtPts(q.Diff) + " pts [" + fmtPts(q.DiffCI.Low) + ", " + fmtPts(q.DiffCI.High) + "]"
			}
			if c.Comparison.CostRatio > 0 {
				r.SuiteCost = fmtRatioIv(c.Comparison.CostRatio, c.Comparison.CostRatioCI)
			}
			if c.Comparison.P95Ratio > 0 {
				r.SuiteP95 = fmtRatioIv(c.Comparison.P95Ratio, c.Comparison.P95RatioCI)
			}
		}
	}
	r.Blocker = blockerOf(sv, live)
	return r
}

// blockerOf names the one thing that blocks a cut-over, in this order: the
// latest suite run's first gate that did not PASS, its first segment found
// significantly worse, the live verdict's first row that FAILed; without a
// suite run, that one is missing. "" when nothing blocks.
func blockerOf(sv *suiteVerdict, live *eval.LiveCandidate) string {
	if sv == nil {
		return "no suite verdict yet: run a suite (agreement alone cannot PASS a candidate)"
	}
	if c := sv.Comparison; c != nil {
		for _, g := range c.Verdict.Gates {
			if g.Status != gate.Pass {
				return "gate " + g.Gate + " " + string(g.Status) + ": " + g.Reason
			}
		}
	}
	if len(sv.WorseOn) > 0 {
		return "segment " + sv.WorseOn[0] + " significantly worse in suite run " + shortID(sv.SuiteRunID, 16)
	}
	if live != nil && live.Verdict == gate.Fail {
		for _, g := range live.Gates {
			if g.Status == gate.Fail {
				return "live " + g.Gate + " FAIL: " + g.Reason
			}
		}
		return "live verdict FAIL"
	}
	if gate.Status(sv.Verdict) != gate.Pass {
		return "suite verdict " + sv.Verdict
	}
	return ""
}

// latestSuite is the newest finished suite run the page's cards name: its
// verdict, its baseline (the suite's incumbent pipeline) and when it started.
type latestSuite struct {
	SuiteRunID, Verdict, Baseline, Headline string
	Candidates                              []string
	StartedAt                               time.Time
}

// newestSuite returns the newest finished suite run, nil when there is none.
func newestSuite(runs []store.SuiteRun) *latestSuite {
	var best *store.SuiteRun
	for i := range runs {
		r := &runs[i]
		if r.Status == eval.SuiteStatusRunning || r.Status == eval.SuiteStatusCancelled {
			continue
		}
		if best == nil || r.StartedAt.After(best.StartedAt) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	return &latestSuite{SuiteRunID: best.SuiteRunID, Verdict: best.Verdict, Baseline: best.Incumbent,
		Headline: best.Headline, Candidates: best.Candidates, StartedAt: best.StartedAt}
}
