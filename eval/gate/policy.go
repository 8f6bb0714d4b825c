// Package gate reads a versioned cut-over gate policy (YAML) and turns a
// stats.Comparison into a verdict: PASS, FAIL or INCONCLUSIVE, with each
// gate's figure, interval, threshold and reason.
package gate

import (
	"bytes"
	"errors"
	"fmt"
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
//	  must_not_regress: [category:math, app:support, tag:latex]
//	  min_n: 20
//	noise:
//	  require_above_noise: true # a quality difference counts only beyond A-vs-A′
//	truncation: fail            # a run whose answer hit the token cap: fail | exclude | ignore
//	max_run_error_share: 0.1    # more runs than this share ended in status error on either side → no verdict
//	judge:                      # verdicts resting on an LLM judge (judge.go)
//	  min_position_consistency: 0.8
//	  max_error_share: 0.1
//	  max_canary_failures: 0
//	  same_family: warn         # warn | refuse
type Policy struct {
	Version    string        `yaml:"version" json:"version,omitempty"`
	Confidence float64       `yaml:"confidence" json:"confidence,omitempty"`
	MinN       int           `yaml:"min_n" json:"min_n,omitempty"`
	Quality    *QualityGate  `yaml:"quality" json:"quality,omitempty"`
	Cost       *CostGate     `yaml:"cost" json:"cost,omitempty"`
	Latency    *LatencyGate  `yaml:"latency" json:"latency,omitempty"`
	Segments   *SegmentsGate `yaml:"segments" json:"segments,omitempty"`
	Noise      *NoiseGate    `yaml:"noise" json:"noise,omitempty"`
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

// SegmentsGate lists segments ("category:X", "app:X", "tag:X" or a traffic
// segment: "lang:ru", "lang:ru+table", "table", "code", "len:512-2047") whose
// accuracy must not regress significantly after Holm's correction.
type SegmentsGate struct {
	MustNotRegress []string `yaml:"must_not_regress" json:"must_not_regress,omitempty"`
	// MinN: a segment with fewer paired graded cases is INCONCLUSIVE (default 0).
	MinN int `yaml:"min_n" json:"min_n,omitempty"`
}

// NoiseGate requires the candidate's disagreement with the incumbent to be
// judged against the incumbent's disagreement with itself (A vs A′).
type NoiseGate struct {
	RequireAboveNoise bool `yaml:"require_above_noise" json:"require_above_noise,omitempty"`
}

// DefaultVersion is the version of NewDefaultPolicy.
const DefaultVersion = "default-2"

// NewDefaultPolicy returns version "default-2": 95% intervals, min n 100;
// quality PASS when the Tango 95% lower bound of candidate − incumbent is
// ≥ −3 points, FAIL when the upper bound is < 0 (significantly worse), planned
// for a 5-point drop; cost/request ratio ≤ 1.10; p95 latency ratio ≤ 1.25.
//
// Why: with 20% discordant pairs an equally good candidate passes with 80%
// probability at about 1,750 cases, and a 5-point drop fails with 80% at
// about 620 (stats.Plan), while P(FAIL | equal) and P(PASS | worse by 3
// points) stay at about 2.5%. default-1 (margin 1 point for both PASS and
// FAIL, cost ceiling 1.0) could not pass an equally good candidate: its
// cost ceiling of exactly 1.0 cannot be cleared by an equally priced one, and
// a 1-point margin needs about 16,000 cases at 20% discordance.
func NewDefaultPolicy() Policy {
	zero := 0.0
	return Policy{
		Version: DefaultVersion, Confidence: 0.95, MinN: 100,
		Quality: &QualityGate{MarginPoints: 3, FailPoints: &zero, EffectPoints: 5},
		Cost:    &CostGate{MaxRatio: 1.10},
		Latency: &LatencyGate{MaxP95Ratio: 1.25},
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
	}
}

// Shipped returns the shipped policy of that version ("default-1" or
// "default-2"); false for any other.
func Shipped(version string) (Policy, bool) {
	switch version {
	case DefaultVersion:
		return NewDefaultPolicy(), true
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
	errs = append(errs, p.Judge.validate()...)
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
