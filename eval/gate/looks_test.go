package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// TestNextLook walks an O'Brien–Fleming-like plan of 2,000 cases: a first look at 500 cases
// (fraction 0.25, an O'Brien–Fleming-like boundary well above 1.96), a
// second at the plan's end (the fixed-n boundary barely raised), a repeat
// with no new cases (blocked: it decides nothing) and a run after the last
// look (final and blocked); a policy without looks gives no plan.
func TestNextLook(t *testing.T) {
	p := NewDefaultPolicy()
	p.Looks = &LooksGate{Spending: stats.SpendingOBrienFleming}
	first, err := NextLook(p, nil, 2000, 500, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := stats.Boundaries(stats.SpendingOBrienFleming, 0.025, []float64{0.25})
	if first.This.Index != 1 || first.This.Fraction != 0.25 || first.This.Boundary != want[0] || first.This.Boundary < 4 || first.Blocked || first.Final {
		t.Errorf("first look: %+v", first)
	}
	if c := first.This.Confidence; math.Abs(stats.ZFor(c)-first.This.Boundary) > 1e-6 {
		t.Errorf("look confidence %v has quantile %v, want the boundary %v", c, stats.ZFor(c), first.This.Boundary)
	}
	second, err := NextLook(p, []Look{first.This}, 0, 2400, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	if second.This.Index != 2 || second.MaxCases != 2000 || second.This.Fraction != 1 || !second.Final || second.Blocked ||
		second.This.Boundary < 1.96 || second.This.Boundary > 2.0 {
		t.Errorf("second look: %+v", second)
	}
	if !strings.Contains(second.Text(), "look 2 of a group-sequential plan of 2000 cases") {
		t.Errorf("text: %s", second.Text())
	}
	again, _ := NextLook(p, []Look{first.This}, 0, 500, "run-2b")
	if !again.Blocked || again.Final || again.Level(0.025) != 0 || !strings.Contains(again.Text(), "no more cases than look 1") {
		t.Errorf("repeat look: %+v %s", again, again.Text())
	}
	after, _ := NextLook(p, []Look{first.This, second.This}, 0, 3000, "run-3")
	if !after.Blocked || !after.Final || !strings.Contains(after.LookAdvice(100, 0), "its α is spent") {
		t.Errorf("after the last look: %+v", after)
	}
	if lp, err := NextLook(NewPolicyV2(), nil, 2000, 500, "x"); lp != nil || err != nil {
		t.Errorf("looks off: %+v, %v", lp, err)
	}
	if _, err := NextLook(p, []Look{{Fraction: 0.5, MaxCases: 100}, {Fraction: 0.4, MaxCases: 100}}, 0, 90, "x"); err == nil {
		t.Error("looks out of order: want error")
	}
}

// TestEvaluateLook: the same comparison that PASSes as a fixed-n run stays
// INCONCLUSIVE as an early look of a long plan (its intervals, computed at
// the look's level, are wider), and a blocked look decides nothing.
func TestEvaluateLook(t *testing.T) {
	inc, cand := make([]stats.Obs, 0, 600), make([]stats.Obs, 0, 600)
	for i := range 600 {
		o := stats.Obs{Graded: true, Passed: i%5 != 0, Score: 1, CostUSD: 0.001, LatencyMs: float64(100 + i%50), Calls: 1}
		if !o.Passed {
			o.Score = 0
		}
		inc, cand = append(inc, o), append(cand, o) // identical answers
	}
	p := Policy{Version: "t", Confidence: 0.95, Quality: &QualityGate{MarginPoints: 3}, Looks: &LooksGate{Spending: stats.SpendingOBrienFleming, MaxCases: 6000}}
	fixed, err := stats.Compare(inc, cand, stats.Options{Seed: 1, NoArmIntervals: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := Evaluate(p, fixed, nil); v.Verdict != Pass {
		t.Fatalf("fixed n: %s\n%s", v.Verdict, v.Markdown())
	}
	c, lp, err := CompareLook(p, inc, cand, stats.Options{Seed: 1, NoArmIntervals: true}, nil, false, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	v := EvaluateLook(p, c, nil, lp)
	if lp == nil || lp.This.Fraction != 0.1 || v.Verdict != Inconclusive || v.Look != lp || c.DecisionConfidence <= 0.999 {
		t.Errorf("look at 0.1: %+v, verdict %s, decision level %v", lp, v.Verdict, c.DecisionConfidence)
	}
	if !strings.Contains(v.Markdown(), "This run is look 1 of a group-sequential plan of 6000 cases") {
		t.Errorf("markdown lacks the look:\n%s", v.Markdown())
	}
	blocked, _ := NextLook(p, []Look{lp.This}, 0, 600, "run-2")
	v = EvaluateLook(p, fixed, nil, blocked)
	if g := gate(v, "quality"); v.Verdict != Inconclusive || !strings.Contains(g.Reason, "spends no α") {
		t.Errorf("blocked look: %s %q", v.Verdict, g.Reason)
	}
}

// TestPlanSaysWhatItUses: a run with 2.7% discordant pairs is planned at
// 5.1% (a 5-point drop needs at least that many) and the plan says so; its
// sizes are called planned at 85% for the 80% asked.
func TestPlanSaysWhatItUses(t *testing.T) {
	c := comparison(300, 0, -0.02, 0.02, 1)
	c.Quality = stats.PairedOf(250, 4, 4, 42, stats.Z95)
	c.Incumbent.Accuracy = 0.85
	v := Evaluate(NewDefaultPolicy(), c, nil)
	pl := v.Plan
	if pl == nil || math.Abs(pl.Discordance-8.0/300) > 1e-12 || math.Abs(pl.PlannedDiscordance-0.051) > 1e-9 || pl.PlannedPower != 0.85 || pl.Power != 0.8 {
		t.Fatalf("plan %+v", pl)
	}
	eq, _ := stats.Operating(300, stats.Scenario{PIncumbent: 0.85, Discordance: 0.051}, NewDefaultPolicy().Quality.Design(0.95))
	if math.Abs(pl.IfEqual.Pass-eq.Pass) > 1e-9 || math.Abs(pl.IfEqual.Fail-eq.Fail) > 1e-9 {
		t.Errorf("error rates %+v, want those at the planned discordance %+v", pl.IfEqual, eq)
	}
	md := v.Markdown()
	for _, want := range []string{"2.7% discordant", "computed at 5.1% discordance, the observed 2.7% raised", "planned at 85% (80% asked + a 5-point planning margin)"} {
		if !strings.Contains(md, want) {
			t.Errorf("plan lacks %q:\n%s", want, md)
		}
	}
}

// TestJudgeUnits: judge-score margins and differences read in points on the
// 1–10 scale, never as accuracy points.
func TestJudgeUnits(t *testing.T) {
	c := comparison(300, -0.01, -0.05, 0.03, 0.5)
	c.Quality.Method = stats.MethodMeanScore
	c.Quality.DiffSD = 0.1
	v := Evaluate(Policy{Version: "j", Confidence: 0.95, Quality: &QualityGate{MarginPoints: 3, FailPoints: new(0.0)}}, c, nil)
	md := v.Markdown()
	if !strings.Contains(md, "-0.30 points on 1–10") || !strings.Contains(md, "worse by 0.5 points on 1–10") || strings.Contains(md, "pts") {
		t.Errorf("judge units:\n%s", md)
	}
}
