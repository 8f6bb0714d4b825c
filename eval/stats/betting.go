package stats

import (
	"fmt"
	"math"
	"slices"
)

// Adaptive bets shared by Sequential and BettingCS.
//
// A betting test of "mean ≤ m₀" multiplies its capital by 1 + λᵢ(xᵢ − m₀) at
// each observation; under the null it is a nonnegative supermartingale
// whatever the λᵢ, as long as λᵢ uses x₁…xᵢ₋₁ only (predictable), so by
// Ville's inequality it reaches 1/a with probability at most a, however often
// it is looked at (Waudby-Smith & Ramdas 2024, "Estimating means of bounded
// random variables by betting", JRSS-B 86(1):1–27). How fast it grows when the
// null is false depends on the bet: the Kelly bet λ* ≈ (μ − m₀)/E[(x − m₀)²]
// maximises the growth rate. The bets here are its predictable plug-in, the
// approximate growth-rate adaptive bet (aGRAPA) of that paper: μ and the
// variance are the running estimates of the observations so far, shrunk
// towards a prior with the weight of priorWeight observations so the first
// bets are sensible, and the bet is capped so a factor never drops below
// 1 − betCap. The bet adapts to the true mean instead of staking on a fixed
// design alternative.
const (
	priorWeight = 10.0
	betCap      = 0.5
)

// moments are the running mean and sum of squared deviations (Welford) of the
// observations so far.
type moments struct {
	n        int
	mean, m2 float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (x - m.mean)
}

// estimate is the predictable plug-in: the running mean shrunk towards
// priorMean and the running variance shrunk towards priorVar.
func (m moments) estimate(priorMean, priorVar float64) (mu, v float64) {
	n := float64(m.n)
	mu = (priorWeight*priorMean + n*m.mean) / (priorWeight + n)
	v = (priorWeight*priorVar + m.m2) / (priorWeight + n)
	return mu, v
}

// agrapa is the capped aGRAPA bet on the mean being above m0 (up = true) or
// below it, for estimates mu, v, when an observation can fall as far as span
// below m0 (up) or above it (down): λ = clip(δ/(v + δ²), 0, betCap/span),
// δ = ±(mu − m0).
func agrapa(mu, v, m0, span float64, up bool) float64 {
	delta := mu - m0
	if !up {
		delta = -delta
	}
	if delta <= 0 || span <= 0 {
		return 0
	}
	return math.Min(delta/(v+delta*delta), betCap/span)
}

// BettingCSConfig sets up a BettingCS.
type BettingCSConfig struct {
	// Lo and Hi bound every observation (default −1 and 1: a paired
	// difference). Values outside are clamped.
	Lo, Hi float64
	// Confidence is two-sided; each side of the sequence runs at α/2.
	Confidence float64
	// Points are values of the mean tested exactly (a margin, a FAIL
	// threshold, a cost ceiling's 0): Above and Below answer for them without
	// the grid's rounding.
	Points []float64
	// Grid is the number of grid points over [Lo, Hi] the bounds are read
	// from (default 401: a resolution of (Hi − Lo)/400). Each observation
	// costs O(Grid + len(Points)).
	Grid int
	// PriorMean is where the bets' running mean starts (default the middle of
	// [Lo, Hi]).
	PriorMean *float64
}

// BettingCS is an anytime-valid confidence sequence for the mean of bounded
// observations seen one at a time: at every m of a grid over [Lo, Hi] (and at
// each of Points) it runs the two one-sided betting tests of "mean ≤ m" and
// "mean ≥ m" with aGRAPA bets (see agrapa), each at α/2; the sequence at time
// t is the set of m neither test has rejected at any time so far (the running
// intersection), so P(the mean ever leaves it) ≤ α (Waudby-Smith & Ramdas
// 2024, hedged capital with θ = ½). Its state can be read at any time in
// O(Grid); it never needs the observations again. Not safe for concurrent use.
//
// It is the reusable form of the sequential test: a live verdict feeds it one
// paired outcome at a time (candidate − incumbent, judged or not) and reads
// Bounds and Decide whenever a page or report asks.
type BettingCS struct {
	cfg       BettingCSConfig
	ms        []float64 // the grid and Points, ascending
	logUp     []float64 // log capital of "mean ≤ m" (betting up)
	logDown   []float64 // log capital of "mean ≥ m"
	maxUp     []float64 // running max of logUp
	maxDown   []float64
	mom       moments
	threshold float64 // log(2/α)
	priorMean float64
	priorVar  float64
}

