package validity

import (
	"context"
	"math"
	"testing"

	"go.uber.org/goleak"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTargets checks the shipped default policy against the error-rate
// targets at P = 0.85, D = 0.20 with 1,000 suites per scenario and a fixed
// seed (the figures are the same on every run; bigger runs: the validity
// command). Bounds that sit at a nominal rate allow three standard errors of
// the simulation (√(p(1−p)/K)).
func TestTargets(t *testing.T) {
	ctx := context.Background()
	const suites = 1000
	se := func(p float64) float64 { return 3 * math.Sqrt(p*(1-p)/suites) }
	pol := gate.NewDefaultPolicy()
	run := func(name string, cfg Config) Rates {
		t.Helper()
		cfg.Suites = suites
		r, err := Simulate(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", name, r)
		if s := r.Pass + r.Fail + r.Inconclusive; math.Abs(s-1) > 1e-9 {
			t.Errorf("%s: shares sum to %v", name, s)
		}
		return r
	}
	aa := run("A/A n=300", Config{Cases: 300, Seed: 1})
	if aa.Fail > 0.05 {
		t.Errorf("A/A n=300: P(FAIL | equal) %.1f%% > 5%%", 100*aa.Fail)
	}
	if aa.Pass < 0.05 {
		t.Errorf("A/A n=300: P(PASS | equal) %.1f%%: the policy cannot approve an equal candidate", 100*aa.Pass)
	}
	drop := run("5-point drop n=300", Config{Cases: 300, Effect: -0.05, Seed: 2})
	if drop.Pass > 0.05 {
		t.Errorf("drop n=300: P(PASS | worse) %.1f%% > 5%%", 100*drop.Pass)
	}
	if drop.MeanDiff > -0.04 || drop.MeanDiff < -0.06 {
		t.Errorf("planted drop: mean observed diff %+.3f, want about -0.05", drop.MeanDiff)
	}
	// The recommended n: at most 1.25× the exact McNemar minimum, and the gate
	// FAILs there in at least 80% of suites. It is planned at 85% exact power,
	// so 80% lies 4 SE of 1,000 suites below the expected rate.
	n, err := stats.Recommend(stats.Scenario{PIncumbent: 0.85, Discordance: 0.2, Effect: -0.05}, pol.Quality.Design(pol.Confidence), 0.8, pol.MinN)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := stats.McNemarExactSampleSize(0.05, 0.2, 0.05, 0.8)
	if err != nil || exact != 658 {
		t.Fatalf("exact McNemar minimum = %d, %v; want 658", exact, err)
	}
	if n > exact*5/4 {
		t.Errorf("plan for a 5-point drop %d > 1.25 × %d", n, exact)
	}
	atPlan := run("5-point drop at the planned n", Config{Cases: n, Effect: -0.05, Seed: 3})
	if atPlan.Fail < 0.8 {
		t.Errorf("drop at planned n=%d: P(FAIL | worse) %.1f%% < 80%%", n, 100*atPlan.Fail)
	}

	// The sequential test bets adaptively (aGRAPA): anytime-valid at the
	// margin, and deciding a 5-point drop near the fixed-n plan's size.
	seqAA := run("sequential A/A", Config{Cases: 1500, LookEvery: 25, Seed: 4})
	if seqAA.Fail > 0.025+se(0.025) {
		t.Errorf("sequential A/A: P(FAIL | equal) %.1f%% > 2.5%% (plus 3 SE)", 100*seqAA.Fail)
	}
	seqDrop := run("sequential 5-point drop", Config{Cases: 1500, LookEvery: 25, Effect: -0.05, Seed: 5})
	if seqDrop.Pass > 0.025+se(0.025) || seqDrop.Fail < 0.8 {
		t.Errorf("sequential drop: P(PASS | worse) %.1f%%, P(FAIL | worse) %.1f%%", 100*seqDrop.Pass, 100*seqDrop.Fail)
	}
	if seqDrop.MedianCasesToFail == 0 || seqDrop.MedianCasesToFail > n*5/4 {
		t.Errorf("sequential drop: median cases to FAIL %d, want at most 1.25 × the fixed-n plan %d", seqDrop.MedianCasesToFail, n)
	}
	// At the margin itself (3 points worse) the sequential PASS stays rare.
	seqMargin := run("sequential 3-point drop", Config{Cases: 1500, LookEvery: 25, Effect: -0.03, Seed: 6})
	if seqMargin.Pass > 0.025+se(0.025) {
		t.Errorf("sequential at the margin: P(PASS) %.1f%% > 2.5%% (plus 3 SE)", 100*seqMargin.Pass)
	}
	// Judge scores, sequentially: the bets adapt to their small variance.
	jq := Config{Cases: 1500, LookEvery: 25, Effect: -0.03, Discordance: 0.3, Scores: ScoresJudge, Seed: 7}
	if r := run("sequential judge scores at the margin", jq); r.Pass > 0.025+se(0.025) {
		t.Errorf("sequential judge scores at the margin: P(PASS) %.1f%% > 2.5%% (plus 3 SE)", 100*r.Pass)
	}
}

// TestPolicyPlanTargets: the whole default policy — quality, cost per
// request, p95 latency — at the n the whole-policy plan gives (what `power`
// prints) PASSes an equal candidate in at least 80% of simulated suites and
// FAILs a 5-point drop in at least 80%, at 10, 20 and 30% discordance,
// through the gate's own code (stats.Compare, gate.Decide). Cost and latency
// are equal (validity.NewDefaultModel).
func TestPolicyPlanTargets(t *testing.T) {
	ctx := context.Background()
	pol := gate.NewDefaultPolicy()
	model := NewDefaultModel()
	for i, d := range []float64{0.1, 0.2, 0.3} {
		pl, err := gate.PlanPolicy(pol, model.PolicyModel(0.85, d, 0.05, ScoresPassFail), gate.PlanPower, stats.Z95)
		if err != nil || pl.N == 0 {
			t.Fatalf("D=%.1f: plan %+v, %v", d, pl, err)
		}
		eq, err := Simulate(ctx, Config{Suites: 1000, Cases: pl.N, Discordance: d, Seed: uint64(10 + i)})
		if err != nil {
			t.Fatal(err)
		}
		drop, err := Simulate(ctx, Config{Suites: 1000, Cases: pl.N, Discordance: d, Effect: -0.05, Seed: uint64(20 + i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("D=%.1f: whole-policy plan n=%d (binding %s; PASS %d, FAIL %d), planned P(PASS|equal) %.1f%%; simulated: equal %s; drop %s",
			d, pl.N, pl.Binding, pl.PassN, pl.FailN, 100*pl.IfEqual.Pass, eq, drop)
		if eq.Pass < 0.8 || drop.Fail < 0.8 {
			t.Errorf("D=%.1f at n=%d: P(PASS | equal) %.1f%%, P(FAIL | 5 points worse) %.1f%%, want both ≥ 80%%", d, pl.N, 100*eq.Pass, 100*drop.Fail)
		}
	}
}

// TestGatesAtTheMargin: a candidate exactly at each gate's threshold passes
// it in at most α/2 of suites (plus 3 simulation SE): the p95 test at a
// latency ratio of 1.25, the cost test at 1.10, each alone.
func TestGatesAtTheMargin(t *testing.T) {
	ctx := context.Background()
	const suites = 2000
	limit := 0.025 + 3*math.Sqrt(0.025*0.975/suites)
	lat := gate.Policy{Version: "p95", Confidence: 0.95, Latency: &gate.LatencyGate{MaxP95Ratio: 1.25}}
	cost := gate.Policy{Version: "cost", Confidence: 0.95, Cost: &gate.CostGate{MaxRatio: 1.10}}
	for _, n := range []int{300, 1000} {
		m := NewDefaultModel()
		m.LatencyRatio = 1.25
		r, err := Simulate(ctx, Config{Suites: suites, Cases: n, Seed: 31, Policy: lat, Model: m})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("p95 ratio at its ceiling: %s", r)
		if r.Pass > limit {
			t.Errorf("p95 at its ceiling, n=%d: P(PASS) %.2f%% > %.2f%%", n, 100*r.Pass, 100*limit)
		}
		m = NewDefaultModel()
		m.CostRatio = 1.10
		r, err = Simulate(ctx, Config{Suites: suites, Cases: n, Seed: 32, Policy: cost, Model: m})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("cost ratio at its ceiling: %s", r)
		if r.Pass > limit {
			t.Errorf("cost at its ceiling, n=%d: P(PASS) %.2f%% > %.2f%%", n, 100*r.Pass, 100*limit)
		}
	}
}

// TestLooksAtTheMargin: a candidate exactly at the margin (3 points worse),
// run once and then again after the report's "N more cases" on the same set
// and candidate version, PASSes over the two looks in at most α/2 of suites
// (plus 3 SE) under the default policy's group-sequential plan. Without the
// plan (default-2: each run its own fixed-n test) the second look raises it
// (3.5% over 1,500 suites: `validity --looks 2 --policy default-2`).
func TestLooksAtTheMargin(t *testing.T) {
	ctx := context.Background()
	const suites = 1500
	limit := 0.025 + 3*math.Sqrt(0.025*0.975/suites)
	planned, err := Simulate(ctx, Config{Suites: suites, Cases: 300, Effect: -0.03, Looks: 2, Seed: 41})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("default-3 (planned looks): %s", planned)
	if planned.Pass > limit {
		t.Errorf("two planned looks at the margin: P(PASS) %.2f%% > %.2f%%", 100*planned.Pass, 100*limit)
	}
}

// TestJudgeScoreTargets: the judge-score quality gate on tie-heavy 1–10
// scores (70% of pairs keep the incumbent's score) keeps its errors at the
// nominal α/2 (plus 3 simulation SE): PASS at the margin (0.3 points worse on
// 1–10) and FAIL when equal, at n = 100 and 300, stratified by three
// categories as suite reports are.
func TestJudgeScoreTargets(t *testing.T) {
	ctx := context.Background()
	const suites = 4000
	limit := 0.025 + 3*math.Sqrt(0.025*0.975/suites)
	q := gate.Policy{Version: "judge", Confidence: 0.95, MinN: 100, Quality: gate.NewDefaultPolicy().Quality, Looks: &gate.LooksGate{Spending: gate.SpendingNone}}
	for _, n := range []int{100, 300} {
		margin, err := Simulate(ctx, Config{Suites: suites, Cases: n, Effect: -0.03, Discordance: 0.3, Scores: ScoresJudge, Seed: 51, Policy: q})
		if err != nil {
			t.Fatal(err)
		}
		equal, err := Simulate(ctx, Config{Suites: suites, Cases: n, Discordance: 0.3, Scores: ScoresJudge, Seed: 52, Policy: q})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("judge scores n=%d: at the margin %s; equal %s", n, margin, equal)
		if margin.Pass > limit || equal.Fail > limit {
			t.Errorf("judge scores n=%d: P(PASS | at the margin) %.2f%%, P(FAIL | equal) %.2f%%, want ≤ %.2f%%", n, 100*margin.Pass, 100*equal.Fail, 100*limit)
		}
	}
}

func TestSimulateBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Effect: -0.3}, {Discordance: 1.5}, {Suites: -1}, {LookEvery: -1}, {PIncumbent: 0.95, Discordance: 0.2, Effect: 0.15},
		{LookEvery: 5, Policy: gate.Policy{Version: "c", Confidence: 0.95, Cost: &gate.CostGate{MaxRatio: 1}}},
		{Scores: "stars"}, {Scores: ScoresJudge, Discordance: 0.05, Effect: -0.3}, {Looks: -2},
		{Model: Model{CostRatio: -1, LatencyRatio: 1}}, {Model: Model{CostRatio: 1, LatencyRatio: 1, LatencyCorrelation: 2}}} {
		if _, err := Simulate(context.Background(), cfg); err == nil {
			t.Errorf("%+v: want error", cfg)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Simulate(ctx, Config{Suites: 50}); err == nil {
		t.Error("cancelled: want error")
	}
}
