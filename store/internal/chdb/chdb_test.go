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

// TestPrioLockOrder: a low-priority waiter starts only after every normal
// waiter queued before it has run, and gives up when its context ends.
func TestPrioLockOrder(t *testing.T) {
	var p prioLock
	p.Lock() // held: both waiters queue
	order := make(chan string, 2)
	lowDone := make(chan error, 1)
	go func() {
		err := p.lockLow(context.Background())
		if err == nil {
			order <- "low"
			p.Unlock()
		}
		lowDone <- err
	}()
	waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.changed != nil }) // the low waiter waits
	normalDone := make(chan struct{})
	go func() {
		p.Lock()
		order <- "normal"
		p.Unlock()
		close(normalDone)
	}()
	waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.waiting == 1 })
	p.Unlock()
	<-normalDone
	if err := <-lowDone; err != nil {
		t.Fatal(err)
	}
	if first, second := <-order, <-order; first != "normal" || second != "low" {
		t.Fatalf("order = %s, %s; want normal before low", first, second)
	}

	p.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if err := p.lockLow(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("lockLow with a cancelled context = %v; want context.Canceled", err)
	}
	p.Unlock()
	if err := p.lockLow(context.Background()); err != nil {
		t.Fatalf("lockLow on a free lock = %v", err)
	}
	p.Unlock()
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
