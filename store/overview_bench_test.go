package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// timedTransport records every read statement's wall and CPU time, by the order in
// which its caller issued it, so a benchmark can say which statement of a
// method dominates.
type timedTransport struct {
	transport
	mu    sync.Mutex
	label string               // the method being measured
	seq   int                  // statements issued by it so far
	took  map[string][]float64 // "label #n: first words" → wall ms
	cpu   map[string][]float64 // the same statements' process CPU ms (the engine runs in process)
	order []string
}

func (t *timedTransport) start(label string) {
	t.mu.Lock()
	t.label, t.seq = label, 0
	t.mu.Unlock()
}

func (t *timedTransport) queryJSON(ctx context.Context, sql string, params Params) ([][]byte, error) {
	start, cpu := time.Now(), processCPUMs()
	rows, err := t.transport.(jsonQuerier).queryJSON(ctx, sql, params)
	ms, cpu := float64(time.Since(start).Microseconds())/1000, processCPUMs()-cpu
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	head := strings.Join(strings.Fields(sql), " ")
	if len(head) > 70 {
		head = head[:70]
	}
	key := fmt.Sprintf("%s #%d: %s", t.label, t.seq, head)
	if _, ok := t.took[key]; !ok {
		t.order = append(t.order, key)
	}
	t.took[key] = append(t.took[key], ms)
	t.cpu[key] = append(t.cpu[key], cpu)
	return rows, err
}

// BenchmarkOverviewStatements generates OVERVIEW_BENCH_REQUESTS requests
// (default 500,000: 1M runs, 5M steps, as `loadtest generate`) over 7 days
// once and reads the newest day's overview of them (Overview, OverviewCharts,
// as the overview page asks) b.N times, then prints each statement's p50 and
// p95 wall time and p50 process CPU time (ms, nearest rank; the embedded
// engine runs in this process, so CPU time is what the statement cost even
// on a busy machine) in the order the methods issue them, and reports the
// summed CPU p50 as cpu-ms/read.
//
//	go test ./store -run '^$' -bench OverviewStatements -benchtime 20x
func BenchmarkOverviewStatements(b *testing.B) {
	n := 500_000
	if v := os.Getenv("OVERVIEW_BENCH_REQUESTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("OVERVIEW_BENCH_REQUESTS=%q: %v", v, err)
		}
	}
	s := openTestStore(b)
	ctx := context.Background()
	to := time.Now().UTC().Truncate(time.Minute)
	if _, err := Generate(ctx, s, GenerateSpec{Requests: n, From: to.Add(-7 * 24 * time.Hour), To: to}); err != nil {
		b.Fatal(err)
	}
	tt := &timedTransport{transport: s.t, took: map[string][]float64{}, cpu: map[string][]float64{}}
	s.t = tt
	q := OverviewQuery{From: to.Add(-24 * time.Hour), To: to, BucketSeconds: 3600, Generated: true}
	read := func() {
		tt.start("Overview")
		if _, err := s.Overview(ctx, q); err != nil {
			b.Fatal(err)
		}
		tt.start("OverviewCharts")
		if _, err := s.OverviewCharts(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("24h", func(b *testing.B) {
		read() // warm caches
		tt.took, tt.cpu, tt.order = map[string][]float64{}, map[string][]float64{}, nil
		b.ResetTimer()
		for range b.N {
			read()
		}
		b.StopTimer()
		var sum float64
		for _, k := range tt.order {
			ms, cpu := tt.took[k], tt.cpu[k]
			slices.Sort(ms)
			slices.Sort(cpu)
			sum += percentile.NearestRank(cpu, 50)
			b.Logf("wall p50 %7.1f p95 %7.1f ms, CPU p50 %7.1f ms  %s", percentile.NearestRank(ms, 50), percentile.NearestRank(ms, 95),
				percentile.NearestRank(cpu, 50), k)
		}
		b.ReportMetric(sum, "cpu-ms/read")
	})
}

// processCPUMs is the process's user + system CPU time so far, ms.
func processCPUMs() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}
