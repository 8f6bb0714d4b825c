package percentile

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestNearestRank(t *testing.T) {
	s := []float64{15, 20, 35, 40, 50} // Wikipedia "Percentile", nearest-rank example
	for _, tc := range []struct {
		p    float64
		want float64
	}{{5, 15}, {30, 20}, {40, 20}, {50, 35}, {95, 50}, {100, 50}} {
		if got := NearestRank(s, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if NearestRank(nil, 95) != 0 || Durations(nil, 95) != 0 {
		t.Error("empty: want 0")
	}
	// p·n whole: rank 95 of 100 is the 95th value, not the 96th.
	var h []float64
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		h = append(h, float64(i))
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if NearestRank(h, 95) != 95 || Durations(d, 95) != 95*time.Millisecond || Of([]float64{3, 1, 2}, 50) != 2 {
		t.Errorf("p95 of 1..100 = %v / %v", NearestRank(h, 95), Durations(d, 95))
	}
}

// TestNearestRanksAsSorted: selection gives the percentiles NearestRank gives
// on the sorted values, for every order, size and tie pattern drawn, and
// leaves values a permutation of what it was.
func TestNearestRanksAsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ps := []float64{50, 95, 99, 0.1, 100, 95, 2.5, 97.5}
	shapes := []struct {
		name string
		gen  func(n int) []float64
	}{
		{"uniform", func(n int) []float64 { return draw(n, func(int) float64 { return rng.Float64() * 1000 }) }},
		{"few values", func(n int) []float64 { return draw(n, func(int) float64 { return float64(rng.IntN(4)) }) }},
		{"all equal", func(n int) []float64 { return draw(n, func(int) float64 { return 42 }) }},
		{"ascending", func(n int) []float64 { return draw(n, func(i int) float64 { return float64(i) }) }},
		{"descending", func(n int) []float64 { return draw(n, func(i int) float64 { return float64(n - i) }) }},
		{"organ pipe", func(n int) []float64 { return draw(n, func(i int) float64 { return float64(min(i, n-i)) }) }},
		{"heavy tail", func(n int) []float64 { return draw(n, func(int) float64 { return math.Exp(4 * rng.NormFloat64()) }) }},
	}
	for _, sh := range shapes {
		for _, n := range []int{0, 1, 2, 3, 12, 13, 14, 31, 100, 999, 1000, 4096} {
			for range 4 {
				values := sh.gen(n)
				sorted := slices.Clone(values)
				slices.Sort(sorted)
				p := append(slices.Clone(ps), 100*rng.Float64()+1e-9)
				got := NearestRanks(values, p...)
				for i, pi := range p {
					if want := NearestRank(sorted, pi); got[i] != want {
						t.Fatalf("%s n=%d p%v: %v, want %v", sh.name, n, pi, got[i], want)
					}
				}
				slices.Sort(values)
				if !slices.Equal(values, sorted) {
					t.Fatalf("%s n=%d: values are no longer a permutation of the input", sh.name, n)
				}
			}
		}
	}
}

func draw(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// BenchmarkNearestRanks: p50, p95 and p99 of 3,000 latencies by selection
// against sorting them once (what figure.Latencies did).
func BenchmarkNearestRanks(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := draw(3000, func(int) float64 { return math.Exp(rng.NormFloat64()) * 800 })
	buf := make([]float64, len(src))
	b.Run("select", func(b *testing.B) {
		for b.Loop() {
			copy(buf, src)
			NearestRanks(buf, 50, 95, 99)
		}
	})
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			copy(buf, src)
			slices.Sort(buf)
			_, _, _ = NearestRank(buf, 50), NearestRank(buf, 95), NearestRank(buf, 99)
		}
	})
}
