package validity

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// LiveMode simulates the live verdict of one candidate version: Days days
// of PerDay live pairs from the Config's case model (cost and latency from
// its Model), a JudgedShare Bernoulli sample of the pairs both sides
// answered judged pairwise by a judge that prefers the right answer (win
// when only the candidate's is right, loss when only the incumbent's, tie
// otherwise), a FailShare of candidate runs failing (losses), looked at at
// the end of every day. Each pair goes through the product's own code: the
// stored observation it would be (store.LiveObservation) through eval.LiveObs
// into one gate.LiveSequence, and every look is eval.LiveLook — the live
// judge's trust rows with PassingCanaries live canaries a day, and the
// coverage check on per-language coverage cells (ShedShares drops that
// share of a language's exchanges before shadowing). A run's outcome is the
// first look whose verdict is not INCONCLUSIVE (its cases: the live pairs
// seen then), or INCONCLUSIVE after Days.
//
// The candidate's true quality difference θ (what the judge estimates) is the
// Config's Effect when FailShare is 0.
type LiveMode struct {
	Days        int
	PerDay      int
	JudgedShare float64
	FailShare   float64
	// PassingCanaries is how many live canaries the judge runs and passes
	// each day (0: none ran, and the judge's trust rows withhold the verdict).
	PassingCanaries int
	// ShedShares maps a language ("en", "ru", "de": each pair gets one at
	// random) to the share of its exchanges shed before shadowing.
	ShedShares map[string]float64
	// RestartEvery > 0 replays what the overview did before the live
	// sequence existed: each look reads a sequence started afresh on the
	// last RestartEvery days only (a sliding window), not the one sequence
	// since the start. It is how the defect is measured, never how the
	// product reads its verdict.
	RestartEvery int
}

// NewLiveMode returns the live scenario: 60 days of 200 pairs, a
// quarter judged, no failures, one passing canary a day, nothing shed.
func NewLiveMode() LiveMode {
	return LiveMode{Days: 60, PerDay: 200, JudgedShare: 0.25, PassingCanaries: 1}
}

// Name implements Mode.
func (LiveMode) Name() string { return "live" }

// liveLanguages are the simulated pairs' languages, one drawn per pair.
var liveLanguages = []string{"en", "ru", "de"}

// Check implements Mode.
func (m LiveMode) Check(cfg Config) error {
	switch {
	case m.Days <= 0 || m.PerDay <= 0:
		return fmt.Errorf("validity: live: days and per-day must be > 0, got %d and %d", m.Days, m.PerDay)
	case !(m.JudgedShare > 0 && m.JudgedShare <= 1):
		return fmt.Errorf("validity: live: judged share must be in (0, 1], got %g", m.JudgedShare)
	case !(m.FailShare >= 0 && m.FailShare < 1):
		return fmt.Errorf("validity: live: fail share must be in [0, 1), got %g", m.FailShare)
	case m.PassingCanaries < 0 || m.RestartEvery < 0:
		return fmt.Errorf("validity: live: canaries and restart-every must be >= 0, got %d and %d", m.PassingCanaries, m.RestartEvery)
	case cfg.Scores != ScoresPassFail:
		return fmt.Errorf("validity: live: judged pairs are win/tie/loss; scores must be %s", ScoresPassFail)
	case cfg.Policy.Quality == nil:
		return fmt.Errorf("validity: live: the policy needs a quality gate")
	}
	for lang, s := range m.ShedShares {
		if !(s >= 0 && s < 1) {
			return fmt.Errorf("validity: live: shed share of %q must be in [0, 1), got %g", lang, s)
		}
	}
	return nil
}

