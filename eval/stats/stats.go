// Package stats holds the statistics a suite report and its gates are built
// from: Wilson score intervals for accuracy; Tango's score interval for the
// paired accuracy difference and its restricted-variance generalisation for
// judge scores (MeanScoreZ); the paired cost ratio (delta method) and p95
// ratio (Bahadur) tests; a seeded paired bootstrap for the per-arm latency
// percentile intervals; McNemar's exact test; nearest-rank percentiles
// (store/percentile); Holm's correction; the exact operating characteristics
// and sample sizes of the three-way quality rule (Operating, Plan,
// DetectableDrop); group-sequential boundaries (Boundaries); and the
// anytime-valid tests: Sequential, BettingCS, CostRatioSequence,
// QuantileRatioSequence; and Cohen's κ of a judge against human reviewers
// (CohenKappa).
//
// Every function is pure and deterministic for a given seed.
package stats

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// Z95 is the two-sided 95% standard normal quantile, Φ⁻¹(0.975).
const Z95 = 1.959963984540054

// Interval is a closed confidence interval [Low, High] in the unit of the
// figure it belongs to.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Contains reports whether Low ≤ x ≤ High.
func (iv Interval) Contains(x float64) bool { return iv.Low <= x && x <= iv.High }

// String renders "[low, high]" with 4 decimals.
func (iv Interval) String() string { return fmt.Sprintf("[%.4f, %.4f]", iv.Low, iv.High) }

// ZFor returns the two-sided standard normal quantile for confidence level
// conf (0 < conf < 1), e.g. 1.95996 for 0.95.
func ZFor(conf float64) float64 {
	return distuv.UnitNormal.Quantile(1 - (1-conf)/2)
}

// Wilson returns the Wilson score interval (Wilson 1927; Newcombe 1998
// method 3, without continuity correction) for successes out of n at normal
// quantile z (use Z95 for 95%):
//
//	centre = (p̂ + z²/2n) / (1 + z²/n),  half = z·√(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).
//
// Proportions in 0..1; n = 0 gives [0, 1].
func Wilson(successes, n int, z float64) Interval {
	if n <= 0 {
		return Interval{0, 1}
	}
	fn := float64(n)
	p := float64(successes) / fn
	z2 := z * z
	den := 1 + z2/fn
	centre := (p + z2/(2*fn)) / den
	half := z * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn)) / den
	return Interval{Low: math.Max(0, centre-half), High: math.Min(1, centre+half)}
}

// McNemarExact returns the two-sided exact McNemar p-value for b and c
// discordant pairs (b: first right, second wrong; c: the reverse): under H0
// each discordant pair goes either way with probability ½, so
//
//	p = min(1, 2·P(X ≤ min(b, c))),  X ~ Binomial(b+c, ½).
//
// No discordant pairs gives 1.
func McNemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	// Sum C(n,i)/2^n for i = 0..k in log space.
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	sum := 0.0
	for i := 0; i <= k; i++ {
		sum += math.Exp(lg(n) - lg(i) - lg(n-i) - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*sum)
}

// NearestRank returns the p-th percentile (0 < p ≤ 100) of sorted values by
// the nearest-rank method: the value at 1-based rank ⌈p/100·n⌉; 0 for none.
// It is percentile.NearestRank, the project's one definition of p50/p95/p99.
func NearestRank(sorted []float64, p float64) float64 { return percentile.NearestRank(sorted, p) }

// Percentile sorts a copy of values and returns NearestRank(copy, p).
func Percentile(values []float64, p float64) float64 { return percentile.Of(values, p) }

// Holm returns Holm's (1979) step-down adjusted p-values, in the input order:
// with p sorted ascending p(1) ≤ … ≤ p(m), adj(i) = max over j ≤ i of
// min(1, (m−j+1)·p(j)). A hypothesis is rejected at family-wise level α when
// its adjusted p-value is ≤ α.
func Holm(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, m)
	running := 0.0
	for j, i := range idx {
		v := math.Min(1, float64(m-j)*p[i])
		running = math.Max(running, v)
		out[i] = running
	}
	return out
}

// McNemarSampleSize returns the number of paired cases needed to detect an
// accuracy difference delta (absolute, 0..1, e.g. 0.05 for 5 points) with a
// two-sided McNemar test at level alpha and the given power, when a fraction
// psi of pairs is discordant (Connor 1987):
//
//	n = ⌈(z₁₋α/₂·√ψ + z₁₋β·√(ψ − δ²))² / δ²⌉.
//
// psi is raised to |delta| when smaller (fewer discordant pairs than the
// difference itself is impossible). It returns an error for delta outside
// (0, 1], psi outside [0, 1], alpha or power outside (0, 1).
func McNemarSampleSize(delta, psi, alpha, power float64) (int, error) {
	delta = math.Abs(delta)
	switch {
	case delta == 0 || delta > 1:
		return 0, fmt.Errorf("stats: sample size: effect must be in (0, 1], got %g", delta)
	case psi < 0 || psi > 1:
		return 0, fmt.Errorf("stats: sample size: discordant fraction must be in [0, 1], got %g", psi)
	case alpha <= 0 || alpha >= 1:
		return 0, fmt.Errorf("stats: sample size: alpha must be in (0, 1), got %g", alpha)
	case power <= 0 || power >= 1:
		return 0, fmt.Errorf("stats: sample size: power must be in (0, 1), got %g", power)
	}
	psi = math.Max(psi, delta)
	za := distuv.UnitNormal.Quantile(1 - alpha/2)
	zb := distuv.UnitNormal.Quantile(power)
	root := za*math.Sqrt(psi) + zb*math.Sqrt(psi-delta*delta)
	return int(math.Ceil(root * root / (delta * delta))), nil
}
