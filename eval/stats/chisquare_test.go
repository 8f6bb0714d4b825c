package stats

import (
	"math"
	"testing"
)

// Pearson's chi-square of independence against hand computations (R's
// chisq.test(m, correct = FALSE)), with the sparse rows pooled and empty
// rows and columns left out.
func TestChiSquareIndependence(t *testing.T) {
	cases := []struct {
		name   string
		counts [][]int64
		stat   float64
		df     int
		p      float64
		pooled int
	}{
		// 2×2: expected 85/15 per row; (5²/85 + 5²/15)·2 = 3.9216, p 0.04767.
		{"2x2", [][]int64{{90, 10}, {80, 20}}, 3.9216, 1, 0.04767, 0},
		// 3×2 equal split: nothing to see.
		{"equal", [][]int64{{50, 50}, {50, 50}, {50, 50}}, 0, 2, 1, 0},
		// An empty row and an empty column change nothing.
		{"empty", [][]int64{{90, 10, 0}, {0, 0, 0}, {80, 20, 0}}, 3.9216, 1, 0.04767, 0},
		// Two sparse rows (expected below 5) pooled into one: [[90,10],[80,20],[15,2]+[18,3]];
		// χ²(2) has the survival e^{−x/2}: 4.0726, p 0.1305.
		{"pooled", [][]int64{{90, 10}, {80, 20}, {15, 2}, {18, 3}}, 4.0726, 2, 0.1305, 2},
		// A sparse row that stays sparse when pooled is left out.
		{"dropped", [][]int64{{90, 10}, {80, 20}, {3, 1}}, 3.9216, 1, 0.04767, 1},
		// One column only: no test.
		{"one column", [][]int64{{5}, {7}}, 0, 0, 1, 0},
	}
	for _, c := range cases {
		r := ChiSquareIndependence(c.counts)
		if math.Abs(r.Stat-c.stat) > 1e-3 || r.DF != c.df || math.Abs(r.P-c.p) > 1e-3 || r.Pooled != c.pooled {
			t.Errorf("%s: %+v, want stat %.4f df %d p %.4f pooled %d", c.name, r, c.stat, c.df, c.p, c.pooled)
		}
	}
}
