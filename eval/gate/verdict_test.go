package gate

import (
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

func comparison(n int, diff, low, high, p float64) stats.Comparison {
	return stats.Comparison{
		Quality:     stats.Paired{Method: stats.MethodTango, N: n, Diff: diff, DiffCI: stats.Interval{Low: low, High: high}, McNemarP: p, DiscordantRate: 0.2},
		CostRatio:   0.5,
		CostRatioCI: stats.Interval{Low: 0.45, High: 0.55},
		P95Ratio:    1.1,
		P95RatioCI:  stats.Interval{Low: 1.0, High: 1.2},
		SampleSize:  stats.SampleSize{Effect: 0.05, N: 600},
		Segments: []stats.Segment{
			{Name: "category:math", Quality: stats.PairedOf(30, 10, 0, 10, stats.Z95)}, // 50 pairs, 20 points worse
			{Name: "category:code", Quality: stats.PairedOf(180, 0, 0, 20, stats.Z95)}, // 200 pairs, identical
			{Name: "category:small", Quality: stats.PairedOf(20, 2, 2, 6, stats.Z95)},  // 30 pairs, equal but too few to show it
			{Name: "category:tiny", Quality: stats.PairedOf(2, 2, 0, 1, stats.Z95)},    // 5 pairs, 40 points worse
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
			map[string]Status{"quality": Fail}, []string{"worse: upper bound -2.0 pts < -1.0 pts (Tango score interval"}},
		{"straddles margin", Policy{Confidence: 0.95, Quality: q},
			comparison(300, -0.01, -0.04, 0.02, 0.5), nil, Inconclusive, ClaimNone,
			map[string]Status{"quality": Inconclusive}, []string{"more cases for the whole policy's 80% PASS if equal", "planned at 85%", "| as good as the incumbent |", "(missed regression)"}},
		{"three-way: significantly worse fails below the margin", Policy{Confidence: 0.95, Quality: &QualityGate{MarginPoints: 3, FailPoints: new(0.0)}},
			comparison(300, -0.03, -0.05, -0.005, 0.01), nil, Fail, ClaimWorse,
			map[string]Status{"quality": Fail}, []string{"worse: upper bound -0.5 pts < +0.0 pts"}},
		{"three-way: within the margin passes even when significantly worse", Policy{Confidence: 0.95, Quality: &QualityGate{MarginPoints: 3, FailPoints: new(0.0)}},
			comparison(3000, -0.015, -0.025, -0.005, 0.01), nil, Pass, ClaimWorse,
			map[string]Status{"quality": Pass}, []string{"non-inferior"}},
		{"three-way: straddles both", Policy{Confidence: 0.95, Quality: &QualityGate{MarginPoints: 3, FailPoints: new(0.0)}},
			comparison(300, -0.01, -0.04, 0.02, 0.5), nil, Inconclusive, ClaimNone,
			map[string]Status{"quality": Inconclusive}, []string{"neither clears the margin -3.0 pts nor lies below +0.0 pts"}},
		{"better", Policy{Confidence: 0.95, Quality: q},
			comparison(300, 0.08, 0.04, 0.12, 0.0001), nil, Pass, ClaimBetter, nil, nil},
		{"too few cases", Policy{Confidence: 0.95, MinN: 100, Quality: q},
			comparison(40, 0.01, -0.005, 0.03, 0.3), nil, Inconclusive, ClaimNone,
			map[string]Status{"min_n": Inconclusive}, []string{"only 40 paired graded cases, policy needs 100"}},
		{"cost above ceiling", Policy{Confidence: 0.95, Cost: &CostGate{0.4}},
			comparison(300, 0, 0, 0, 1), nil, Fail, ClaimNone, map[string]Status{"cost": Fail}, []string{"lower bound 0.450 > 0.400"}},
		{"latency straddles ceiling", Policy{Confidence: 0.95, Latency: &LatencyGate{1.15}},
			comparison(300, 0, 0, 0, 1), nil, Inconclusive, ClaimNone, map[string]Status{"latency": Inconclusive}, nil},
		{"segments", Policy{Confidence: 0.95, Segments: &SegmentsGate{MustNotRegress: []string{"category:math", "category:code", "category:small", "category:tiny", "app:none"}, MinN: 10}},
			comparison(300, 0, 0, 0, 1), nil, Fail, ClaimNone,
			map[string]Status{"segment category:math": Fail, "segment category:code": Pass, "segment category:small": Inconclusive,
				"segment category:tiny": Inconclusive, "segment app:none": Inconclusive},
			[]string{"within Holm's step-down over the 5 listed segments", "non-inferior on its own", "shows neither non-inferiority within 3 pts",
				"only 5 paired graded cases, policy needs 10", "no cases in this run"}},
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

// TestSmallSegmentDropNeverPasses: a must-not-regress segment of 10 cases
// that drops 40 points while the whole suite is non-inferior used to PASS
// ("no significant regression") and so did the verdict. It cannot show
// non-inferiority, so it is never PASS: FAIL when the drop is significant
// for its family, INCONCLUSIVE otherwise, and the verdict follows.
func TestSmallSegmentDropNeverPasses(t *testing.T) {
	c := comparison(3000, 0, -0.01, 0.01, 1)
	c.Segments = []stats.Segment{{Name: "lang:ru", Quality: stats.PairedOf(5, 4, 0, 1, stats.Z95)}}
	for _, family := range [][]string{{"lang:ru"}, {"lang:ru", "table", "code", "len:0-127"}} {
		p := Policy{Version: "t", Confidence: 0.95, Quality: &QualityGate{MarginPoints: 3, FailPoints: new(0.0)}, Segments: &SegmentsGate{MustNotRegress: family}}
		v := Evaluate(p, c, nil)
		seg := gate(v, "segment lang:ru")
		if gate(v, "quality").Status != Pass || seg.Status == Pass || v.Verdict == Pass {
			t.Errorf("family %v: quality %s, segment %s (%s), verdict %s", family, gate(v, "quality").Status, seg.Status, seg.Reason, v.Verdict)
		}
		want := Fail // one-sided p Φ(−2) = 0.023 ≤ 0.025
		if len(family) > 1 {
			want = Inconclusive // Holm's first step over 4 needs ≤ 0.025/4
		}
		if seg.Status != want {
			t.Errorf("family %v: segment %s, want %s: %s", family, seg.Status, want, seg.Reason)
		}
	}
}

// TestPlanErrorRates checks the verdict's plan on the default policy at
// n = 300 with 20% discordance: each error rate is named by verdict kind and
// matches stats.Operating, and the advice asks for the larger of the PASS and
// FAIL sample sizes.
func TestPlanErrorRates(t *testing.T) {
	p := NewDefaultPolicy()
	c := comparison(300, 0, -0.05, 0.05, 1)
	c.Incumbent.Accuracy = 0.85
	v := Evaluate(p, c, nil)
	pl := v.Plan
	if pl == nil {
		t.Fatal("no plan")
	}
	d := p.Quality.Design(p.Confidence)
	eq, _ := stats.Operating(300, stats.Scenario{PIncumbent: 0.85, Discordance: 0.2}, d)
	worse, _ := stats.Operating(300, stats.Scenario{PIncumbent: 0.85, Discordance: 0.2, Effect: -0.05}, d)
	if pl.IfEqual != eq || pl.IfWorse != worse {
		t.Errorf("plan rates %+v %+v, want %+v %+v", pl.IfEqual, pl.IfWorse, eq, worse)
	}
	if pl.IfEqual.Fail > 0.05 || pl.IfWorse.Pass > 0.05 || pl.IfWorse.Fail < 0.3 || pl.IfWorse.Fail > 0.8 {
		t.Errorf("default policy at n=300: P(FAIL|equal) %.3f, P(PASS|worse) %.3f, P(FAIL|worse) %.3f", pl.IfEqual.Fail, pl.IfWorse.Pass, pl.IfWorse.Fail)
	}
	if pl.MoreCases != max(pl.PassN, pl.FailN)-300 || pl.FailN <= 300 || pl.PassN <= pl.FailN {
		t.Errorf("advice: more %d, pass n %d, fail n %d", pl.MoreCases, pl.PassN, pl.FailN)
	}
	if !pl.Detectable || pl.DetectableDropPoints <= 5 || pl.DetectableDropPoints > 10 {
		t.Errorf("detectable drop at n=300: %.2f pts (%v), want between 5 and 10", pl.DetectableDropPoints, pl.Detectable)
	}
}

func TestShippedPolicies(t *testing.T) {
	for _, v := range []string{"default-1", "default-2", DefaultVersion} {
		p, ok := Shipped(v)
		if !ok || p.Version != v || p.Validate() != nil {
			t.Errorf("%s: %+v %v %v", v, p, ok, p.Validate())
		}
	}
	if p := NewDefaultPolicy(); p.Quality.Fail() != 0 || p.Quality.MarginPoints != 3 || p.Cost.MaxRatio <= 1 {
		t.Errorf("%s: %+v", DefaultVersion, p.Quality)
	}
	if p := NewDefaultPolicy(); p.LookSpending() != "pocock" || NewPolicyV2().LookSpending() != SpendingNone {
		t.Errorf("looks: default-3 %q, default-2 %q", p.LookSpending(), NewPolicyV2().LookSpending())
	}
	if p := NewPolicyV1(); p.Quality.Fail() != 1 {
		t.Errorf("default-1 fails beyond its margin, got %g", p.Quality.Fail())
	}
	wide := QualityGate{MarginPoints: 10} // FAIL beyond 10 points: the planned drop must exceed it
	if cfg, _ := SequentialConfig(Policy{Confidence: 0.95, Quality: &wide}, 1); cfg.Validate() != nil || wide.Effect() != 11 {
		t.Errorf("margin 10 without effect: effect %g, %v", wide.Effect(), cfg.Validate())
	}
	if _, ok := Shipped("nope"); ok {
		t.Error("unknown version found")
	}
}
