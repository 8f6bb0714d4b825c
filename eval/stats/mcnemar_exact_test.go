package stats

import (
	"math"
	"testing"
)

// The exact conditional McNemar power and minimum sample size, against the
// figures of an independent computation (issue of the gate's planning: 0.74 /
// 0.45 power at n = 300 with 10 / 20% discordant pairs; 498 / 658 cases for
// 80% at 15 / 20%), and the first-n property of the minimum.
func TestMcNemarExact(t *testing.T) {
	for _, tc := range []struct {
		n         int
		psi, want float64
	}{{300, 0.10, 0.74}, {300, 0.20, 0.45}} {
		if got := McNemarExactPower(tc.n, -0.05, tc.psi, 0.05); math.Abs(got-tc.want) > 0.005 {
			t.Errorf("power at n=%d, D=%.2f: %.4f, want %.2f", tc.n, tc.psi, got, tc.want)
		}
	}
	for _, tc := range []struct {
		psi  float64
		want int
	}{{0.15, 498}, {0.20, 658}} {
		n, err := McNemarExactSampleSize(0.05, tc.psi, 0.05, 0.8)
		if err != nil || n != tc.want {
			t.Errorf("D=%.2f: n = %d, %v; want %d", tc.psi, n, err, tc.want)
			continue
		}
		if McNemarExactPower(n, 0.05, tc.psi, 0.05) < 0.8 || McNemarExactPower(n-1, 0.05, tc.psi, 0.05) >= 0.8 {
			t.Errorf("D=%.2f: %d is not the first n reaching 0.8", tc.psi, n)
		}
		connor, _ := McNemarSampleSize(0.05, tc.psi, 0.05, 0.8)
		if connor >= n {
			t.Errorf("D=%.2f: normal approximation %d not below the exact %d", tc.psi, connor, n)
		}
	}
	if _, err := McNemarExactSampleSize(0, 0.2, 0.05, 0.8); err == nil {
		t.Error("effect 0: want an error")
	}
	// The recommendation plans above the asked power, within 1.25× the exact minimum.
	d := Design{Margin: 0.03, FailAt: 0, Confidence: 0.95}
	drop := Scenario{PIncumbent: 0.85, Discordance: 0.2, Effect: -0.05}
	n, err := Recommend(drop, d, 0.8, 100)
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := Operating(n, drop, d)
	if oc.Fail < 0.8+PlanMargin || n > 658*5/4 {
		t.Errorf("recommended n=%d: P(FAIL) %.4f, want ≥ %.2f and n ≤ 822", n, oc.Fail, 0.8+PlanMargin)
	}
}
