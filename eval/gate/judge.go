package gate

import (
	"fmt"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// JudgePolicy is what a verdict that rests on an LLM judge (a grader that asks
// a model, or a grader that could not judge) must show before it counts. Each
// key left out takes its default; the section may be left out entirely.
//
//	judge:
//	  min_position_consistency: 0.8  # pairwise: share of pairs whose two orders agree
//	  max_error_share: 0.1           # either arm's share of cases the grader could not judge
//	  max_canary_failures: 0         # canaries (identical, padded, label swap) a judge may fail
//	  same_family: warn              # a judge of the incumbent's or the candidate's model family: warn | refuse
//	  min_judge_kappa: 0.6           # pairwise: floor of the lower confidence bound of the judge's κ with human reviewers
//	  min_reviews: 50                # reviewed pairs before κ is checked; fewer: "not validated by human review"
//	  require_review: false          # true: a judge with fewer than min_reviews reviewed pairs makes the verdict INCONCLUSIVE
type JudgePolicy struct {
	// MinPositionConsistency (0..1) is the floor of the judge's position
	// consistency on the pairs it judged in both orders (figure.
	// PositionConsistency); below it the verdict is INCONCLUSIVE. Nil means
	// DefaultMinPositionConsistency.
	MinPositionConsistency *float64 `yaml:"min_position_consistency" json:"min_position_consistency,omitempty"`
	// MaxErrorShare (0..1; 1 turns the share rule off) is the largest share of
	// either arm's cases its grader may fail to judge (an LLM judge's failed
	// call, unreadable or out-of-scale reply; any grader error). Nil means
	// DefaultMaxJudgeErrorShare. The arms' shares must also not differ
	// significantly (McNemar's exact test on the cases with an error on one
	// side only, at 1 − confidence).
	MaxErrorShare *float64 `yaml:"max_error_share" json:"max_error_share,omitempty"`
	// MaxCanaryFailures is how many canaries the judge may fail (nil means
	// DefaultMaxCanaryFailures, 0).
	MaxCanaryFailures *int `yaml:"max_canary_failures" json:"max_canary_failures,omitempty"`
	// SameFamily says what a judge of the same model family as the
	// incumbent's or the candidate's models gets: SameFamilyWarn (default, also
	// when empty) a warning in the gate table; SameFamilyRefuse an
	// INCONCLUSIVE verdict.
	SameFamily string `yaml:"same_family" json:"same_family,omitempty"`
	// MinJudgeKappa (−1..1) is the floor of a pairwise judge's agreement with
	// human reviewers: the lower bound of Cohen's κ's interval at the
	// policy's confidence (stats.CohenKappa) must reach it, so a small review
	// sample cannot pass a bad judge; below it the verdict is INCONCLUSIVE,
	// naming the judge, κ and its interval. Nil means DefaultMinJudgeKappa;
	// −1 turns the rule off.
	MinJudgeKappa *float64 `yaml:"min_judge_kappa" json:"min_judge_kappa,omitempty"`
	// MinReviews (≥ 1) is how many of the judge's pairs humans must have
	// reviewed before its κ is checked; with fewer the report says the judge
	// is "not validated by human review". Nil means DefaultMinReviews.
	MinReviews *int `yaml:"min_reviews" json:"min_reviews,omitempty"`
	// RequireReview makes a verdict resting on a pairwise judge with fewer
	// than MinReviews reviewed pairs INCONCLUSIVE (default false: a warning).
	RequireReview bool `yaml:"require_review" json:"require_review,omitempty"`
}

// Defaults of JudgePolicy.
const (
	// DefaultMinPositionConsistency: a judge whose two orders disagree on more
	// than one pair in five is not trusted. GPT-4 agreed with itself across
	// swapped orders on 65% of MT-Bench pairs (Zheng et al. 2023, Table 2).
	DefaultMinPositionConsistency = 0.8
	DefaultMaxJudgeErrorShare     = 0.1
	DefaultMaxCanaryFailures      = 0
	// DefaultMinJudgeKappa: κ of at least 0.6 at the lower confidence bound,
	// the top of Landis & Koch's (1977) "moderate" band. κ never exceeds the
	// raw agreement ((p_o − p_e)/(1 − p_e) ≤ p_o), so no judge that agrees
	// with the reviewers on 60% of the pairs or less can pass, whatever the
	// mix of labels. This is strict: on MT-Bench with ties, GPT-4 agreed with
	// experts on 66% of the pairs and experts with each other on 63% (Zheng
	// et al. 2023, MT-Bench agreement, the setup with ties).
	DefaultMinJudgeKappa = 0.6
	// DefaultMinReviews: 50 reviewed pairs put the interval of a good judge's
	// κ (about 0.8) at roughly ±0.15, so it can clear the floor.
	DefaultMinReviews = 50
)

// Same-family rules (JudgePolicy.SameFamily).
const (
	SameFamilyWarn   = "warn"
	SameFamilyRefuse = "refuse"
)

// Gate names of the judge rules (Result.Gate).
const (
	GateJudgeErrors         = "judge_errors"
	GatePositionConsistency = "position_consistency"
	GateCanaries            = "canaries"
	GateJudgeFamily         = "judge_family"
	GateHumanReview         = "human_review"
)

// JudgeRules are a policy's judge rules with the defaults filled in.
type JudgeRules struct {
	MinPositionConsistency float64
	MaxErrorShare          float64
	MaxCanaryFailures      int
	SameFamily             string
	MinJudgeKappa          float64
	MinReviews             int
	RequireReview          bool
}

// JudgeRules returns p's judge rules, each unset one at its default.
func (p Policy) JudgeRules() JudgeRules {
	r := JudgeRules{MinPositionConsistency: DefaultMinPositionConsistency, MaxErrorShare: DefaultMaxJudgeErrorShare,
		MaxCanaryFailures: DefaultMaxCanaryFailures, SameFamily: SameFamilyWarn, MinJudgeKappa: DefaultMinJudgeKappa, MinReviews: DefaultMinReviews}
	if j := p.Judge; j != nil {
		if j.MinPositionConsistency != nil {
			r.MinPositionConsistency = *j.MinPositionConsistency
		}
		if j.MaxErrorShare != nil {
			r.MaxErrorShare = *j.MaxErrorShare
		}
		if j.MaxCanaryFailures != nil {
			r.MaxCanaryFailures = *j.MaxCanaryFailures
		}
		if j.SameFamily != "" {
			r.SameFamily = j.SameFamily
		}
		if j.MinJudgeKappa != nil {
			r.MinJudgeKappa = *j.MinJudgeKappa
		}
		if j.MinReviews != nil {
			r.MinReviews = *j.MinReviews
		}
		r.RequireReview = j.RequireReview
	}
	return r
}

// validate reports every problem of the section.
func (j *JudgePolicy) validate() []error {
	if j == nil {
		return nil
	}
	var errs []error
	if v := j.MinPositionConsistency; v != nil && (*v < 0 || *v > 1) {
		errs = append(errs, fmt.Errorf("judge.min_position_consistency must be in [0, 1], got %g", *v))
	}
	if v := j.MaxErrorShare; v != nil && (*v < 0 || *v > 1) {
		errs = append(errs, fmt.Errorf("judge.max_error_share must be in [0, 1], got %g", *v))
	}
	if v := j.MaxCanaryFailures; v != nil && *v < 0 {
		errs = append(errs, fmt.Errorf("judge.max_canary_failures must be >= 0, got %d", *v))
	}
	if v := j.MinJudgeKappa; v != nil && (*v < -1 || *v > 1) {
		errs = append(errs, fmt.Errorf("judge.min_judge_kappa must be in [-1, 1], got %g", *v))
	}
	if v := j.MinReviews; v != nil && *v < 1 {
		errs = append(errs, fmt.Errorf("judge.min_reviews must be >= 1, got %d", *v))
	}
	switch j.SameFamily {
	case "", SameFamilyWarn, SameFamilyRefuse:
	default:
		errs = append(errs, fmt.Errorf("judge.same_family must be warn or refuse, got %q", j.SameFamily))
	}
	return errs
}

// ArmErrors counts one arm's cases whose grader could not judge.
type ArmErrors struct {
	Side     string `json:"side"` // "incumbent" or "candidate"
	Pipeline string `json:"pipeline"`
	Errors   int    `json:"errors"`
	Total    int    `json:"total"`             // the arm's paired cases
	Example  string `json:"example,omitempty"` // the first error
}

// Share is Errors / Total (0 without cases).
func (e ArmErrors) Share() float64 {
	if e.Total == 0 {
		return 0
	}
	return float64(e.Errors) / float64(e.Total)
}

// JudgeEvidence is what a comparison shows about the grader it rests on.
type JudgeEvidence struct {
	// Judge names the LLM judge ("worker (model)"); "" when no case was graded
	// by one (the judge-error rule still applies to any grader's errors).
	Judge string
	// Pairwise: cases were judged as pairs (candidate against incumbent).
	Pairwise bool
	// Judged is the real pairs judged in both orders with a verdict in each;
	// Consistent those whose orders agree.
	Judged, Consistent int
	// Incumbent and Candidate count each arm's cases the grader could not
	// judge (a pair's failed judgment counts on both); IncumbentOnly and
	// CandidateOnly the cases where only that arm's grade failed (McNemar's
	// discordant pairs on error / no error).
	Incumbent, Candidate         ArmErrors
	IncumbentOnly, CandidateOnly int
	// Canaries is how many canaries ran; CanaryFailures describes each failed one.
	Canaries       int
	CanaryFailures []string
	// Family is the judge's model family ("" when unknown); SameFamily names
	// each pipeline of that family, e.g. "incumbent single:gpt-5 (gpt-5)".
	Family     string
	SameFamily []string
	// Review is the judge's agreement with human reviewers (pairwise judges).
	Review ReviewEvidence
}

// ReviewEvidence is a pairwise judge's agreement with human reviewers over
// every pair of its real judgments humans reviewed (eval.AgreementOf).
type ReviewEvidence struct {
	// Pairs is how many distinct judged pairs humans labelled (skips apart),
	// Reviews the labels (a pair may have several reviewers).
	Pairs, Reviews int
	// Agreement is the share (weighted by 1/inclusion probability) of labels
	// equal to the judge's outcome; Kappa Cohen's κ with its interval at the
	// policy's confidence, nil when there is none (no review, or κ
	// undefined: Note says why).
	Agreement float64
	Kappa     *stats.Kappa
	Note      string
}

// PositionConsistency is Consistent / Judged (figure.PositionConsistency).
func (ev JudgeEvidence) PositionConsistency() float64 {
	if ev.Judged == 0 {
		return 0
	}
	return float64(ev.Consistent) / float64(ev.Judged)
}

// CheckJudge applies p's judge rules to ev, before any other gate, and
// returns their rows for the gate table (none when nothing was judged by an
// LLM and no grade failed). A row is INCONCLUSIVE when:
//   - judge_errors: either arm's share of cases the grader could not judge
//     exceeds max_error_share, or the shares differ significantly (McNemar's
//     exact test on the cases where only one arm's grade failed, p below
//     1 − confidence): the cases a judge fails on are not a random sample
//     (a candidate's worst answers may be exactly those), so dropping them
//     biases the comparison;
//   - position_consistency (pairwise): the share of pairs whose two orders
//     agree is below min_position_consistency;
//   - canaries: the judge failed more than max_canary_failures, or none ran;
//   - judge_family: the judge shares a model family with the incumbent or
//     the candidate and same_family is refuse (warn: PASS with a warning);
//   - human_review (pairwise): with at least min_reviews reviewed pairs, the
//     lower bound of the judge's κ with human reviewers is below
//     min_judge_kappa; with fewer, the judge is "not validated by human
//     review" — a PASS row saying so, INCONCLUSIVE when require_review.
//
// withheld lists the INCONCLUSIVE rows' reasons: the verdict is then
// INCONCLUSIVE whatever the other gates say (Verdict.WithholdForJudge).
func CheckJudge(p Policy, ev JudgeEvidence) (rows []Result, withheld []string) {
	rules := p.JudgeRules()
	alpha := 1 - p.Confidence
	add := func(r Result) {
		rows = append(rows, r)
		if r.Status == Inconclusive {
			withheld = append(withheld, r.Reason)
		}
	}
	if ev.Judge != "" || ev.Incumbent.Errors+ev.Candidate.Errors > 0 {
		add(judgeErrors(rules.MaxErrorShare, alpha, ev))
	}
	if ev.Judge == "" {
		return rows, withheld
	}
	if ev.Pairwise {
		r := Result{Gate: GatePositionConsistency, Figure: ev.PositionConsistency(), Threshold: rules.MinPositionConsistency, Status: Pass}
		fig := fmt.Sprintf("judge %s: position consistency %.2f (%d of %d pairs judged in both orders chose the same answer or tie in both)",
			ev.Judge, r.Figure, ev.Consistent, ev.Judged)
		switch {
		case ev.Judged == 0:
			r.Status, r.Reason = Inconclusive, fmt.Sprintf("judge %s: position consistency unknown: no pair got a verdict in both orders", ev.Judge)
		case r.Figure < rules.MinPositionConsistency:
			r.Status, r.Reason = Inconclusive, fig+fmt.Sprintf(" < %.2f: the judge's verdicts depend on the order of the answers; no verdict", rules.MinPositionConsistency)
		default:
			r.Reason = fig + fmt.Sprintf(" ≥ %.2f", rules.MinPositionConsistency)
		}
		add(r)
	}
	r := Result{Gate: GateCanaries, Figure: float64(len(ev.CanaryFailures)), Threshold: float64(rules.MaxCanaryFailures), Status: Pass}
	switch {
	case ev.Canaries == 0:
		r.Status, r.Reason = Inconclusive, fmt.Sprintf("judge %s: no canary could be run (no case with an answer to check it on): the judge is unchecked; no verdict", ev.Judge)
	case len(ev.CanaryFailures) > rules.MaxCanaryFailures:
		r.Status = Inconclusive
		r.Reason = fmt.Sprintf("judge %s is unreliable: failed %d of %d canaries (policy allows %d): %s; no verdict",
			ev.Judge, len(ev.CanaryFailures), ev.Canaries, rules.MaxCanaryFailures, strings.Join(ev.CanaryFailures, "; "))
	default:
		r.Reason = fmt.Sprintf("judge %s passed %d of %d canaries", ev.Judge, ev.Canaries-len(ev.CanaryFailures), ev.Canaries)
	}
	add(r)
	r = Result{Gate: GateJudgeFamily, Status: Pass, Figure: float64(len(ev.SameFamily))}
	switch {
	case ev.Family == "":
		r.Reason = fmt.Sprintf("judge %s: model family unknown, not checked against the incumbent's and the candidate's", ev.Judge)
	case len(ev.SameFamily) == 0:
		r.Reason = fmt.Sprintf("judge %s (family %s) shares no model family with the incumbent or the candidate", ev.Judge, ev.Family)
	case rules.SameFamily == SameFamilyRefuse:
		r.Status = Inconclusive
		r.Reason = fmt.Sprintf("judge %s is of the same model family (%s) as %s, and the policy refuses such a judge (judge.same_family: refuse); no verdict",
			ev.Judge, ev.Family, strings.Join(ev.SameFamily, ", "))
	default:
		r.Reason = fmt.Sprintf("WARNING: judge %s is of the same model family (%s) as %s: judges favour their own family's answers (judge.same_family: refuse makes this INCONCLUSIVE)",
			ev.Judge, ev.Family, strings.Join(ev.SameFamily, ", "))
	}
	add(r)
	if ev.Pairwise {
		add(HumanReviewRow(p, ev.Judge, ev.Review))
	}
	return rows, withheld
}

// HumanReviewRow is the human_review row of pairwise judge (named as in
// JudgeEvidence.Judge) under p's rules: with at least judge.min_reviews
// reviewed pairs and a κ, PASS when the lower bound of κ's interval reaches
// judge.min_judge_kappa, else INCONCLUSIVE; with fewer, PASS saying the
// judge is not validated by human review, INCONCLUSIVE when
// judge.require_review. Figure is κ, Interval its interval, Threshold the
// floor. CheckJudge adds it for pairwise judges; the agreement page shows
// it per judge.
func HumanReviewRow(p Policy, judge string, rev ReviewEvidence) Result {
	rules := p.JudgeRules()
	r := Result{Gate: GateHumanReview, Threshold: rules.MinJudgeKappa, Status: Pass}
	figures := ""
	if k := rev.Kappa; k != nil {
		r.Figure, r.Interval = k.Kappa, &stats.Interval{Low: k.Interval.Low, High: k.Interval.High}
		figures = fmt.Sprintf("Cohen's κ with human reviewers %.2f (%.0f%% CI %.2f to %.2f, large-sample SE of Fleiss, Cohen & Everitt 1969), raw agreement %.2f, over %d reviewed pairs (%d labels)",
			k.Kappa, 100*k.Confidence, k.Interval.Low, k.Interval.High, rev.Agreement, rev.Pairs, rev.Reviews)
	}
	if rev.Pairs < rules.MinReviews || rev.Kappa == nil {
		s := fmt.Sprintf("judge %s is not validated by human review: %d reviewed pairs, judge.min_reviews %d", judge, rev.Pairs, rules.MinReviews)
		if figures != "" {
			s += "; so far " + figures
		}
		if rev.Note != "" {
			s += "; " + rev.Note
		}
		if rules.RequireReview {
			r.Status, r.Reason = Inconclusive, s+"; the policy requires review (judge.require_review: true); no verdict"
		} else {
			r.Reason = s + " (label pairs on the review page; judge.require_review: true makes this INCONCLUSIVE)"
		}
		return r
	}
	if k := rev.Kappa; k.Interval.Low < rules.MinJudgeKappa {
		r.Status = Inconclusive
		r.Reason = fmt.Sprintf("judge %s: %s; the lower bound %.2f < %.2f (judge.min_judge_kappa): the judge does not agree with human reviewers well enough; no verdict",
			judge, figures, k.Interval.Low, rules.MinJudgeKappa)
		return r
	}
	r.Reason = fmt.Sprintf("judge %s: %s; the lower bound %.2f ≥ %.2f (judge.min_judge_kappa)", judge, figures, rev.Kappa.Interval.Low, rules.MinJudgeKappa)
	return r
}

// judgeErrors is the judge-error row: each arm's share against the limit and
// McNemar's exact test of equal shares.
func judgeErrors(limit, alpha float64, ev JudgeEvidence) Result {
	r := Result{Gate: GateJudgeErrors, Figure: max(ev.Incumbent.Share(), ev.Candidate.Share()), Threshold: limit, Status: Pass}
	p := stats.McNemarExact(ev.IncumbentOnly, ev.CandidateOnly)
	counts := fmt.Sprintf("cases the grader could not judge: incumbent %d of %d, candidate %d of %d; McNemar exact test on error/no-error pairs (%d incumbent only, %d candidate only) p %.4g",
		ev.Incumbent.Errors, ev.Incumbent.Total, ev.Candidate.Errors, ev.Candidate.Total, ev.IncumbentOnly, ev.CandidateOnly, p)
	var over []string
	for _, a := range []ArmErrors{ev.Incumbent, ev.Candidate} {
		if a.Errors > 0 && a.Share() > limit {
			s := fmt.Sprintf("%s %s: %.1f%% of cases not judged", a.Side, a.Pipeline, 100*a.Share())
			if a.Example != "" {
				s += " (" + a.Example + ")"
			}
			over = append(over, s)
		}
	}
	switch {
	case len(over) > 0:
		r.Status = Inconclusive
		r.Reason = strings.Join(over, "; ") + fmt.Sprintf(" > %.0f%% (judge.max_error_share); %s; no verdict", 100*limit, counts)
	case p < alpha:
		r.Status = Inconclusive
		r.Reason = fmt.Sprintf("the arms' judge-error shares differ significantly (%s < %.4g): the cases left unjudged are not a random sample; no verdict", counts, alpha)
	default:
		r.Reason = counts + fmt.Sprintf(" (≤ %.0f%% per arm, shares not significantly different)", 100*limit)
	}
	return r
}

// WithholdForJudge puts the judge rows first in v's gates; when any is
// INCONCLUSIVE the verdict is INCONCLUSIVE whatever the other gates said — a
// PASS or a FAIL read from an instrument that failed its checks is not
// evidence — with no claim and no sample-size plan (more cases do not mend
// the judge).
func (v *Verdict) WithholdForJudge(rows []Result, withheld []string) {
	v.Gates = append(append([]Result{}, rows...), v.Gates...)
	if len(withheld) > 0 {
		v.Verdict, v.Claim, v.Plan = Inconclusive, ClaimNone, nil
	}
}
