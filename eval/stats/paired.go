package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
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
	// MethodPairedT: graded with continuous scores (an LLM judge's 0..1 value):
	// the mean per-case score difference with a paired t interval, stratified by
	// category (post-stratified variance Σ w_h² s_h²/n_h, df n − H) when every
	// category has at least two pairs.
	MethodPairedT = "paired-t"
	// MethodPairedTStratified is MethodPairedT with the stratified variance.
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
	num := fx - fy - fn*theta
	if v <= 1e-300 {
		switch {
		case num > 0:
			return math.Inf(1)
		case num < 0:
			return math.Inf(-1)
		}
		return 0
	}
	return num / math.Sqrt(v)
}

// TangoInterval is the two-sided Tango score interval at normal quantile z
// for the paired difference θ (see TangoZ): {θ : |Z(θ)| ≤ z}, found by
// bisection to 1e-9. n = 0 gives [−1, 1].
func TangoInterval(x, y, n int, z float64) Interval {
	if n <= 0 {
		return Interval{-1, 1}
	}
	est := float64(x-y) / float64(n)
	root := func(lo, hi float64, target float64) float64 {
		// Z(lo) ≥ target ≥ Z(hi); Z decreasing.
		for range 100 {
			mid := (lo + hi) / 2
			if TangoZ(x, y, n, mid) > target {
				lo = mid
			} else {
				hi = mid
			}
			if hi-lo < 1e-9 {
				break
			}
		}
		return (lo + hi) / 2
	}
	iv := Interval{Low: -1, High: 1}
	if TangoZ(x, y, n, -1+1e-12) > z {
		iv.Low = root(-1+1e-12, est, z)
	}
	if TangoZ(x, y, n, 1-1e-12) < -z {
		iv.High = root(est, 1-1e-12, -z)
	}
	return iv
}

// PairedMean is the mean of per-case differences d with a t interval at
// confidence conf. With strata (one label per d, nil for none) and every
// stratum holding at least two cases and more than one stratum, the variance is
// post-stratified: Var(d̄) = Σ_h w_h² s_h²/n_h with w_h = n_h/n and df = n − H
// (Cochran 1977, "Sampling Techniques", §5A.9); otherwise s²/n with df n − 1.
// It returns the method used (MethodPairedT or MethodPairedTStratified).
// Fewer than two cases give the interval [−1, 1].
func PairedMean(d []float64, strata []string, conf float64) (mean float64, iv Interval, method string) {
	n := len(d)
	method = MethodPairedT
	if n == 0 {
		return 0, Interval{-1, 1}, method
	}
	for _, v := range d {
		mean += v
	}
	mean /= float64(n)
	if n < 2 {
		return mean, Interval{-1, 1}, method
	}
	se2 := stat.Variance(d, nil) / float64(n)
	df := float64(n - 1)
	if len(strata) == n {
		by := map[string][]float64{}
		for i, s := range strata {
			by[s] = append(by[s], d[i])
		}
		ok := len(by) > 1
		for _, xs := range by {
			ok = ok && len(xs) >= 2
		}
		if ok {
			keys := make([]string, 0, len(by))
			for k := range by {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			se2 = 0
			for _, k := range keys {
				xs := by[k]
				w := float64(len(xs)) / float64(n)
				se2 += w * w * stat.Variance(xs, nil) / float64(len(xs))
			}
			df = float64(n - len(by))
			method = MethodPairedTStratified
		}
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-conf)/2)
	h := t * math.Sqrt(se2)
	return mean, Interval{Low: math.Max(-1, mean-h), High: math.Min(1, mean+h)}, method
}
