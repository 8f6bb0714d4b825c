// Package gate reads a versioned cut-over gate policy (YAML) and turns a
// stats.Comparison into a verdict: PASS, FAIL or INCONCLUSIVE, with each
// gate's figure, interval, threshold and reason.
package gate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// Policy is a gate policy file. Every gate section is optional; a policy must
// enable at least one gate. Example (testdata/full.good.yaml):
//
//	version: "2026-11-30.1"     # required; stored with every suite run
//	confidence: 0.95            # two-sided level of every interval (default 0.95)
//	min_n: 100                  # fewer paired graded cases → INCONCLUSIVE
//	quality:
//	  margin_points: 3          # PASS: lower bound of cand − inc ≥ −3 points (non-inferior)
//	  fail_points: 0            # FAIL: upper bound < −0 points (significantly worse); default = margin_points
//	  effect_points: 5          # the drop the gate must catch: sample-size advice, sequential bets
//	cost:
//	  max_ratio: 1.0            # cost/request ratio ceiling (candidate / incumbent)
//	latency:
//	  max_p95_ratio: 1.25       # p95 latency ratio ceiling
//	segments:
//	  must_not_regress: [category:math, app:support, tag:latex]   # the family, fixed up front
//	  min_n: 20
//	  margin_points: 10         # a segment PASSes when its own lower bound ≥ −10 points (default quality.margin_points)
//	  fail_points: 0            # a segment FAILs when its upper bound < −0 points, Holm over the family (default quality's)
//	looks:
//	  spending: pocock          # a follow-up run of the same set and candidate version is a planned look: pocock | obrien-fleming | none
//	  max_cases: 2000           # the plan's cases (information fraction 1); 0: planned at the first look
//	noise:
//	  require_above_noise: true # a quality difference counts only beyond A-vs-A′
//	truncation: fail            # a run whose answer hit the token cap: fail | exclude | ignore
//	max_run_error_share: 0.1    # more runs than this share ended in status error on either side → no verdict
//	judge:                      # verdicts resting on an LLM judge (judge.go)
//	  min_position_consistency: 0.8
//	  max_error_share: 0.1
//	  max_canary_failures: 0
//	  same_family: warn         # warn | refuse
//	live:                       # the live verdict on shadow traffic (livepolicy.go)
//	  min_inclusion_prob: 0.1
//	  settle: 1h
//	  rollback_margin_points: 5
type Policy struct {
	Version    string        `yaml:"version" json:"version,omitempty"`
	Confidence float64       `yaml:"confidence" json:"confidence,omitempty"`
	MinN       int           `yaml:"min_n" json:"min_n,omitempty"`
	Quality    *QualityGate  `yaml:"quality" json:"quality,omitempty"`
	Cost       *CostGate     `yaml:"cost" json:"cost,omitempty"`
	Latency    *LatencyGate  `yaml:"latency" json:"latency,omitempty"`
	Segments   *SegmentsGate `yaml:"segments" json:"segments,omitempty"`
	Noise      *NoiseGate    `yaml:"noise" json:"noise,omitempty"`
	// Looks says how suite runs of the same set and candidate version after
	// the first are analysed: as the next look of a group-sequential plan
	// (LooksGate); nil means SpendingPocock with the plan's cases set
	// at the first look.
	Looks *LooksGate `yaml:"looks" json:"looks,omitempty"`
	// Truncation says how a run whose final answer was cut at the token cap
	// (finish reason "length") counts: TruncationFail (default, also when
	// empty) as a failed case whatever its grade; TruncationExclude left out of
	// accuracy and of the paired comparisons, like a grader error;
	// TruncationIgnore graded like any other answer.
	Truncation string `yaml:"truncation" json:"truncation,omitempty"`
	// MaxRunErrorShare (0..1; 1 turns the rule off) is the largest share of either side's runs that
	// may end in status error (failed at the worker pool or in the pipeline:
	// no answer to grade) before the verdict is withheld (CheckRunErrors);
	// nil means DefaultMaxRunErrorShare.
	MaxRunErrorShare *float64 `yaml:"max_run_error_share" json:"max_run_error_share,omitempty"`
	// Judge holds the rules for verdicts resting on an LLM judge (position
	// consistency, judge errors per arm, canaries, same model family); nil
	// takes every default (JudgeRules, judge.go).
	Judge *JudgePolicy `yaml:"judge" json:"judge,omitempty"`
	// Live holds the rules of the live verdict on shadow traffic (inclusion
	// probability floor, settle time, cost bound, rollback margin, coverage
	// check); nil takes every default (LiveRules, livepolicy.go).
	Live *LiveGate `yaml:"live" json:"live,omitempty"`
}

