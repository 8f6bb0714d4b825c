package stats

import (
	"fmt"
	"math"
)

// SequentialConfig sets up a Sequential test: the same three-way rule as
// Design, but valid however often it is looked at.
type SequentialConfig struct {
	// Margin (0..1): PASS when "θ ≤ −Margin" is rejected.
	Margin float64 `json:"margin"`
	// FailAt (0..1): FAIL when "θ ≥ −FailAt" is rejected.
	FailAt float64 `json:"fail_at"`
	// Effect (0..1, > FailAt): the drop the FAIL test's bets start from (its
	// running mean is shrunk towards θ = −Effect); the PASS test's start from
	// θ = 0. The bets then follow the data (agrapa).
	Effect float64 `json:"effect"`
	// Confidence is two-sided; each one-sided test runs at α/2 = (1 − conf)/2.
	Confidence float64 `json:"confidence"`
	// MinN: no decision before this many cases.
	MinN int `json:"min_n"`
	// LookEvery: decisions are taken only after every LookEvery cases (1 or 0:
	// after every case). Fewer looks never raise the error rates.
	LookEvery int `json:"look_every"`
	// PassOnly runs only the PASS test, for differences that are lower bounds
	// of the true per-case difference (live traffic's disagreement, see the
	// package README); FAIL is then never concluded.
	PassOnly bool `json:"pass_only"`
	// Continue keeps betting after a capital reaches 2/α (Verdict still
	// records the first decision): the anytime-valid p-values (State.PassP,
	// FailP) then keep falling, so a multiple-comparison correction that
	// compares them with levels below α/2 (Holm across segments) can still
	// reject.
	Continue bool `json:"continue,omitempty"`
}

// Validate reports values outside their ranges.
func (c SequentialConfig) Validate() error {
	switch {
	case c.Margin < 0 || c.Margin >= 1, c.FailAt < 0 || c.FailAt >= 1:
		return fmt.Errorf("stats: sequential: margin and fail threshold must be in [0, 1), got %g and %g", c.Margin, c.FailAt)
	case c.Effect <= c.FailAt || c.Effect >= 1:
		return fmt.Errorf("stats: sequential: effect must be in (fail threshold %g, 1), got %g", c.FailAt, c.Effect)
	case c.Confidence <= 0 || c.Confidence >= 1:
		return fmt.Errorf("stats: sequential: confidence must be in (0, 1), got %g", c.Confidence)
	case c.MinN < 0 || c.LookEvery < 0:
		return fmt.Errorf("stats: sequential: min n and look interval must be >= 0, got %d and %d", c.MinN, c.LookEvery)
	}
	return nil
}

// Sequential is an anytime-valid test of the paired per-case differences
// d ∈ [−1, 1] (candidate − incumbent: −1, 0, +1 for pass/fail grades, the score
// difference for continuous grades) by betting (Shafer & Vovk; Waudby-Smith &
// Ramdas 2024, "Estimating means of bounded random variables by betting",
// JRSS-B 86(1):1–27). Two capital processes run side by side:
//
//	PASS test, H₀: θ ≤ −m:  K⁺ₜ = Π (1 + λᵢ(dᵢ + m))
//	FAIL test, H₀: θ ≥ −f:  K⁻ₜ = Π (1 − μᵢ(dᵢ + f))
//
// Under its H₀ each is a nonnegative supermartingale for any distribution of
// the d's, so by Ville's inequality P(sup_t K ≥ 2/α) ≤ α/2: stopping at the
// first look where K⁺ or K⁻ reaches 2/α keeps P(PASS | θ ≤ −m) ≤ α/2 and
// P(FAIL | θ ≥ −f) ≤ α/2 however many looks are taken. The bets are
// predictable and adapt to the data: the aGRAPA plug-in of the Kelly bet
// (agrapa), λ = (μ̂ + m)/(σ̂² + (μ̂ + m)²) for the PASS test and
// μ = (−f − μ̂)/(σ̂² + (f + μ̂)²) for the FAIL test, μ̂ and σ̂² the running mean
// and variance of d₁…dᵢ₋₁ shrunk over 10 cases towards the design
// alternatives (equal for the PASS test, worse by the effect e for the FAIL
// test) and a variance of 0.25; bets are capped so a factor never drops
// below ½.
//
// The confidence sequence (CS) is the set of θ₀ whose one-sided tests, with
// bets sized the same way around θ₀, have not reached 2/α at any time so far;
// its ends at −m and −f are the two tests themselves.
type Sequential struct {
	cfg       SequentialConfig
	d         []float64
	logPass   float64 // log K⁺
	logFail   float64 // log K⁻
	maxPass   float64 // running max of log K⁺
	maxFail   float64
	lookPass  float64 // max of log K⁺ at the looks (n ≥ MinN, every LookEvery cases)
	lookFail  float64
	mom       moments // over the d's
	verdict   string
	decidedAt int
	threshold float64 // log(2/α)
}

