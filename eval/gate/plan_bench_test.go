package gate

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// BenchmarkPlanPolicy: one whole-policy plan of the default policy (a suite
// report computes one per candidate; a simulated plan one per suite).
func BenchmarkPlanPolicy(b *testing.B) {
	m := PolicyModel{PIncumbent: 0.85, Discordance: 0.2, CostRatio: 1, CostSpread: 0.43, LatencyRatio: 1, LatencySpread: 1.87}
	p := NewDefaultPolicy()
	for b.Loop() {
		if _, err := PlanPolicy(p, m, PlanPower, stats.Z95); err != nil {
			b.Fatal(err)
		}
	}
}
