// Package validity checks the verdicts' error rates by simulation: many
// simulated suites where the truth is known (A/A: the candidate exactly as
// good as the incumbent; a planted quality drop; a candidate at the margin),
// each analysed by the product's own code — stats.Compare and the gate
// (gate.Decide for one fixed-n run, gate.CompareLook and gate.DecideLook for
// the looks of a group-sequential plan, the policy's sequential test looking
// after every batch) — counting each verdict kind separately: PASS, FAIL and
// INCONCLUSIVE are never folded together.
//
// Read the shares against the truth: under A/A, Fail is P(FAIL | equal) (a
// false alarm) and Pass is P(PASS | equal); under a drop, Pass is
// P(PASS | worse) (a missed regression) and Fail is P(FAIL | worse) (the
// power). Inconclusive is the share left undecided.
//
// A simulation is a Mode: it draws and analyses one simulated run. Fixed,
// Sequential and Looks are built in (ModeFor picks one from a Config); a live
// mode (the live verdict over days of shadow traffic) is another Mode with
// its own settings, run by the same Simulate.
package validity

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// Config is a simulation.
//
// Case model: each case is one pair (incumbent run, candidate run) drawn
// independently. Pass/fail grades (Scores "pass-fail"): P(both pass) =
// P − (D − E)/2, P(only the incumbent passes) = (D − E)/2, P(only the
// candidate passes) = (D + E)/2, the rest both fail: the incumbent's accuracy
// is P, the share of discordant pairs D and the candidate's accuracy P + E.
// Judge scores (Scores "judge"): 1–10 rubric scores, tie-heavy: the
// incumbent's from a distribution where 68% of answers score 8–10, the
// candidate's the same score with probability 1 − D, else a fresh score whose
// distribution is tilted so the mean difference is E (0..1 units: −0.03 is
// 0.3 points worse on 1–10). Each case gets one of three categories at random
// (segments). Cost and latency follow Model.
type Config struct {
	Suites      int         // simulated suites (default 1000)
	Cases       int         // cases per suite; with LookEvery the most a suite runs; with Looks the first look's (default 300)
	PIncumbent  float64     // P, incumbent accuracy 0..1 (default 0.85)
	Discordance float64     // D, share of discordant pairs (judge scores: of pairs judged afresh) 0..1 (default 0.20)
	Effect      float64     // E, candidate − incumbent, 0..1 points (negative: worse; 0: A/A)
	Seed        uint64      // the same seed gives the same figures
	Resamples   int         // bootstrap resamples of the per-arm latency intervals (0: none; no gate uses them)
	Policy      gate.Policy // the verdict policy (default gate.NewDefaultPolicy())
	Scores      string      // ScoresPassFail (default) or ScoresJudge
	Model       Model       // cost and latency (zero: NewDefaultModel())
	// LookEvery > 0 runs the sequential quality gate (gate.SequentialConfig)
	// instead: it looks after every LookEvery cases up to Cases and stops at
	// the first decision; a suite undecided at Cases is INCONCLUSIVE.
	LookEvery int
	// Looks ≥ 2 runs a group-sequential plan: look 1 on Cases cases, and while
	// INCONCLUSIVE, the advice's "N more cases" (the plan's cases) taken in
	// Looks − 1 equal steps, each run a cumulative suite analysed as the next
	// look of its plan. With a policy whose looks are off (spending none),
	// each run is a fixed-n test: what re-running after the advice did before
	// plans existed.
	Looks int
	// Mode, when set, is the simulation to run (another Mode than the
	// built-in ones, such as a live mode); nil: ModeFor(cfg).
	Mode Mode
	// Progress, when set, is called once per finished simulated suite, from
	// the simulation's goroutines (it must be safe for concurrent use).
	Progress func()
}

// Outcome is one simulated run's verdict: at the decision (or at the end),
// with the cases it saw and its observed mean difference.
type Outcome struct {
	Verdict gate.Status
	Cases   int
	Diff    float64
	Err     error
}

// Mode is one kind of simulation.
type Mode interface {
	// Name is the mode's name in Rates ("fixed", "sequential", "looks", …).
	Name() string
	// Check reports a config the mode cannot simulate (after defaults).
	Check(cfg Config) error
	// Run simulates the s-th run, seeded by cfg.Seed and s (the same pair
	// gives the same outcome), through the product's code.
	Run(cfg Config, s uint64) Outcome
}

