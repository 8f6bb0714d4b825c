// Package percentile holds the one definition of p50/p95/p99 used everywhere
// (suite reports, gates, the overview pages, the load commands and the Grafana
// panels): the nearest-rank method, in Go and as the equivalent ClickHouse SQL.
//
// Nearest rank (Hyndman & Fan 1996 definition 1, the "inverted empirical
// distribution function"; also the method in Wikipedia's "Percentile"): the
// p-th percentile of n sorted values is the value at 1-based rank ⌈p/100 · n⌉,
// clamped to [1, n]. It is always one of the observed values, never an
// interpolation. No values give 0.
//
// The package imports nothing of the project, so the store, eval and cmd
// packages can all use it.
package percentile

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
)

// Rank returns the 1-based nearest rank ⌈p/100 · n⌉ clamped to [1, n] for
// 0 < p ≤ 100 and n ≥ 1; 0 when n is 0. p/100 and the product are float64
// operations, the same ones SQL performs (see SQL), so both pick the same rank.
func Rank(n int, p float64) int {
	if n <= 0 {
		return 0
	}
	r := int(math.Ceil(p / 100 * float64(n)))
	return max(1, min(n, r))
}

// NearestRank returns the p-th percentile (0 < p ≤ 100) of sorted (ascending)
// values by the nearest-rank method. 0 for no values.
func NearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[Rank(len(sorted), p)-1]
}

// NearestRanks returns NearestRank of values sorted, for each of ps (each
// 0 < p ≤ 100), without sorting them: each percentile is found by selection
// (Hoare's quickselect, three-way partitions about a median of three,
// falling back to a sort past 2·log₂ n rounds), O(n) expected against the
// sort's O(n log n). values is reordered in place and must hold no NaN; the
// figures are those NearestRank gives, as the rank of an ordered value does
// not depend on how it was found. 0 for each p when values is empty.
func NearestRanks(values []float64, ps ...float64) []float64 {
	out := make([]float64, len(ps))
	n := len(values)
	if n == 0 {
		return out
	}
	// Ranks in ascending order: after the k-th value is placed, every later
	// rank lies at or after k.
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return Rank(n, ps[a]) - Rank(n, ps[b]) })
	lo := 0
	for _, i := range order {
		k := Rank(n, ps[i]) - 1
		selectIndex(values[lo:], k-lo)
		out[i], lo = values[k], k
	}
	return out
}

// selectIndex reorders a so that a[k] holds the value an ascending sort
// would put there, no value before it greater and none after it smaller.
func selectIndex(a []float64, k int) {
	for rounds := 2 * bits.Len(uint(len(a))); len(a) > 12; rounds-- {
		if rounds == 0 {
			slices.Sort(a)
			return
		}
		x, y, z := a[0], a[len(a)/2], a[len(a)-1]
		pivot := max(min(x, y), min(max(x, y), z)) // the median of the three
		// a[:lt] < pivot, a[lt:i] == pivot, a[gt:] > pivot.
		lt, i, gt := 0, 0, len(a)
		for i < gt {
			switch v := a[i]; {
			case v < pivot:
				a[lt], a[i] = v, a[lt]
				lt++
				i++
			case v > pivot:
				gt--
				a[i], a[gt] = a[gt], v
			default:
				i++
			}
		}
		switch {
		case k < lt:
			a = a[:lt]
		case k >= gt:
			a, k = a[gt:], k-gt
		default:
			return // a[k] == pivot, in place
		}
	}
	slices.Sort(a)
}

// Of sorts a copy of values and returns its nearest-rank p-th percentile.
func Of(values []float64, p float64) float64 {
	s := slices.Clone(values)
	slices.Sort(s)
	return NearestRank(s, p)
}

// Durations returns the nearest-rank p-th percentile of sorted (ascending)
// durations; 0 for none.
func Durations(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[Rank(len(sorted), p)-1]
}

// SQL returns a ClickHouse aggregate expression computing the nearest-rank
// p-th percentile of expr over the rows where cond holds (cond "" for every
// row):
//
//	arrayElement(arraySort(groupArrayIf(expr, cond)),
//	    toUInt64(greatest(1, ceil(p/100 * countIf(cond)))))
//
// With no rows the index is 0 and arrayElement returns 0, as NearestRank does.
// ClickHouse's quantileExactLow is not the same estimator (it reads rank
// ⌊p·n⌋ + 1, one higher whenever p·n is a whole number) and quantile() is a
// sampled approximation, so neither is used. p is written as the float64
// literal p/100, which ClickHouse parses to the same double Go computes.
func SQL(expr, cond string, p float64) string {
	if p <= 0 || p > 100 {
		panic(fmt.Sprintf("percentile: SQL: p must be in (0, 100], got %g", p))
	}
	q := strconv.FormatFloat(p/100, 'g', -1, 64)
	if cond == "" {
		return fmt.Sprintf("arrayElement(arraySort(groupArray(%[1]s)), toUInt64(greatest(1, ceil(%[2]s * count()))))", expr, q)
	}
	return fmt.Sprintf("arrayElement(arraySort(groupArrayIf(%[1]s, %[3]s)), toUInt64(greatest(1, ceil(%[2]s * countIf(%[3]s)))))", expr, q, cond)
}
