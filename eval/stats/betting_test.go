package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pairedDiff draws a pass/fail paired difference with P(+1) = (D+E)/2 and
// P(−1) = (D−E)/2.
func pairedDiff(rng *rand.Rand, d, e float64) float64 {
	switch u := rng.Float64(); {
	case u < (d+e)/2:
		return 1
	case u < d:
		return -1
	}
	return 0
}

// TestBettingCSAtTheMargin: a candidate exactly at the margin, watched after
// every case for 3,000 cases, PASSes in at most α/2 of the sequences, and the
// running interval covers the truth at every look in at least 1 − α of them;
// an equal candidate PASSes in most.
func TestBettingCSAtTheMargin(t *testing.T) {
	const runs, n = 300, 2000
	rng := rand.New(rand.NewPCG(11, 3))
	var pass, miss, passEqual int
	for r := range runs {
		e := -0.03
		if r%2 == 1 {
			e = 0
		}
		cs, err := NewBettingCS(BettingCSConfig{Confidence: 0.95, Points: []float64{-0.03, 0}, Grid: 81})
		if err != nil {
			t.Fatal(err)
		}
		covered := true
		for range n {
			cs.Observe(pairedDiff(rng, 0.2, e))
			if b := cs.Bounds(); cs.N()%20 == 0 && !b.Contains(e) {
				covered = false
			}
		}
		v := cs.Decide(0.03, 0)
		switch {
		case e < 0 && v == "PASS":
			pass++
		case e == 0 && v == "PASS":
			passEqual++
		}
		if e < 0 && !covered {
			miss++
		}
	}
	half := float64(runs / 2)
	se := math.Sqrt(0.025 * 0.975 / half)
	if p := float64(pass) / half; p > 0.025+3*se {
		t.Errorf("at the margin: PASS in %.1f%% of sequences, want ≤ 2.5%% + 3 SE", 100*p)
	}
	if p := float64(miss) / half; p > 0.05+3*math.Sqrt(0.05*0.95/half) {
		t.Errorf("the running interval missed the truth in %.1f%% of sequences", 100*p)
	}
	if p := float64(passEqual) / half; p < 0.3 {
		t.Errorf("equal candidate: PASS in only %.1f%% after %d cases", 100*p, n)
	}
	if _, err := NewBettingCS(BettingCSConfig{Lo: 1, Hi: -1, Confidence: 0.95}); err == nil {
		t.Error("lo > hi: want error")
	}
	if _, err := NewBettingCS(BettingCSConfig{Confidence: 0.95, Points: []float64{2}}); err == nil {
		t.Error("point outside the bounds: want error")
	}
}

// TestCostRatioSequence: at the ceiling itself PASS stays rare; 20% cheaper
// PASSes; 30% dearer FAILs.
func TestCostRatioSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	run := func(ratio float64) string {
		s, err := NewCostRatioSequence(1.1, 0.05, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for range 3000 {
			size := math.Exp(0.5 * rng.NormFloat64())
			inc := 0.002 * size * math.Exp(0.3*rng.NormFloat64())
			s.Observe(inc, ratio*inc*math.Exp(0.3*rng.NormFloat64())/math.Exp(0.045))
		}
		return s.Decide()
	}
	pass := 0
	for range 100 {
		if run(1.1) == "PASS" {
			pass++
		}
	}
	if pass > 3+3*2 {
		t.Errorf("at the ceiling: PASS %d of 100", pass)
	}
	if v := run(0.8); v != "PASS" {
		t.Errorf("20%% cheaper: %s", v)
	}
	if v := run(1.5); v != "FAIL" {
		t.Errorf("50%% dearer: %s", v)
	}
	if _, err := NewCostRatioSequence(0, 1, 0.95); err == nil {
		t.Error("ceiling 0: want error")
	}
	s, _ := NewCostRatioSequence(1.1, 0.01, 0.95)
	for range 1000 {
		s.Observe(0.005, 0.001)
	}
	s.Observe(0.005, 0.02)
	if v := s.Decide(); v != "INCONCLUSIVE" || s.OutOfBounds != 1 {
		t.Errorf("a cost above the bound: %s, %d out of bounds", v, s.OutOfBounds)
	}
}

// TestQuantileCS: the p95 sequence covers the true p95 of a log-normal at
// every look in at least 1 − a of 300 streams, narrows with data, and the
// ratio test PASSes an equal candidate and FAILs one 60% slower.
func TestQuantileCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	trueP95 := 1000 * math.Exp(0.7*1.6448536269514722)
	miss := 0
	var last Interval
	for range 300 {
		q, err := NewQuantileCS(0.95, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		ok := true
		for i := range 5000 {
			q.Observe(1000 * math.Exp(0.7*rng.NormFloat64()))
			if i%50 == 49 && !q.Bounds().Contains(trueP95) {
				ok = false
			}
		}
		if !ok {
			miss++
		}
		last = q.Bounds()
	}
	if miss > 15+3*4 {
		t.Errorf("missed the true p95 in %d of 300 streams (a = 5%%)", miss)
	}
	if last.High/last.Low > 1.5 || math.IsInf(last.High, 1) {
		t.Errorf("after 5000 latencies the p95 sequence is %v", last)
	}
	for _, c := range []struct {
		slower float64
		want   string
	}{{1, "PASS"}, {1.6, "FAIL"}} {
		s, err := NewQuantileRatioSequence(0.95, 1.25, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for range 20000 {
			size := math.Exp(0.5 * rng.NormFloat64())
			s.Observe(1000*size*math.Exp(0.5*rng.NormFloat64()), c.slower*1000*size*math.Exp(0.5*rng.NormFloat64()))
		}
		if v := s.Decide(); v != c.want {
			t.Errorf("candidate ×%.1f: %s, want %s (incumbent %v, candidate %v)", c.slower, v, c.want, s.Incumbent.Bounds(), s.Cand.Bounds())
		}
	}
}
