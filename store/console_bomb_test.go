package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// multiIfBomb is an 8,000-branch multiIf: the engine's analyser spent 4.4 s
// on it, holding the engine.
func multiIfBomb() string {
	var b strings.Builder
	b.WriteString("SELECT sum(multiIf(")
	for i := range 8000 {
		fmt.Fprintf(&b, "number = %d, %d, ", i, i)
	}
	b.WriteString("0)) FROM numbers(10)")
	return b.String()
}

// singleCallBomb passes every console rule: one call of hasAll over two
// 200,000-element arrays of a column, which compares every pair (about
// 2·10^10 comparisons in a single function call; at 50,000 elements the
// engine noticed a 1 s max_execution_time only 1.8 s in). The worker's kill
// ends it at the time limit wherever the engine does not.
const singleCallBomb = "SELECT hasAll(a, arrayMap(x -> x + 1, a)) FROM (SELECT groupArray(number) AS a FROM numbers(200000))"

// consoleBombs are statements whose work an argument blows up, one or more
// per class: string distance on long strings, geo rings with big radii,
// huge multiIf and transform, deep lambdas, big range and repeat, cross
// joins. want is what the console's rules make of each: "refused" (the
// allow-list or the analysis limits refuse it before anything runs),
// "ended" (it runs in its worker and one of the engine's limits ends it) or
// "held" (it runs to the time limit: the worker is killed there, unless the
// engine's own timeout got to it first).
var consoleBombs = []struct {
	class, sql, want string
}{
	{"string distance on long strings", "SELECT max(editDistance(repeat('a', 65535), repeat(toString(number % 2), 65535))) FROM numbers(4)", "refused"},
	{"geo ring with a big radius", "SELECT length(h3kRing(644325524701193974, 10000))", "refused"},
	{"huge multiIf", multiIfBomb(), "refused"},
	{"huge transform", "SELECT sum(transform(number % 100000, range(100000), range(100000), 0)) FROM system.numbers", "refused"},
	{"deep lambdas over generated arrays", "SELECT arraySum(arrayMap(x -> arraySum(arrayMap(y -> arraySum(arrayMap(z -> x * y * z, range(1000))), range(1000))), range(1000)))", "refused"},
	{"deep lambdas over a column", "SELECT arrayCount(x -> has(a, x + 20000), a) FROM (SELECT groupArray(number) AS a FROM numbers(20000))", "ended"},
	{"one quadratic call over a column", singleCallBomb, "held"},
	{"big range", "SELECT count() FROM system.numbers WHERE length(range(number % 1000)) = 0", "refused"},
	{"big repeat", "SELECT count() FROM system.numbers WHERE length(repeat(toString(number), 1000)) = 0", "refused"},
	{"cross join", "SELECT count() FROM numbers(1000000) AS a, numbers(1000000) AS b", "ended"},
}

// auditLog keeps the store's log lines (the console's audit).
type auditLog struct {
	mu    sync.Mutex
	lines []string
}

func (a *auditLog) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, string(p))
	return len(p), nil
}

// has reports whether a line holds every one of parts.
func (a *auditLog) has(parts ...string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
lines:
	for _, l := range a.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue lines
			}
		}
		return true
	}
	return false
}

// bombRun is what happened while one bomb ran.
type bombRun struct {
	err        error
	ran        bool          // the statement reached its worker (its checks and run happen there)
	executed   bool          // the statement itself was handed to the worker's engine
	auditFirst bool          // the audit line was written before it ran
	page, tap  time.Duration // a /traces read and a tap accept made while it ran
	overtaken  bool          // both finished while the bomb was still running
}

// runBomb sends sql to the console of s and, once the statement is in its
// worker, makes a tap accept and a /traces page read, noting whether both
// finished while the statement was still running.
func runBomb(t *testing.T, s *sqlStore, audit *auditLog, sql string, n int) bombRun {
	t.Helper()
	var r bombRun
	started := make(chan struct{})
	s.onWorker = func() {
		r.auditFirst = audit.has("console query started", "caller=bomb-test")
		close(started)
	}
	s.onStatement = func() { r.executed = true }
	defer func() { s.onWorker, s.onStatement = nil, nil }()
	done := make(chan error, 1)
	go func() {
		_, err := s.Query(WithConsoleCaller(context.Background(), "bomb-test"), sql)
		done <- err
	}()
	select {
	case r.err = <-done:
		return r // failed before it reached a worker
	case <-started:
	}
	r.ran = true
	time.Sleep(100 * time.Millisecond) // well inside the worker's checks or run by now
	ctx := context.Background()
	begin := time.Now()
	if err := tapAccept(ctx, s, fmt.Sprintf("bomb-%d", n)); err != nil {
		t.Errorf("tap accept while a bomb runs: %v", err)
	}
	r.tap = time.Since(begin)
	begin = time.Now()
	if _, err := s.SearchTraces(ctx, TraceSearch{}); err != nil {
		t.Errorf("/traces read while a bomb runs: %v", err)
	}
	r.page = time.Since(begin)
	select {
	case r.err = <-done:
	default:
		r.overtaken = true
		r.err = <-done
	}
	return r
}

