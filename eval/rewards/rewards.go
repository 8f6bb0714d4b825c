// Package rewards turns stored suite runs into training rows for the next
// conductor: (task, conductor prompt, raw plan, reward) with the Conductor
// paper's reward — 0 when the plan could not be parsed, 0.5 when it was well
// formed but the final answer was wrong, 1 when the answer was correct.
package rewards

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Rewards (the paper's).
const (
	RewardUnparsable = 0.0
	RewardWrong      = 0.5
	RewardCorrect    = 1.0
)

// Row is one conductor run as a training example. ConductorPrompt is the
// planning call's chat messages as sent (JSON array); RawPlan the conductor's
// text.
type Row struct {
	SuiteRunID      string          `json:"suite_run_id"`
	CaseID          string          `json:"case_id"`
	RunID           string          `json:"run_id"`
	Pipeline        string          `json:"pipeline"`
	Category        string          `json:"category"`
	Task            string          `json:"task"`
	ConductorPrompt json.RawMessage `json:"conductor_prompt"`
	RawPlan         string          `json:"raw_plan"`
	Reward          float64         `json:"reward"`
	Reason          string          `json:"reason"` // "unparsable", "wrong" or "correct"
}

// Summary counts what Build saw.
type Summary struct {
	Rows          int `json:"rows"`
	Correct       int `json:"correct"`
	Wrong         int `json:"wrong"`
	Unparsable    int `json:"unparsable"`
	GraderErrors  int `json:"grader_errors"`   // runs left out: their grader could not judge
	NoScore       int `json:"no_score"`        // runs left out: never graded
	NoPlanningRun int `json:"no_planning_run"` // runs without a conductor step (not a conductor)
}

// SuiteData is what Build reads of one suite run.
type SuiteData struct {
	SuiteRunID string
	Cases      []store.Case
	Runs       []store.Run
	Steps      []store.Step // the conductor steps (role "conductor")
	Scores     []store.Score
}

// Build makes one row per run that has a conductor step (its first by
// index is the prompt): reward 0 when the run's status is plan_unparsable or
// it has no parsed plan, else 1 when a score passed and 0.5 when none did.
// Runs whose grader errored or that have no score are counted and left out.
func Build(d SuiteData) ([]Row, Summary) {
	cases := map[string]store.Case{}
	for _, c := range d.Cases {
		cases[c.CaseID] = c
	}
	prompt := map[string]store.Step{}
	for _, s := range d.Steps {
		if s.Role != "conductor" {
			continue
		}
		if cur, ok := prompt[s.RunID]; !ok || s.Index < cur.Index {
			prompt[s.RunID] = s
		}
	}
	type grade struct{ passed, graded, errored bool }
	grades := map[string]grade{}
	for _, s := range d.Scores {
		g := grades[s.RunID]
		if s.Error != "" {
			g.errored = true
		} else {
			g.graded = true
			g.passed = g.passed || s.Passed
		}
		grades[s.RunID] = g
	}
	var rows []Row
	var sum Summary
	for _, r := range d.Runs {
		step, ok := prompt[r.RunID]
		if !ok {
			sum.NoPlanningRun++
			continue
		}
		caseID := r.RequestID[strings.LastIndex(r.RequestID, "/")+1:]
		c := cases[caseID]
		row := Row{SuiteRunID: d.SuiteRunID, CaseID: caseID, RunID: r.RunID, Pipeline: r.Pipeline, Category: c.Category,
			Task: c.Input, ConductorPrompt: json.RawMessage(step.Messages), RawPlan: r.PlanRaw}
		if !json.Valid([]byte(step.Messages)) {
			row.ConductorPrompt, _ = json.Marshal(step.Messages)
		}
		g := grades[r.RunID]
		switch {
		case r.Status == store.StatusPlanUnparsable || r.Plan == "":
			row.Reward, row.Reason = RewardUnparsable, "unparsable"
			sum.Unparsable++
		case g.errored && !g.graded:
			sum.GraderErrors++
			continue
		case !g.graded:
			sum.NoScore++
			continue
		case g.passed:
			row.Reward, row.Reason = RewardCorrect, "correct"
			sum.Correct++
		default:
			row.Reward, row.Reason = RewardWrong, "wrong"
			sum.Wrong++
		}
		rows = append(rows, row)
	}
	sum.Rows = len(rows)
	return rows, sum
}

// Write writes rows as JSONL.
func Write(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("rewards: write %s: %w", r.RunID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("rewards: write: %w", err)
	}
	return nil
}