// DefaultMaxRunErrorShare is the run-error share above which a verdict is
// withheld when the policy does not set max_run_error_share: 10% of a side's runs.
const DefaultMaxRunErrorShare = 0.1

// RunErrorShare returns p.MaxRunErrorShare, DefaultMaxRunErrorShare when unset.
func (p Policy) RunErrorShare() float64 {
	if p.MaxRunErrorShare != nil {
		return *p.MaxRunErrorShare
	}
	return DefaultMaxRunErrorShare
}

// Truncation rules (Policy.Truncation).
const (
	TruncationFail    = "fail"
	TruncationExclude = "exclude"
	TruncationIgnore  = "ignore"
)

// TruncationRule returns p.Truncation, TruncationFail when it is empty.
func (p Policy) TruncationRule() string {
	if p.Truncation == "" {
		return TruncationFail
	}
	return p.Truncation
}

// QualityGate is the three-way gate on the paired quality difference θ
// (candidate − incumbent, points): PASS when the interval's lower bound is
// ≥ −MarginPoints (non-inferiority), else FAIL when its upper bound is
// < −FailPoints, else INCONCLUSIVE (see stats.Design). With FailPoints below
// MarginPoints a candidate shown within the margin passes even when it is
// also significantly worse by less than the margin (the claim then says
// "worse").
type QualityGate struct {
	// MarginPoints is the non-inferiority margin in accuracy points (0..100).
	MarginPoints float64 `yaml:"margin_points" json:"margin_points,omitempty"`
	// FailPoints is the FAIL threshold in points (0..MarginPoints); nil means
	// MarginPoints (FAIL only beyond the margin, the default-1 rule).
	FailPoints *float64 `yaml:"fail_points" json:"fail_points,omitempty"`
	// EffectPoints is the drop in points the gate is planned to catch (above
	// the FAIL threshold; default 5, or the FAIL threshold + 1 when that is
	// higher): the sample-size advice and the sequential test's bets use it.
	EffectPoints float64 `yaml:"effect_points" json:"effect_points,omitempty"`
}

// Fail returns the FAIL threshold in points (FailPoints, or MarginPoints when unset).
func (g QualityGate) Fail() float64 {
	if g.FailPoints != nil {
		return *g.FailPoints
	}
	return g.MarginPoints
}

// Effect returns EffectPoints, or when unset 5 (at least the FAIL threshold + 1).
func (g QualityGate) Effect() float64 {
	if g.EffectPoints > 0 {
		return g.EffectPoints
	}
	return max(5, g.Fail()+1)
}

// Design is the gate's rule as stats.Design at confidence conf (0..1 units).
func (g QualityGate) Design(conf float64) stats.Design {
	return stats.Design{Margin: g.MarginPoints / 100, FailAt: g.Fail() / 100, Confidence: conf}
}

// CostGate caps candidate cost per request / incumbent cost per request.
type CostGate struct {
	MaxRatio float64 `yaml:"max_ratio" json:"max_ratio,omitempty"` // > 0
}

