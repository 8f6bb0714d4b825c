package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBoundaries checks the Lan–DeMets boundaries against gsDesign's sfLDOF
// and sfLDPocock (one-sided 0.025, equally spaced looks), and that a look
// spending nothing cannot reject.
func TestBoundaries(t *testing.T) {
	for _, c := range []struct {
		kind string
		ts   []float64
		want []float64
	}{
		{SpendingOBrienFleming, []float64{0.5, 1}, []float64{2.9626, 1.9686}},
		{SpendingOBrienFleming, []float64{0.2, 0.4, 0.6, 0.8, 1}, []float64{4.8769, 3.3570, 2.6803, 2.2898, 2.0310}},
		{SpendingPocock, []float64{0.2, 0.4, 0.6, 0.8, 1}, []float64{2.4380, 2.4268, 2.4102, 2.3967, 2.3860}},
		{SpendingOBrienFleming, []float64{1}, []float64{1.9600}},
		{SpendingOBrienFleming, []float64{0.5, 0.5, 1.3}, []float64{2.9626, math.Inf(1), 1.9686}},
	} {
		got, err := Boundaries(c.kind, 0.025, c.ts)
		if err != nil {
			t.Fatal(err)
		}
		for k := range c.want {
			if math.IsInf(c.want[k], 1) != math.IsInf(got[k], 1) || (!math.IsInf(got[k], 1) && math.Abs(got[k]-c.want[k]) > 2e-4) {
				t.Errorf("%s %v: look %d boundary %.4f, want %.4f", c.kind, c.ts, k+1, got[k], c.want[k])
			}
		}
	}
	if _, err := Boundaries("haybittle", 0.025, []float64{1}); err == nil {
		t.Error("unknown spending function: want error")
	}
	if _, err := Boundaries(SpendingPocock, 1.5, []float64{1}); err == nil {
		t.Error("level 1.5: want error")
	}
}

// TestBoundariesSimulated: over unequally spaced looks the chance of ever
// crossing under the null is the level spent (200,000 Brownian paths).
func TestBoundariesSimulated(t *testing.T) {
	ts := []float64{0.15, 0.55, 1}
	for _, kind := range []string{SpendingOBrienFleming, SpendingPocock} {
		b, err := Boundaries(kind, 0.025, ts)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 7))
		const paths = 200_000
		cross := 0
		for range paths {
			s, prev := 0.0, 0.0
			for k, tk := range ts {
				s += math.Sqrt(tk-prev) * rng.NormFloat64()
				prev = tk
				if s/math.Sqrt(tk) >= b[k] {
					cross++
					break
				}
			}
		}
		got := float64(cross) / paths
		if se := math.Sqrt(0.025 * 0.975 / paths); math.Abs(got-0.025) > 4*se {
			t.Errorf("%s: crossed in %.4f of paths, want 0.025 ± %.4f", kind, got, 4*se)
		}
	}
}
