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

// TestSequentialPValues: the anytime-valid p-value falls to α/2 exactly when
// the test decides, is 1 before min n, and with Continue keeps falling past
// the decision (a Holm step needs smaller levels than α/2).
func TestSequentialPValues(t *testing.T) {
	base := SequentialConfig{Margin: 0.03, FailAt: 0, Effect: 0.05, Confidence: 0.95, MinN: 100, LookEvery: 1, PassOnly: true}
	for _, c := range []struct {
		name     string
		cont     bool
		n        int
		wantP    func(p float64) bool
		decision string
	}{
		{"before min n", false, 99, func(p float64) bool { return p == 1 }, "INCONCLUSIVE"},
		{"stops at the decision", false, 2000, func(p float64) bool { return p <= 0.025 && p > 0.025/3 }, "PASS"},
		{"continues past it", true, 2000, func(p float64) bool { return p < 1e-6 }, "PASS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.Continue = c.cont
			s, err := NewSequential(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for range c.n {
				s.Add(0) // identical answers
			}
			st := s.State()
			if !c.wantP(st.PassP) || st.Verdict != c.decision || st.FailP != 1 {
				t.Errorf("n %d: PassP %g, FailP %g, verdict %s", c.n, st.PassP, st.FailP, st.Verdict)
			}
			if st.Verdict == "PASS" && st.DecidedAt < 100 {
				t.Errorf("decided at %d, before min n", st.DecidedAt)
			}
		})
	}
}
