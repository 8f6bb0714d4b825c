package stats

import (
	"errors"
	"fmt"
	"math"
)

// Kappa is Cohen's κ of two raters over the same items with its
// large-sample standard error and confidence interval.
//
//	p_o = Σ_i p_ii,  p_e = Σ_i p_i· p_·i,  κ = (p_o − p_e) / (1 − p_e)
//
// (Cohen 1960, "A coefficient of agreement for nominal scales"). SE is the
// non-null large-sample standard error of Fleiss, Cohen & Everitt 1969
// ("Large sample standard errors of kappa and weighted kappa", Psychological
// Bulletin 72(5)), as in Fleiss, Levin & Paik 2003, eq. 18.15 — what SAS
// PROC FREQ reports as the ASE:
//
//	A = Σ_i p_ii [1 − (p_i· + p_·i)(1 − κ)]²
//	B = (1 − κ)² Σ_{i≠j} p_ij (p_·i + p_j·)²
//	C = [κ − p_e (1 − κ)]²
//	SE = √((A + B − C) / n) / (1 − p_e)
//
// and Interval is κ ± z·SE at Confidence, clipped to [−1, 1]. SE0 is the
// standard error under H0 κ = 0 (same source):
//
//	SE0 = √((p_e + p_e² − Σ_i p_i· p_·i (p_i· + p_·i)) / n) / (1 − p_e).
//
// Observed, Expected and Kappa are shares (−1..1 for κ); N is the sample
// size the standard errors use (an effective size for weighted items).
type Kappa struct {
	N          float64  `json:"n"`
	Observed   float64  `json:"observed"` // p_o, raw agreement
	Expected   float64  `json:"expected"` // p_e, agreement by chance from the marginals
	Kappa      float64  `json:"kappa"`
	SE         float64  `json:"se"`
	SE0        float64  `json:"se0"`
	Confidence float64  `json:"confidence"`
	Interval   Interval `json:"interval"`
}

// ErrKappaUndefined: every item fell in one category for both raters (p_e =
// 1), so κ is 0/0.
var ErrKappaUndefined = errors.New("stats: kappa undefined: both raters used one single category (chance agreement 1)")

// CohenKappa computes Cohen's κ from a k×k agreement table: table[i][j] is
// the count (or the summed weight) of items rater 1 put in category i and
// rater 2 in category j. n is the sample size of the standard errors: 0
// takes the table's total (counts); with weighted items pass the effective
// size (KishN). confidence (0 < c < 1) sets the interval (0.95 → z 1.96).
// Errors: a table that is not square or holds a negative or non-finite
// cell, an empty table, n < 0, a confidence outside (0, 1), and
// ErrKappaUndefined.
func CohenKappa(table [][]float64, n, confidence float64) (Kappa, error) {
	k := len(table)
	if k == 0 {
		return Kappa{}, errors.New("stats: kappa: empty table")
	}
	if !(confidence > 0 && confidence < 1) {
		return Kappa{}, fmt.Errorf("stats: kappa: confidence must be in (0, 1), got %g", confidence)
	}
	if n < 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return Kappa{}, fmt.Errorf("stats: kappa: n must be a finite number >= 0, got %g", n)
	}
	total := 0.0
	for i, row := range table {
		if len(row) != k {
			return Kappa{}, fmt.Errorf("stats: kappa: row %d has %d cells, want %d (a square table)", i, len(row), k)
		}
		for j, v := range row {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return Kappa{}, fmt.Errorf("stats: kappa: cell (%d, %d) is %g, want a finite count >= 0", i, j, v)
			}
			total += v
		}
	}
	if total == 0 {
		return Kappa{}, errors.New("stats: kappa: no items in the table")
	}
	if n == 0 {
		n = total
	}
	p := make([][]float64, k)
	rows, cols := make([]float64, k), make([]float64, k)
	for i := range table {
		p[i] = make([]float64, k)
		for j, v := range table[i] {
			p[i][j] = v / total
			rows[i] += p[i][j]
			cols[j] += p[i][j]
		}
	}
	var po, pe float64
	for i := range k {
		po += p[i][i]
		pe += rows[i] * cols[i]
	}
	if pe >= 1-1e-12 {
		return Kappa{}, ErrKappaUndefined
	}
	kappa := (po - pe) / (1 - pe)
	var a, b, s0 float64
	for i := range k {
		t := 1 - (rows[i]+cols[i])*(1-kappa)
		a += p[i][i] * t * t
		for j := range k {
			if j != i {
				s := cols[i] + rows[j]
				b += p[i][j] * s * s
			}
		}
		s0 += rows[i] * cols[i] * (rows[i] + cols[i])
	}
	b *= (1 - kappa) * (1 - kappa)
	c := kappa - pe*(1-kappa)
	v := max(0, (a+b-c*c)/n)
	v0 := max(0, (pe+pe*pe-s0)/n)
	se := math.Sqrt(v) / (1 - pe)
	z := ZFor(confidence)
	return Kappa{N: n, Observed: po, Expected: pe, Kappa: kappa, SE: se, SE0: math.Sqrt(v0) / (1 - pe),
		Confidence: confidence, Interval: Interval{Low: math.Max(-1, kappa-z*se), High: math.Min(1, kappa+z*se)}}, nil
}

// KishN is Kish's effective sample size of weighted items, (Σw)² / Σw²
// (Kish 1965, Survey Sampling, §11.7): n for equal weights, less when the
// weights differ. 0 without a positive weight.
func KishN(weights []float64) float64 {
	var s, s2 float64
	for _, w := range weights {
		if w > 0 {
			s += w
			s2 += w * w
		}
	}
	if s2 == 0 {
		return 0
	}
	return s * s / s2
}