// NewBettingCS starts a sequence; it reports bounds or a confidence outside
// their ranges.
func NewBettingCS(cfg BettingCSConfig) (*BettingCS, error) {
	if cfg.Lo == 0 && cfg.Hi == 0 {
		cfg.Lo, cfg.Hi = -1, 1
	}
	if cfg.Grid == 0 {
		cfg.Grid = 401
	}
	switch {
	case !(cfg.Lo < cfg.Hi) || math.IsInf(cfg.Lo, 0) || math.IsInf(cfg.Hi, 0):
		return nil, fmt.Errorf("stats: betting CS: need finite bounds lo < hi, got %g and %g", cfg.Lo, cfg.Hi)
	case cfg.Confidence <= 0 || cfg.Confidence >= 1:
		return nil, fmt.Errorf("stats: betting CS: confidence must be in (0, 1), got %g", cfg.Confidence)
	case cfg.Grid < 2:
		return nil, fmt.Errorf("stats: betting CS: grid must have at least 2 points, got %d", cfg.Grid)
	}
	for _, p := range cfg.Points {
		if p < cfg.Lo || p > cfg.Hi {
			return nil, fmt.Errorf("stats: betting CS: point %g outside [%g, %g]", p, cfg.Lo, cfg.Hi)
		}
	}
	b := &BettingCS{cfg: cfg, threshold: math.Log(2 / (1 - cfg.Confidence))}
	for i := range cfg.Grid {
		b.ms = append(b.ms, cfg.Lo+(cfg.Hi-cfg.Lo)*float64(i)/float64(cfg.Grid-1))
	}
	b.ms = append(b.ms, cfg.Points...)
	slices.Sort(b.ms)
	b.ms = slices.Compact(b.ms)
	k := len(b.ms)
	b.logUp, b.logDown, b.maxUp, b.maxDown = make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
	b.priorMean = (cfg.Lo + cfg.Hi) / 2
	if cfg.PriorMean != nil {
		b.priorMean = *cfg.PriorMean
	}
	b.priorVar = (cfg.Hi - cfg.Lo) * (cfg.Hi - cfg.Lo) / 16
	return b, nil
}

// Observe takes the next observation (clamped to [Lo, Hi]).
func (b *BettingCS) Observe(x float64) {
	x = math.Max(b.cfg.Lo, math.Min(b.cfg.Hi, x))
	mu, v := b.mom.estimate(b.priorMean, b.priorVar)
	for i, m := range b.ms {
		if lu := agrapa(mu, v, m, m-b.cfg.Lo, true); lu > 0 {
			b.logUp[i] += math.Log1p(lu * (x - m))
			b.maxUp[i] = math.Max(b.maxUp[i], b.logUp[i])
		}
		if ld := agrapa(mu, v, m, b.cfg.Hi-m, false); ld > 0 {
			b.logDown[i] += math.Log1p(-ld * (x - m))
			b.maxDown[i] = math.Max(b.maxDown[i], b.logDown[i])
		}
	}
	b.mom.add(x)
}

// N is the number of observations so far; Mean their mean.
func (b *BettingCS) N() int { return b.mom.n }

// Mean is the observations' mean (0 before the first).
func (b *BettingCS) Mean() float64 { return b.mom.mean }

// Bounds is the confidence sequence now, read from the grid and Points: its
// low end is the largest m such that every m′ ≤ m is shown below the mean
// (the test of "mean ≤ m′" reached 2/α at some time), its high end the
// smallest m such that every m′ ≥ m is shown above it; [Lo, Hi] before any
// evidence.
func (b *BettingCS) Bounds() Interval {
	iv := Interval{Low: b.cfg.Lo, High: b.cfg.Hi}
	for i, m := range b.ms {
		if b.maxUp[i] < b.threshold {
			break
		}
		iv.Low = m
	}
	for i := len(b.ms) - 1; i >= 0; i-- {
		if b.maxDown[i] < b.threshold {
			break
		}
		iv.High = b.ms[i]
	}
	if iv.Low > iv.High { // only by the grid's rounding around the mean
		iv.Low, iv.High = b.mom.mean, b.mom.mean
	}
	return iv
}

// point returns the index of m in the grid, −1 unless m is one of Points.
func (b *BettingCS) point(m float64) int {
	if !slices.Contains(b.cfg.Points, m) {
		return -1
	}
	i, _ := slices.BinarySearch(b.ms, m)
	return i
}

// Above reports whether the mean is shown above m (the test of "mean ≤ m"
// reached 2/α at some time); m must be one of Points, else it is false.
func (b *BettingCS) Above(m float64) bool {
	i := b.point(m)
	return i >= 0 && b.maxUp[i] >= b.threshold
}

// Below reports whether the mean is shown below m; m must be one of Points.
func (b *BettingCS) Below(m float64) bool {
	i := b.point(m)
	return i >= 0 && b.maxDown[i] >= b.threshold
}

// PAbove is the anytime-valid p-value of "mean ≤ m" (min(1, 1/largest
// capital so far), Ville's inequality), for m one of Points; 1 otherwise.
func (b *BettingCS) PAbove(m float64) float64 {
	if i := b.point(m); i >= 0 {
		return math.Min(1, math.Exp(-b.maxUp[i]))
	}
	return 1
}

// PBelow is the anytime-valid p-value of "mean ≥ m", for m one of Points.
func (b *BettingCS) PBelow(m float64) float64 {
	if i := b.point(m); i >= 0 {
		return math.Min(1, math.Exp(-b.maxDown[i]))
	}
	return 1
}

// Decide applies the three-way rule to a paired difference against a margin
// and a FAIL threshold (both in Points): "PASS" when the mean is shown above
// −margin, else "FAIL" when it is shown below −failAt, else "INCONCLUSIVE".
// Each wrong verdict has probability at most α/2 whenever it is read.
func (b *BettingCS) Decide(margin, failAt float64) string {
	switch {
	case b.Above(-margin):
		return "PASS"
	case b.Below(-failAt):
		return "FAIL"
	}
	return "INCONCLUSIVE"
}
