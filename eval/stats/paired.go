package stats

import (
	"math"
)

// Quality test methods (Paired.Method): which interval the paired quality
// difference carries and the gate decides on.
const (
	// MethodTango: pass/fail grades. Tango's (1998) score interval for the
	// difference of paired proportions, the inversion of the score test whose
	// variance uses the restricted maximum-likelihood estimate under the tested
	// difference. Recommended over the Wald and bootstrap intervals for
	// non-inferiority on paired binary data (Tango 1998; Newcombe 1998,
	// "Improved confidence intervals for the difference between binomial
	// proportions based on paired data", Stat Med 17:2635, method 10 is the
	// closed-form alternative of similar coverage).
	MethodTango = "tango-score"
	// MethodMeanScore: graded with continuous scores (an LLM judge's 0..1
	// value, score/10 of a 1–10 rubric): the mean per-case score difference
	// with the score interval of MeanScoreZ (Tango's restricted-variance score
	// test carried over to the multinomial of score differences).
	MethodMeanScore = "mean-score"
	// MethodMeanScoreStratified is MethodMeanScore stratified by category
	// (categories with fewer than MinStratumPairs pairs pooled).
	MethodMeanScoreStratified = "mean-score-stratified"
	// MethodPairedT and MethodPairedTStratified name the paired t interval
	// of reports made before MethodMeanScore; no comparison computes them now.
	MethodPairedT           = "paired-t"
	MethodPairedTStratified = "paired-t-stratified"
)

// TangoZ is Tango's score statistic for H: θ = theta, where θ = P(candidate
// only) − P(incumbent only) is the paired difference of proportions (candidate
// − incumbent accuracy), x the pairs only the candidate passed, y the pairs
// only the incumbent passed, n all pairs (Tango 1998, "Equivalence test and
// confidence interval for the difference in proportions for the paired-sample
// design", Stat Med 17:891–908, eq. 3–4):
//
//	Z(θ) = (x − y − nθ) / √(n(2q̂ + θ − θ²)),
//	q̂   = (B + √(B² + 8n·y·θ(1 − θ))) / 4n,  B = x + y − θ(2n − x + y),
//
// q̂ being the restricted MLE of P(incumbent only) given θ. Z decreases in θ.
// n = 0 gives 0.
func TangoZ(x, y, n int, theta float64) float64 {
	if n <= 0 {
		return 0
	}
	fn, fx, fy := float64(n), float64(x), float64(y)
	b := fx + fy - theta*(2*fn-fx+fy)
	q := (b + math.Sqrt(math.Max(0, b*b+8*fn*fy*theta*(1-theta)))) / (4 * fn)
	v := fn * (2*q + theta - theta*theta)
	return scoreRatio(fx-fy-fn*theta, v)
}

// TangoInterval is the two-sided Tango score interval at normal quantile z
// for the paired difference θ (see TangoZ): {θ : |Z(θ)| ≤ z}, found by
// bisection to 1e-9. n = 0 gives [−1, 1].
func TangoInterval(x, y, n int, z float64) Interval {
	if n <= 0 {
		return Interval{-1, 1}
	}
	return scoreInterval(func(theta float64) float64 { return TangoZ(x, y, n, theta) }, float64(x-y)/float64(n), z)
}