// LatencyGate caps candidate p95 latency / incumbent p95 latency.
type LatencyGate struct {
	MaxP95Ratio float64 `yaml:"max_p95_ratio" json:"max_p95_ratio,omitempty"` // > 0
}

// SegmentsGate lists the segments ("category:X", "app:X", "tag:X" or a
// traffic segment: "lang:ru", "lang:ru+table", "table", "code",
// "len:512-2047") that must not regress: the family is this list, fixed up
// front, whatever segments a run or live traffic happens to hold. Each listed
// segment PASSes only when it shows non-inferiority on its own (its lower
// bound ≥ −MarginPoints), FAILs when it is significantly worse than
// −FailPoints after Holm's correction over the whole list, and is
// INCONCLUSIVE otherwise — in particular when it is too small to show either
// (SegmentResults).
type SegmentsGate struct {
	MustNotRegress []string `yaml:"must_not_regress" json:"must_not_regress,omitempty"`
	// MinN: a segment with fewer paired graded cases is INCONCLUSIVE (default 0).
	MinN int `yaml:"min_n" json:"min_n,omitempty"`
	// MarginPoints is a segment's non-inferiority margin in accuracy points
	// (0..100); nil means the quality gate's margin (3 without one).
	MarginPoints *float64 `yaml:"margin_points" json:"margin_points,omitempty"`
	// FailPoints is a segment's FAIL threshold in points (0..MarginPoints);
	// nil means the quality gate's FAIL threshold (0 without one).
	FailPoints *float64 `yaml:"fail_points" json:"fail_points,omitempty"`
}

// SegmentMargin returns the segments' margin in points: MarginPoints, else the
// quality gate's margin, else 3.
func (p Policy) SegmentMargin() float64 {
	switch {
	case p.Segments != nil && p.Segments.MarginPoints != nil:
		return *p.Segments.MarginPoints
	case p.Quality != nil:
		return p.Quality.MarginPoints
	}
	return 3
}

// SegmentFail returns the segments' FAIL threshold in points: FailPoints,
// else the quality gate's, else 0 (never above the segment margin).
func (p Policy) SegmentFail() float64 {
	f := 0.0
	switch {
	case p.Segments != nil && p.Segments.FailPoints != nil:
		f = *p.Segments.FailPoints
	case p.Quality != nil:
		f = p.Quality.Fail()
	}
	return math.Min(f, p.SegmentMargin())
}

// LooksGate is the group-sequential plan of a candidate version on one set:
// every suite run of that set, incumbent and candidate version under this
// policy is a look at information fraction t = cases / MaxCases, and each
// side of every gate spends its α/2 over the looks by the Spending function
// (stats.Boundaries), so that looking again after "N more cases" keeps the
// error rates of one planned test.
type LooksGate struct {
	// Spending is stats.SpendingPocock (default: an early, small run can still
	// decide a large difference), stats.SpendingOBrienFleming (almost nothing
	// spent early, the last look nearly at the fixed-n level), or
	// SpendingNone: every run is a fixed-n test of its own, and running more
	// cases of the same set after a look raises the error rates.
	Spending string `yaml:"spending" json:"spending,omitempty"`
	// MaxCases is the plan's cases, t = 1 (its last look). 0: planned at the
	// first look from that run's discordance and spreads (PlanPolicy), at the
	// asked power, and kept for the later looks.
	MaxCases int `yaml:"max_cases" json:"max_cases,omitempty"`
}

// SpendingNone turns group-sequential looks off (LooksGate.Spending).
const SpendingNone = "none"

// LookSpending returns the policy's spending function: Looks.Spending,
// stats.SpendingPocock when unset.
func (p Policy) LookSpending() string {
	if p.Looks == nil || p.Looks.Spending == "" {
		return stats.SpendingPocock
	}
	return p.Looks.Spending
}

// NoiseGate requires the candidate's disagreement with the incumbent to be
// judged against the incumbent's disagreement with itself (A vs A′).
type NoiseGate struct {
	RequireAboveNoise bool `yaml:"require_above_noise" json:"require_above_noise,omitempty"`
}

