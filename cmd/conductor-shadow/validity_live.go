package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/conductor-shadow/conductor-shadow/eval/validity"
)

// liveFlags are the live mode's flags of validity and power.
type liveFlags struct {
	on   bool
	mode validity.LiveMode
}

// addLiveFlags registers --live and the live scenario's flags on f; days is
// the default of --days (validity: the days looked at; power: how long each
// simulated candidate is followed).
func addLiveFlags(f *pflag.FlagSet, days int) *liveFlags {
	l := &liveFlags{mode: validity.NewLiveMode()}
	f.BoolVar(&l.on, "live", false, "the live verdict instead: one sequence per candidate version looked at daily (validity.LiveMode)")
	f.IntVar(&l.mode.Days, "days", days, "live: days of shadow traffic")
	f.IntVar(&l.mode.PerDay, "per-day", l.mode.PerDay, "live: live pairs shadowed per day")
	f.Float64Var(&l.mode.JudgedShare, "judged-share", l.mode.JudgedShare, "live: share of answered pairs judged (a Bernoulli sample, its inclusion probability)")
	f.Float64Var(&l.mode.FailShare, "fail-share", 0, "live: share of candidate runs that fail (each a loss)")
	f.IntVar(&l.mode.PassingCanaries, "canaries", l.mode.PassingCanaries, "live: live canaries the judge runs and passes per day")
	f.IntVar(&l.mode.RestartEvery, "restart-every", 0, "live: replay the old sliding window: each daily look reads a sequence restarted on the last N days only (0: the one sequence)")
	return l
}

// liveRates is what `validity --live --json` prints: the shares of simulated
// candidates by verdict and the median live pairs at the first look that
// left INCONCLUSIVE.
type liveRates struct {
	Pass                  float64 `json:"pass"`
	Fail                  float64 `json:"fail"`
	Inconclusive          float64 `json:"inconclusive"`
	MedianCasesToDecision int     `json:"median_cases_to_decision"`
}

// runLiveValidity simulates cfg under the live mode and prints the shares.
func runLiveValidity(cmd *cobra.Command, cfg validity.Config, l *liveFlags, asJSON bool) error {
	cfg.Mode = l.mode
	r, err := validity.Simulate(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := liveRates{Pass: r.Pass, Fail: r.Fail, Inconclusive: r.Inconclusive, MedianCasesToDecision: r.MedianCasesToDecision}
	return printResult(cmd.OutOrStdout(), asJSON, out, func(w io.Writer) {
		fmt.Fprintf(w, "live, %d days × %d pairs, %.0f%% judged, P=%.2f D=%.2f E=%+.1f pts, %d candidates, policy %s: PASS %.1f%%, FAIL %.1f%%, INCONCLUSIVE %.1f%% (SE at α/2 %.2f%%); median pairs to decision %d (PASS %d, FAIL %d)\n",
			l.mode.Days, l.mode.PerDay, 100*l.mode.JudgedShare, r.PIncumbent, r.Discordance, 100*r.Effect, r.Suites, r.Policy,
			100*r.Pass, 100*r.Fail, 100*r.Inconclusive, 100*r.SE, r.MedianCasesToDecision, r.MedianCasesToPass, r.MedianCasesToFail)
	})
}

// runLivePlan plans the live sequence by simulation and prints the plan.
func runLivePlan(cmd *cobra.Command, cfg validity.Config, l *liveFlags, power float64, asJSON bool) error {
	pl, err := validity.PlanLive(cmd.Context(), cfg, l.mode, power)
	if err != nil {
		return fmt.Errorf("power: %w", err)
	}
	return printResult(cmd.OutOrStdout(), asJSON, pl, func(w io.Writer) {
		fmt.Fprintf(w, "Live plan (policy %s, %d pairs a day, %.0f%% judged, P=%.2f D=%.2f; %d simulated candidates per target, followed %d days):\n",
			cfg.Policy.Version, pl.PerDay, 100*pl.JudgedShare, cfg.PIncumbent, cfg.Discordance, pl.Suites, pl.MaxDays)
		target := func(what string, n, days, judged int) {
			if n == 0 {
				fmt.Fprintf(w, "  %s: not with %.0f%% within %d days\n", what, 100*pl.Power, pl.MaxDays)
				return
			}
			fmt.Fprintf(w, "  %s with %.0f%% (planned at %.0f%%): by %d live pairs (%d days, about %d judged)\n", what, 100*pl.Power, 100*pl.PlannedPower, n, days, judged)
		}
		if pl.Effect < 0 {
			target(fmt.Sprintf("FAIL a candidate %.1f pts worse", -100*pl.Effect), pl.FailN, pl.FailDays, pl.FailJudged)
		}
		target("PASS an equal candidate", pl.PassN, pl.PassDays, pl.PassJudged)
		if pl.FailDays > 0 {
			fmt.Fprintf(w, "Check: conductor-shadow validity --live --effect %g --days %d --per-day %d --judged-share %g (FAIL share ≥ %.0f%%)\n",
				pl.Effect, pl.FailDays, pl.PerDay, pl.JudgedShare, 100*pl.Power)
		}
	})
}
