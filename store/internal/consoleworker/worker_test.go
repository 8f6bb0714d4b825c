package consoleworker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
)

// start starts a worker on a fresh folder, or skips without libchdb.so.
func start(t *testing.T) *Worker {
	t.Helper()
	lib, err := chdb.FindLibrary()
	if err != nil {
		t.Skipf("embedded engine unavailable: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "engine")
	w, err := Start(context.Background(), Options{Dir: dir, Library: lib, Database: "shadow",
		Session: []string{"SET max_query_size = 1000"}, Nice: 19})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Kill() })
	return w
}

// TestWorkerRunsStatements: the worker answers statements in its own
// engine, with its session settings, at niceness 19, in an environment that
// holds none of the parent's variables.
func TestWorkerRunsStatements(t *testing.T) {
	t.Setenv("CONDUCTOR_SHADOW_API_TOKEN", "parent-secret-4711")
	w := start(t)
	ctx := context.Background()
	out, err := w.Query(ctx, []string{"USE shadow"}, "SELECT currentDatabase(), getSetting('max_query_size')", "TabSeparated")
	if err != nil || string(out) != "shadow\t1000\n" {
		t.Fatalf("Query = %q, %v; want the worker's database and session setting", out, err)
	}
	if _, err := w.Query(ctx, nil, "SELECT '"+strings.Repeat("x", 2000)+"'", "TabSeparated"); err == nil || !strings.Contains(err.Error(), "Max query size exceeded") {
		t.Fatalf("a statement over the session's max_query_size: %v; want the engine's refusal", err)
	}
	a, err := w.Classify(ctx, "SELECT 1; DROP TABLE x")
	if err != nil || a.Statements != 2 && !a.NoClassifier {
		t.Fatalf("Classify = %+v, %v; want 2 statements", a, err)
	}
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, w.PID())
	if err != nil {
		t.Fatal(err)
	}
	if nice := 20 - prio; nice != 19 { // the raw syscall returns 20 - nice
		t.Errorf("the worker's niceness = %d; want 19", nice)
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(w.PID()) + "/environ")
	if err == nil && strings.Contains(string(env), "parent-secret-4711") {
		t.Error("the worker's environment holds the parent's secret")
	}
}

// TestWorkerKilledAtDeadline: a statement the engine cannot interrupt (one
// call of a string distance over long strings) ends with the worker when
// the caller's context ends; the worker's folder is gone afterwards.
func TestWorkerKilledAtDeadline(t *testing.T) {
	w := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := w.Query(ctx, nil, "SELECT max(editDistance(repeat('a', 65535), repeat(toString(number % 2), 65535))) FROM numbers(4)", "TabSeparated")
	took := time.Since(begin)
	if !errors.Is(err, ErrKilled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Query past its deadline: %v; want ErrKilled", err)
	}
	if took > 2*time.Second {
		t.Errorf("the call returned %v after its start; want soon after its 300ms deadline", took)
	}
	if w.Alive() {
		t.Error("the worker still runs")
	}
	if _, err := os.Stat(w.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worker's folder is still there: %v", err)
	}
	if _, err := w.Query(context.Background(), nil, "SELECT 1", "TabSeparated"); err == nil {
		t.Error("a killed worker answered")
	}
}

// TestWorkerAttachesFrozenParts: parts moved in from a folder are read, a
// second statement of the same table keeps it, and Detach deletes them.
func TestWorkerAttachesFrozenParts(t *testing.T) {
	w := start(t)
	ctx := context.Background()
	create := "CREATE TABLE shadow.t (x UInt64) ENGINE = MergeTree ORDER BY x"
	if err := w.Attach(ctx, []Table{{Name: "t", Create: create}}); err != nil {
		t.Fatal(err)
	}
	// Make parts in the worker itself, then detach them into a folder as a
	// freeze would leave them.
	if _, err := w.Query(ctx, nil, "INSERT INTO shadow.t SELECT number FROM numbers(10)", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Query(ctx, nil, "ALTER TABLE shadow.t DETACH PARTITION ALL", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	data, err := w.Query(ctx, nil, "SELECT data_paths[1] FROM system.tables WHERE database = 'shadow' AND name = 't'", "TabSeparatedRaw")
	if err != nil {
		t.Fatal(err)
	}
	frozen := filepath.Join(t.TempDir(), "frozen")
	if err := os.Rename(filepath.Join(strings.TrimSpace(string(data)), "detached"), frozen); err != nil {
		t.Fatal(err)
	}
	if err := w.Attach(ctx, []Table{{Name: "t", Create: create, Parts: frozen}}); err != nil {
		t.Fatal(err)
	}
	if out, err := w.Query(ctx, nil, "SELECT count() FROM shadow.t", "TabSeparated"); err != nil || string(out) != "10\n" {
		t.Fatalf("count after attach = %q, %v; want 10", out, err)
	}
	if left, _ := os.ReadDir(frozen); len(left) != 0 {
		t.Errorf("the frozen folder still holds %d entries", len(left))
	}
	if err := w.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := w.Query(ctx, nil, "SELECT count() FROM shadow.t", "TabSeparated"); err != nil || string(out) != "0\n" {
		t.Fatalf("count after detach = %q, %v; want 0", out, err)
	}
	if out, err := w.Query(ctx, nil, "SELECT count() FROM system.detached_parts WHERE database = 'shadow'", "TabSeparated"); err != nil || string(out) != "0\n" {
		t.Fatalf("detached parts after Detach = %q, %v; want none kept", out, err)
	}
}