// DefaultVersion is the version of NewDefaultPolicy.
const DefaultVersion = "default-3"

// NewDefaultPolicy returns version "default-3": the thresholds of default-2
// (95% intervals, min n 100; quality PASS when the 95% lower bound of
// candidate − incumbent is ≥ −3 points, FAIL when the upper bound is < 0,
// planned for a 5-point drop; cost/request ratio ≤ 1.10; p95 latency ratio
// ≤ 1.25), with follow-up runs of the same set and candidate version analysed
// as looks of a group-sequential plan with Pocock-like spending
// (LooksGate).
//
// Why: with 20% discordant pairs an equally good candidate passes with 80%
// probability at about 1,750 cases, and a 5-point drop fails with 80% at
// about 620 (stats.Plan), while P(FAIL | equal) and P(PASS | worse by 3
// points) stay at about 2.5%. default-1 (margin 1 point for both PASS and
// FAIL, cost ceiling 1.0) could not pass an equally good candidate: its
// cost ceiling of exactly 1.0 cannot be cleared by an equally priced one, and
// a 1-point margin needs about 16,000 cases at 20% discordance.
func NewDefaultPolicy() Policy {
	p := NewPolicyV2()
	p.Version = DefaultVersion
	p.Looks = &LooksGate{Spending: stats.SpendingPocock}
	return p
}

// NewPolicyV2 returns version "default-2": default-3's thresholds, every run
// a fixed-n test of its own (looks: none). Kept so verdicts stored under it
// stay readable and can be re-evaluated.
func NewPolicyV2() Policy {
	zero := 0.0
	return Policy{
		Version: "default-2", Confidence: 0.95, MinN: 100,
		Quality: &QualityGate{MarginPoints: 3, FailPoints: &zero, EffectPoints: 5},
		Cost:    &CostGate{MaxRatio: 1.10},
		Latency: &LatencyGate{MaxP95Ratio: 1.25},
		Looks:   &LooksGate{Spending: SpendingNone},
	}
}

// NewPolicyV1 returns the earlier shipped default, version "default-1": 95%
// intervals, min n 100, quality margin 1 point for both PASS and FAIL, cost
// ratio ≤ 1.0, p95 ratio ≤ 1.25. Kept so verdicts stored under it stay
// readable and can be re-evaluated.
func NewPolicyV1() Policy {
	return Policy{
		Version: "default-1", Confidence: 0.95, MinN: 100,
		Quality: &QualityGate{MarginPoints: 1},
		Cost:    &CostGate{MaxRatio: 1.0},
		Latency: &LatencyGate{MaxP95Ratio: 1.25},
		Looks:   &LooksGate{Spending: SpendingNone},
	}
}

// Shipped returns the shipped policy of that version ("default-1",
// "default-2" or "default-3"); false for any other.
func Shipped(version string) (Policy, bool) {
	switch version {
	case DefaultVersion:
		return NewDefaultPolicy(), true
	case "default-2":
		return NewPolicyV2(), true
	case "default-1":
		return NewPolicyV1(), true
	}
	return Policy{}, false
}

// Load reads and validates a policy file.
func Load(path string) (Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, fmt.Errorf("gate: load policy: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return Policy{}, fmt.Errorf("gate: policy %s: %w", path, err)
	}
	return p, nil
}

