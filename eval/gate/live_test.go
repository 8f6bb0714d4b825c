package gate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// firstPassN is the number of agreeing pairs after which one PASS-side test
// of p first decides: its anytime p-value is then just below α/2.
func firstPassN(t *testing.T, p Policy) int {
	t.Helper()
	cfg, _ := SequentialConfig(p, 1)
	cfg.PassOnly = true
	sq, err := stats.NewSequential(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 100_000; n++ {
		sq.Add(0)
		if sq.Verdict() == "PASS" {
			return n
		}
	}
	t.Fatal("agreeing pairs never PASS")
	return 0
}

func segmentOf(lv LiveVerdict, name string) *LiveSegment {
	for i := range lv.Segments {
		if lv.Segments[i].Segment == name {
			return &lv.Segments[i]
		}
	}
	return nil
}

func TestLiveVerdicts(t *testing.T) {
	pol := NewDefaultPolicy()
	n := firstPassN(t, pol)
	// interleave builds pairs of one candidate: per segment set, count pairs,
	// disagreeing on every k-th (k 0: never), round robin over the sets.
	type block struct {
		segs         []string
		count, every int
	}
	interleave := func(cand string, blocks ...block) []LivePair {
		var out []LivePair
		for i := 0; ; i++ {
			added := false
			for _, b := range blocks {
				if i < b.count {
					out = append(out, LivePair{Candidate: cand, Segments: b.segs, Agree: b.every == 0 || (i+1)%b.every != 0})
					added = true
				}
			}
			if !added {
				return out
			}
		}
	}
	tests := []struct {
		name  string
		pairs []LivePair
		check func(t *testing.T, lv LiveVerdict)
	}{
		{
			name:  "always agreeing PASSes overall and in its one segment",
			pairs: interleave("agrees", block{[]string{"lang:en"}, 600, 0}),
			check: func(t *testing.T, lv LiveVerdict) {
				if lv.Verdict != Pass || lv.State.DecidedAt != n || lv.Advice != "decided" || lv.Progress != 1 || !strings.Contains(lv.Text, "PASS after") {
					t.Errorf("overall: %+v", lv)
				}
				s := segmentOf(lv, "lang:en")
				if s == nil || s.Verdict != Pass || !s.Tested || s.AdjustedP != s.P || s.P > 0.025 || s.MoreCases != 0 {
					t.Errorf("segment: %+v", s)
				}
			},
		},
		{
			name:  "disagreeing on 20% cannot PASS on agreement and says what a suite needs",
			pairs: interleave("differs", block{[]string{"lang:en"}, 600, 5}),
			check: func(t *testing.T, lv LiveVerdict) {
				if lv.Verdict != Inconclusive || lv.Disagree != 120 || !strings.Contains(lv.Advice, "agreement alone cannot PASS") ||
					!strings.Contains(lv.Advice, "(600 shadowed cases/day)") {
					t.Errorf("overall: %+v", lv)
				}
				if s := segmentOf(lv, "lang:en"); s == nil || s.Verdict != Inconclusive || !strings.Contains(s.Advice, "agreement alone cannot PASS") {
					t.Errorf("segment: %+v", s)
				}
			},
		},
		{
			name: "worse on Russian prompts with tables: that segment stays undecided, the others PASS",
			pairs: interleave("conductor",
				block{[]string{"lang:en"}, 3 * n, 0},
				block{[]string{"lang:ru", "table", "lang:ru+table"}, n + 50, 4}),
			check: func(t *testing.T, lv LiveVerdict) {
				if s := segmentOf(lv, "lang:en"); s == nil || s.Verdict != Pass {
					t.Errorf("lang:en: %+v", s)
				}
				for _, name := range []string{"lang:ru", "table", "lang:ru+table"} {
					s := segmentOf(lv, name)
					if s == nil || s.Verdict != Inconclusive || s.Disagree != (n+50)/4 || !strings.Contains(s.Advice, "agreement alone cannot PASS") {
						t.Errorf("%s: %+v", name, s)
					}
				}
				if lv.Segments[0].Segment != "lang:en" {
					t.Errorf("segments not most pairs first: %+v", lv.Segments)
				}
			},
		},
		{
			name: "Holm: five segments each just at the single-test PASS line are not enough together",
			pairs: interleave("five",
				block{[]string{"s1"}, n, 0}, block{[]string{"s2"}, n, 0}, block{[]string{"s3"}, n, 0},
				block{[]string{"s4"}, n, 0}, block{[]string{"s5"}, n, 0}),
			check: func(t *testing.T, lv LiveVerdict) {
				for _, name := range []string{"s1", "s2", "s3", "s4", "s5"} {
					s := segmentOf(lv, name)
					if s == nil || !s.Tested || s.P > 0.025 || s.AdjustedP <= 0.025 || s.Verdict != Inconclusive || s.MoreCases <= 0 || s.Progress >= 1 {
						t.Errorf("%s: %+v", name, s)
					}
					if s != nil && !strings.Contains(s.Advice, "more cases") {
						t.Errorf("%s advice %q", name, s.Advice)
					}
				}
			},
		},
		{
			name:  "a segment below min n is not tested and says how many pairs it lacks",
			pairs: interleave("small", block{[]string{"lang:de"}, 40, 0}),
			check: func(t *testing.T, lv LiveVerdict) {
				s := segmentOf(lv, "lang:de")
				if s == nil || s.Tested || s.P != 1 || s.AdjustedP != 1 || s.Verdict != Inconclusive ||
					s.Advice != fmt.Sprintf("%d more pairs before it is tested (min n %d)", pol.MinN-40, pol.MinN) {
					t.Errorf("segment: %+v", s)
				}
				if lv.Advice != "not enough pairs yet to project" {
					t.Errorf("overall advice %q", lv.Advice)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LiveVerdicts(tc.pairs, 24*time.Hour, false, pol)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Pairs != len(tc.pairs) {
				t.Fatalf("verdicts %+v", got)
			}
			tc.check(t, got[0])
		})
	}
	t.Run("no quality gate: nothing to test", func(t *testing.T) {
		p := pol
		p.Quality = nil
		if got, err := LiveVerdicts(interleave("x", block{nil, 10, 0}), time.Hour, false, p); got != nil || err != nil {
			t.Errorf("got %+v, %v", got, err)
		}
	})
	t.Run("candidates sorted, truncation carried", func(t *testing.T) {
		pairs := append(interleave("b", block{nil, 3, 0}), interleave("a", block{nil, 3, 0})...)
		got, err := LiveVerdicts(pairs, time.Hour, true, pol)
		if err != nil || len(got) != 2 || got[0].Candidate != "a" || got[1].Candidate != "b" || !got[0].Truncated {
			t.Errorf("got %+v, %v", got, err)
		}
	})
}

// TestLiveSegmentsFamilyWiseRate: on the null's boundary (every segment's
// answers differ on exactly the margin's share, so the lower bounds average
// −margin), the share of simulated windows where any of five segments PASSes
// stays within α/2 (plus two standard errors of the simulation), as Holm's
// correction on anytime-valid p-values promises; without the correction the
// same p-values PASS some segment more often.
func TestLiveSegmentsFamilyWiseRate(t *testing.T) {
	pol := NewDefaultPolicy()
	margin := pol.Quality.MarginPoints / 100
	const sims, segs, perSeg = 400, 5, 400
	rng := rand.New(rand.NewPCG(7, 11))
	anyHolm, anyRaw := 0, 0
	for range sims {
		var pairs []LivePair
		for i := range perSeg * segs {
			pairs = append(pairs, LivePair{Candidate: "c", Agree: rng.Float64() >= margin, Segments: []string{fmt.Sprint("s", i%segs)}})
		}
		got, err := LiveVerdicts(pairs, 0, false, pol)
		if err != nil {
			t.Fatal(err)
		}
		holm, raw := false, false
		for _, s := range got[0].Segments {
			holm = holm || s.Verdict == Pass
			raw = raw || (s.Tested && s.P <= (1-pol.Confidence)/2)
		}
		if holm {
			anyHolm++
		}
		if raw {
			anyRaw++
		}
	}
	rate, rawRate := float64(anyHolm)/sims, float64(anyRaw)/sims
	alphaHalf := (1 - pol.Confidence) / 2
	limit := alphaHalf + 2*math.Sqrt(alphaHalf*(1-alphaHalf)/sims)
	t.Logf("P(any segment PASS | every segment at the margin): %.4f with Holm, %.4f uncorrected (%d windows, %d segments × %d pairs)", rate, rawRate, sims, segs, perSeg)
	if rate > limit {
		t.Errorf("family-wise false PASS rate %.4f > %.4f", rate, limit)
	}
	if rawRate < rate {
		t.Errorf("uncorrected rate %.4f below the corrected %.4f", rawRate, rate)
	}
}
