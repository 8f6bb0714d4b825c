package gate

import (
	"strings"
	"testing"
)

func TestCheckJudge(t *testing.T) {
	arm := func(side string, errs, total int) ArmErrors {
		return ArmErrors{Side: side, Pipeline: side + "-pipe", Errors: errs, Total: total, Example: "judge reply has no verdict"}
	}
	clean := JudgeEvidence{Judge: "claude-sonnet-4", Pairwise: true, Judged: 100, Consistent: 90,
		Incumbent: arm("incumbent", 0, 100), Candidate: arm("candidate", 0, 100), Canaries: 6, Family: "anthropic"}
	with := func(edit func(*JudgeEvidence)) JudgeEvidence { ev := clean; edit(&ev); return ev }
	refuse := NewDefaultPolicy()
	refuse.Judge = &JudgePolicy{SameFamily: SameFamilyRefuse}
	loose := NewDefaultPolicy()
	one, half := 1, 0.5
	loose.Judge = &JudgePolicy{MaxCanaryFailures: &one, MinPositionConsistency: &half}
	tests := []struct {
		name     string
		policy   Policy
		ev       JudgeEvidence
		gates    []string // rows, in order
		withheld []string // substrings of the withheld reasons, in order
	}{
		{"a clean judge passes every rule", NewDefaultPolicy(), clean,
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, nil},
		{"no judge and no errors: no rows", NewDefaultPolicy(), JudgeEvidence{}, nil, nil},
		{"no judge, grader errors: the error rule alone", NewDefaultPolicy(),
			JudgeEvidence{Incumbent: arm("incumbent", 20, 100), Candidate: arm("candidate", 20, 100)},
			[]string{GateJudgeErrors}, []string{"incumbent incumbent-pipe: 20.0% of cases not judged"}},
		{"position consistency below the floor", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Consistent = 52 }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily},
			[]string{"judge claude-sonnet-4: position consistency 0.52 (52 of 100"}},
		{"position consistency at the floor passes", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Consistent = 80 }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, nil},
		{"a looser floor", loose, with(func(e *JudgeEvidence) { e.Consistent = 52 }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, nil},
		{"nothing judged in both orders", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Judged, e.Consistent = 0, 0 }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, []string{"position consistency unknown"}},
		{"rubric judge: no consistency row", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Pairwise, e.Judged, e.Consistent = false, 0, 0 }),
			[]string{GateJudgeErrors, GateCanaries, GateJudgeFamily}, nil},
		{"the candidate's errors above the limit", NewDefaultPolicy(), with(func(e *JudgeEvidence) {
			e.Candidate, e.CandidateOnly = arm("candidate", 20, 100), 20
		}), []string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily},
			[]string{"candidate candidate-pipe: 20.0% of cases not judged (judge reply has no verdict) > 10%"}},
		{"shares below the limit but significantly different", NewDefaultPolicy(), with(func(e *JudgeEvidence) {
			e.Candidate, e.CandidateOnly = arm("candidate", 9, 100), 9
		}), []string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily},
			[]string{"differ significantly"}},
		{"equal shares below the limit", NewDefaultPolicy(), with(func(e *JudgeEvidence) {
			e.Incumbent, e.Candidate = arm("incumbent", 5, 100), arm("candidate", 5, 100)
		}), []string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, nil},
		{"a failed canary", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.CanaryFailures = []string{"padded (case c1): want tie or loss, got win"} }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily},
			[]string{"judge claude-sonnet-4 is unreliable: failed 1 of 6 canaries (policy allows 0): padded (case c1)"}},
		{"one failed canary allowed", loose, with(func(e *JudgeEvidence) { e.CanaryFailures = []string{"padded (case c1)"} }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, nil},
		{"no canary ran", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Canaries = 0 }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, []string{"no canary could be run"}},
		{"same family warned", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.SameFamily = []string{"the incumbent single:claude (claude-sonnet-4)"} }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily}, nil},
		{"same family refused", refuse, with(func(e *JudgeEvidence) { e.SameFamily = []string{"the incumbent single:claude (claude-sonnet-4)"} }),
			[]string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily},
			[]string{"judge claude-sonnet-4 is of the same model family (anthropic) as the incumbent single:claude"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, withheld := CheckJudge(tt.policy, tt.ev)
			var gates []string
			for _, r := range rows {
				gates = append(gates, r.Gate)
				if r.Reason == "" {
					t.Errorf("row %s has no reason", r.Gate)
				}
			}
			if strings.Join(gates, ",") != strings.Join(tt.gates, ",") {
				t.Errorf("rows %v, want %v", gates, tt.gates)
			}
			if len(withheld) != len(tt.withheld) {
				t.Fatalf("withheld %q, want %d containing %q", withheld, len(tt.withheld), tt.withheld)
			}
			for i, w := range tt.withheld {
				if !strings.Contains(withheld[i], w) {
					t.Errorf("withheld[%d] %q lacks %q", i, withheld[i], w)
				}
			}
			for _, r := range rows {
				if r.Gate == GateJudgeFamily && len(tt.ev.SameFamily) > 0 && len(tt.withheld) == 0 && !strings.HasPrefix(r.Reason, "WARNING") {
					t.Errorf("same family not warned: %q", r.Reason)
				}
			}
			// A withheld verdict is INCONCLUSIVE whatever the gates said.
			v := Verdict{Verdict: Fail, Claim: ClaimWorse, Plan: &Plan{}, Gates: []Result{{Gate: "quality", Status: Fail}}}
			v.WithholdForJudge(rows, withheld)
			if want := map[bool]Status{true: Inconclusive, false: Fail}[len(withheld) > 0]; v.Verdict != want || len(v.Gates) != len(rows)+1 || v.Gates[len(rows)].Gate != "quality" {
				t.Errorf("withheld verdict %+v", v)
			}
		})
	}
}
