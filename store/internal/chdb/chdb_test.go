package chdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libchdb.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope", "libchdb.so")
	tests := []struct {
		name     string
		env      string
		defaults []string
		want     string // "" means ErrLibraryMissing
	}{
		{"env wins", lib, []string{missing}, lib},
		{"env missing falls back", missing, []string{lib}, lib},
		{"default", "", []string{missing, lib}, lib},
		{"directory is not a library", "", []string{dir}, ""},
		{"none", missing, []string{missing}, ""},
	}
	for _, tc := range tests {
		got, err := findLibrary(tc.env, tc.defaults)
		if tc.want == "" {
			if !errors.Is(err, ErrLibraryMissing) || !strings.Contains(err.Error(), missing) && tc.name == "none" {
				t.Errorf("%s: err = %v; want ErrLibraryMissing naming the paths", tc.name, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestEngineLock: a caller waits for a held engine until its context ends,
// the waiter and the call in flight are visible meanwhile, and the next
// caller gets the engine once it is free.
func TestEngineLock(t *testing.T) {
	l := newEngineLock()
	if err := l.lock(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- l.lock(ctx, "INSERT") }()
	waitFor(t, func() bool { _, n, _ := l.state(); return n == 1 })
	call, n, since := l.state()
	if call.Label != "SELECT 1" || call.Since.IsZero() || n != 1 || since.IsZero() {
		t.Fatalf("state = %+v, %d waiting since %v; want SELECT 1 in flight and one waiter", call, n, since)
	}
	if err := <-waited; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock of a held engine = %v; want the caller's deadline", err)
	}
	if _, n, _ := l.state(); n != 0 {
		t.Fatalf("%d waiters after the deadline; want 0", n)
	}
	l.unlock()
	if err := l.lock(context.Background(), "SELECT 2"); err != nil {
		t.Fatalf("lock of a free engine: %v", err)
	}
	l.unlock()
	if call, _, _ := l.state(); !call.Since.IsZero() {
		t.Fatalf("a call in flight after unlock: %+v", call)
	}
}

// TestLabel: a call's label keeps the statement's first words and no value.
func TestLabel(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		{"SELECT\n    request_id\nFROM `db`.requests", "SELECT request_id FROM `db`.requests"},
		{"INSERT INTO `db`.`runs` (`run_id`) FORMAT JSONEachRow\n{\"run_id\":\"secret\"}", "INSERT INTO `db`.`runs` (`run_id`) FORMAT JSONEachRow"},
		{"SET param_id = 'subject@example.com'", "SET param_id ="},
		{strings.Repeat("x", 100), strings.Repeat("x", 80) + "…"},
	} {
		if got := label(tc.sql); got != tc.want {
			t.Errorf("label(%q) = %q; want %q", tc.sql, got, tc.want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
