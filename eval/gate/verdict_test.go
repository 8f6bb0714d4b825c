package gate

import (
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

func comparison(n int, diff, low, high, p float64) stats.Comparison {
	return stats.Comparison{
		Quality:     stats.Paired{N: n, Diff: diff, DiffCI: stats.Interval{Low: low, High: high}, McNemarP: p, DiscordantRate: 0.2},
		CostRatio:   0.5,
		CostRatioCI: stats.Interval{Low: 0.45, High: 0.55},
		P95Ratio:    1.1,
		P95RatioCI:  stats.Interval{Low: 1.0, High: 1.2},
		SampleSize:  stats.SampleSize{Effect: 0.05, N: 600},
		Segments: []stats.Segment{
			{Name: "category:math", Quality: stats.Paired{N: 50, Diff: -0.2, McNemarP: 0.001}, AdjustedP: 0.003},
			{Name: "category:code", Quality: stats.Paired{N: 50, Diff: -0.04, McNemarP: 0.2}, AdjustedP: 0.4},
			{Name: "category:tiny", Quality: stats.Paired{N: 5, Diff: -0.4, McNemarP: 0.06}, AdjustedP: 0.12},
		},
	}
}

func gate(v Verdict, name string) Result {
	for _, r := range v.Gates {
		if r.Gate == name {
			return r
		}
	}
	return Result{Status: "absent"}
}

func TestEvaluate(t *testing.T) {
	q := &QualityGate{MarginPoints: 1}
	tests := []struct {
		name        string
		policy      Policy
		c           stats.Comparison
		noise       *stats.Paired
		want        Status
		wantClaim   string
		wantGates   map[string]Status
		wantReasons []string
	}{
		{"non-inferior, cheap, fast enough", Policy{Confidence: 0.95, MinN: 100, Quality: q, Cost: &CostGate{1}, Latency: &LatencyGate{1.25}},
			comparison(300, 0.01, -0.005, 0.03, 0.3), nil, Pass, ClaimNone,
			map[string]Status{"min_n": Pass, "quality": Pass, "cost": Pass, "latency": Pass}, []string{"non-inferior"}},
		{"worse beyond margin", Policy{Confidence: 0.95, Quality: q},
			comparison(300, -0.06, -0.1, -0.02, 0.001), nil, Fail, ClaimWorse,
			map[string]Status{"quality": Fail}, []string{"worse beyond the margin"}},
		{"straddles margin", Policy{Confidence: 0.95, Quality: q},
			comparison(300, -0.01, -0.04, 0.02, 0.5), nil, Inconclusive, ClaimNone,
			map[string]Status{"quality": Inconclusive}, []string{"about 600"}},
		{"better", Policy{Confidence: 0.95, Quality: q},
			comparison(300, 0.08, 0.04, 0.12, 0.0001), nil, Pass, ClaimBetter, nil, nil},
		{"too few cases", Policy{Confidence: 0.95, MinN: 100, Quality: q},
			comparison(40, 0.01, -0.005, 0.03, 0.3), nil, Inconclusive, ClaimNone,
			map[string]Status{"min_n": Inconclusive}, []string{"only 40 paired graded cases, policy needs 100"}},
		{"cost above ceiling", Policy{Confidence: 0.95, Cost: &CostGate{0.4}},
			comparison(300, 0, 0, 0, 1), nil, Fail, ClaimNone, map[string]Status{"cost": Fail}, []string{"lower bound 0.450 > 0.400"}},
		{"latency straddles ceiling", Policy{Confidence: 0.95, Latency: &LatencyGate{1.15}},
			comparison(300, 0, 0, 0, 1), nil, Inconclusive, ClaimNone, map[string]Status{"latency": Inconclusive}, nil},
		{"segments", Policy{Confidence: 0.95, Segments: &SegmentsGate{MustNotRegress: []string{"category:math", "category:code", "category:tiny", "app:none"}, MinN: 10}},
			comparison(300, 0, 0, 0, 1), nil, Fail, ClaimNone,
			map[string]Status{"segment category:math": Fail, "segment category:code": Pass, "segment category:tiny": Inconclusive, "segment app:none": Inconclusive},
			[]string{"Holm-adjusted 0.003", "no cases in this suite"}},
		{"noise required but no A′", Policy{Confidence: 0.95, Noise: &NoiseGate{true}},
			comparison(300, 0.08, 0.04, 0.12, 0.0001), nil, Inconclusive, ClaimNone,
			map[string]Status{"noise": Inconclusive}, []string{"A′"}},
		{"below noise", Policy{Confidence: 0.95, Noise: &NoiseGate{true}},
			comparison(300, -0.08, -0.12, -0.04, 0.0001), &stats.Paired{DiffCI: stats.Interval{Low: -0.02, High: 0.02}, DiscordantRate: 0.05},
			Fail, ClaimWorse, map[string]Status{"noise": Fail}, []string{"below incumbent run-to-run noise"}},
		{"within noise: no claim", Policy{Confidence: 0.95, Noise: &NoiseGate{true}},
			comparison(300, 0.03, 0.01, 0.05, 0.04), &stats.Paired{DiffCI: stats.Interval{Low: -0.02, High: 0.04}},
			Pass, ClaimNone, map[string]Status{"noise": Pass}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.Version = "t1"
			v := Evaluate(tc.policy, tc.c, tc.noise)
			if v.Verdict != tc.want || v.Claim != tc.wantClaim || v.PolicyVersion != "t1" {
				t.Errorf("verdict %s claim %q, want %s %q\n%s", v.Verdict, v.Claim, tc.want, tc.wantClaim, v.Markdown())
			}
			for g, st := range tc.wantGates {
				if got := gate(v, g).Status; got != st {
					t.Errorf("gate %s: %s, want %s", g, got, st)
				}
			}
			md := v.Markdown()
			for _, r := range tc.wantReasons {
				if !strings.Contains(md, r) {
					t.Errorf("markdown lacks %q:\n%s", r, md)
				}
			}
		})
	}
}