// Run implements Mode.
func (m LiveMode) Run(cfg Config, s uint64) Outcome {
	d, err := newDraw(cfg, s)
	if err != nil {
		return Outcome{Err: err}
	}
	seq, err := gate.NewLiveSequence(cfg.Policy)
	if err != nil {
		return Outcome{Err: err}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cells := map[string]*gate.CoverageCounts{"": {Dimension: store.CoverageAll}}
	for _, l := range liveLanguages {
		cells[l] = &gate.CoverageCounts{Dimension: store.CoverageLang, Value: l}
	}
	count := func(lang string, f func(*gate.CoverageCounts)) { f(cells[""]); f(cells[lang]) }
	var judge store.JudgeStat
	judge.Judge, judge.Pipeline = "simulated judge", "candidate"
	pairs, sum := 0, 0.0
	step := 24 * time.Hour / time.Duration(m.PerDay)
	var days [][]gate.LiveObs // per day, for RestartEvery
	for day := range m.Days {
		days = append(days, nil)
		for k := range m.PerDay {
			inc, cand := d.next()
			lang := liveLanguages[d.rng.IntN(len(liveLanguages))]
			at := start.Add(time.Duration(day)*24*time.Hour + time.Duration(k)*step)
			count(lang, func(c *gate.CoverageCounts) { c.Recorded++ })
			if d.rng.Float64() < m.ShedShares[lang] {
				count(lang, func(c *gate.CoverageCounts) { c.Shed++ })
				continue
			}
			o := store.LiveObservation{StartedAt: at, Status: store.StatusOK, CostUSD: cand.CostUSD, LatencyMs: cand.LatencyMs,
				IncumbentFound: true, IncumbentStatus: store.StatusOK, IncumbentCostUSD: inc.CostUSD, IncumbentLatencyMs: inc.LatencyMs,
				Language: lang}
			count(lang, func(c *gate.CoverageCounts) { c.Shadowed++ })
			diff := diff(inc, cand)
			switch {
			case d.rng.Float64() < m.FailShare:
				o.Status, diff = store.StatusError, -1
			case d.rng.Float64() < m.JudgedShare:
				o.Outcome, o.InclusionProb, o.JudgedAt = store.JudgmentTie, m.JudgedShare, at
				switch {
				case diff > 0:
					o.Outcome = store.JudgmentWin
				case diff < 0:
					o.Outcome = store.JudgmentLoss
				}
				count(lang, func(c *gate.CoverageCounts) { c.Answered++; c.Judged++ })
			default:
				count(lang, func(c *gate.CoverageCounts) { c.Answered++ })
			}
			pairs++
			sum += diff
			lo := eval.LiveObs(o)
			seq.Observe(lo)
			if m.RestartEvery > 0 {
				days[day] = append(days[day], lo)
			}
		}
		judge.Canaries += int64(m.PassingCanaries)
		cov := []gate.CoverageCounts{*cells[""]}
		for _, l := range liveLanguages {
			cov = append(cov, *cells[l])
		}
		look := seq
		if m.RestartEvery > 0 {
			if look, err = gate.NewLiveSequence(cfg.Policy); err != nil {
				return Outcome{Err: err}
			}
			for _, dayObs := range days[max(0, day+1-m.RestartEvery):] {
				for _, lo := range dayObs {
					look.Observe(lo)
				}
			}
		}
		v, _ := eval.LiveLook(cfg.Policy, look, []store.JudgeStat{judge}, gate.ReviewEvidence{}, cov, float64(pairs)/float64(day+1))
		if v.Verdict != gate.Inconclusive {
			return Outcome{Verdict: v.Verdict, Cases: pairs, Diff: sum / math.Max(1, float64(pairs))}
		}
	}
	return Outcome{Verdict: gate.Inconclusive, Cases: pairs, Diff: sum / math.Max(1, float64(pairs))}
}

// LivePlan is the live sequence's plan for a scenario, found by simulation
// through LiveMode (no formula gives an anytime-valid test's stopping time):
// how many live pairs it takes for the verdict to FAIL a candidate worse by
// the effect, and to PASS an equal one, each with the asked power.
type LivePlan struct {
	Power float64 `json:"power"` // asked
	// PlannedPower is the share the plan aims at: Power + 5 points, at most
	// halfway to 1 (gate.PlannedPower, as the fixed-n plan), so the
	// sequence reaches the asked power by the planned n rather than sitting
	// on it.
	PlannedPower float64 `json:"planned_power"`
	Effect       float64 `json:"effect"` // the drop planned for (0..1, negative: worse)
	PerDay       int     `json:"per_day"`
	JudgedShare  float64 `json:"judged_share"`
	Suites       int     `json:"suites"`   // simulated candidates per target
	MaxDays      int     `json:"max_days"` // how long each was followed
	// FailN is the live pairs by which at least PlannedPower of the
	// simulated candidates worse by Effect had FAILed — the order statistic
	// that reaches it with 95% confidence over the simulation's own error,
	// so a fresh simulation reaches it at least as often — on a whole day
	// of looks (FailDays; FailJudged ≈ the judged pairs among them); 0 when
	// not reached within MaxDays. PassN, PassDays and PassJudged are the
	// same for PASSing a candidate exactly as good as the incumbent.
	FailN      int `json:"fail_n"`
	FailDays   int `json:"fail_days"`
	FailJudged int `json:"fail_judged"`
	PassN      int `json:"pass_n"`
	PassDays   int `json:"pass_days"`
	PassJudged int `json:"pass_judged"`
}

// PlanLive plans the live sequence of cfg's policy and case model (cfg.Effect
// < 0 is the drop to FAIL; cfg.Suites simulated candidates per target, cfg.Seed)
// at m's traffic, following each candidate for m.Days days. It returns the
// simulation's error.
func PlanLive(ctx context.Context, cfg Config, m LiveMode, power float64) (LivePlan, error) {
	if !(power > 0 && power < 1) {
		return LivePlan{}, fmt.Errorf("validity: live plan: power must be in (0, 1), got %g", power)
	}
	cfg.defaults()
	cfg.Mode = m
	planned := gate.PlannedPower(power)
	pl := LivePlan{Power: power, PlannedPower: planned, Effect: cfg.Effect, PerDay: m.PerDay, JudgedShare: m.JudgedShare, Suites: cfg.Suites, MaxDays: m.Days}
	// The order statistic k of S runs reaching the planned power with 95%
	// confidence: S·p + 1.645·√(S·p·(1 − p)).
	k := int(math.Ceil(float64(cfg.Suites)*planned + 1.645*math.Sqrt(float64(cfg.Suites)*planned*(1-planned))))
	at := func(effect float64, want gate.Status) (int, error) {
		c := cfg
		c.Effect = effect
		out, err := Outcomes(ctx, c)
		if err != nil {
			return 0, err
		}
		var ns []int
		for _, o := range out {
			if o.Verdict == want {
				ns = append(ns, o.Cases)
			}
		}
		if len(ns) < k {
			return 0, nil
		}
		slices.Sort(ns)
		return ns[k-1], nil
	}
	var err error
	if cfg.Effect < 0 {
		if pl.FailN, err = at(cfg.Effect, gate.Fail); err != nil {
			return pl, err
		}
	}
	if pl.PassN, err = at(0, gate.Pass); err != nil {
		return pl, err
	}
	days := func(n int) int { return int(math.Ceil(float64(n) / float64(m.PerDay))) }
	pl.FailDays, pl.PassDays = days(pl.FailN), days(pl.PassN)
	pl.FailJudged = int(math.Round(float64(pl.FailN) * m.JudgedShare))
	pl.PassJudged = int(math.Round(float64(pl.PassN) * m.JudgedShare))
	return pl, nil
}