// Parse decodes a policy (unknown keys are errors), fills Confidence 0.95 when
// absent and validates it.
func Parse(b []byte) (Policy, error) {
	var p Policy
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("decode: %w", err)
	}
	if p.Confidence == 0 {
		p.Confidence = 0.95
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Validate reports every problem of p, joined.
func (p Policy) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if strings.TrimSpace(p.Version) == "" {
		bad("version is required")
	}
	if p.Confidence <= 0 || p.Confidence >= 1 {
		bad("confidence must be in (0, 1), got %g", p.Confidence)
	}
	if p.MinN < 0 {
		bad("min_n must be >= 0, got %d", p.MinN)
	}
	if e := p.MaxRunErrorShare; e != nil && (*e < 0 || *e > 1) {
		bad("max_run_error_share must be in [0, 1], got %g", *e)
	}
	if q := p.Quality; q != nil {
		if q.MarginPoints < 0 || q.MarginPoints >= 100 {
			bad("quality.margin_points must be in [0, 100), got %g", q.MarginPoints)
		}
		if q.FailPoints != nil && (*q.FailPoints < 0 || *q.FailPoints > q.MarginPoints) {
			bad("quality.fail_points must be in [0, margin_points %g], got %g", q.MarginPoints, *q.FailPoints)
		}
		if q.EffectPoints < 0 || q.EffectPoints >= 100 || (q.EffectPoints > 0 && q.EffectPoints <= q.Fail()) {
			bad("quality.effect_points must be in (fail_points %g, 100), got %g", q.Fail(), q.EffectPoints)
		}
	}
	if p.Cost != nil && p.Cost.MaxRatio <= 0 {
		bad("cost.max_ratio must be > 0, got %g", p.Cost.MaxRatio)
	}
	if p.Latency != nil && p.Latency.MaxP95Ratio <= 0 {
		bad("latency.max_p95_ratio must be > 0, got %g", p.Latency.MaxP95Ratio)
	}
	if s := p.Segments; s != nil {
		if len(s.MustNotRegress) == 0 {
			bad("segments.must_not_regress must list at least one segment")
		}
		if s.MinN < 0 {
			bad("segments.min_n must be >= 0, got %d", s.MinN)
		}
		if m := s.MarginPoints; m != nil && (*m < 0 || *m >= 100) {
			bad("segments.margin_points must be in [0, 100), got %g", *m)
		}
		if f := s.FailPoints; f != nil && (*f < 0 || *f > p.SegmentMargin()) {
			bad("segments.fail_points must be in [0, segments margin %g], got %g", p.SegmentMargin(), *f)
		}
		seen := map[string]bool{}
		for _, name := range s.MustNotRegress {
			kind, val, ok := strings.Cut(name, ":")
			traffic := name == "table" || name == "code" || kind == "lang" || kind == "len"
			if !traffic && (!ok || val == "" || (kind != "category" && kind != "app" && kind != "tag")) {
				bad("segments.must_not_regress: %q is not category:<name>, app:<name>, tag:<name>, lang:<iso>[+table|+code], len:<bucket>, table or code", name)
			}
			if seen[name] {
				bad("segments.must_not_regress: %q listed twice", name)
			}
			seen[name] = true
		}
	}
	if l := p.Looks; l != nil {
		switch l.Spending {
		case "", stats.SpendingOBrienFleming, stats.SpendingPocock, SpendingNone:
		default:
			bad("looks.spending must be %s, %s or %s, got %q", stats.SpendingOBrienFleming, stats.SpendingPocock, SpendingNone, l.Spending)
		}
		if l.MaxCases < 0 {
			bad("looks.max_cases must be >= 0, got %d", l.MaxCases)
		}
	}
	errs = append(errs, p.Judge.validate()...)
	errs = append(errs, p.Live.validate()...)
	switch p.Truncation {
	case "", TruncationFail, TruncationExclude, TruncationIgnore:
	default:
		bad("truncation must be fail, exclude or ignore, got %q", p.Truncation)
	}
	if p.Quality == nil && p.Cost == nil && p.Latency == nil && p.Segments == nil && p.Noise == nil {
		bad("no gate enabled: set at least one of quality, cost, latency, segments, noise")
	}
	if len(errs) > 0 {
		return fmt.Errorf("gate: invalid policy: %w", errors.Join(errs...))
	}
	return nil
}