// Fixed, Sequential and Looks are the built-in modes.
var (
	Fixed      Mode = fixedMode{}
	Sequential Mode = sequentialMode{}
	Looks      Mode = looksMode{}
)

// ModeFor is the built-in mode a config asks for: Sequential with
// LookEvery, Looks with Looks ≥ 2, else Fixed.
func ModeFor(cfg Config) Mode {
	switch {
	case cfg.Mode != nil:
		return cfg.Mode
	case cfg.LookEvery > 0:
		return Sequential
	case cfg.Looks >= 2:
		return Looks
	}
	return Fixed
}

// Rates are shares (0..1) of the simulated suites, by verdict kind.
type Rates struct {
	Mode         string  `json:"mode"`
	Suites       int     `json:"suites"`
	N            int     `json:"n"`
	Sequential   bool    `json:"sequential"`
	LookEvery    int     `json:"look_every,omitempty"`
	Looks        int     `json:"looks,omitempty"`
	Scores       string  `json:"scores"`
	Policy       string  `json:"policy"`
	PIncumbent   float64 `json:"p_incumbent"`
	Discordance  float64 `json:"discordance"`
	Effect       float64 `json:"effect"`
	Model        Model   `json:"model"`
	Pass         float64 `json:"pass"`
	Fail         float64 `json:"fail"`
	Inconclusive float64 `json:"inconclusive"`
	// Median cases at the decision (sequential and looks; the fixed n
	// otherwise) over the suites that decided, that PASSed and that FAILed; 0
	// when none did.
	MedianCasesToDecision int `json:"median_cases_to_decision"`
	MedianCasesToPass     int `json:"median_cases_to_pass"`
	MedianCasesToFail     int `json:"median_cases_to_fail"`
	// MeanDiff is the mean observed candidate − incumbent difference.
	MeanDiff float64 `json:"mean_diff"`
	// SE is the simulation's standard error of a share at the nominal one-sided
	// level α/2: √(a(1 − a)/suites), the "simulation error" error rates are
	// read against.
	SE float64 `json:"se"`
}

// String renders the rates as percentages on one line.
func (r Rates) String() string {
	mode := fmt.Sprintf("fixed n=%d", r.N)
	switch r.Mode {
	case "sequential":
		mode = fmt.Sprintf("sequential, look every %d up to %d", r.LookEvery, r.N)
	case "looks":
		mode = fmt.Sprintf("%d looks from n=%d", r.Looks, r.N)
	case "fixed":
	default:
		mode = r.Mode
	}
	unit := func(f float64) string { return fmt.Sprintf("%+.2f pts", 100*f) }
	if r.Scores == ScoresJudge {
		unit = func(f float64) string { return fmt.Sprintf("%+.3f points on 1–10", gate.JudgeScale*f) }
	}
	return fmt.Sprintf("%s, %s, P=%.2f D=%.2f E=%s, cost ×%.2f, p95 ×%.2f, %d suites, policy %s: PASS %.1f%%, FAIL %.1f%%, INCONCLUSIVE %.1f%% (SE at α/2 %.2f%%); median cases to decision %d (PASS %d, FAIL %d); mean diff %s",
		mode, r.Scores, r.PIncumbent, r.Discordance, unit(r.Effect), r.Model.CostRatio, r.Model.LatencyRatio, r.Suites, r.Policy,
		100*r.Pass, 100*r.Fail, 100*r.Inconclusive, 100*r.SE,
		r.MedianCasesToDecision, r.MedianCasesToPass, r.MedianCasesToFail, unit(r.MeanDiff))
}

func (cfg *Config) defaults() {
	if cfg.Suites == 0 {
		cfg.Suites = 1000
	}
	if cfg.Cases == 0 {
		cfg.Cases = 300
	}
	if cfg.PIncumbent == 0 {
		cfg.PIncumbent = 0.85
	}
	if cfg.Discordance == 0 {
		cfg.Discordance = 0.20
	}
	if cfg.Policy.Version == "" {
		cfg.Policy = gate.NewDefaultPolicy()
	}
	if cfg.Scores == "" {
		cfg.Scores = ScoresPassFail
	}
	if cfg.Model == (Model{}) {
		cfg.Model = NewDefaultModel()
	}
}

