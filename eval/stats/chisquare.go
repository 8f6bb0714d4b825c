package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ChiSquareResult is Pearson's chi-square test of independence of an r × c
// contingency table.
type ChiSquareResult struct {
	Stat float64 `json:"stat"` // Σ (observed − expected)² / expected
	DF   int     `json:"df"`   // (rows − 1)(columns − 1) after pooling
	P    float64 `json:"p"`    // upper tail of χ²(DF); 1 when DF is 0
	// Rows is the rows tested after pooling; Pooled how many sparse rows
	// went into one pooled row.
	Rows, Pooled int
}

// ChiSquareIndependence tests whether the rows of counts (rows = the cells of
// a segment dimension, columns = what became of the exchanges, e.g.
// shadowed and not shadowed) share one column distribution — the
// sample-ratio-mismatch check of experimentation platforms, applied to
// coverage. Rows and columns with no count are left out; rows whose smallest
// expected count is below 5 (Cochran 1954: the χ² approximation is rough
// there) are pooled into one row, which is itself left out when still
// sparse. Fewer than two rows or columns give DF 0 and P 1.
func ChiSquareIndependence(counts [][]int64) ChiSquareResult {
	cols := 0
	for _, r := range counts {
		cols = max(cols, len(r))
	}
	colSum := make([]float64, cols)
	var total float64
	for _, r := range counts {
		for j, v := range r {
			colSum[j] += float64(v)
			total += float64(v)
		}
	}
	var keepCols []int
	for j, s := range colSum {
		if s > 0 {
			keepCols = append(keepCols, j)
		}
	}
	res := ChiSquareResult{P: 1}
	if len(keepCols) < 2 || total == 0 {
		return res
	}
	rowOf := func(r []int64) []float64 {
		out := make([]float64, len(keepCols))
		for k, j := range keepCols {
			if j < len(r) {
				out[k] = float64(r[j])
			}
		}
		return out
	}
	sum := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s
	}
	sparse := func(row []float64) bool {
		n := sum(row)
		for _, j := range keepCols {
			if n*colSum[j]/total < 5 {
				return true
			}
		}
		return false
	}
	var rows [][]float64
	pooled := make([]float64, len(keepCols))
	for _, r := range counts {
		row := rowOf(r)
		switch {
		case sum(row) == 0:
		case sparse(row):
			res.Pooled++
			for k := range row {
				pooled[k] += row[k]
			}
		default:
			rows = append(rows, row)
		}
	}
	if res.Pooled > 0 && !sparse(pooled) {
		rows = append(rows, pooled)
	}
	res.Rows = len(rows)
	if len(rows) < 2 {
		return res
	}
	// Expected counts from the margins of the rows kept.
	cs := make([]float64, len(keepCols))
	var n float64
	for _, row := range rows {
		for k, v := range row {
			cs[k] += v
			n += v
		}
	}
	df := (len(rows) - 1) * (len(keepCols) - 1)
	for k := range cs {
		if cs[k] == 0 {
			df -= len(rows) - 1
		}
	}
	for _, row := range rows {
		rs := sum(row)
		for k, v := range row {
			if e := rs * cs[k] / n; e > 0 {
				res.Stat += (v - e) * (v - e) / e
			}
		}
	}
	res.DF = df
	if df > 0 {
		res.P = math.Max(0, math.Min(1, distuv.ChiSquared{K: float64(df)}.Survival(res.Stat)))
	}
	return res
}