// NewSequential starts a test; it returns cfg's Validate error.
func NewSequential(cfg SequentialConfig) (*Sequential, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LookEvery == 0 {
		cfg.LookEvery = 1
	}
	return &Sequential{cfg: cfg, threshold: math.Log(2 / (1 - cfg.Confidence))}, nil
}

// seqPriorVar is the variance the bets' running variance starts from: the
// largest a pass/fail difference in {−1, 0, 1} with mean 0 and half its pairs
// discordant has.
const seqPriorVar = 0.25

// passBet and failBet are the two tests' bets on the moments so far around
// θ₀ (−m and −f for the tests themselves).
func (s *Sequential) passBet(mom moments, t0 float64) float64 {
	mu, v := mom.estimate(0, seqPriorVar)
	return agrapa(mu, v, t0, 1+t0, true)
}

func (s *Sequential) failBet(mom moments, t0 float64) float64 {
	mu, v := mom.estimate(-s.cfg.Effect, seqPriorVar)
	return agrapa(mu, v, t0, 1-t0, false)
}

// Add takes the next case's difference d (clamped to [−1, 1]). After a
// decision the test stops: further cases are counted but change nothing.
func (s *Sequential) Add(d float64) {
	d = math.Max(-1, math.Min(1, d))
	if s.verdict == "" || s.cfg.Continue {
		m, f := s.cfg.Margin, s.cfg.FailAt
		s.logPass += math.Log1p(s.passBet(s.mom, -m) * (d + m))
		s.maxPass = math.Max(s.maxPass, s.logPass)
		if !s.cfg.PassOnly {
			s.logFail += math.Log1p(-s.failBet(s.mom, -f) * (d + f))
			s.maxFail = math.Max(s.maxFail, s.logFail)
		}
	}
	s.d = append(s.d, d)
	s.mom.add(d)
	look := len(s.d) >= s.cfg.MinN && len(s.d)%s.cfg.LookEvery == 0
	if look {
		s.lookPass = math.Max(s.lookPass, s.logPass)
		s.lookFail = math.Max(s.lookFail, s.logFail)
	}
	if s.verdict == "" && look {
		switch {
		case s.logPass >= s.threshold:
			s.verdict, s.decidedAt = "PASS", len(s.d)
		case !s.cfg.PassOnly && s.logFail >= s.threshold:
			s.verdict, s.decidedAt = "FAIL", len(s.d)
		}
	}
}

// SequentialState is where a Sequential test stands.
type SequentialState struct {
	N         int     `json:"n"`          // cases seen
	Mean      float64 `json:"mean"`       // mean difference so far
	Verdict   string  `json:"verdict"`    // "PASS", "FAIL" or "INCONCLUSIVE" (still running)
	DecidedAt int     `json:"decided_at"` // cases at the decision, 0 while running
	// PassEvidence and FailEvidence are the tests' capitals (e-values) K⁺ and
	// K⁻; a test decides when its capital reaches Threshold = 2/α.
	PassEvidence float64 `json:"pass_evidence"`
	FailEvidence float64 `json:"fail_evidence"`
	Threshold    float64 `json:"threshold"`
	// PassProgress and FailProgress are log K / log(2/α) clamped to [0, 1]:
	// how far each test is on the way to deciding.
	PassProgress float64 `json:"pass_progress"`
	FailProgress float64 `json:"fail_progress"`
	// PassP and FailP are the anytime-valid p-values of the two null
	// hypotheses (θ ≤ −Margin, θ ≥ −FailAt): min(1, 1/max K) over the looks so
	// far, 1 before the first look. By Ville's inequality P(p ≤ x) ≤ x under
	// the null at any stopping time (Ramdas, Grünwald, Vovk & Shafer 2023,
	// "Game-theoretic statistics and safe anytime-valid inference", Statist.
	// Sci. 38(4):576–601, §4), so they are valid p-values for a correction such
	// as Holm's; the test decides exactly when one falls to α/2.
	PassP float64 `json:"pass_p"`
	FailP float64 `json:"fail_p"`
	// MoreCases projects the cases still needed by the test that is closer to
	// deciding, from its capital's growth per case so far; -1 before MinN
	// cases or when neither grows (no projection), 0 once decided.
	MoreCases int `json:"more_cases"`
	// CS is the anytime-valid confidence sequence for θ at this time (see
	// Sequential); with PassOnly only its lower end is meaningful.
	CS     Interval         `json:"cs"`
	Config SequentialConfig `json:"config"`
}

