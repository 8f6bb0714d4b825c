package stats

import "math"

// PAboveNow is PAbove read from the test's capital now instead of its
// largest so far: min(1, 1/Kₜ) of the test of "mean ≤ m" at this time, for m
// one of Points (1 otherwise). By Ville's inequality Kₜ < 2/α at every t
// with probability ≥ 1 − α/2 when the mean is ≤ m, so "PAboveNow(m) ≤ α/2"
// is also a valid claim at any time; unlike PAbove it rises again when later
// observations speak against it (the capital falls), which is what a rule
// watching a claim after it was made reads (the live verdict's rollback rule).
func (b *BettingCS) PAboveNow(m float64) float64 {
	if i := b.point(m); i >= 0 {
		return math.Min(1, math.Exp(-b.logUp[i]))
	}
	return 1
}
