package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/eval/validity"
)

// powerResult is the power command's answer. N is the cases to advise for the
// quality gate to reach Target with probability Power under the scenario:
// stats.Recommend, the exact first n (stats.Plan) at PlannedPower = Power +
// stats.PlanMargin, so the gate reaches Power at N with room to spare; OC the
// verdict probabilities at N. For effect ≠ 0 two classic two-sided McNemar
// sizes for the same effect, α and Power are given for comparison:
// McNemarExactN, the exact conditional test's minimum (binomial on the
// discordant pairs, stats.McNemarExactSampleSize; 658 at D = 0.20, a 5-point
// drop) and McNemarConnorN, its normal approximation (Connor 1987; 626 there);
// RatioToExact is N / McNemarExactN.
type powerResult struct {
	N              int            `json:"n"`
	Target         string         `json:"target"`
	Test           string         `json:"test"`
	Scenario       stats.Scenario `json:"scenario"`
	Design         stats.Design   `json:"design"`
	Power          float64        `json:"power"`
	PlannedPower   float64        `json:"planned_power"`
	OC             stats.OC       `json:"oc"`
	McNemarExactN  int            `json:"mcnemar_exact_conditional_n,omitempty"`
	McNemarConnorN int            `json:"mcnemar_normal_approx_connor_n,omitempty"`
	RatioToExact   float64        `json:"ratio_to_mcnemar_exact,omitempty"`
}