// State returns the test's current state, the CS included (O(n) per bisection
// step of each bound).
func (s *Sequential) State() SequentialState {
	st := s.Summary()
	st.CS = s.cs()
	return st
}

// Summary is State without the confidence sequence (CS left at [−1, 1]):
// O(1), for callers that read only the verdict, evidence, p-values and
// projection of many tests (per-segment running verdicts).
func (s *Sequential) Summary() SequentialState {
	st := SequentialState{N: len(s.d), Mean: s.mom.mean, Verdict: s.verdict, DecidedAt: s.decidedAt,
		PassEvidence: math.Exp(s.logPass), FailEvidence: math.Exp(s.logFail), Threshold: math.Exp(s.threshold),
		Config: s.cfg}
	if st.Verdict == "" {
		st.Verdict = "INCONCLUSIVE"
	}
	prog := func(l float64) float64 { return math.Max(0, math.Min(1, l/s.threshold)) }
	st.PassProgress, st.FailProgress = prog(s.logPass), prog(s.logFail)
	st.PassP, st.FailP = math.Min(1, math.Exp(-s.lookPass)), math.Min(1, math.Exp(-s.lookFail))
	if s.verdict != "" && !s.cfg.Continue {
		st.PassProgress, st.FailProgress = prog(s.maxPass), prog(s.maxFail)
	}
	st.MoreCases = -1
	if s.verdict != "" {
		st.MoreCases = 0
	} else if n := float64(len(s.d)); n > 0 && len(s.d) >= s.cfg.MinN {
		lead := s.logPass
		if !s.cfg.PassOnly && s.logFail > lead {
			lead = s.logFail
		}
		if lead > 0 {
			more := int(math.Ceil((s.threshold - lead) / (lead / n)))
			st.MoreCases = max(more, 0)
		}
	}
	st.CS = Interval{-1, 1}
	return st
}

// rejects reports whether the one-sided betting test of "θ ≤ t0" (lower) or
// "θ ≥ t0" (upper) has reached 2/α at some time over the data so far.
func (s *Sequential) rejects(t0 float64, lower bool) bool {
	var logK float64
	var mom moments
	for _, d := range s.d {
		if lower {
			logK += math.Log1p(s.passBet(mom, t0) * (d - t0))
		} else {
			logK += math.Log1p(-s.failBet(mom, t0) * (d - t0))
		}
		if logK >= s.threshold {
			return true
		}
		mom.add(d)
	}
	return false
}

// cs bisects the CS's ends: the largest θ₀ below the mean whose lower test
// rejects, the smallest above it whose upper test rejects.
func (s *Sequential) cs() Interval {
	iv := Interval{-1, 1}
	if len(s.d) == 0 {
		return iv
	}
	if s.rejects(-1+1e-9, true) {
		lo, hi := -1+1e-9, s.mom.mean
		for hi-lo > 1e-4 {
			mid := (lo + hi) / 2
			if s.rejects(mid, true) {
				lo = mid
			} else {
				hi = mid
			}
		}
		iv.Low = lo
	}
	if s.rejects(1-1e-9, false) {
		lo, hi := s.mom.mean, 1-1e-9
		for hi-lo > 1e-4 {
			mid := (lo + hi) / 2
			if s.rejects(mid, false) {
				hi = mid
			} else {
				lo = mid
			}
		}
		iv.High = hi
	}
	return iv
}

// Verdict is "PASS" or "FAIL" once decided, "" while running (cheaper than
// State, which also computes the confidence sequence).
func (s *Sequential) Verdict() string { return s.verdict }
