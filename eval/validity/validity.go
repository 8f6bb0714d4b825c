// Package validity checks the verdict statistics by simulation: many
// simulated suites where the truth is known (A/A: the incumbent against
// itself with run-to-run nondeterminism; a planted accuracy drop), each
// analysed by stats.Compare and gate.Evaluate exactly as a real suite run is,
// counting how often each verdict and quality claim comes out.
package validity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// Config is a simulation.
//
// Case model: each case has a pass probability for the incumbent drawn from
// a mixture — 60% easy (0.95), 25% hard (0.10), 15% flaky (0.50) — so the
// expected accuracy is 0.67 and two runs of the same pipeline disagree on
// about 18% of cases. Every run is an independent Bernoulli draw (the
// nondeterminism). The candidate's pass probability is the incumbent's scaled
// by (1 − Drop/0.67), an expected drop of Drop accuracy points (0..1).
// Latencies are exponential with mean 1000 ms and costs uniform around 0.002 USD
// for both sides.
type Config struct {
	Suites    int         // simulated suites (default 200)
	Cases     int         // cases per suite (default 300)
	Drop      float64     // planted accuracy drop, 0..1 (0: A/A)
	Seed      uint64      // the same seed gives the same figures
	Resamples int         // bootstrap resamples per suite (default 2000)
	Policy    gate.Policy // the verdict policy (default QualityPolicy)
}

// QualityPolicy is the policy the simulation checks by default: minimum 100
// paired cases and the quality non-inferiority gate with a 1-point margin at 95%.
func QualityPolicy() gate.Policy {
	return gate.Policy{Version: "validity-1", Confidence: 0.95, MinN: 100, Quality: &gate.QualityGate{MarginPoints: 1}}
}

// Rates are fractions (0..1) of the simulated suites.
type Rates struct {
	Suites       int     `json:"suites"`
	Pass         float64 `json:"pass"`
	Fail         float64 `json:"fail"`
	Inconclusive float64 `json:"inconclusive"`
	Better       float64 `json:"better"` // quality claim "better"
	Worse        float64 `json:"worse"`  // quality claim "worse"
	// FailOrBetter is the false-alarm rate for A/A: verdict FAIL or claim "better".
	FailOrBetter float64 `json:"fail_or_better"`
	// NotPass is the catch rate for a planted drop: verdict FAIL or INCONCLUSIVE.
	NotPass float64 `json:"not_pass"`
	// MeanDiff is the mean observed candidate − incumbent accuracy difference.
	MeanDiff float64 `json:"mean_diff"`
}

// String renders the rates as percentages on one line.
func (r Rates) String() string {
	return fmt.Sprintf("suites %d: PASS %.1f%%, FAIL %.1f%%, INCONCLUSIVE %.1f%%, better %.1f%%, worse %.1f%%, FAIL-or-better %.1f%%, not-PASS %.1f%%, mean diff %+.2f pts",
		r.Suites, 100*r.Pass, 100*r.Fail, 100*r.Inconclusive, 100*r.Better, 100*r.Worse, 100*r.FailOrBetter, 100*r.NotPass, 100*r.MeanDiff)
}

// Simulate runs cfg.Suites simulated suites on all CPUs and returns the rates.
// It returns ctx's error when cancelled and an error for a bad config.
func Simulate(ctx context.Context, cfg Config) (Rates, error) {
	if cfg.Suites == 0 {
		cfg.Suites = 200
	}
	if cfg.Cases == 0 {
		cfg.Cases = 300
	}
	if cfg.Policy.Version == "" {
		cfg.Policy = QualityPolicy()
	}
	switch {
	case cfg.Suites < 0 || cfg.Cases < 0:
		return Rates{}, fmt.Errorf("validity: suites and cases must be > 0, got %d and %d", cfg.Suites, cfg.Cases)
	case cfg.Drop < 0 || cfg.Drop >= 0.67:
		return Rates{}, fmt.Errorf("validity: drop must be in [0, 0.67), got %g", cfg.Drop)
	}
	if err := cfg.Policy.Validate(); err != nil {
		return Rates{}, fmt.Errorf("validity: %w", err)
	}
	verdicts := make([]gate.Verdict, cfg.Suites)
	diffs := make([]float64, cfg.Suites)
	errs := make([]error, cfg.Suites)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				inc, cand := suite(cfg, uint64(s))
				c, err := stats.Compare(inc, cand, stats.Options{Seed: cfg.Seed ^ uint64(s)*0x9e3779b97f4a7c15, Resamples: cfg.Resamples, Confidence: cfg.Policy.Confidence})
				if err != nil {
					errs[s] = err
					continue
				}
				verdicts[s] = gate.Evaluate(cfg.Policy, c, nil)
				diffs[s] = c.Quality.Diff
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
	r := Rates{Suites: cfg.Suites}
	f := 1 / float64(cfg.Suites)
	for s, v := range verdicts {
		if errs[s] != nil {
			return Rates{}, fmt.Errorf("validity: suite %d: %w", s, errs[s])
		}
		switch v.Verdict {
		case gate.Pass:
			r.Pass += f
		case gate.Fail:
			r.Fail += f
		default:
			r.Inconclusive += f
		}
		switch v.Claim {
		case gate.ClaimBetter:
			r.Better += f
		case gate.ClaimWorse:
			r.Worse += f
		}
		if v.Verdict == gate.Fail || v.Claim == gate.ClaimBetter {
			r.FailOrBetter += f
		}
		if v.Verdict != gate.Pass {
			r.NotPass += f
		}
		r.MeanDiff += diffs[s] * f
	}
	return r, nil
}

// suite draws one simulated suite: paired observations for incumbent and
// candidate (see Config).
func suite(cfg Config, s uint64) (inc, cand []stats.Obs) {
	rng := rand.New(rand.NewPCG(cfg.Seed, s))
	scale := 1 - cfg.Drop/0.67
	segs := []string{"category:easy", "category:hard", "category:flaky"}
	inc = make([]stats.Obs, cfg.Cases)
	cand = make([]stats.Obs, cfg.Cases)
	for i := range cfg.Cases {
		var p float64
		var seg string
		switch u := rng.Float64(); {
		case u < 0.60:
			p, seg = 0.95, segs[0]
		case u < 0.85:
			p, seg = 0.10, segs[1]
		default:
			p, seg = 0.50, segs[2]
		}
		run := func(p float64) stats.Obs {
			return stats.Obs{
				Graded: true, Passed: rng.Float64() < p,
				CostUSD:   0.001 + 0.002*rng.Float64(),
				LatencyMs: 1000 * rng.ExpFloat64(),
				Calls:     1,
			}
		}
		inc[i] = run(p)
		inc[i].Segments = []string{seg}
		cand[i] = run(p * scale)
	}
	return inc, cand
}
