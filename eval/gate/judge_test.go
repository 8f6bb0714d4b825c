package gate

import (
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// pairRows are the rows of a pairwise judge, in order.
var pairRows = []string{GateJudgeErrors, GatePositionConsistency, GateCanaries, GateJudgeFamily, GateHumanReview}

// kappaOf is a review figure of κ k with interval [lo, hi] over n pairs.
func kappaOf(k, lo, hi float64, n int) ReviewEvidence {
	return ReviewEvidence{Pairs: n, Reviews: n, Agreement: k, Kappa: &stats.Kappa{N: float64(n), Kappa: k, Confidence: 0.95, Interval: stats.Interval{Low: lo, High: hi}}}
}

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
	requireReview := NewDefaultPolicy()
	requireReview.Judge = &JudgePolicy{RequireReview: true}
	lowKappa := NewDefaultPolicy()
	floor, twenty := 0.3, 20
	lowKappa.Judge = &JudgePolicy{MinJudgeKappa: &floor, MinReviews: &twenty}
	tests := []struct {
		name     string
		policy   Policy
		ev       JudgeEvidence
		gates    []string // rows, in order
		withheld []string // substrings of the withheld reasons, in order
	}{
		{"a clean judge passes every rule", NewDefaultPolicy(), clean,
			pairRows, nil},
		{"no judge and no errors: no rows", NewDefaultPolicy(), JudgeEvidence{}, nil, nil},
		{"no judge, grader errors: the error rule alone", NewDefaultPolicy(),
			JudgeEvidence{Incumbent: arm("incumbent", 20, 100), Candidate: arm("candidate", 20, 100)},
			[]string{GateJudgeErrors}, []string{"incumbent incumbent-pipe: 20.0% of cases not judged"}},
		{"position consistency below the floor", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Consistent = 52 }),
			pairRows,
			[]string{"judge claude-sonnet-4: position consistency 0.52 (52 of 100"}},
		{"position consistency at the floor passes", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Consistent = 80 }),
			pairRows, nil},
		{"a looser floor", loose, with(func(e *JudgeEvidence) { e.Consistent = 52 }),
			pairRows, nil},
		{"nothing judged in both orders", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Judged, e.Consistent = 0, 0 }),
			pairRows, []string{"position consistency unknown"}},
		{"rubric judge: no consistency row", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Pairwise, e.Judged, e.Consistent = false, 0, 0 }),
			[]string{GateJudgeErrors, GateCanaries, GateJudgeFamily}, nil},
		{"the candidate's errors above the limit", NewDefaultPolicy(), with(func(e *JudgeEvidence) {
			e.Candidate, e.CandidateOnly = arm("candidate", 20, 100), 20
		}), pairRows,
			[]string{"candidate candidate-pipe: 20.0% of cases not judged (judge reply has no verdict) > 10%"}},
		{"shares below the limit but significantly different", NewDefaultPolicy(), with(func(e *JudgeEvidence) {
			e.Candidate, e.CandidateOnly = arm("candidate", 9, 100), 9
		}), pairRows,
			[]string{"differ significantly"}},
		{"equal shares below the limit", NewDefaultPolicy(), with(func(e *JudgeEvidence) {
			e.Incumbent, e.Candidate = arm("incumbent", 5, 100), arm("candidate", 5, 100)
		}), pairRows, nil},
		{"a failed canary", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.CanaryFailures = []string{"padded (case c1): want tie or loss, got win"} }),
			pairRows,
			[]string{"judge claude-sonnet-4 is unreliable: failed 1 of 6 canaries (policy allows 0): padded (case c1)"}},
		{"one failed canary allowed", loose, with(func(e *JudgeEvidence) { e.CanaryFailures = []string{"padded (case c1)"} }),
			pairRows, nil},
		{"no canary ran", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Canaries = 0 }),
			pairRows, []string{"no canary could be run"}},
		{"same family warned", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.SameFamily = []string{"the incumbent single:claude (claude-sonnet-4)"} }),
			pairRows, nil},
		{"same family refused", refuse, with(func(e *JudgeEvidence) { e.SameFamily = []string{"the incumbent single:claude (claude-sonnet-4)"} }),
			pairRows,
			[]string{"judge claude-sonnet-4 is of the same model family (anthropic) as the incumbent single:claude"}},
		{"κ's lower bound below the floor", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Review = kappaOf(0.42, 0.25, 0.59, 80) }),
			pairRows, []string{"judge claude-sonnet-4: Cohen's κ with human reviewers 0.42 (95% CI 0.25 to 0.59"}},
		{"κ above the floor, lower bound below it", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Review = kappaOf(0.7, 0.55, 0.85, 50) }),
			pairRows, []string{"the lower bound 0.55 < 0.60 (judge.min_judge_kappa)"}},
		{"κ's lower bound at the floor passes", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Review = kappaOf(0.8, 0.6, 0.95, 120) }), pairRows, nil},
		{"too few reviews: not validated, a warning", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Review = kappaOf(0.1, -0.3, 0.5, 12) }), pairRows, nil},
		{"too few reviews with require_review", requireReview, with(func(e *JudgeEvidence) { e.Review = kappaOf(0.9, 0.7, 1, 12) }),
			pairRows, []string{"judge claude-sonnet-4 is not validated by human review: 12 reviewed pairs, judge.min_reviews 50; so far Cohen's κ"}},
		{"no review at all with require_review", requireReview, clean, pairRows, []string{"not validated by human review: 0 reviewed pairs"}},
		{"enough reviews but κ undefined", NewDefaultPolicy(), with(func(e *JudgeEvidence) { e.Review = ReviewEvidence{Pairs: 60, Reviews: 60, Note: "κ undefined"} }), pairRows, nil},
		{"a lower floor and fewer reviews", lowKappa, with(func(e *JudgeEvidence) { e.Review = kappaOf(0.5, 0.32, 0.68, 20) }), pairRows, nil},
		{"rubric judge: no review row", requireReview, with(func(e *JudgeEvidence) { e.Pairwise, e.Judged, e.Consistent = false, 0, 0 }),
			[]string{GateJudgeErrors, GateCanaries, GateJudgeFamily}, nil},
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
				if r.Gate == GateHumanReview && tt.ev.Review.Pairs < tt.policy.JudgeRules().MinReviews && !strings.Contains(r.Reason, "not validated by human review") {
					t.Errorf("a judge with %d reviewed pairs: %q does not say it is not validated", tt.ev.Review.Pairs, r.Reason)
				}
				if r.Gate == GateHumanReview && r.Status == Inconclusive && tt.ev.Review.Kappa != nil && r.Interval == nil {
					t.Errorf("the κ row carries no interval: %+v", r)
				}
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
