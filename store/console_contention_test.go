package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// longConsoleQuery passes every console rule and would scan without end.
const longConsoleQuery = "SELECT count() FROM system.numbers WHERE sipHash64(number) % 7 = 3"

// benchBomb is singleCallBomb at a size the store's own engine gets through
// in a few seconds: one hasAll call over 120,000 elements, which the engine
// does not reliably interrupt.
const benchBomb = "SELECT hasAll(a, arrayMap(x -> x + 1, a)) FROM (SELECT groupArray(number) AS a FROM numbers(120000))"

// onEngine runs a console statement the way the console ran before it had
// workers: checked and run on the store's own engine, bounded by the
// engine's max_execution_time only.
func onEngine(ctx context.Context, s *sqlStore, sql string) (QueryResult, error) {
	stmt, err := s.console.prepare(ctx, s.t, sql, s.queryLimits)
	if err != nil {
		return QueryResult{}, err
	}
	return s.t.queryText(ctx, stmt)
}

// loopConsole runs longConsoleQuery on s until stop is closed and returns
// how many runs ended and with what errors.
func loopConsole(s *sqlStore, stop <-chan struct{}) (wait func() (int, []error)) {
	return loopStatement(stop, func() error { _, err := s.Query(context.Background(), longConsoleQuery); return err })
}

// loopStatement calls run until stop is closed and returns how many calls
// ended and with what errors.
func loopStatement(stop <-chan struct{}, run func() error) (wait func() (int, []error)) {
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
			err := run()
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
			_, err = s.SearchTraces(ctx, TraceSearch{})
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
		if !endedByLimit(err) {
			t.Errorf("console query %q: %v; want the engine's limit error", longConsoleQuery, err)
		}
	}
}

// BenchmarkConsoleContention prints what a console statement that holds its
// engine costs the tap and the pages on the embedded engine: the p95 of one
// tap accept's store calls (tap_p95_ms) and of the /traces page's read
// (traces_p95_ms) while the statement runs back to back, with one accept and
// one page read every 100 ms plus their own time. Statements: "scan"
// (longConsoleQuery, which the engine interrupts at its time limit) and
// "single-call" (benchBomb, one hasAll call the engine does not reliably
// interrupt; it passes every console rule). "none" runs no statement (the machine's own
// figures). Modes, with a 1 s time limit: "engine" runs
// the statement on the store's own engine, as the console did before it had
// workers (bounded by max_execution_time only); "worker" as the store runs
// it (a console worker over a snapshot, killed at the limit). Run:
//
//	go test -run XXX -bench ConsoleContention -benchtime 20x ./store/
func BenchmarkConsoleContention(b *testing.B) {
	b.Run("none", func(b *testing.B) { // no console statement: the machine's own figures
		benchContention(b, openTestStore(b), nil)
	})
	for _, stmt := range []struct{ name, sql string }{{"scan", longConsoleQuery}, {"single-call", benchBomb}} {
		for _, mode := range []string{"engine", "worker"} {
			b.Run(stmt.name+"/"+mode, func(b *testing.B) {
				s := openTestStore(b)
				s.queryLimits.timeout = time.Second
				run := func() error { _, err := s.Query(context.Background(), stmt.sql); return err }
				if mode == "engine" {
					run = func() error { _, err := onEngine(context.Background(), s, stmt.sql); return err }
				}
				benchContention(b, s, run)
			})
		}
	}
}

// benchContention makes one tap accept and one /traces read every 100 ms
// while run (when not nil) repeats, and reports their p50/p95 (ms) and how
// many statements ran.
func benchContention(b *testing.B, s *sqlStore, run func() error) {
	stop := make(chan struct{})
	wait := func() (int, []error) { return 0, nil }
	if run != nil {
		wait = loopStatement(stop, run)
		time.Sleep(100 * time.Millisecond)
	}
	var tap, traces []time.Duration
	i := 0
	for b.Loop() {
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		if err := tapAccept(context.Background(), s, fmt.Sprintf("b%d", i)); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := s.SearchTraces(context.Background(), TraceSearch{}); err != nil {
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
	b.ReportMetric(float64(n), "console_statements")
}

// TestStalledNamesTheStatement: while one statement stays inside the engine
// past stalled_after, the store says it is stalled and names the statement;
// once it ended, it is not.
func TestStalledNamesTheStatement(t *testing.T) {
	s := openTestStore(t)
	s.stallAfter = 200 * time.Millisecond
	if err := s.Stalled(); err != nil {
		t.Fatalf("an idle engine: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.t.queryText(context.Background(), "SELECT sleep(1.5)")
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := s.Stalled()
		if errors.Is(err, ErrStalled) {
			if !strings.Contains(err.Error(), `"SELECT sleep(1.5)" has been inside the engine`) {
				t.Errorf("Stalled = %v; want it to name the statement", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the store never said it was stalled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Stalled(); err != nil {
		t.Fatalf("after the statement ended: %v", err)
	}
}

// TestConsoleSnapshotLeavesNothing: once a console statement answered, no
// frozen part of its snapshot is left on disk (neither in the engine's
// shadow folder nor in the worker, which is kept for the next statement),
// and the answer says when the snapshot was taken; leftovers of another
// process are removed at Open, a live statement's are not.
func TestConsoleSnapshotLeavesNothing(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	if err := tapAccept(ctx, s, "snap-1"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UTC()
	res, err := s.Query(ctx, "SELECT count() FROM requests FINAL")
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "1" {
		t.Fatalf("count = %+v, %v; want the row written before", res, err)
	}
	if res.SnapshotAt.Before(before.Add(-time.Second)) || res.SnapshotAt.After(time.Now()) {
		t.Errorf("SnapshotAt = %v; want the statement's own time", res.SnapshotAt)
	}
	e := s.t.(*embedded)
	parts := func() []string {
		var found []string
		for _, dir := range []string{filepath.Join(e.ref.Path(), "shadow"), e.consoleDir()} {
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && d.Name() == "checksums.txt" && strings.Contains(p, "console_") {
					found = append(found, p)
				}
				return nil
			})
		}
		return found
	}
	if left := parts(); len(left) != 0 {
		t.Errorf("frozen parts left after the answer: %q", left)
	}
	// A row written after the snapshot is in the next statement's.
	if err := tapAccept(ctx, s, "snap-2"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Query(ctx, "SELECT count() FROM requests FINAL"); err != nil || res.Rows[0][0] != "2" {
		t.Fatalf("count after a second write = %+v, %v; want 2", res, err)
	}

	// Leftovers: another (ended) process's, and this process's own.
	foreign := []string{filepath.Join(e.consoleDir(), "console_1_dead"), filepath.Join(e.ref.Path(), "shadow", "console_1_dead")}
	own := filepath.Join(e.ref.Path(), "shadow", fmt.Sprintf("console_%d_live", os.Getpid()))
	for _, d := range append(foreign, own) {
		if err := os.MkdirAll(filepath.Join(d, "all_1_1_0"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(own) })
	openTestStore(t)
	for _, d := range foreign {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s of an ended process is still there after Open", d)
		}
	}
	if _, err := os.Stat(own); err != nil {
		t.Errorf("Open removed a snapshot of this process: %v", err)
	}
}
