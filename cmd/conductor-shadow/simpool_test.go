package main

import (
	"net/http/httptest"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
)

// newSimulator is the simulated worker pool over the shipped regression sets,
// with no malformed plans and its latencies scaled by latencyScale (0:
// instant).
func newSimulator(t *testing.T, latencyScale float64) *simpool.Server {
	t.Helper()
	cfg := simpool.NewDefaultConfig()
	cfg.LatencyScale = latencyScale
	cfg.MalformedPlanProb = 0
	cfg.SetsDir = "../../regression-sets"
	sim, err := simpool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

// simulatedPool serves newSimulator on a loopback port until t ends.
func simulatedPool(t *testing.T, latencyScale float64) *httptest.Server {
	t.Helper()
	pool := httptest.NewServer(newSimulator(t, latencyScale))
	t.Cleanup(pool.Close)
	return pool
}
