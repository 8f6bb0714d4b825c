package stats

import (
	"math/rand/v2"
	"testing"
)

func TestSequential(t *testing.T) {
	cfg := SequentialConfig{Margin: 0.03, FailAt: 0, Effect: 0.05, Confidence: 0.95, MinN: 100, LookEvery: 25}
	feed := func(pc, pi float64, n int, seed uint64) *Sequential {
		s, err := NewSequential(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		for range n {
			switch u := rng.Float64(); {
			case u < pc:
				s.Add(1)
			case u < pc+pi:
				s.Add(-1)
			default:
				s.Add(0)
			}
		}
		return s
	}
	// Much worse (15 points): FAIL at a look, after min n, and sticky.
	st := feed(0.05, 0.20, 2000, 1).State()
	if st.Verdict != "FAIL" || st.DecidedAt < 100 || st.DecidedAt%25 != 0 || st.MoreCases != 0 || st.CS.High >= 0 || st.FailProgress != 1 {
		t.Errorf("15-point drop: %+v", st)
	}
	// Identical answers: PASS (every difference 0 clears a 3-point margin).
	st = feed(0, 0, 400, 2).State()
	if st.Verdict != "PASS" || st.CS.Low < -0.03 || !st.CS.Contains(0) {
		t.Errorf("identical: %+v", st)
	}
	// Too few cases: undecided, the CS covers the truth, no projection before min n.
	st = feed(0.1, 0.1, 50, 3).State()
	if st.Verdict != "INCONCLUSIVE" || st.DecidedAt != 0 || !st.CS.Contains(0) || st.MoreCases != -1 {
		t.Errorf("50 cases: %+v", st)
	}
	for _, bad := range []SequentialConfig{{Margin: -1, Effect: 0.05, Confidence: 0.95}, {Effect: 0, Confidence: 0.95},
		{Effect: 0.05, Confidence: 1}, {Effect: 0.05, Confidence: 0.95, LookEvery: -2}} {
		if _, err := NewSequential(bad); err == nil {
			t.Errorf("%+v: want error", bad)
		}
	}
}
