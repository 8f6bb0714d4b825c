package stats

import "testing"

// BenchmarkCompare300 measures one 300-case comparison with the default 2000
// bootstrap resamples and two segments.
func BenchmarkCompare300(b *testing.B) {
	inc, cand := pairs(200, 40, 10, 50, 0.5)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare(inc, cand, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
