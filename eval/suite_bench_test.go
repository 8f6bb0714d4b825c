package eval_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// BenchmarkSuite300 runs a 300-case suite (gsm8k-150, mmlu-100 and
// math500-60 from regression-sets/, first 300 cases; no code execution),
// incumbent single:<default worker> and the conductor candidate, against the
// simulated pool with LatencyScale 0 over httptest, into a fresh database of
// the embedded engine (opened outside the timer), including the report's
// statistics and verdict. Figures: ns/op is the wall time of one suite;
// peak-heap-MB the highest sampled live Go heap (the engine's own memory is
// not Go heap and is not counted).
//
//	go test -run xxx -bench Suite300 -benchtime 3x ./eval/
func BenchmarkSuite300(b *testing.B) {
	dir := filepath.Join("..", "regression-sets")
	var set eval.Set
	set.Name, set.Version = "bench-300", "bench"
	for _, name := range []string{"gsm8k-150", "mmlu-100", "math500-60"} {
		s, err := eval.LoadSet(filepath.Join(dir, name+".jsonl"))
		if err != nil {
			b.Skipf("regression set not available: %v", err)
		}
		set.Cases = append(set.Cases, s.Cases...)
	}
	set.Cases = set.Cases[:300]
	cases, err := simpool.LoadSets(dir)
	if err != nil {
		b.Fatal(err)
	}
	scfg := simpool.NewDefaultConfig()
	scfg.LatencyScale = 0
	scfg.Cases = cases
	sim, err := simpool.New(scfg)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := shadow.NewDefaultConfig()
	for i := range cfg.Workers {
		cfg.Workers[i].BaseURL = srv.URL + "/v1"
	}
	pool, err := shadow.NewPool(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	inc, err := shadow.NewSingle(pool, cfg.Workers[0].Name)
	if err != nil {
		b.Fatal(err)
	}
	cond, err := shadow.NewConductor(pool, cfg.Conductor)
	if err != nil {
		b.Fatal(err)
	}

	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				mu.Lock()
				peak = max(peak, ms.HeapAlloc)
				mu.Unlock()
			}
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		st := eval.OpenTestStore(b) // migrations are not the suite's time
		b.StartTimer()
		rep, err := eval.RunSuite(context.Background(), eval.SuiteStoresOf(store.NewRoles(st)), &set, inc, []shadow.Pipeline{cond}, eval.SuiteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Cases != 300 || rep.Verdict == "" {
			b.Fatalf("cases %d verdict %q", rep.Cases, rep.Verdict)
		}
	}
	b.StopTimer()
	close(stop)
	<-done
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
