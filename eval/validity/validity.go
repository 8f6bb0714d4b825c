// Package validity checks the gate's error rates by simulation: many simulated
// suites where the truth is known (A/A: the candidate exactly as good as the
// incumbent; a planted accuracy drop), each analysed exactly as a real suite
// run is (stats.Compare and gate.Decide for a fixed n, or the sequential
// quality test looking after every batch), counting each verdict kind
// separately: PASS, FAIL and INCONCLUSIVE are never folded together.
//
// Read the shares against the truth: under A/A, Fail is P(FAIL | equal) (a
// false alarm) and Pass is P(PASS | equal); under a drop, Pass is
// P(PASS | worse) (a missed regression) and Fail is P(FAIL | worse) (the
// power). Inconclusive is the share left undecided.
package validity

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// Config is a simulation.
//
// Case model: each case is one pair (incumbent run, candidate run) drawn
// independently with P(both pass) = P − (D − E)/2, P(only the incumbent
// passes) = (D − E)/2, P(only the candidate passes) = (D + E)/2, the rest
// both fail: the incumbent's accuracy is P, the share of discordant pairs D
// and the candidate's accuracy P + E. Each case gets one of three categories
// at random (segments only). Costs are uniform on 0.001–0.003 USD and
// latencies log-normal (median 1000 ms, σ 0.5) times a per-request size
// factor shared by both sides, the same distributions for both: cost and
// latency are equal, so under the default policy their gates PASS or stay
// INCONCLUSIVE, never FAIL by design.
type Config struct {
	Suites      int         // simulated suites (default 1000)
	Cases       int         // cases per suite; with LookEvery the most a suite runs (default 300)
	PIncumbent  float64     // P, incumbent accuracy 0..1 (default 0.85)
	Discordance float64     // D, share of discordant pairs 0..1 (default 0.20)
	Effect      float64     // E, candidate − incumbent accuracy, 0..1 points (negative: worse; 0: A/A)
	Seed        uint64      // the same seed gives the same figures
	Resamples   int         // bootstrap resamples per suite for the cost and latency gates (default 1000)
	Policy      gate.Policy // the verdict policy (default gate.NewDefaultPolicy())
	// LookEvery > 0 runs the sequential quality gate (gate.SequentialConfig)
	// instead: it looks after every LookEvery cases up to Cases and stops at
	// the first decision; a suite undecided at Cases is INCONCLUSIVE.
	LookEvery int
}

// Rates are shares (0..1) of the simulated suites, by verdict kind.
type Rates struct {
	Suites       int     `json:"suites"`
	N            int     `json:"n"`
	Sequential   bool    `json:"sequential"`
	LookEvery    int     `json:"look_every,omitempty"`
	Policy       string  `json:"policy"`
	PIncumbent   float64 `json:"p_incumbent"`
	Discordance  float64 `json:"discordance"`
	Effect       float64 `json:"effect"`
	Pass         float64 `json:"pass"`
	Fail         float64 `json:"fail"`
	Inconclusive float64 `json:"inconclusive"`
	// Median cases at the decision (sequential; the fixed n otherwise) over
	// the suites that decided, that PASSed and that FAILed; 0 when none did.
	MedianCasesToDecision int `json:"median_cases_to_decision"`
	MedianCasesToPass     int `json:"median_cases_to_pass"`
	MedianCasesToFail     int `json:"median_cases_to_fail"`
	// MeanDiff is the mean observed candidate − incumbent accuracy difference.
	MeanDiff float64 `json:"mean_diff"`
}

// String renders the rates as percentages on one line.
func (r Rates) String() string {
	mode := fmt.Sprintf("fixed n=%d", r.N)
	if r.Sequential {
		mode = fmt.Sprintf("sequential, look every %d up to %d", r.LookEvery, r.N)
	}
	return fmt.Sprintf("%s, P=%.2f D=%.2f E=%+.3f, %d suites, policy %s: PASS %.1f%%, FAIL %.1f%%, INCONCLUSIVE %.1f%%; median cases to decision %d (PASS %d, FAIL %d); mean diff %+.2f pts",
		mode, r.PIncumbent, r.Discordance, r.Effect, r.Suites, r.Policy, 100*r.Pass, 100*r.Fail, 100*r.Inconclusive,
		r.MedianCasesToDecision, r.MedianCasesToPass, r.MedianCasesToFail, 100*r.MeanDiff)
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
	if cfg.Resamples == 0 {
		cfg.Resamples = 1000
	}
	if cfg.Policy.Version == "" {
		cfg.Policy = gate.NewDefaultPolicy()
	}
}

// Validate reports a config no simulation can run.
func (cfg Config) Validate() error {
	switch {
	case cfg.Suites <= 0 || cfg.Cases <= 0:
		return fmt.Errorf("validity: suites and cases must be > 0, got %d and %d", cfg.Suites, cfg.Cases)
	case cfg.LookEvery < 0:
		return fmt.Errorf("validity: look-every must be >= 0, got %d", cfg.LookEvery)
	case cfg.Resamples < 0:
		return fmt.Errorf("validity: resamples must be >= 0, got %d", cfg.Resamples)
	}
	if err := (stats.Scenario{PIncumbent: cfg.PIncumbent, Discordance: cfg.Discordance, Effect: cfg.Effect}).Validate(); err != nil {
		return fmt.Errorf("validity: %w", err)
	}
	if err := cfg.Policy.Validate(); err != nil {
		return fmt.Errorf("validity: %w", err)
	}
	if _, ok := gate.SequentialConfig(cfg.Policy, 1); cfg.LookEvery > 0 && !ok {
		return fmt.Errorf("validity: the sequential gate needs a policy with a quality gate")
	}
	return nil
}

