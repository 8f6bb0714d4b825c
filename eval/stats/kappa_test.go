package stats

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// TestCohenKappaWorkedExamples checks κ, its agreement shares, standard
// errors and 95% interval against testdata/kappa.json: a hand computation in
// exact fractions, SAS's published PROC FREQ example and Wikipedia's.
func TestCohenKappaWorkedExamples(t *testing.T) {
	raw, err := os.ReadFile("testdata/kappa.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Source    string      `json:"source"`
		Table     [][]float64 `json:"table"`
		Observed  *float64    `json:"observed"`
		Expected  *float64    `json:"expected"`
		Kappa     float64     `json:"kappa"`
		SE        *float64    `json:"se"`
		SE0       *float64    `json:"se0"`
		Low       *float64    `json:"low"`
		High      *float64    `json:"high"`
		Tolerance float64     `json:"tolerance"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 3 {
		t.Fatalf("%d worked examples, want 3", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Source[:24], func(t *testing.T) {
			tol := c.Tolerance
			if tol == 0 {
				tol = 1e-12
			}
			got, err := CohenKappa(c.Table, 0, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			check := func(name string, got float64, want *float64) {
				if want != nil && math.Abs(got-*want) > tol {
					t.Errorf("%s = %.10f, want %.10f (±%g)", name, got, *want, tol)
				}
			}
			check("kappa", got.Kappa, &c.Kappa)
			check("observed", got.Observed, c.Observed)
			check("expected", got.Expected, c.Expected)
			check("se", got.SE, c.SE)
			check("se0", got.SE0, c.SE0)
			check("low", got.Interval.Low, c.Low)
			check("high", got.Interval.High, c.High)
		})
	}
}

func TestCohenKappaEdges(t *testing.T) {
	tests := []struct {
		name  string
		table [][]float64
		n     float64
		conf  float64
		err   string
		check func(t *testing.T, k Kappa)
	}{
		{name: "perfect agreement", table: [][]float64{{10, 0}, {0, 5}}, conf: 0.95, check: func(t *testing.T, k Kappa) {
			if k.Kappa != 1 || k.SE != 0 || k.Interval != (Interval{1, 1}) {
				t.Errorf("%+v", k)
			}
		}},
		{name: "κ never exceeds raw agreement", table: [][]float64{{30, 10, 0, 0}, {10, 15, 5, 0}, {0, 5, 15, 10}, {0, 0, 5, 0}}, conf: 0.95, check: func(t *testing.T, k Kappa) {
			if k.Kappa > k.Observed {
				t.Errorf("κ %.3f above raw agreement %.3f", k.Kappa, k.Observed)
			}
		}},
		{name: "a rater's unused category", table: [][]float64{{8, 2, 0}, {1, 7, 0}, {1, 1, 0}}, conf: 0.95, check: func(t *testing.T, k Kappa) {
			if k.Kappa <= 0 || k.Kappa >= k.Observed {
				t.Errorf("%+v", k)
			}
		}},
		{name: "effective n widens the interval", table: [][]float64{{20, 5}, {10, 15}}, n: 12.5, conf: 0.95, check: func(t *testing.T, k Kappa) {
			full, _ := CohenKappa([][]float64{{20, 5}, {10, 15}}, 0, 0.95)
			if k.Kappa != full.Kappa || math.Abs(k.SE-full.SE*2) > 1e-12 {
				t.Errorf("n 12.5: se %.4f, n 50: se %.4f; want twice", k.SE, full.SE)
			}
		}},
		{name: "one category only", table: [][]float64{{9, 0}, {0, 0}}, conf: 0.95, err: ErrKappaUndefined.Error()},
		{name: "not square", table: [][]float64{{1, 2}, {3}}, conf: 0.95, err: "row 1 has 1 cells, want 2"},
		{name: "negative cell", table: [][]float64{{1, -2}, {3, 4}}, conf: 0.95, err: "cell (0, 1) is -2"},
		{name: "empty", table: nil, conf: 0.95, err: "empty table"},
		{name: "no items", table: [][]float64{{0, 0}, {0, 0}}, conf: 0.95, err: "no items"},
		{name: "bad confidence", table: [][]float64{{1, 0}, {0, 1}}, conf: 1, err: "confidence must be in (0, 1)"},
		{name: "bad n", table: [][]float64{{1, 0}, {0, 1}}, n: -1, conf: 0.9, err: "n must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := CohenKappa(tt.table, tt.n, tt.conf)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				if tt.err == ErrKappaUndefined.Error() && !errors.Is(err, ErrKappaUndefined) {
					t.Errorf("error %v is not ErrKappaUndefined", err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				tt.check(t, k)
			}
		})
	}
}

func TestKishN(t *testing.T) {
	for _, tt := range []struct {
		w    []float64
		want float64
	}{{[]float64{1, 1, 1, 1}, 4}, {[]float64{5, 5}, 2}, {[]float64{1, 3}, 1.6}, {nil, 0}, {[]float64{0, -1}, 0}} {
		if got := KishN(tt.w); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("KishN(%v) = %g, want %g", tt.w, got, tt.want)
		}
	}
}
