package main

import "testing"

func TestNearestRank(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	tests := []struct {
		p    float64
		want float64
	}{{0.5, 10}, {0.95, 19}, {1, 20}, {0.01, 1}}
	for _, tt := range tests {
		if got := nearestRank(xs, tt.p); got != tt.want {
			t.Errorf("nearestRank(1..20, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if nearestRank(nil, 0.5) != 0 {
		t.Error("no values must give 0")
	}
}
