package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/eval/validity"
)

// powerResult is the power command's answer for the whole policy: N is the
// cases at which the policy's verdict reaches Power for both targets — PASS
// when the candidate's quality equals the incumbent's (cost and latency as
// in Model) and FAIL when it is worse by the effect (only PASS with --effect
// 0 or above) — planned at PlannedPower = Power + stats.PlanMargin
// (gate.PlanPolicy); Gates gives each gate's own need and Binding the
// neediest; IfEqual and IfWorse are the policy's verdict probabilities at N
// (lower bounds: the product of the gates' PASS probabilities, the largest
// gate's FAIL probability). Quality is the quality gate alone, exactly.
type powerResult struct {
	N            int              `json:"n"`
	PassN        int              `json:"pass_n"`
	FailN        int              `json:"fail_n,omitempty"`
	Binding      string           `json:"binding"`
	Policy       string           `json:"policy"`
	Power        float64          `json:"power"`
	PlannedPower float64          `json:"planned_power"`
	Discordance  float64          `json:"discordance"`         // as given
	PlannedDisc  float64          `json:"planned_discordance"` // as used: at least the effect + 0.1 point
	Scores       string           `json:"scores"`
	Model        validity.Model   `json:"model"`
	PolicyModel  gate.PolicyModel `json:"policy_model"`
	Gates        []gate.GatePlan  `json:"gates"`
	IfEqual      stats.OC         `json:"if_equal"`
	IfWorse      stats.OC         `json:"if_worse"`
	Quality      qualityPower     `json:"quality"`
}

// qualityPower is the quality gate alone: the cases to advise for it to reach
// Target with probability Power under the scenario (stats.Recommend: the
// exact first n at Power + stats.PlanMargin), with OC the verdict
// probabilities at N. For pass/fail grades and effect ≠ 0 two classic
// two-sided McNemar sizes for the same effect, α and Power are given for
// comparison: McNemarExactN, the exact conditional test's minimum (binomial
// on the discordant pairs, stats.McNemarExactSampleSize; 658 at D = 0.20, a
// 5-point drop) and McNemarConnorN, its normal approximation (Connor 1987;
// 626 there); RatioToExact is N / McNemarExactN.
type qualityPower struct {
	N              int            `json:"n"`
	Target         string         `json:"target"`
	Test           string         `json:"test"`
	Scenario       stats.Scenario `json:"scenario"`
	Design         stats.Design   `json:"design"`
	OC             stats.OC       `json:"oc"`
	McNemarExactN  int            `json:"mcnemar_exact_conditional_n,omitempty"`
	McNemarConnorN int            `json:"mcnemar_normal_approx_connor_n,omitempty"`
	RatioToExact   float64        `json:"ratio_to_mcnemar_exact,omitempty"`
}

// policyFlag resolves --policy: a shipped version (default-1, default-2,
// default-3) or a policy file.
func policyFlag(name string) (gate.Policy, error) {
	if name == "" {
		return gate.NewDefaultPolicy(), nil
	}
	if p, ok := gate.Shipped(name); ok {
		return p, nil
	}
	return gate.Load(name)
}

// modelFlags registers the cost and latency model's flags (validity.Model).
func modelFlags(f *pflag.FlagSet, m *validity.Model) {
	d := validity.NewDefaultModel()
	f.Float64Var(&m.CostRatio, "cost-ratio", d.CostRatio, "candidate / incumbent cost per request")
	f.Float64Var(&m.CostSigma, "cost-sigma", d.CostSigma, "log-sd of a run's cost (log-normal), each side")
	f.Float64Var(&m.CostCorrelation, "cost-correlation", d.CostCorrelation, "correlation of the two sides' log costs on a request")
	f.Float64Var(&m.LatencyRatio, "latency-ratio", d.LatencyRatio, "candidate / incumbent p95 latency (a scale shift)")
	f.Float64Var(&m.LatencySigma, "latency-sigma", d.LatencySigma, "log-sd of a run's latency (log-normal), each side")
	f.Float64Var(&m.LatencyCorrelation, "latency-correlation", d.LatencyCorrelation, "correlation of the two sides' log latencies on a request")
}

