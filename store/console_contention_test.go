package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// longConsoleQuery passes every console rule and would scan without end.
const longConsoleQuery = "SELECT count() FROM system.numbers WHERE sipHash64(number) % 7 = 3"

// loopConsole runs longConsoleQuery on s until stop is closed and returns
// how many runs ended and with what errors.
func loopConsole(s *sqlStore, stop <-chan struct{}) (wait func() (int, []error)) {
	var (
		wg   sync.WaitGroup
		n    int
		errs []error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := s.Query(context.Background(), longConsoleQuery)
			n++
			errs = append(errs, err)
		}
	}()
	return func() (int, []error) { wg.Wait(); return n, errs }
}

// tapAccept makes the store calls one store-first tap accept makes
// (ingest.StoreQueue.commit): the dedup lookup, the pending work, then the
// request row.
func tapAccept(ctx context.Context, s *sqlStore, id string) error {
	now := time.Now().UTC()
	if _, err := s.StoredRequests(ctx, []string{id}); err != nil {
		return err
	}
	if err := s.InsertWork(ctx, []Work{{RequestID: id, Pipeline: "cand", PipelineVersion: "v1", Status: WorkPending, ReceivedAt: now}}); err != nil {
		return err
	}
	return s.InsertRequests(ctx, []Request{{RequestID: id, ReceivedAt: now, Source: SourceTap, App: "bench", Input: `[{"role":"user","content":"hi"}]`}})
}

// TestTapWritesWhileConsoleQueryRuns: while console queries that would scan
// without end run back to back, every tap write and page read made within
// the tap's default accept_timeout (2 s) succeeds, and each console query
// ends with the engine's limit error.
func TestTapWritesWhileConsoleQueryRuns(t *testing.T) {
	s := openTestStore(t)
	stop := make(chan struct{})
	wait := loopConsole(s, stop)
	time.Sleep(100 * time.Millisecond) // let the first console query start
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := tapAccept(ctx, s, fmt.Sprintf("r%d", i))
		if err == nil {
			_, err = s.ListTraces(ctx, TraceFilter{})
		}
		cancel()
		if err != nil {
			close(stop)
			wait()
			t.Fatalf("write %d while a console query runs: %v", i, err)
		}
	}
	close(stop)
	n, errs := wait()
	if n == 0 {
		t.Fatal("no console query ran")
	}
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "TIMEOUT_EXCEEDED") && !strings.Contains(err.Error(), "TOO_MANY_ROWS") && !strings.Contains(err.Error(), "TOO_MANY_BYTES") {
			t.Errorf("console query %q: %v; want the engine's limit error", longConsoleQuery, err)
		}
	}
}

// BenchmarkConsoleContention prints what a long console query costs the
// tap and the pages on the embedded engine: the p95 of one tap accept's
// store calls (tap_p95_ms) and of the /traces page's read (traces_p95_ms)
// while longConsoleQuery runs back to back, with one accept and one page read
// every 100 ms plus their own time (a steady trickle of traffic, so the
// console gets its turns between them). "shared" is the console on the
// store's own engine calls with the server's 10 s bound (as before the
// embedded bound); "bounded" is the store as opened (low-priority console
// view, embedded_console_timeout). Run:
//
//	go test -run XXX -bench ConsoleContention -benchtime 20x ./store/
func BenchmarkConsoleContention(b *testing.B) {
	for _, mode := range []string{"shared", "bounded"} {
		b.Run(mode, func(b *testing.B) {
			s := openTestStore(b)
			if mode == "shared" {
				lim := s.queryLimits
				lim.timeout, lim.maxRowsRead, lim.maxBytesRead = 10*time.Second, 1_000_000_000, 0
				s = &sqlStore{t: s.t, db: s.db, dbName: s.dbName, queryLimits: lim, console: newConsoleGuard(s.dbName, 1)}
			}
			stop := make(chan struct{})
			wait := loopConsole(s, stop)
			time.Sleep(100 * time.Millisecond)
			var tap, traces []time.Duration
			i := 0
			for b.Loop() {
				time.Sleep(100 * time.Millisecond)
				start := time.Now()
				if err := tapAccept(context.Background(), s, fmt.Sprintf("b%d", i)); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if _, err := s.ListTraces(context.Background(), TraceFilter{}); err != nil {
					b.Fatal(err)
				}
				tap, traces = append(tap, mid.Sub(start)), append(traces, time.Since(mid))
				i++
			}
			close(stop)
			n, _ := wait()
			ms := func(d []time.Duration, p float64) float64 {
				sorted := append([]time.Duration(nil), d...)
				slices.Sort(sorted)
				return float64(percentile.Durations(sorted, p)) / float64(time.Millisecond)
			}
			b.ReportMetric(ms(tap, 95), "tap_p95_ms")
			b.ReportMetric(ms(tap, 50), "tap_p50_ms")
			b.ReportMetric(ms(traces, 95), "traces_p95_ms")
			b.ReportMetric(float64(n), "console_queries")
		})
	}
}
