package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// The report's Stats and the paired comparison's Arm are the same figures on
// the same runs: accuracy, cost per request and p50/p95 by store/figure, with
// grader errors out of accuracy and unknown latencies (0) out of the
// percentiles.
func TestReportAndComparisonShareFigures(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 11))
	var outs []Outcome
	type want struct {
		lat          []float64
		cost         float64
		passed, grad int
	}
	w := map[string]*want{"incumbent": {}, "candidate": {}}
	for i := range 203 {
		for _, p := range []string{"incumbent", "candidate"} {
			o := Outcome{CaseID: fmt.Sprintf("c%d", i), Category: "math", Pipeline: p, Mode: store.ModeCandidate,
				RunID: fmt.Sprintf("%s-%d", p, i), Status: store.StatusOK, LatencyMs: float64(rng.IntN(5000) + 1),
				CostUSD: float64(rng.IntN(900)) / 1e6, Passed: rng.IntN(4) > 0}
			if p == "incumbent" {
				o.Mode = store.ModeIncumbent
			}
			if rng.IntN(6) == 0 {
				o.LatencyMs = 0
			}
			if rng.IntN(10) == 0 {
				o.GraderError = "judge unreachable"
			}
			x := w[p]
			x.lat = append(x.lat, o.LatencyMs)
			x.cost += o.CostUSD
			if o.GraderError == "" {
				x.grad++
				if o.Passed {
					x.passed++
				}
			}
			outs = append(outs, o)
		}
	}
	var inc, cand []stats.Obs
	for i := 0; i < len(outs); i += 2 {
		inc = append(inc, obsOf(outs[i], false))
		cand = append(cand, obsOf(outs[i+1], false))
	}
	c, err := stats.Compare(inc, cand, stats.Options{Resamples: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"incumbent", "candidate"} {
		var runs []Outcome
		for _, o := range outs {
			if o.Pipeline == p {
				runs = append(runs, o)
			}
		}
		s := computeStats(runs)
		a := c.Incumbent
		if p == "candidate" {
			a = c.Candidate
		}
		x := w[p]
		for _, tc := range []struct {
			name                 string
			report, compare, def float64
		}{
			{"accuracy", s.Accuracy, a.Accuracy, figure.Accuracy(x.passed, x.grad)},
			{"cost per request", s.CostPerRequestUSD, a.CostPerRequestUSD, figure.CostPerRequest(x.cost, 203)},
			{"p50", s.P50LatencyMs, a.P50LatencyMs, figure.Latency(x.lat, 50)},
			{"p95", s.P95LatencyMs, a.P95LatencyMs, figure.Latency(x.lat, 95)},
		} {
			if math.Abs(tc.report-tc.def) > 1e-12 || math.Abs(tc.compare-tc.def) > 1e-12 {
				t.Errorf("%s %s: report %v, comparison %v, definition %v", p, tc.name, tc.report, tc.compare, tc.def)
			}
		}
		if s.P50LatencyMs <= 0 {
			t.Errorf("%s p50 %v: unknown latencies were counted", p, s.P50LatencyMs)
		}
		// The bootstrap interval of a percentile holds the point figure.
		if a.P95LatencyCI.Low > a.P95LatencyMs || a.P95LatencyCI.High < a.P95LatencyMs || a.P50LatencyCI.Low <= 0 {
			t.Errorf("%s p95 %v outside its interval %+v (p50 interval %+v)", p, a.P95LatencyMs, a.P95LatencyCI, a.P50LatencyCI)
		}
	}
}