func modelFinite(m validity.Model) map[string]float64 {
	return map[string]float64{"cost-ratio": m.CostRatio, "cost-sigma": m.CostSigma, "cost-correlation": m.CostCorrelation,
		"latency-ratio": m.LatencyRatio, "latency-sigma": m.LatencySigma, "latency-correlation": m.LatencyCorrelation}
}

// powerCmd plans a suite's size for a whole gate policy.
func powerCmd() *cobra.Command {
	var (
		s              stats.Scenario
		margin, failAt float64
		alpha, power   float64
		minN           int
		policy, scores string
		segShare       float64
		model          validity.Model
		asJSON         bool
		live           *liveFlags
		liveSuites     int
		liveSeed       uint64
	)
	c := &cobra.Command{
		Use:   "power",
		Short: "Cases a whole gate policy needs: to PASS an equal candidate and to FAIL one worse by --effect, each with --power",
		Long: `power gives the number of paired cases at which the whole gate policy (default ` + gate.DefaultVersion + `; --policy FILE
or a shipped version) reaches --power for both targets: the verdict PASSes a candidate whose quality equals the
incumbent's — with the cost and latency of the model below — and FAILs one worse by --effect (negative; with
--effect 0 or above, only the PASS target). It is planned at --power + 5 points (at most halfway to 1), so the policy
reaches the asked power at n rather than sitting on it.

How each gate is planned (gate.PlanPolicy):
  quality and segments  exactly, Tango's score test summed over the trinomial distribution of discordant pairs (judge
                        scores: the normal approximation on the score difference's spread, --scores judge)
  cost per request      the Wald test of the log ratio of mean costs (delta method): PASS probability
                        Φ((log ceiling − log ratio)/(spread/√n) − z), spread = √(2(e^{σ²} − e^{ρσ²})) for log-normal
                        costs of log-sd --cost-sigma σ and correlation --cost-correlation ρ
  p95 latency           the Wald test of the log p95 ratio (Bahadur's representation of the quantiles, paired): spread
                        σ·√(2[p(1−p) − (Φ₂(z,z;ρ) − p²)])/φ(z), p = 0.95, for log-normal latencies of log-sd
                        --latency-sigma σ and correlation --latency-correlation ρ
The policy PASSes when every gate does: its PASS probability is taken as the product of the gates' (a lower bound, as
lucky runs help every gate) and its FAIL probability as the largest gate's. Check any plan by simulation through the
gate code: conductor-shadow validity --n N with the same flags.

Segments: each of the policy's segments.must_not_regress is planned as --segment-share of the cases with the same
discordance; a segment PASSes only when it shows non-inferiority on its own, so small segments dominate the plan.

Live plan (--live): the live verdict's tests are anytime-valid and read daily, so no formula gives their n; power
simulates --suites candidates per target through the product's live sequence (validity.LiveMode: --per-day live pairs,
a --judged-share judged, followed --days days) and gives the live pairs by which --power of them FAILed when worse by
--effect, and PASSed when equal (planned at --power + 5 points like the fixed plan: the order statistic reaching
that share with 95% confidence over the simulation's error).

Accuracies and differences are fractions: --effect -0.05 is five points worse. --margin, --fail-at, --alpha and
--min-n override the policy's quality margin, FAIL threshold, level and min_n. The discordance is used as given, but
never below the effect + 0.1 point (a drop of e needs that share of discordant pairs): --json gives both.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if live.on {
				pol, err := policyFlag(policy)
				if err != nil {
					return fmt.Errorf("power: %w", err)
				}
				return runLivePlan(cmd, validity.Config{Suites: liveSuites, PIncumbent: s.PIncumbent, Discordance: s.Discordance,
					Effect: s.Effect, Seed: liveSeed, Policy: pol, Model: model}, live, power, asJSON)
			}
			flags := modelFinite(model)
			for k, v := range map[string]float64{"p-incumbent": s.PIncumbent, "discordance": s.Discordance, "effect": s.Effect,
				"margin": margin, "fail-at": failAt, "alpha": alpha, "power": power, "segment-share": segShare} {
				flags[k] = v
			}
			if err := finiteFlags(flags); err != nil {
				return fmt.Errorf("power: %w", err)
			}
			if !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1) {
				return fmt.Errorf("power: --alpha %v and --power %v must each be between 0 and 1", alpha, power)
			}
			if !(segShare > 0 && segShare <= 1) {
				return fmt.Errorf("power: --segment-share %v must be in (0, 1]", segShare)
			}
			if err := model.Validate(); err != nil {
				return fmt.Errorf("power: %w", err)
			}
			pol, err := policyFlag(policy)
			if err != nil {
				return fmt.Errorf("power: %w", err)
			}
			ch := cmd.Flags().Changed
			q := gate.QualityGate{MarginPoints: 3, EffectPoints: 5}
			if pol.Quality != nil {
				q = *pol.Quality
			}
			if ch("margin") {
				q.MarginPoints = 100 * margin
			}
			if ch("fail-at") || q.FailPoints == nil {
				f := 100 * failAt
				if !ch("fail-at") {
					f = q.Fail()
				}
				q.FailPoints = &f
			}
			if ch("alpha") {
				pol.Confidence = 1 - alpha
			}
			if ch("min-n") {
				pol.MinN = minN
			}
			if s.Effect < 0 {
				q.EffectPoints = -100 * s.Effect
			}
			if pol.Quality != nil || ch("margin") || ch("fail-at") {
				pol.Quality = &q
			}
			d := q.Design(pol.Confidence)
			if err := d.Validate(); err != nil {
				return err
			}
			if err := pol.Validate(); err != nil {
				return fmt.Errorf("power: %w", err)
			}
			qp, err := qualityPlan(s, d, power, pol.MinN, scores)
			if err != nil {
				return err
			}
			// e > 0: both targets; 0: the PASS of an equal candidate only.
			e := math.Max(-s.Effect, 0)
			pm := model.PolicyModel(s.PIncumbent, s.Discordance, 0, scores)
			if pol.Segments != nil {
				// Each listed segment holds --segment-share of the cases, with
				// the suite's discordance.
				for _, name := range pol.Segments.MustNotRegress {
					pm.Segments[name] = gate.SegmentModel{Share: segShare, Discordance: s.Discordance}
				}
			}
			pl, err := gate.PlanPolicy(pol, pm, power, stats.ZFor(pol.Confidence))
			if err != nil {
				return fmt.Errorf("power: %w", err)
			}
			res := powerResult{PassN: pl.PassN, Binding: pl.Binding, Policy: pol.Version, Power: power, PlannedPower: pl.PlannedPower,
				Discordance: s.Discordance, PlannedDisc: gate.PlannedDiscordance(s.Discordance, e), Scores: scores, Model: model,
				PolicyModel: pm, Gates: pl.Gates, IfEqual: pl.IfEqual, Quality: qp}
			res.N = pl.PassN
			if e > 0 {
				res.FailN, res.N, res.IfWorse = pl.FailN, pl.N, pl.IfWorse
			}
			if res.N == 0 {
				return fmt.Errorf("power: the policy %s cannot reach %.0f%%: %s", pol.Version, 100*power, strings.TrimSpace(pl.Markdown()))
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) { res.text(w, s, e) })
		},
	}
	f := c.Flags()
	def := gate.NewDefaultPolicy()
	f.StringVar(&policy, "policy", "", "gate policy: a YAML file or a shipped version (default "+gate.DefaultVersion+")")
	f.Float64Var(&s.PIncumbent, "p-incumbent", 0.85, "incumbent accuracy, 0..1")
	f.Float64Var(&s.Discordance, "discordance", 0.20, "share of cases where incumbent and candidate disagree on pass/fail (judge scores: share of pairs scored afresh), 0..1")
	f.Float64Var(&s.Effect, "effect", -0.05, "the drop to FAIL, fraction (negative: worse); 0: plan only a PASS of an equal candidate")
	f.Float64Var(&margin, "margin", def.Quality.MarginPoints/100, "quality non-inferiority margin, fraction (default: the policy's)")
	f.Float64Var(&failAt, "fail-at", def.Quality.Fail()/100, "FAIL when the upper bound < −fail-at, fraction (default: the policy's)")
	f.Float64Var(&alpha, "alpha", 1-def.Confidence, "two-sided level of the intervals (default: the policy's)")
	f.Float64Var(&power, "power", 0.8, "probability of reaching each target verdict")
	f.IntVar(&minN, "min-n", def.MinN, "never fewer cases (default: the policy's min_n)")
	f.StringVar(&scores, "scores", validity.ScoresPassFail, "quality grades: pass-fail or judge (tie-heavy 1–10 rubric scores)")
	f.Float64Var(&segShare, "segment-share", 0.25, "share of the cases in each segment the policy's segments.must_not_regress lists")
	live = addLiveFlags(f, 365)
	f.IntVar(&liveSuites, "suites", 400, "live: simulated candidates per target")
	f.Uint64Var(&liveSeed, "seed", 7, "live: simulation seed")
	modelFlags(f, &model)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// qualityPlan is the quality gate alone (the exact plan for pass/fail
// grades, the normal one for judge scores).
func qualityPlan(s stats.Scenario, d stats.Design, power float64, minN int, scores string) (qualityPower, error) {
	qp := qualityPower{Target: d.Target(s), Test: stats.MethodTango, Scenario: s, Design: d}
	if scores == validity.ScoresJudge {
		qp.Test = stats.MethodMeanScore
		pm := validity.NewDefaultModel().PolicyModel(s.PIncumbent, s.Discordance, 0, scores)
		if pm.ScoreSD == 0 {
			return qp, fmt.Errorf("power: judge scores with discordance %g: no spread", s.Discordance)
		}
		delta := d.Margin + s.Effect
		if qp.Target == "FAIL" {
			delta = -s.Effect - d.FailAt
		}
		if delta <= 0 {
			return qp, fmt.Errorf("power: a candidate %+.2f points on 1–10 from the incumbent cannot reach %s", gate.JudgeScale*s.Effect, qp.Target)
		}
		n, err := stats.NormalPlan(pm.ScoreSD, delta, d.Confidence, gate.PlannedPower(power))
		if err != nil {
			return qp, err
		}
		qp.N = max(n, minN)
		qp.OC = stats.NormalOperating(qp.N, pm.ScoreSD, s.Effect, d)
		return qp, nil
	}
	if err := s.Validate(); err != nil {
		return qp, err
	}
	n, err := stats.Recommend(s, d, power, minN)
	if err != nil {
		return qp, err
	}
	qp.N = n
	if qp.OC, err = stats.Operating(n, s, d); err != nil {
		return qp, err
	}
	if s.Effect != 0 {
		alpha := 1 - d.Confidence
		qp.McNemarConnorN, _ = stats.McNemarSampleSize(s.Effect, s.Discordance, alpha, power)
		if qp.McNemarExactN, err = stats.McNemarExactSampleSize(s.Effect, s.Discordance, alpha, power); err == nil {
			qp.RatioToExact = float64(n) / float64(qp.McNemarExactN)
		}
	}
	return qp, nil
}

// text prints the plan for people.
func (r powerResult) text(w io.Writer, s stats.Scenario, e float64) {
	q := r.Quality
	drop := gate.MarginText(q.Test, 100*e)
	target := fmt.Sprintf("%.0f%% PASS if equal (%d)", 100*r.Power, r.PassN)
	if e > 0 {
		target += fmt.Sprintf(" and %.0f%% FAIL if %s worse (%d)", 100*r.Power, drop, r.FailN)
	}
	fmt.Fprintf(w, "%d paired cases for the whole policy %s: %s; planned at %.0f%% (%.0f%% asked + a %.0f-point planning margin); binding gate: %s\n",
		r.N, r.Policy, target, 100*r.PlannedPower, 100*r.Power, 100*(r.PlannedPower-r.Power), r.Binding)
	var parts []string
	for _, g := range r.Gates {
		p := g.Gate
		if g.PassN > 0 {
			p += fmt.Sprintf(" PASS %d", g.PassN)
		}
		if g.FailN > 0 && e > 0 {
			p += fmt.Sprintf(" FAIL %d", g.FailN)
		}
		if g.Note != "" {
			p += " (" + g.Note + ")"
		}
		parts = append(parts, p)
	}
	fmt.Fprintf(w, "each gate alone: %s\n", strings.Join(parts, "; "))
	disc := fmt.Sprintf("%.1f%% discordant pairs", 100*r.Discordance)
	if r.PlannedDisc != r.Discordance {
		disc += fmt.Sprintf(" (planned at %.1f%%: a %s drop needs at least that share)", 100*r.PlannedDisc, drop)
	}
	m := r.Model
	fmt.Fprintf(w, "model: %s grades, incumbent accuracy %.0f%%, %s; cost ratio %.2f (log-normal, log-sd %.2f, correlation %.2f: spread %.3f); p95 ratio %.2f (log-normal, log-sd %.2f, correlation %.2f: spread %.3f)\n",
		r.Scores, 100*s.PIncumbent, disc, m.CostRatio, m.CostSigma, m.CostCorrelation, r.PolicyModel.CostSpread,
		m.LatencyRatio, m.LatencySigma, m.LatencyCorrelation, r.PolicyModel.LatencySpread)
	fmt.Fprintf(w, "at n=%d the policy PASSes an equal candidate with at least %.1f%%", r.N, 100*r.IfEqual.Pass)
	if e > 0 {
		fmt.Fprintf(w, " and FAILs one %s worse with at least %.1f%%", drop, 100*r.IfWorse.Fail)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "quality gate alone (%s): %d cases for %.0f%% %s (P=%.2f, D=%.2f, effect %s; margin %s, FAIL below %s, α=%.3g two-sided); at that n PASS %.1f%%, FAIL %.1f%%, INCONCLUSIVE %.1f%%\n",
		gate.MethodName(q.Test), q.N, 100*r.Power, q.Target, s.PIncumbent, s.Discordance, gate.DiffText(q.Test, s.Effect),
		gate.MarginText(q.Test, 100*q.Design.Margin), gate.DiffText(q.Test, -q.Design.FailAt), 1-q.Design.Confidence,
		100*q.OC.Pass, 100*q.OC.Fail, 100*q.OC.Inconclusive)
	if q.McNemarExactN > 0 {
		fmt.Fprintf(w, "two-sided McNemar for the same effect: exact conditional (binomial on discordant pairs) %d (the quality gate's n is %.2f× it), normal approximation (Connor 1987) %d\n",
			q.McNemarExactN, q.RatioToExact, q.McNemarConnorN)
	}
	check := fmt.Sprintf("conductor-shadow validity --n %d --discordance %g --scores %s --effect 0", r.N, r.Discordance, r.Scores)
	if e > 0 {
		check += fmt.Sprintf(" (and --effect %g)", -e)
	}
	fmt.Fprintf(w, "check by simulation through the gate code: %s\n", check)
}

// validityCmd simulates suites under a gate policy.
func validityCmd() *cobra.Command {
	var (
		cfg    validity.Config
		policy string
		asJSON bool
		live   *liveFlags
	)
	c := &cobra.Command{
		Use:   "validity",
		Short: "Simulate suites with a known truth and print the share of PASS, FAIL and INCONCLUSIVE verdicts",
		Long: `validity draws --suites simulated suites of --n paired cases and counts the verdicts the product's own code gives
(stats.Compare and the gate of the policy, default the shipped ` + gate.DefaultVersion + `; --policy FILE or a shipped version).

The truth: incumbent accuracy --p-incumbent, --discordance discordant pairs and candidate − incumbent --effect for
pass/fail grades; with --scores judge, tie-heavy 1–10 rubric scores where a --discordance share of pairs is scored
afresh and the mean difference is --effect (fractions of the 0..1 score: -0.03 is 0.3 points worse on 1–10). Cost
and latency per case are log-normal (--cost-ratio, --cost-sigma, --cost-correlation, --latency-ratio,
--latency-sigma, --latency-correlation; the same model as power's).

Modes:
  (default)         one fixed-n verdict per suite (gate.Decide)
  --look-every L    the sequential quality gate looks after every L cases up to --n and stops at the first decision
                    (anytime-valid betting with adaptive bets); the median cases to a decision are reported
  --looks K         a group-sequential plan: look 1 on --n cases and, while INCONCLUSIVE, the report's "N more cases"
                    in K − 1 steps, each the next look of the plan (gate.CompareLook, as suite runs are analysed); with
                    a policy whose looks are off (--policy default-2) each run is a fixed-n test of its own
  --live            the live verdict (validity.LiveMode): --days of --per-day live pairs, a --judged-share Bernoulli
                    sample judged, looked at daily through the product's live sequence (gate.LiveSequence, eval.LiveLook);
                    --json prints {"pass", "fail", "inconclusive", "median_cases_to_decision"} (live pairs at the first
                    look that left INCONCLUSIVE)

Each share is read against the truth: P(FAIL | equal) is a false alarm, P(PASS | worse) a missed regression. "se" in
--json is the simulation's standard error of a share at the nominal α/2.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flags := modelFinite(cfg.Model)
			for k, v := range map[string]float64{"p-incumbent": cfg.PIncumbent, "discordance": cfg.Discordance, "effect": cfg.Effect} {
				flags[k] = v
			}
			if err := finiteFlags(flags); err != nil {
				return fmt.Errorf("validity: %w", err)
			}
			if cfg.Cases < 1 || cfg.Suites < 1 || cfg.LookEvery < 0 || cfg.Looks < 0 {
				return fmt.Errorf("validity: --n %d and --suites %d must be at least 1, --look-every %d and --looks %d at least 0", cfg.Cases, cfg.Suites, cfg.LookEvery, cfg.Looks)
			}
			p, err := policyFlag(policy)
			if err != nil {
				return fmt.Errorf("validity: %w", err)
			}
			cfg.Policy = p
			if live.on {
				return runLiveValidity(cmd, cfg, live, asJSON)
			}
			r, err := validity.Simulate(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), asJSON, r, func(w io.Writer) { fmt.Fprintln(w, r.String()) })
		},
	}
	f := c.Flags()
	f.IntVar(&cfg.Cases, "n", 300, "cases per suite (with --look-every: the most a suite runs; with --looks: the first look's)")
	f.Float64Var(&cfg.PIncumbent, "p-incumbent", 0.85, "incumbent accuracy, 0..1")
	f.Float64Var(&cfg.Discordance, "discordance", 0.20, "share of discordant pairs (judge scores: of pairs scored afresh), 0..1")
	f.Float64Var(&cfg.Effect, "effect", 0, "candidate − incumbent, fraction (0: A/A)")
	f.IntVar(&cfg.Suites, "suites", 1000, "simulated suites")
	f.IntVar(&cfg.LookEvery, "look-every", 0, "sequential gate: look after every this many cases (0: one fixed-n verdict)")
	f.IntVar(&cfg.Looks, "looks", 0, "group-sequential plan: this many looks (2: run, then the advised N more cases)")
	f.StringVar(&cfg.Scores, "scores", validity.ScoresPassFail, "quality grades: pass-fail or judge (tie-heavy 1–10 rubric scores)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "simulation seed (same seed, same figures)")
	live = addLiveFlags(f, 60)
	f.IntVar(&cfg.Resamples, "resamples", 0, "bootstrap resamples of the per-arm latency intervals (no gate uses them; 0: none)")
	f.StringVar(&policy, "policy", "", "gate policy: a YAML file or a shipped version (default "+gate.DefaultVersion+")")
	modelFlags(f, &cfg.Model)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printResult writes v as indented JSON or with text.
func printResult(w io.Writer, asJSON bool, v any, text func(io.Writer)) error {
	if !asJSON {
		text(w)
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	return nil
}

// finiteFlags names the first flag (alphabetically) whose value is NaN or
// infinite: such a value would otherwise turn into a nonsense plan.
func finiteFlags(flags map[string]float64) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if v := flags[name]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("--%s %v is not a finite number", name, v)
		}
	}
	return nil
}
