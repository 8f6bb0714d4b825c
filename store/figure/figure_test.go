package figure

import "testing"

func TestDefinitions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"accuracy", Accuracy(3, 4), 0.75},
		{"accuracy of nothing graded", Accuracy(0, 0), 0},
		{"cost per request", CostPerRequest(0.9, 3), 0.3},
		{"cost per request of no requests", CostPerRequest(1, 0), 0},
		// Unknown latencies (0) are left out: p50 of {0,0,0,10,20} is 10, not 0.
		{"p50 without unknowns", Latency([]float64{0, 20, 0, 10, 0}, 50), 10},
		{"p95 nearest rank", Latency([]float64{15, 20, 35, 40, 50}, 95), 50},
		{"p30 nearest rank", Latency([]float64{50, 40, 35, 20, 15}, 30), 20},
		{"no known latency", Latency([]float64{0, 0}, 95), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if got, want := LatencySQL("latency_ms", 95), "arrayElement(arraySort(groupArrayIf(latency_ms, latency_ms > 0)), toUInt64(greatest(1, ceil(0.95 * countIf(latency_ms > 0)))))"; got != want {
		t.Errorf("LatencySQL = %s", got)
	}
}