// bombStore is a store whose console has a 2 s time limit and an audit log.
func bombStore(t *testing.T) (*sqlStore, *auditLog) {
	s := openTestStore(t)
	audit := &auditLog{}
	s.log = slog.New(slog.NewTextHandler(audit, nil))
	s.queryLimits.timeout = 2 * time.Second
	return s, audit
}

// endedByLimit reports whether err is the end of a statement at one of the
// console's limits: the worker's kill or one of the engine's limit errors.
func endedByLimit(err error) bool {
	if errors.Is(err, ErrQueryKilled) {
		return true
	}
	for _, code := range []string{"TIMEOUT_EXCEEDED", "TOO_MANY_ROWS", "TOO_MANY_BYTES", "MEMORY_LIMIT_EXCEEDED", "TOO_BIG_AST", "TOO_DEEP_AST", "SET_SIZE_LIMIT_EXCEEDED"} {
		if err != nil && strings.Contains(err.Error(), code) {
			return true
		}
	}
	return false
}

// heldToLimit reports whether err says the statement ran to the time limit
// (the kill, or the engine's own timeout), so it held its worker all along.
func heldToLimit(err error) bool {
	return errors.Is(err, ErrQueryKilled) || err != nil && strings.Contains(err.Error(), "TIMEOUT_EXCEEDED")
}

// checkBombRun fails t unless the bomb reached its worker, ended at a limit,
// had its audit line written before anything of it ran and, when it held
// its worker to the time limit (in its checks or its run), was overtaken by
// the tap accept and the /traces read.
func checkBombRun(t *testing.T, r bombRun) {
	t.Helper()
	if !r.ran || !endedByLimit(r.err) {
		t.Fatalf("ran %v, %v; want it to run and end at a limit", r.ran, r.err)
	}
	if !r.auditFirst {
		t.Error("the statement ran before its audit line was written")
	}
	if heldToLimit(r.err) && !r.overtaken {
		t.Error("the bomb ended before a tap accept and a /traces read made while it ran had finished")
	}
}

// TestConsoleBombs: with the console's rules, each resource bomb is refused
// before it runs, or runs in its worker and is ended at a limit (the
// engine's, or the worker's kill for a single call the engine cannot
// interrupt); while one runs to the time limit, a tap accept and a /traces
// read both finish before it ends (they do not wait behind it), and its
// audit line was written before it ran.
func TestConsoleBombs(t *testing.T) {
	s, audit := bombStore(t)
	for i, b := range consoleBombs {
		t.Run(b.class, func(t *testing.T) {
			r := runBomb(t, s, audit, b.sql, i)
			t.Logf("%s: ran %v, %v; tap accept %v, /traces %v meanwhile", b.class, r.ran, r.err, r.tap.Round(time.Millisecond), r.page.Round(time.Millisecond))
			if !audit.has("console query started", "caller=bomb-test") || !audit.has("msg=\"console query\"", "caller=bomb-test") {
				t.Error("no audit line before and after the statement")
			}
			switch b.want {
			case "refused":
				if r.executed || !errors.Is(r.err, ErrReadOnly) {
					t.Fatalf("ran %v, %v; want ErrReadOnly before it runs", r.executed, r.err)
				}
			case "held":
				if !heldToLimit(r.err) {
					t.Fatalf("%v; want it ended at the time limit", r.err)
				}
				checkBombRun(t, r)
			default:
				checkBombRun(t, r)
			}
		})
	}
}

// TestConsoleBombsUnchecked shows that the worker holds by itself, whatever
// the allow-list misses: with the function allow-list and the analysis
// limits off, every bomb the rules refuse runs in its worker and is ended at
// a limit (the worker's kill at the time limit for those the engine cannot
// interrupt), and a tap accept and a /traces read made while one runs to the
// limit finish before it ends. (The bombs the rules let through ran so in
// TestConsoleBombs already.)
func TestConsoleBombsUnchecked(t *testing.T) {
	s, audit := bombStore(t)
	s.console.unchecked, s.queryLimits.unbounded = true, true
	for i, b := range consoleBombs {
		if b.want != "refused" {
			continue
		}
		t.Run(b.class, func(t *testing.T) {
			begin := time.Now()
			r := runBomb(t, s, audit, b.sql, i)
			t.Logf("%s: ran %v, %v after %v; tap accept %v, /traces %v meanwhile", b.class, r.ran, r.err, time.Since(begin).Round(time.Millisecond), r.tap.Round(time.Millisecond), r.page.Round(time.Millisecond))
			checkBombRun(t, r)
		})
	}
}
