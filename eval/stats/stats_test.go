package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func readJSON[T any](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// wilsonByBisection solves |p̂ − p| = z·√(p(1−p)/n) for p on each side of p̂:
// the definition of the score interval, computed without the closed form.
func wilsonByBisection(x, n int, z float64) Interval {
	ph := float64(x) / float64(n)
	f := func(p float64) float64 { return math.Abs(ph-p) - z*math.Sqrt(p*(1-p)/float64(n)) }
	solve := func(lo, hi float64) float64 { // f(lo) and f(hi) have opposite signs
		for range 200 {
			mid := (lo + hi) / 2
			if (f(lo) > 0) == (f(mid) > 0) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return (lo + hi) / 2
	}
	low, high := 0.0, 1.0
	if ph > 0 {
		low = solve(0, ph)
	}
	if ph < 1 {
		high = solve(ph, 1)
	}
	return Interval{low, high}
}

func TestWilsonPublished(t *testing.T) {
	for _, tc := range readJSON[struct {
		Source       string
		Successes, N int
		Low, High    float64
	}](t, "testdata/wilson.json") {
		got := Wilson(tc.Successes, tc.N, Z95)
		if math.Abs(got.Low-tc.Low) > 5e-5 || math.Abs(got.High-tc.High) > 5e-5 {
			t.Errorf("%d/%d (%s): got %v, want [%.4f, %.4f]", tc.Successes, tc.N, tc.Source, got, tc.Low, tc.High)
		}
	}
}

func TestWilsonAgainstBisection(t *testing.T) {
	for _, c := range []struct{ x, n int }{{0, 1}, {1, 1}, {3, 7}, {150, 300}, {299, 300}, {12, 400}, {57, 60}} {
		got, want := Wilson(c.x, c.n, Z95), wilsonByBisection(c.x, c.n, Z95)
		if math.Abs(got.Low-want.Low) > 1e-9 || math.Abs(got.High-want.High) > 1e-9 {
			t.Errorf("%d/%d: closed form %v, bisection %v", c.x, c.n, got, want)
		}
	}
	if got := Wilson(0, 0, Z95); got != (Interval{0, 1}) {
		t.Errorf("n=0: got %v, want [0, 1]", got)
	}
}

func TestMcNemarExactTable(t *testing.T) {
	for _, tc := range readJSON[struct {
		Source string
		B, C   int
		P      float64
	}](t, "testdata/mcnemar.json") {
		if got := McNemarExact(tc.B, tc.C); math.Abs(got-tc.P) > 1e-8 {
			t.Errorf("b=%d c=%d (%s): got %.10f, want %.10f", tc.B, tc.C, tc.Source, got, tc.P)
		}
	}
}

func TestMcNemarExactAgainstBinomialCDF(t *testing.T) {
	for _, c := range [][2]int{{0, 3}, {4, 11}, {30, 45}, {100, 70}, {250, 200}, {7, 7}} {
		n := c[0] + c[1]
		cdf := distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(min(c[0], c[1])))
		want := math.Min(1, 2*cdf)
		if got := McNemarExact(c[0], c[1]); math.Abs(got-want) > 1e-9 {
			t.Errorf("b=%d c=%d: got %.12f, gonum binomial CDF gives %.12f", c[0], c[1], got, want)
		}
	}
}

func TestHolm(t *testing.T) {
	tests := []struct {
		name string
		p    []float64
		want []float64
	}{
		// sorted 0.005·4=0.02, 0.01·3=0.03, 0.03·2=0.06, 0.04·1=0.04 → running max 0.06.
		{"hand computed", []float64{0.01, 0.04, 0.03, 0.005}, []float64{0.03, 0.06, 0.06, 0.02}},
		{"capped at 1", []float64{0.5, 0.6}, []float64{1, 1}},
		{"single is unchanged", []float64{0.2}, []float64{0.2}},
		{"empty", nil, []float64{}},
	}
	for _, tc := range tests {
		got := Holm(tc.p)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

func TestMcNemarSampleSize(t *testing.T) {
	// Connor (1987) by hand: ψ=0.2, δ=0.1, α=0.05, power 0.8:
	// (1.959964·√0.2 + 0.841621·√0.19)² / 0.01 = 154.6 → 155.
	tests := []struct {
		delta, psi, alpha, power float64
		want                     int
		wantErr                  bool
	}{
		{0.1, 0.2, 0.05, 0.8, 155, false},
		{0.05, 0.3, 0.05, 0.8, 940, false},  // 939.50 (computed in Python)
		{0.05, 0.01, 0.05, 0.8, 155, false}, // ψ raised to δ=0.05: 154.60
		{0, 0.2, 0.05, 0.8, 0, true},
		{0.1, 1.2, 0.05, 0.8, 0, true},
		{0.1, 0.2, 0, 0.8, 0, true},
		{0.1, 0.2, 0.05, 1, 0, true},
	}
	for _, tc := range tests {
		got, err := McNemarSampleSize(tc.delta, tc.psi, tc.alpha, tc.power)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%+v: err %v", tc, err)
		}
		if got != tc.want {
			t.Errorf("%+v: got %d, want %d", tc, got, tc.want)
		}
	}
}

func TestNearestRank(t *testing.T) {
	s := []float64{15, 20, 35, 40, 50} // Wikipedia "Percentile", nearest-rank example
	for p, want := range map[float64]float64{5: 15, 30: 20, 40: 20, 50: 35, 100: 50} {
		if got := NearestRank(s, p); got != want {
			t.Errorf("p%v: got %v, want %v", p, got, want)
		}
	}
	if got := Percentile([]float64{3, 1, 2}, 50); got != 2 {
		t.Errorf("Percentile unsorted: got %v, want 2", got)
	}
}
