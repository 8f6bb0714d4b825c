package stats

import (
	"math"
	"reflect"
	"testing"
)

// pairs builds n observations with the given counts of (both, incOnly,
// candOnly, neither) outcomes; costs 1 vs candCost, latency i vs 2i ms.
func pairs(both, incOnly, candOnly, neither int, candCost float64) (inc, cand []Obs) {
	add := func(k int, ip, cp bool, seg string) {
		for range k {
			i := len(inc) + 1
			inc = append(inc, Obs{Graded: true, Passed: ip, CostUSD: 1, LatencyMs: float64(i), Calls: 1, TokensIn: 10, Segments: []string{"category:" + seg}})
			cand = append(cand, Obs{Graded: true, Passed: cp, CostUSD: candCost, LatencyMs: 2 * float64(i), Calls: 3, TokensIn: 30})
		}
	}
	add(both, true, true, "a")
	add(incOnly, true, false, "b")
	add(candOnly, false, true, "a")
	add(neither, false, false, "b")
	return inc, cand
}

func TestComparePairedFigures(t *testing.T) {
	inc, cand := pairs(200, 40, 10, 50, 0.5)
	c, err := Compare(inc, cand, Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	n := 300.0
	q := c.Quality
	if q.N != 300 || q.IncumbentOnly != 40 || q.CandidateOnly != 10 || q.Both != 200 || q.Neither != 50 {
		t.Fatalf("pair counts: %+v", q)
	}
	if want := -30 / n; math.Abs(q.Diff-want) > 1e-12 {
		t.Errorf("diff %v, want %v", q.Diff, want)
	}
	if want := McNemarExact(40, 10); q.McNemarP != want {
		t.Errorf("McNemar p %v, want %v", q.McNemarP, want)
	}
	// Tango's score interval is close to the Wald interval of the paired
	// difference at this size, Var(d̄) = (ψ − δ²)/n.
	psi := 50 / n
	se := math.Sqrt((psi - q.Diff*q.Diff) / n)
	if math.Abs(q.DiffCI.Low-(q.Diff-Z95*se)) > 0.01 || math.Abs(q.DiffCI.High-(q.Diff+Z95*se)) > 0.01 {
		t.Errorf("Tango CI %v, normal approximation [%.4f, %.4f]", q.DiffCI, q.Diff-Z95*se, q.Diff+Z95*se)
	}
	if got, want := c.Incumbent.AccuracyCI, Wilson(240, 300, Z95); got != want {
		t.Errorf("incumbent CI %v, want Wilson %v", got, want)
	}
	if c.CostRatio != 0.5 || c.CostRatioCI != (Interval{0.5, 0.5}) {
		t.Errorf("cost ratio %v %v, want 0.5 exactly", c.CostRatio, c.CostRatioCI)
	}
	// Latencies 1..300 vs 2..600: nearest-rank p95 = 285 vs 570.
	if c.Incumbent.P95LatencyMs != 285 || c.Candidate.P95LatencyMs != 570 || c.P95Ratio != 2 {
		t.Errorf("p95 %v / %v ratio %v", c.Candidate.P95LatencyMs, c.Incumbent.P95LatencyMs, c.P95Ratio)
	}
	if !c.P95RatioCI.Contains(2) || c.P95RatioCI.High-c.P95RatioCI.Low > 0.2 {
		t.Errorf("p95 ratio CI %v should be tight around 2", c.P95RatioCI)
	}
	if !c.Incumbent.P95LatencyCI.Contains(285) {
		t.Errorf("p95 CI %v misses 285", c.Incumbent.P95LatencyCI)
	}
	if c.Candidate.MeanCalls != 3 || c.Candidate.MeanTokensIn != 30 || c.Incumbent.TotalCostUSD != 300 {
		t.Errorf("means: %+v", c.Candidate)
	}
	// Segments: a = 200 both + 10 candOnly; b = 40 incOnly + 50 neither.
	if len(c.Segments) != 2 || c.Segments[0].Name != "category:a" || c.Segments[1].Name != "category:b" {
		t.Fatalf("segments %+v", c.Segments)
	}
	pa, pb := McNemarExact(0, 10), McNemarExact(40, 0)
	adj := Holm([]float64{pa, pb})
	if c.Segments[0].AdjustedP != adj[0] || c.Segments[1].AdjustedP != adj[1] {
		t.Errorf("adjusted p %v %v, want %v", c.Segments[0].AdjustedP, c.Segments[1].AdjustedP, adj)
	}
	if want, _ := McNemarSampleSize(0.05, psi, 0.05, 0.8); c.SampleSize.N != want {
		t.Errorf("sample size %d, want %d", c.SampleSize.N, want)
	}
}

func TestCompareSeeded(t *testing.T) {
	inc, cand := pairs(100, 20, 25, 30, 1.2)
	a, _ := Compare(inc, cand, Options{Seed: 1})
	b, _ := Compare(inc, cand, Options{Seed: 1})
	c, _ := Compare(inc, cand, Options{Seed: 2})
	if a.Quality.ZAt(-0.03) != b.Quality.ZAt(-0.03) {
		t.Error("same seed gave different score statistics")
	}
	a.Quality.ZAt, b.Quality.ZAt = nil, nil
	for i := range a.Segments {
		a.Segments[i].Quality.ZAt, b.Segments[i].Quality.ZAt = nil, nil
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed gave different comparisons")
	}
	if a.Incumbent.P95LatencyCI == c.Incumbent.P95LatencyCI && a.Incumbent.P50LatencyCI == c.Incumbent.P50LatencyCI {
		t.Error("different seeds gave identical bootstrap intervals")
	}
}

func TestCompareErrorsAndGraderErrors(t *testing.T) {
	if _, err := Compare(make([]Obs, 2), make([]Obs, 3), Options{}); err == nil {
		t.Error("length mismatch: want error")
	}
	if _, err := Compare(nil, nil, Options{}); err == nil {
		t.Error("empty: want error")
	}
	inc := []Obs{{Graded: true, Passed: true}, {Graded: false}, {Graded: true}}
	cand := []Obs{{Graded: true, Passed: true}, {Graded: true, Passed: true}, {Graded: true, Passed: true}}
	c, err := Compare(inc, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Quality.N != 2 || c.Incumbent.Graded != 2 || c.Candidate.Graded != 3 {
		t.Errorf("grader errors must leave quality pairs: %+v / %+v", c.Quality, c.Incumbent)
	}
	if c.CostRatio != 1 {
		t.Errorf("0/0 cost ratio = %v, want 1", c.CostRatio)
	}
}

// TestCompareJudgeScores: with continuous scores the quality difference is
// the mean score difference with a stratified score interval; with 0/1
// scores it stays the pass/fail difference with Tango's interval.
func TestCompareJudgeScores(t *testing.T) {
	var inc, cand []Obs
	for i := range 120 {
		cat := []string{"category:math", "category:code"}[i%2]
		s := 0.4 + 0.5*float64(i%7)/6
		inc = append(inc, Obs{Graded: true, Passed: s >= 0.5, Score: s, Segments: []string{cat}})
		cand = append(cand, Obs{Graded: true, Passed: s-0.02 >= 0.5, Score: s - 0.02 + 0.01*float64(i%3-1)})
	}
	c, err := Compare(inc, cand, Options{Seed: 1, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	q := c.Quality
	if q.Method != MethodMeanScoreStratified || math.Abs(q.Diff+0.02) > 1e-9 || !q.DiffCI.Contains(-0.02) || q.DiffCI.High-q.DiffCI.Low > 0.01 {
		t.Errorf("judge scores: method %s diff %v CI %v", q.Method, q.Diff, q.DiffCI)
	}
	for i := range inc {
		inc[i].Score, cand[i].Score = b2f(inc[i].Passed), b2f(cand[i].Passed)
	}
	c, _ = Compare(inc, cand, Options{Seed: 1, Resamples: 50})
	if c.Quality.Method != MethodTango || c.Quality.DiffCI != TangoInterval(c.Quality.CandidateOnly, c.Quality.IncumbentOnly, c.Quality.N, Z95) {
		t.Errorf("pass/fail scores: %+v", c.Quality)
	}
}
