package gate

import (
	"fmt"
	"time"
)

// LiveGate is the policy's live section: how the live verdict (LiveSequence)
// reads a candidate version's shadow traffic. Every key may be left out;
// the section too.
//
//	live:
//	  min_inclusion_prob: 0.1      # judged pairs are weighted 1/π; π below this floor is non-response
//	  settle: 1h                   # a run joins the sequence this long after it started; later judgments count as lost
//	  max_run_cost_usd: 0          # the most one run may cost (USD) for the cost test; 0: 10 × the largest cost seen so far
//	  rollback_margin_points: 5    # δ: after a PASS, roll back when the quality lower bound falls below −δ
//	  coverage_p: 0.001            # a coverage check (chi-square across segments) below this p makes the verdict INCONCLUSIVE
type LiveGate struct {
	// MinInclusionProb (0..1] is the smallest inclusion probability a judged
	// live pair may have: each judged pair's difference is weighted by 1/π
	// (Horvitz–Thompson), and the tests' bounds need 1/π bounded, so a pair
	// sampled below it counts as non-response (like a judge error). Nil means
	// DefaultMinInclusionProb.
	MinInclusionProb *float64 `yaml:"min_inclusion_prob" json:"min_inclusion_prob,omitempty"`
	// Settle is how long after its candidate run started a request joins the
	// live sequence, so that what a look reads of it does not change later;
	// a judgment written after that is counted as lost (non-response). 0
	// means DefaultSettle.
	Settle time.Duration `yaml:"settle" json:"settle,omitempty"`
	// MaxRunCostUSD bounds one run's cost (USD) for the anytime-valid cost
	// test, which needs bounded observations: the test decides faster the
	// closer it is to typical costs, and a run above it stops the test for
	// good (INCONCLUSIVE). 0 (default) scales by DefaultCostScale × the
	// largest cost of the pairs seen before, after DefaultCostBurnIn pairs.
	MaxRunCostUSD float64 `yaml:"max_run_cost_usd" json:"max_run_cost_usd,omitempty"`
	// RollbackMarginPoints is δ (points, 0..100) of the rollback rule: once
	// the verdict has PASSed, roll back when the lower bound of the quality
	// difference read from the evidence now (stats.BettingCS.PAboveNow) falls
	// below −δ. Nil means the quality gate's effect_points.
	RollbackMarginPoints *float64 `yaml:"rollback_margin_points" json:"rollback_margin_points,omitempty"`
	// CoverageP is the p-value below which the coverage check (Pearson's
	// chi-square across the cells of a segment dimension, Bonferroni over the
	// tests run) finds loss that differs by segment. 0 means DefaultCoverageP.
	CoverageP float64 `yaml:"coverage_p" json:"coverage_p,omitempty"`
}

// Defaults of LiveGate.
const (
	DefaultMinInclusionProb = 0.1
	DefaultSettle           = time.Hour
	// DefaultCoverageP follows the sample-ratio-mismatch threshold of
	// GrowthBook (p < 0.001), a check run on every look.
	DefaultCoverageP = 0.001
	// DefaultCostScale and DefaultCostBurnIn set the cost test's bound when
	// max_run_cost_usd is 0: 10 × the largest run cost of the pairs before,
	// starting after 20 pairs.
	DefaultCostScale  = 10.0
	DefaultCostBurnIn = 20
)

// LiveRules are a policy's live section with the defaults filled in.
type LiveRules struct {
	MinInclusionProb     float64
	Settle               time.Duration
	MaxRunCostUSD        float64
	RollbackMarginPoints float64
	CoverageP            float64
}

// LiveRules returns p's live rules, each unset one at its default.
func (p Policy) LiveRules() LiveRules {
	r := LiveRules{MinInclusionProb: DefaultMinInclusionProb, Settle: DefaultSettle, CoverageP: DefaultCoverageP, RollbackMarginPoints: 5}
	if p.Quality != nil {
		r.RollbackMarginPoints = p.Quality.Effect()
	}
	if l := p.Live; l != nil {
		if l.MinInclusionProb != nil {
			r.MinInclusionProb = *l.MinInclusionProb
		}
		if l.Settle > 0 {
			r.Settle = l.Settle
		}
		r.MaxRunCostUSD = l.MaxRunCostUSD
		if l.RollbackMarginPoints != nil {
			r.RollbackMarginPoints = *l.RollbackMarginPoints
		}
		if l.CoverageP > 0 {
			r.CoverageP = l.CoverageP
		}
	}
	return r
}

// validate reports every problem of the section.
func (l *LiveGate) validate() []error {
	if l == nil {
		return nil
	}
	var errs []error
	if v := l.MinInclusionProb; v != nil && !(*v > 0 && *v <= 1) {
		errs = append(errs, fmt.Errorf("live.min_inclusion_prob must be in (0, 1], got %g", *v))
	}
	if l.Settle < 0 {
		errs = append(errs, fmt.Errorf("live.settle must not be negative, got %v", l.Settle))
	}
	if l.MaxRunCostUSD < 0 {
		errs = append(errs, fmt.Errorf("live.max_run_cost_usd must be >= 0, got %g", l.MaxRunCostUSD))
	}
	if v := l.RollbackMarginPoints; v != nil && (*v < 0 || *v >= 100) {
		errs = append(errs, fmt.Errorf("live.rollback_margin_points must be in [0, 100), got %g", *v))
	}
	if l.CoverageP < 0 || l.CoverageP >= 1 {
		errs = append(errs, fmt.Errorf("live.coverage_p must be in [0, 1), got %g", l.CoverageP))
	}
	return errs
}
