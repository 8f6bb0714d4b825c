package web

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// judgmentsView is a trace's pairwise judgments (real pairs and canaries) and,
// for a suite case, each judge's record over the whole suite run: position
// consistency (store.JudgeStats, figure.PositionConsistency), outcomes and
// canaries. Err says why they could not be read.
type judgmentsView struct {
	Rows       []store.Judgment
	Stats      []store.JudgeStat
	SuiteRunID string // the scope of Stats; "" for a live trace
	Err        string
}

// judgmentsOf reads the judgments of a trace, and the suite run's judge
// figures when the trace is a suite case. A store without the role gives an
// empty view (the page then has no judgment section); a failed read says so.
func (s *server) judgmentsOf(c *gin.Context, tr store.Trace) judgmentsView {
	rd := s.read.Judgments
	if rd == nil {
		return judgmentsView{}
	}
	ctx := c.Request.Context()
	v := judgmentsView{SuiteRunID: tr.Request.Metadata["suite_run_id"]}
	var err error
	if v.Rows, err = rd.ListJudgments(ctx, store.JudgmentQuery{RequestID: tr.Request.RequestID}); err != nil {
		_ = c.Error(fmt.Errorf("web: list judgments of %q: %w", tr.Request.RequestID, err))
		return judgmentsView{Err: "The judgments of this trace could not be read from the store."}
	}
	if len(v.Rows) > 0 && v.SuiteRunID != "" {
		if v.Stats, err = rd.JudgeStats(ctx, store.JudgmentQuery{SuiteRunID: v.SuiteRunID}); err != nil {
			_ = c.Error(fmt.Errorf("web: judge stats of suite run %q: %w", v.SuiteRunID, err))
			v.Err = "The judges' figures for this suite run could not be read from the store."
		}
	}
	return v
}

// liveJudgesView is the overview's live judges: per (candidate, judge) the
// live judgments judged in the window. Err says why they could not be read.
type liveJudgesView struct {
	Stats []store.JudgeStat
	Err   string
}

// liveJudgesOf reads the live judges' figures of [from, to); a store without
// the role gives an empty view (no section).
func (s *server) liveJudgesOf(c *gin.Context, from, to time.Time) liveJudgesView {
	rd := s.read.LiveJudgments
	if rd == nil {
		return liveJudgesView{}
	}
	st, err := rd.LiveJudgeStats(c.Request.Context(), store.LiveJudgmentQuery{From: from, To: to})
	if err != nil {
		_ = c.Error(fmt.Errorf("web: live judge stats: %w", err))
		return liveJudgesView{Err: "The live judges' figures could not be read from the store."}
	}
	return liveJudgesView{Stats: st}
}

// fmtProb is an inclusion probability: up to 4 significant digits.
func fmtProb(p float64) string { return strconv.FormatFloat(p, 'g', 4, 64) }

// orderCell is one order's verdict as shown: the verdict, or "error".
func orderCell(verdict string) string {
	if verdict == "" {
		return "error"
	}
	return verdict
}

// judgmentKind is "pair" for a real pair of a suite run, "live pair" for a
// live one, else the canary's kind.
func judgmentKind(j store.Judgment) string {
	if j.Canary == "" && j.SuiteRunID == "" {
		return "live pair"
	}
	if j.Canary == "" {
		return "pair"
	}
	status := "passed"
	if !j.CanaryPassed {
		status = "FAILED"
	}
	return fmt.Sprintf("canary %s (%s)", j.Canary, status)
}

// outcomeClass colours a pairwise outcome from the candidate's side.
func judgmentClass(outcome string) string {
	switch outcome {
	case store.JudgmentWin:
		return "status status-ok"
	case store.JudgmentLoss, store.JudgmentError:
		return "status status-error"
	case store.JudgmentInconsistent:
		return "status status-warn"
	}
	return "status status-other"
}

// reportJudging is what the suite-run page shows of the judges from a suite
// run's JSON report (eval.Report.Judging): per candidate the judge, its
// position consistency, whether it was trusted and its family warning.
type reportJudge struct {
	Candidate  string   `json:"candidate"`
	Judge      string   `json:"judge"`
	Family     string   `json:"family"`
	SameFamily []string `json:"same_family"`
	Unreliable bool     `json:"unreliable"`
	Reasons    []string `json:"reasons"`
	Pairs      *struct {
		Judged              int     `json:"judged"`
		PositionConsistency float64 `json:"position_consistency"`
	} `json:"pairs"`
	Canaries []struct {
		Passed bool `json:"passed"`
	} `json:"canaries"`
	// Review is the gate's human_review row: κ with human reviewers and its
	// interval against the floor, or "not validated by human review" (the
	// report's Markdown, shown below, has the table per set and segment).
	Review string `json:"review"`
}

// canaryCounts is "passed of ran".
func (r reportJudge) canaryCounts() (passed, ran int) {
	for _, c := range r.Canaries {
		ran++
		if c.Passed {
			passed++
		}
	}
	return passed, ran
}

// reportJudging reads the "judging" section of a suite run's JSON report;
// nil when absent or not JSON.
func reportJudging(reportJSON string) []reportJudge {
	var r struct {
		Judging []reportJudge `json:"judging"`
	}
	if json.Unmarshal([]byte(reportJSON), &r) != nil {
		return nil
	}
	var out []reportJudge
	for _, j := range r.Judging {
		if j.Judge != "" {
			out = append(out, j)
		}
	}
	return out
}

// canaryLine is "canaries passed P of N".
func canaryLine(j reportJudge) string {
	p, n := j.canaryCounts()
	return fmt.Sprintf("canaries passed %d of %d", p, n)
}

// judgeFigurePrefix introduces the figures after the judge's candidate.
func judgeFigurePrefix(j reportJudge) string {
	if j.Pairs != nil {
		return ": position consistency "
	}
	return ":"
}