// powerCmd plans a suite's size for the shipped default quality gate.
func powerCmd() *cobra.Command {
	def := gate.NewDefaultPolicy()
	var (
		s              stats.Scenario
		margin, failAt float64
		alpha, power   float64
		minN           int
		asJSON         bool
	)
	c := &cobra.Command{
		Use:   "power",
		Short: "Cases the quality gate needs: to FAIL a candidate worse by --effect (negative) or, with --effect 0, to PASS an equal one",
		Long: `power computes, exactly (Tango's score test summed over the trinomial distribution of discordant pairs), the
smallest number of paired cases at which the quality gate of policy ` + def.Version + ` (PASS when the lower bound of
candidate − incumbent ≥ −margin, FAIL when the upper bound < −fail-at) says FAIL with probability --power when the
candidate is worse by --effect, or PASS with that probability when --effect is 0 (or above −fail-at).
Accuracies and differences are fractions: --effect -0.05 is five points worse.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := finiteFlags(map[string]float64{"p-incumbent": s.PIncumbent, "discordance": s.Discordance, "effect": s.Effect,
				"margin": margin, "fail-at": failAt, "alpha": alpha, "power": power}); err != nil {
				return fmt.Errorf("power: %w", err)
			}
			if !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1) {
				return fmt.Errorf("power: --alpha %v and --power %v must each be between 0 and 1", alpha, power)
			}
			d := stats.Design{Margin: margin, FailAt: failAt, Confidence: 1 - alpha}
			if err := d.Validate(); err != nil {
				return err
			}
			n, err := stats.Recommend(s, d, power, minN)
			if err != nil {
				return err
			}
			oc, err := stats.Operating(n, s, d)
			if err != nil {
				return err
			}
			res := powerResult{N: n, Target: d.Target(s), Test: stats.MethodTango, Scenario: s, Design: d, Power: power,
				PlannedPower: math.Round(1e6*math.Min(power+stats.PlanMargin, (1+power)/2)) / 1e6, OC: oc}
			if s.Effect != 0 {
				res.McNemarConnorN, _ = stats.McNemarSampleSize(s.Effect, s.Discordance, alpha, power)
				if res.McNemarExactN, err = stats.McNemarExactSampleSize(s.Effect, s.Discordance, alpha, power); err == nil {
					res.RatioToExact = float64(n) / float64(res.McNemarExactN)
				}
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "%d paired cases for %.0f%% %s (P=%.2f, D=%.2f, effect %+.1f pts; margin %.1f pts, FAIL below %.1f pts, α=%.3g two-sided, %s)\n",
					n, 100*power, res.Target, s.PIncumbent, s.Discordance, 100*s.Effect, 100*margin, 100*failAt, alpha, res.Test)
				fmt.Fprintf(w, "at n=%d: PASS %.1f%%, FAIL %.1f%%, INCONCLUSIVE %.1f%%\n", n, 100*oc.Pass, 100*oc.Fail, 100*oc.Inconclusive)
				fmt.Fprintf(w, "planned at %.0f%% exact power (%.0f%% asked + a %.0f-point planning margin), so the gate reaches the asked power at n\n",
					100*res.PlannedPower, 100*power, 100*(res.PlannedPower-power))
				if res.McNemarExactN > 0 {
					fmt.Fprintf(w, "two-sided McNemar for the same effect: exact conditional (binomial on discordant pairs) %d (n is %.2f× it), normal approximation (Connor 1987) %d\n",
						res.McNemarExactN, res.RatioToExact, res.McNemarConnorN)
				}
			})
		},
	}
	f := c.Flags()
	f.Float64Var(&s.PIncumbent, "p-incumbent", 0.85, "incumbent accuracy, 0..1")
	f.Float64Var(&s.Discordance, "discordance", 0.20, "share of cases where incumbent and candidate disagree on pass/fail, 0..1")
	f.Float64Var(&s.Effect, "effect", -0.05, "candidate − incumbent accuracy, fraction (negative: worse; 0: plan a PASS)")
	f.Float64Var(&margin, "margin", def.Quality.MarginPoints/100, "non-inferiority margin, fraction (PASS when the lower bound ≥ −margin)")
	f.Float64Var(&failAt, "fail-at", def.Quality.Fail()/100, "FAIL when the upper bound < −fail-at, fraction")
	f.Float64Var(&alpha, "alpha", 1-def.Confidence, "two-sided level of the interval (each one-sided error ≈ α/2)")
	f.Float64Var(&power, "power", 0.8, "probability of reaching the target verdict")
	f.IntVar(&minN, "min-n", def.MinN, "never recommend fewer cases (the policy's min_n)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// validityCmd simulates suites under the shipped default policy.
func validityCmd() *cobra.Command {
	var (
		cfg    validity.Config
		policy string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "validity",
		Short: "Simulate suites with a known truth and print the share of PASS, FAIL and INCONCLUSIVE verdicts",
		Long: `validity draws --suites simulated suites of --n paired cases (incumbent accuracy --p-incumbent, --discordance
discordant pairs, candidate − incumbent --effect) and counts the verdicts of the gate policy (default: the shipped
` + gate.DefaultVersion + `). With --look-every L the sequential quality gate looks after every L cases up to --n
and stops at the first decision; the median cases to a decision are reported.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := finiteFlags(map[string]float64{"p-incumbent": cfg.PIncumbent, "discordance": cfg.Discordance, "effect": cfg.Effect}); err != nil {
				return fmt.Errorf("validity: %w", err)
			}
			if cfg.Cases < 1 || cfg.Suites < 1 || cfg.LookEvery < 0 {
				return fmt.Errorf("validity: --n %d and --suites %d must be at least 1, --look-every %d at least 0", cfg.Cases, cfg.Suites, cfg.LookEvery)
			}
			if policy != "" {
				p, err := gate.Load(policy)
				if err != nil {
					return err
				}
				cfg.Policy = p
			}
			r, err := validity.Simulate(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), asJSON, r, func(w io.Writer) { fmt.Fprintln(w, r.String()) })
		},
	}
	f := c.Flags()
	f.IntVar(&cfg.Cases, "n", 300, "cases per suite (with --look-every: the most a suite runs)")
	f.Float64Var(&cfg.PIncumbent, "p-incumbent", 0.85, "incumbent accuracy, 0..1")
	f.Float64Var(&cfg.Discordance, "discordance", 0.20, "share of discordant pairs, 0..1")
	f.Float64Var(&cfg.Effect, "effect", 0, "candidate − incumbent accuracy, fraction (0: A/A)")
	f.IntVar(&cfg.Suites, "suites", 1000, "simulated suites")
	f.IntVar(&cfg.LookEvery, "look-every", 0, "sequential gate: look after every this many cases (0: one fixed-n verdict)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "simulation seed (same seed, same figures)")
	f.IntVar(&cfg.Resamples, "resamples", 1000, "bootstrap resamples per suite (cost and latency gates)")
	f.StringVar(&policy, "policy", "", "gate policy YAML (default: the shipped "+gate.DefaultVersion+")")
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
