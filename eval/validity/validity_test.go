package validity

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestValidity runs the two simulations the cut-over decision relies on and
// prints their figures (go test -v -run TestValidity ./eval/validity). The
// seed is fixed, so the figures are the same on every run.
func TestValidity(t *testing.T) {
	ctx := context.Background()
	aa, err := Simulate(ctx, Config{Suites: 200, Cases: 300, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A/A, n=300: %s", aa)
	if aa.FailOrBetter > 0.05 {
		t.Errorf("A/A false alarms (FAIL or better) %.1f%% > 5%%", 100*aa.FailOrBetter)
	}
	drop, err := Simulate(ctx, Config{Suites: 200, Cases: 300, Drop: 0.05, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("5-point drop, n=300: %s", drop)
	if drop.NotPass < 0.80 {
		t.Errorf("planted 5-point drop caught (not PASS) %.1f%% < 80%%", 100*drop.NotPass)
	}
	if drop.MeanDiff > -0.03 || drop.MeanDiff < -0.07 {
		t.Errorf("planted drop: mean observed diff %+.3f, want about -0.05", drop.MeanDiff)
	}
}

func TestSimulateBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Drop: -0.1}, {Drop: 0.9}, {Suites: -1}} {
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
