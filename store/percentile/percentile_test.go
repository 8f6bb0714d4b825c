package percentile

import (
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
