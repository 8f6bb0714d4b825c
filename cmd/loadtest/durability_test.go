package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// Accepted means kept, as real OS processes: the server is killed with SIGKILL
// mid-stream (the embedded engine allows one process per data folder, so a crash
// can only be a real one), restarted, stopped with SIGTERM while its shadow
// workers are busy, restarted again. Every copy answered 202 ends with its
// incumbent run and exactly one finished candidate run, no run is stored as an
// error because of the stop, and copies sent again are answered "duplicate".
func TestDurabilityAcrossKillAndStop(t *testing.T) {
	storetest.RequireEngine(t)
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := commandBinaries(t)
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := runDurability(ctx, durabilityOptions{
		Copies: 60, Rate: 60, LatencyScale: 0.02, Drain: 2 * time.Second, Wait: 2 * time.Minute,
		Server: filepath.Join(bin, "conductor-shadow"), Dir: t.TempDir(), Sets: "../../regression-sets",
	}, &log)
	var out bytes.Buffer
	printDurability(&out, rep)
	t.Log("\n" + log.String() + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lives != 3 || rep.Accepted < 10 { // a sixth of the copies: posts are refused (503) while a life drains or starts, more so on a busy machine
		t.Fatalf("%d lives, %d accepted; the scenario did not run through", rep.Lives, rep.Accepted)
	}
	if rep.WithoutRuns != 0 {
		t.Errorf("%d accepted copies without their runs: %v", rep.WithoutRuns, rep.Missing)
	}
	if rep.ErrorsFromStop != 0 || rep.CancelledLeft != 0 {
		t.Errorf("%d runs stored as errors because of a stop, %d left cancelled; want 0", rep.ErrorsFromStop, rep.CancelledLeft)
	}
	if rep.DuplicateRuns != 0 {
		t.Errorf("%d candidate runs stored twice; want exactly once", rep.DuplicateRuns)
	}
	if rep.Duplicates == 0 {
		t.Error("copies sent again were never answered duplicate")
	}
}

// commandBinaries builds conductor-shadow and simllm (one go build, compiled
// side by side, each named after its folder) into a folder of the user's
// cache and returns it. go build links a binary again only when its build ID
// changed, so a run after an unchanged one links nothing (about 7 s of CPU
// otherwise). Set CONDUCTOR_SHADOW_TEST_BIN to build elsewhere.
func commandBinaries(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("CONDUCTOR_SHADOW_TEST_BIN")
	if bin == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("a folder for the test binaries: %v (set CONDUCTOR_SHADOW_TEST_BIN)", err)
		}
		bin = filepath.Join(cache, "conductor-shadow", "loadtest-bin")
	}
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatalf("test binaries folder: %v", err)
	}
	if b, err := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../conductor-shadow", "../simllm").CombinedOutput(); err != nil {
		t.Fatalf("go build conductor-shadow simllm into %s: %v\n%s", bin, err, b)
	}
	return bin
}