// outcome is one simulated suite's verdict.
type outcome struct {
	verdict gate.Status
	cases   int // at the decision (sequential) or the suite's n
	diff    float64
	err     error
}

// Simulate runs cfg.Suites simulated suites on all CPUs and returns the
// shares. It returns ctx's error when cancelled and an error for a bad config.
func Simulate(ctx context.Context, cfg Config) (Rates, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return Rates{}, err
	}
	out := make([]outcome, cfg.Suites)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				if cfg.LookEvery > 0 {
					out[s] = sequentialSuite(cfg, uint64(s))
				} else {
					out[s] = fixedSuite(cfg, uint64(s))
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
		return Rates{}, fmt.Errorf("validity: %w", err)
	}
	r := Rates{Suites: cfg.Suites, N: cfg.Cases, Sequential: cfg.LookEvery > 0, LookEvery: cfg.LookEvery,
		Policy: cfg.Policy.Version, PIncumbent: cfg.PIncumbent, Discordance: cfg.Discordance, Effect: cfg.Effect}
	var all, pass, fail []int
	var undecided int
	for s, o := range out {
		if o.err != nil {
			return Rates{}, fmt.Errorf("validity: suite %d: %w", s, o.err)
		}
		switch o.verdict {
		case gate.Pass:
			pass = append(pass, o.cases)
			all = append(all, o.cases)
		case gate.Fail:
			fail = append(fail, o.cases)
			all = append(all, o.cases)
		default:
			undecided++
		}
		r.MeanDiff += o.diff / float64(cfg.Suites)
	}
	k := float64(cfg.Suites)
	r.Pass, r.Fail, r.Inconclusive = float64(len(pass))/k, float64(len(fail))/k, float64(undecided)/k
	r.MedianCasesToDecision, r.MedianCasesToPass, r.MedianCasesToFail = median(all), median(pass), median(fail)
	return r, nil
}

// median is the nearest-rank median; 0 for none.
func median(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[(len(xs)+1)/2-1]
}

// caseDraw draws cases of the Config's model.
type caseDraw struct {
	rng           *rand.Rand
	pBoth, pInc   float64 // P(both pass), P(only the incumbent)
	pCand         float64 // P(only the candidate)
	segs          []string
	latencySigma  float64
	latencyMedian float64
}

func newDraw(cfg Config, s uint64) *caseDraw {
	pInc := (cfg.Discordance - cfg.Effect) / 2
	return &caseDraw{rng: rand.New(rand.NewPCG(cfg.Seed, s)), pInc: pInc, pCand: (cfg.Discordance + cfg.Effect) / 2,
		pBoth: cfg.PIncumbent - pInc, segs: []string{"category:a", "category:b", "category:c"},
		latencySigma: 0.5, latencyMedian: 1000}
}

// pair returns whether the incumbent and the candidate pass the next case.
func (c *caseDraw) pair() (inc, cand bool) {
	switch u := c.rng.Float64(); {
	case u < c.pBoth:
		return true, true
	case u < c.pBoth+c.pInc:
		return true, false
	case u < c.pBoth+c.pInc+c.pCand:
		return false, true
	}
	return false, false
}

func (c *caseDraw) obs(passed bool, size float64) stats.Obs {
	return stats.Obs{Graded: true, Passed: passed, Score: b2f(passed),
		CostUSD:   0.001 + 0.002*c.rng.Float64(),
		LatencyMs: size * c.latencyMedian * math.Exp(c.latencySigma*c.rng.NormFloat64()),
		Calls:     1}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// fixedSuite simulates one suite of cfg.Cases cases and its gate verdict.
func fixedSuite(cfg Config, s uint64) outcome {
	c := newDraw(cfg, s)
	inc := make([]stats.Obs, cfg.Cases)
	cand := make([]stats.Obs, cfg.Cases)
	for i := range cfg.Cases {
		ip, cp := c.pair()
		size := math.Exp(0.5 * c.rng.NormFloat64())
		inc[i] = c.obs(ip, size)
		inc[i].Segments = []string{c.segs[c.rng.IntN(len(c.segs))]}
		cand[i] = c.obs(cp, size)
	}
	cmp, err := stats.Compare(inc, cand, stats.Options{Seed: cfg.Seed ^ s*0x9e3779b97f4a7c15, Resamples: cfg.Resamples, Confidence: cfg.Policy.Confidence})
	if err != nil {
		return outcome{err: err}
	}
	v := gate.Decide(cfg.Policy, cmp, nil)
	return outcome{verdict: v.Verdict, cases: cfg.Cases, diff: cmp.Quality.Diff}
}

// sequentialSuite feeds up to cfg.Cases paired differences to the
// sequential quality gate, stopping at its first decision.
func sequentialSuite(cfg Config, s uint64) outcome {
	c := newDraw(cfg, s)
	scfg, _ := gate.SequentialConfig(cfg.Policy, cfg.LookEvery)
	sq, err := stats.NewSequential(scfg)
	if err != nil {
		return outcome{err: err}
	}
	sum := 0.0
	for i := range cfg.Cases {
		ip, cp := c.pair()
		d := b2f(cp) - b2f(ip)
		sum += d
		sq.Add(d)
		if st := sq.Verdict(); st != "" {
			return outcome{verdict: gate.Status(st), cases: i + 1, diff: sum / float64(i+1)}
		}
	}
	return outcome{verdict: gate.Inconclusive, cases: cfg.Cases, diff: sum / float64(cfg.Cases)}
}