// Validate reports a config no simulation can run.
func (cfg Config) Validate() error {
	switch {
	case cfg.Suites <= 0 || cfg.Cases <= 0:
		return fmt.Errorf("validity: suites and cases must be > 0, got %d and %d", cfg.Suites, cfg.Cases)
	case cfg.LookEvery < 0 || cfg.Looks < 0:
		return fmt.Errorf("validity: look-every and looks must be >= 0, got %d and %d", cfg.LookEvery, cfg.Looks)
	case cfg.Resamples < 0:
		return fmt.Errorf("validity: resamples must be >= 0, got %d", cfg.Resamples)
	case cfg.Scores != ScoresPassFail && cfg.Scores != ScoresJudge:
		return fmt.Errorf("validity: scores must be %s or %s, got %q", ScoresPassFail, ScoresJudge, cfg.Scores)
	}
	if cfg.Scores == ScoresJudge {
		if _, err := newJudgeModel(cfg.Discordance, cfg.Effect); err != nil {
			return err
		}
	} else if err := (stats.Scenario{PIncumbent: cfg.PIncumbent, Discordance: cfg.Discordance, Effect: cfg.Effect}).Validate(); err != nil {
		return fmt.Errorf("validity: %w", err)
	}
	if err := cfg.Model.Validate(); err != nil {
		return err
	}
	if err := cfg.Policy.Validate(); err != nil {
		return fmt.Errorf("validity: %w", err)
	}
	return ModeFor(cfg).Check(cfg)
}

// Simulate runs cfg.Suites simulated runs of cfg's mode on all CPUs and
// returns the shares. It returns ctx's error when cancelled and an error for
// a bad config.
func Simulate(ctx context.Context, cfg Config) (Rates, error) {
	cfg.defaults()
	out, err := Outcomes(ctx, cfg)
	if err != nil {
		return Rates{}, err
	}
	mode := ModeFor(cfg)
	a := (1 - cfg.Policy.Confidence) / 2
	r := Rates{Mode: mode.Name(), Suites: cfg.Suites, N: cfg.Cases, Sequential: mode == Sequential, LookEvery: cfg.LookEvery, Looks: cfg.Looks,
		Scores: cfg.Scores, Policy: cfg.Policy.Version, PIncumbent: cfg.PIncumbent, Discordance: cfg.Discordance, Effect: cfg.Effect,
		Model: cfg.Model, SE: math.Sqrt(a * (1 - a) / float64(cfg.Suites))}
	var all, pass, fail []int
	var undecided int
	for _, o := range out {
		switch o.Verdict {
		case gate.Pass:
			pass = append(pass, o.Cases)
			all = append(all, o.Cases)
		case gate.Fail:
			fail = append(fail, o.Cases)
			all = append(all, o.Cases)
		default:
			undecided++
		}
		r.MeanDiff += o.Diff / float64(cfg.Suites)
	}
	k := float64(cfg.Suites)
	r.Pass, r.Fail, r.Inconclusive = float64(len(pass))/k, float64(len(fail))/k, float64(undecided)/k
	r.MedianCasesToDecision, r.MedianCasesToPass, r.MedianCasesToFail = median(all), median(pass), median(fail)
	return r, nil
}

// Outcomes runs cfg.Suites simulated runs of cfg's mode on all CPUs and
// returns each run's outcome in run order (the defaults applied as by
// Simulate). It returns ctx's error when cancelled, an error for a bad
// config, and the first run's error.
func Outcomes(ctx context.Context, cfg Config) ([]Outcome, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mode := ModeFor(cfg)
	out := make([]Outcome, cfg.Suites)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				out[s] = mode.Run(cfg, uint64(s))
				if cfg.Progress != nil {
					cfg.Progress()
				}
			}
		}()
	}
feed:
	for s := range cfg.Suites {
		select {
		case jobs <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("validity: %w", err)
	}
	for s, o := range out {
		if o.Err != nil {
			return nil, fmt.Errorf("validity: suite %d: %w", s, o.Err)
		}
	}
	return out, nil
}

// median is the nearest-rank median; 0 for none.
func median(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[(len(xs)+1)/2-1]
}

// suite holds one simulated run's cases, drawn on demand so a later look
// extends the same cases.
type suite struct {
	draw      *caseDraw
	inc, cand []stats.Obs
}

func newSuite(cfg Config, s uint64) (*suite, error) {
	d, err := newDraw(cfg, s)
	if err != nil {
		return nil, err
	}
	return &suite{draw: d}, nil
}

