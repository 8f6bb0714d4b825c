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
		cfg.Suites, cfg.Resamples = suites, 100 // only the cost and latency gates use the bootstrap
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

	seqAA := run("sequential A/A", Config{Cases: 1500, LookEvery: 25, Seed: 4})
	if seqAA.Fail > 0.05 {
		t.Errorf("sequential A/A: P(FAIL | equal) %.1f%% > 5%%", 100*seqAA.Fail)
	}
	seqDrop := run("sequential 5-point drop", Config{Cases: 1500, LookEvery: 25, Effect: -0.05, Seed: 5})
	if seqDrop.Pass > 0.05 {
		t.Errorf("sequential drop: P(PASS | worse) %.1f%% > 5%%", 100*seqDrop.Pass)
	}
	if seqDrop.MedianCasesToFail == 0 || seqDrop.MedianCasesToFail >= n {
		t.Errorf("sequential drop: median cases to FAIL %d, want below the fixed-n plan %d", seqDrop.MedianCasesToFail, n)
	}
	// At the margin itself (3 points worse) the sequential PASS stays rare.
	seqMargin := run("sequential 3-point drop", Config{Cases: 1500, LookEvery: 25, Effect: -0.03, Seed: 6})
	if seqMargin.Pass > 0.025+se(0.025) {
		t.Errorf("sequential at the margin: P(PASS) %.1f%% > 2.5%% (plus 3 SE)", 100*seqMargin.Pass)
	}
}

func TestSimulateBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Effect: -0.3}, {Discordance: 1.5}, {Suites: -1}, {LookEvery: -1}, {PIncumbent: 0.95, Discordance: 0.2, Effect: 0.15},
		{LookEvery: 5, Policy: gate.Policy{Version: "c", Confidence: 0.95, Cost: &gate.CostGate{MaxRatio: 1}}}} {
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
