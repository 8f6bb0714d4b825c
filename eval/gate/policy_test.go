package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadPolicies(t *testing.T) {
	tests := []struct {
		file    string
		check   func(t *testing.T, p Policy)
		wantErr []string // substrings of the error
	}{
		{file: "full.good.yaml", check: func(t *testing.T, p Policy) {
			if p.Version != "2026-11-30.1" || p.MinN != 100 || p.Quality.MarginPoints != 1 || p.Cost.MaxRatio != 1 ||
				p.Latency.MaxP95Ratio != 1.25 || len(p.Segments.MustNotRegress) != 3 || p.Segments.MinN != 20 || !p.Noise.RequireAboveNoise ||
				p.Truncation != TruncationFail || p.RunErrorShare() != 0.05 || p.SegmentMargin() != 10 || p.SegmentFail() != 2 ||
				p.LookSpending() != "obrien-fleming" || p.Looks.MaxCases != 2000 {
				t.Errorf("decoded %+v", p)
			}
			if r := p.JudgeRules(); r != (JudgeRules{MinPositionConsistency: 0.85, MaxErrorShare: 0.05, MaxCanaryFailures: 1, SameFamily: SameFamilyRefuse,
				MinJudgeKappa: 0.7, MinReviews: 100, RequireReview: true}) {
				t.Errorf("judge rules %+v", r)
			}
		}},
		{file: "looks-pocock.good.yaml", check: func(t *testing.T, p Policy) {
			if p.LookSpending() != "pocock" || p.Looks.MaxCases != 0 || p.SegmentMargin() != 3 || p.SegmentFail() != 0 {
				t.Errorf("decoded %+v", p)
			}
		}},
		{file: "looks-none.good.yaml", check: func(t *testing.T, p Policy) {
			if p.LookSpending() != SpendingNone {
				t.Errorf("spending %q", p.LookSpending())
			}
		}},
		{file: "bad-looks.bad.yaml", wantErr: []string{`looks.spending must be obrien-fleming, pocock or none, got "haybittle-peto"`, "looks.max_cases must be >= 0, got -5"}},
		{file: "bad-segment-margins.bad.yaml", wantErr: []string{"segments.fail_points must be in [0, segments margin 5], got 8"}},
		{file: "bad-segment-margin-range.bad.yaml", wantErr: []string{"segments.margin_points must be in [0, 100), got 150"}},
		{file: "judge-defaults.good.yaml", check: func(t *testing.T, p Policy) {
			if r := p.JudgeRules(); r != (JudgeRules{MinPositionConsistency: DefaultMinPositionConsistency, MaxErrorShare: DefaultMaxJudgeErrorShare,
				MaxCanaryFailures: 0, SameFamily: SameFamilyWarn, MinJudgeKappa: DefaultMinJudgeKappa, MinReviews: DefaultMinReviews}) ||
				DefaultMinPositionConsistency != 0.8 || DefaultMinJudgeKappa != 0.6 || DefaultMinReviews != 50 {
				t.Errorf("judge rules %+v", r)
			}
			if r := NewDefaultPolicy().JudgeRules(); r.MinPositionConsistency != 0.8 || r.MaxErrorShare != 0.1 {
				t.Errorf("default policy's judge rules %+v", r)
			}
		}},
		{file: "bad-judge.bad.yaml", wantErr: []string{"judge.min_position_consistency must be in [0, 1], got 1.2",
			"judge.max_error_share must be in [0, 1], got -0.5", "judge.max_canary_failures must be >= 0, got -1",
			`judge.same_family must be warn or refuse, got "ignore"`, "judge.min_judge_kappa must be in [-1, 1], got 1.5",
			"judge.min_reviews must be >= 1, got 0"}},
		{file: "quality-only.good.yaml", check: func(t *testing.T, p Policy) {
			if p.Confidence != 0.95 || p.Cost != nil || p.Quality.MarginPoints != 2.5 || p.TruncationRule() != TruncationFail ||
				p.RunErrorShare() != DefaultMaxRunErrorShare || p.LookSpending() != "pocock" {
				t.Errorf("decoded %+v", p)
			}
		}},
		{file: "truncation-exclude.good.yaml", check: func(t *testing.T, p Policy) {
			if p.TruncationRule() != TruncationExclude {
				t.Errorf("truncation rule %q", p.TruncationRule())
			}
		}},
		{file: "bad-run-error-share.bad.yaml", wantErr: []string{"max_run_error_share must be in [0, 1], got -0.1"}},
		{file: "bad-truncation.bad.yaml", wantErr: []string{`truncation must be fail, exclude or ignore, got "drop"`}},
		{file: "three-way.good.yaml", check: func(t *testing.T, p Policy) {
			if p.Quality.MarginPoints != 3 || p.Quality.Fail() != 0 || p.Quality.Effect() != 4 {
				t.Errorf("decoded %+v", p.Quality)
			}
		}},
		{file: "bad-fail-points.bad.yaml", wantErr: []string{"quality.fail_points must be in [0, margin_points 2], got 3",
			"quality.effect_points must be in (fail_points 3, 100), got 1"}},
		{file: "no-version.bad.yaml", wantErr: []string{"version is required"}},
		{file: "unknown-key.bad.yaml", wantErr: []string{"field margin not found"}},
		{file: "bad-segment.bad.yaml", wantErr: []string{`"math" is not category:<name>`, `"category:math" listed twice`}},
		{file: "bad-numbers.bad.yaml", wantErr: []string{"confidence must be in (0, 1), got 1.5", "min_n must be >= 0, got -3",
			"quality.margin_points must be in [0, 100), got 150", "cost.max_ratio must be > 0, got 0", "latency.max_p95_ratio must be > 0, got -1"}},
		{file: "no-gates.bad.yaml", wantErr: []string{"no gate enabled"}},
		{file: "not-yaml.bad.yaml", wantErr: []string{"decode"}},
	}
	files, _ := filepath.Glob("testdata/*.yaml")
	if len(files) != len(tests) {
		t.Errorf("testdata has %d policy files, the table covers %d", len(files), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			p, err := Load(filepath.Join("testdata", tc.file))
			good := strings.HasSuffix(tc.file, ".good.yaml")
			if good {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				tc.check(t, p)
				return
			}
			if err == nil {
				t.Fatal("want error, got none")
			}
			if !strings.Contains(err.Error(), tc.file) {
				t.Errorf("error %q does not name the file", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDefaultPolicyValid(t *testing.T) {
	if err := NewDefaultPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing file: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
