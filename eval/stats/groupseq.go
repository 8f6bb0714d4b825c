package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Spending functions of a group-sequential plan (Lan & DeMets 1983,
// "Discrete sequential boundaries for clinical trials", Biometrika
// 70(3):659–663): how much of a one-sided level a is spent by information
// fraction t ∈ [0, 1] (cases so far / the plan's cases).
const (
	// SpendingOBrienFleming is the O'Brien–Fleming-like function
	// a(t) = 2 − 2Φ(z₁₋a/₂ / √t): almost nothing early, the fixed-n level at
	// t = 1 barely raised (two looks at t = ½ and 1 at a = 0.025: z 2.96 and
	// 1.97, against 1.96 for one look).
	SpendingOBrienFleming = "obrien-fleming"
	// SpendingPocock is the Pocock-like function a(t) = a·ln(1 + (e − 1)t)
	// (Lan & DeMets 1983): more spent early, a stricter last look.
	SpendingPocock = "pocock"
)

// Spent returns the one-sided level spent by information fraction t under
// the spending function kind at total level a: 0 for t ≤ 0, a for t ≥ 1.
func Spent(kind string, a, t float64) (float64, error) {
	switch {
	case t <= 0:
		return 0, nil
	case t >= 1:
		return a, nil
	}
	switch kind {
	case SpendingOBrienFleming:
		z := distuv.UnitNormal.Quantile(1 - a/2)
		return 2 - 2*distuv.UnitNormal.CDF(z/math.Sqrt(t)), nil
	case SpendingPocock:
		return a * math.Log(1+(math.E-1)*t), nil
	}
	return 0, fmt.Errorf("stats: spending function must be %s or %s, got %q", SpendingOBrienFleming, SpendingPocock, kind)
}

// Boundaries returns the one-sided upper boundaries z₁…z_K of a
// group-sequential test at looks with increasing information fractions ts
// (each in (0, 1]; a fraction at or above 1 is the last look, which spends
// what is left): the test rejects at look k when its standardised statistic
// Z_k ≥ z_k, and z_k solves
//
//	P(Z₁ < z₁, …, Z_{k−1} < z_{k−1}, Z_k ≥ z_k) = a(t_k) − a(t_{k−1})
//
// under the null, Z_k being the standardised sum of a Brownian motion at
// information t_k (corr(Z_j, Z_k) = √(t_j/t_k)), by the recursive numerical
// integration of Armitage, McPherson & Rowe (1969) as in Jennison & Turnbull
// (2000), "Group Sequential Methods with Applications to Clinical Trials",
// ch. 19. A look that spends nothing (t not above the previous look's) gets
// +Inf: it cannot reject. So the chance of ever rejecting a true null over
// all looks is a(min(t_K, 1)) ≤ a, whenever the looks are taken. A boundary
// above MaxBoundary (a look that spends less than 1 − Φ(8) ≈ 6·10⁻¹⁶, such as
// an O'Brien–Fleming-like first look at a small fraction) is MaxBoundary,
// which adds at most that much per look.
//
// Both sides of the gate's three-way rule spend a = α/2 each with the same
// function: the PASS test of "θ ≤ −margin" and the FAIL test of "θ ≥ −fail
// threshold"; stopping at one side only lowers the other's rejections.
func Boundaries(kind string, a float64, ts []float64) ([]float64, error) {
	if a <= 0 || a >= 1 {
		return nil, fmt.Errorf("stats: boundaries: level must be in (0, 1), got %g", a)
	}
	if _, err := Spent(kind, a, 0.5); err != nil {
		return nil, err
	}
	out := make([]float64, len(ts))
	// The density of the Brownian motion S(t) (variance t) on the
	// continuation region, on a grid of step h.
	var grid, dens []float64
	prevT, prevSpent := 0.0, 0.0
	first := true
	for k, t := range ts {
		t = math.Min(t, 1)
		if t <= prevT {
			out[k] = math.Inf(1)
			continue
		}
		spent, _ := Spent(kind, a, t)
		inc := math.Max(spent-prevSpent, 0)
		if first {
			// P(Z₁ ≥ z) = inc.
			z := math.Min(-distuv.UnitNormal.Quantile(inc), MaxBoundary)
			out[k] = z
			b := z * math.Sqrt(t)
			grid, dens = densityGrid(b, t, func(s float64) float64 { return normalPDF(s, t) })
			first = false
		} else {
			dt := t - prevT
			// Exit probability above b at this look from the previous density.
			exit := func(b float64) float64 {
				sum := 0.0
				for i, u := range grid {
					sum += dens[i] * (1 - distuv.UnitNormal.CDF((b-u)/math.Sqrt(dt)))
				}
				return sum * (grid[1] - grid[0])
			}
			b := math.Min(bisectDecreasing(exit, -10*math.Sqrt(t), 40*math.Sqrt(t), inc, 1e-7), MaxBoundary*math.Sqrt(t))
			out[k] = b / math.Sqrt(t)
			pg, pd := grid, dens
			h := pg[1] - pg[0]
			grid, dens = densityGrid(b, t, func(s float64) float64 {
				sum := 0.0
				for i, u := range pg {
					sum += pd[i] * normalPDF(s-u, dt)
				}
				return sum * h
			})
		}
		prevT, prevSpent = t, spent
	}
	return out, nil
}

// MaxBoundary caps a look's one-sided boundary (see Boundaries).
const MaxBoundary = 8

// gridPoints is the number of midpoint-rule cells over a continuation region.
const gridPoints = 401

// densityGrid tabulates f at the midpoints of gridPoints equal cells from 8
// standard deviations of S(t) below 0 up to the boundary b (the continuation
// region S < b).
func densityGrid(b, t float64, f func(float64) float64) (grid, dens []float64) {
	lo := -8 * math.Sqrt(t)
	if b <= lo {
		b = lo + 1e-9
	}
	h := (b - lo) / gridPoints
	grid = make([]float64, gridPoints)
	dens = make([]float64, gridPoints)
	for i := range grid {
		grid[i] = lo + h*(float64(i)+0.5) // midpoints of gridPoints cells
		dens[i] = f(grid[i])
	}
	return grid, dens
}

func normalPDF(x, variance float64) float64 {
	return math.Exp(-x*x/(2*variance)) / math.Sqrt(2*math.Pi*variance)
}

// LookConfidence is the two-sided confidence level whose normal quantile is
// the one-sided boundary z: 1 − 2(1 − Φ(z)); 1 for +Inf. An interval at this
// level has its ends exactly at the boundary, so "lower bound ≥ −margin" at
// look k is "Z_k ≥ z_k".
func LookConfidence(z float64) float64 {
	if math.IsInf(z, 1) {
		return 1
	}
	return 1 - 2*(1-distuv.UnitNormal.CDF(z))
}