// grow draws cases until the suite has n.
func (s *suite) grow(n int) {
	s.inc = slices.Grow(s.inc, n-len(s.inc))
	s.cand = slices.Grow(s.cand, n-len(s.cand))
	for len(s.inc) < n {
		i, c := s.draw.next()
		s.inc = append(s.inc, i)
		s.cand = append(s.cand, c)
	}
}

func options(cfg Config, s uint64) stats.Options {
	return stats.Options{Seed: cfg.Seed ^ s*0x9e3779b97f4a7c15, Resamples: cfg.Resamples, Confidence: cfg.Policy.Confidence,
		NoArmIntervals: cfg.Resamples == 0}
}

type fixedMode struct{}

func (fixedMode) Name() string       { return "fixed" }
func (fixedMode) Check(Config) error { return nil }
func (fixedMode) Run(cfg Config, s uint64) Outcome {
	su, err := newSuite(cfg, s)
	if err != nil {
		return Outcome{Err: err}
	}
	su.grow(cfg.Cases)
	cmp, err := stats.Compare(su.inc, su.cand, options(cfg, s))
	if err != nil {
		return Outcome{Err: err}
	}
	v := gate.Decide(cfg.Policy, cmp, nil)
	return Outcome{Verdict: v.Verdict, Cases: cfg.Cases, Diff: cmp.Quality.Diff}
}

type sequentialMode struct{}

func (sequentialMode) Name() string { return "sequential" }
func (sequentialMode) Check(cfg Config) error {
	if _, ok := gate.SequentialConfig(cfg.Policy, 1); !ok {
		return fmt.Errorf("validity: the sequential gate needs a policy with a quality gate")
	}
	return nil
}

// Run feeds up to cfg.Cases paired differences to the sequential quality
// gate, stopping at its first decision.
func (sequentialMode) Run(cfg Config, s uint64) Outcome {
	d, err := newDraw(cfg, s)
	if err != nil {
		return Outcome{Err: err}
	}
	scfg, _ := gate.SequentialConfig(cfg.Policy, cfg.LookEvery)
	sq, err := stats.NewSequential(scfg)
	if err != nil {
		return Outcome{Err: err}
	}
	sum := 0.0
	for i := range cfg.Cases {
		x := diff(d.next())
		sum += x
		sq.Add(x)
		if st := sq.Verdict(); st != "" {
			return Outcome{Verdict: gate.Status(st), Cases: i + 1, Diff: sum / float64(i+1)}
		}
	}
	return Outcome{Verdict: gate.Inconclusive, Cases: cfg.Cases, Diff: sum / float64(cfg.Cases)}
}

type looksMode struct{}

func (looksMode) Name() string { return "looks" }
func (looksMode) Check(cfg Config) error {
	if cfg.Looks < 2 {
		return fmt.Errorf("validity: a group-sequential plan needs at least 2 looks, got %d", cfg.Looks)
	}
	return nil
}

// Run takes look 1 on cfg.Cases cases; while INCONCLUSIVE it follows the
// advice — the plan's cases, in cfg.Looks − 1 equal steps — each time
// analysing the grown suite as the next look (gate.CompareLook, the code of
// a suite run's analysis).
func (looksMode) Run(cfg Config, s uint64) Outcome {
	su, err := newSuite(cfg, s)
	if err != nil {
		return Outcome{Err: err}
	}
	opts := options(cfg, s)
	var previous []gate.Look
	n, target := cfg.Cases, 0
	for k := 1; k <= cfg.Looks; k++ {
		su.grow(n)
		c, look, err := gate.CompareLook(cfg.Policy, su.inc, su.cand, opts, previous, false, fmt.Sprintf("look-%d", k))
		if err != nil {
			return Outcome{Err: err}
		}
		v := gate.DecideLook(cfg.Policy, c, nil, look)
		if v.Verdict != gate.Inconclusive || k == cfg.Looks {
			return Outcome{Verdict: v.Verdict, Cases: n, Diff: c.Quality.Diff}
		}
		if k == 1 {
			// The advice: the plan's cases (fixed at the first look).
			if look != nil {
				target = look.MaxCases
			} else {
				target = gate.PlannedCases(cfg.Policy, c)
			}
		}
		if look != nil {
			previous = append(previous, look.This)
		}
		if target <= n {
			return Outcome{Verdict: v.Verdict, Cases: n, Diff: c.Quality.Diff}
		}
		n = cfg.Cases + (target-cfg.Cases)*k/(cfg.Looks-1)
	}
	return Outcome{Verdict: gate.Inconclusive, Cases: n}
}
