package chdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// niceChildEnv names the data folder of TestEngineThreadsNiced's child
// process: the engine's threads are made once per process, so the check
// runs in a process that never opened the engine before.
const niceChildEnv = "CHDB_TEST_NICE_CHILD"

// TestEngineThreadsNiced: with Options.Nice every thread the engine starts
// (named by the engine: pipelines, pools, merges) runs Nice steps below the
// process's main thread, which keeps its own priority. The engine's memory
// sampler (MemoryWorker) raises its own priority and is left out.
func TestEngineThreadsNiced(t *testing.T) {
	dir := os.Getenv(niceChildEnv)
	if dir == "" {
		if _, err := FindLibrary(); err != nil {
			t.Skip(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestEngineThreadsNiced$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), niceChildEnv+"="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestEngineThreadsNiced") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	const by = 7
	base, err := taskNice(strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	nice := min(base+by, 19)
	before := map[string]bool{}
	for _, tid := range tids(t) {
		before[tid] = true
	}
	ref, err := OpenWith(dir, Options{Nice: by})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE t (n UInt64) ENGINE = MergeTree ORDER BY n",
		"INSERT INTO t SELECT number FROM numbers(200000)",
		"INSERT INTO t SELECT number FROM numbers(200000)",
		"SELECT sum(number) FROM numbers(50000000) SETTINGS max_threads = 4",
		"OPTIMIZE TABLE t FINAL",
	} {
		if _, err := ref.Query(ctx, q, "TabSeparated"); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	engineTID := strconv.Itoa(ref.conn.thread.tid)
	if n, err := taskNice(engineTID); err != nil || n != nice {
		t.Errorf("engine thread at nice %d, %v; want %d", n, err, nice)
	}
	// Threads the engine named are its own; the Go runtime's carry the
	// binary's name (cut to 15 bytes), as do the engine's unnamed ones.
	goName := filepath.Base(os.Args[0])
	if len(goName) > 15 {
		goName = goName[:15]
	}
	engine := 0
	for _, tid := range tids(t) {
		comm, err := os.ReadFile(filepath.Join("/proc/self/task", tid, "comm"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		n, err := taskNice(tid)
		if err != nil || tid == engineTID {
			continue
		}
		switch name := strings.TrimSpace(string(comm)); {
		case before[tid]:
			if n != base {
				t.Errorf("thread %s (%s), there before the engine, at nice %d; want %d", tid, name, n, base)
			}
		case name == "MemoryWorker", name == goName:
		default:
			engine++
			if n != nice {
				t.Errorf("engine thread %s (%s) at nice %d; want %d", tid, name, n, nice)
			}
		}
	}
	// Goroutines, on threads old and new (each locked goroutine makes the
	// runtime start another thread for the rest), run at the process's
	// priority: the runtime never clones a locked thread.
	var wg sync.WaitGroup
	got := make(chan int, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			n, err := taskNice(strconv.Itoa(threadID()))
			if err != nil {
				n = -100
			}
			got <- n
			time.Sleep(50 * time.Millisecond)
		}()
	}
	wg.Wait()
	close(got)
	for n := range got {
		if n != base {
			t.Errorf("a goroutine ran at nice %d; want %d", n, base)
		}
	}
	if engine < 3 {
		t.Errorf("%d engine threads found; want the engine's pools", engine)
	}
	t.Logf("%d engine threads at nice %d; goroutines at %d", engine, nice, base)
}

// tids lists the process's threads.
func tids(t *testing.T) []string {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(tasks))
	for i, task := range tasks {
		out[i] = task.Name()
	}
	return out
}

// taskNice reads a thread's niceness from /proc/self/task/<tid>/stat (field
// 19, counted after the parenthesised name).
func taskNice(tid string) (int, error) {
	b, err := os.ReadFile(filepath.Join("/proc/self/task", tid, "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("stat without a name")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 17 {
		return 0, fmt.Errorf("stat: %d fields", len(f))
	}
	return strconv.Atoi(f[16])
}

func TestOpenWithNiceOutOfRange(t *testing.T) {
	for _, n := range []int{-1, 20} {
		if _, err := OpenWith(t.TempDir(), Options{Nice: n}); err == nil || !strings.Contains(err.Error(), "want 0–19") {
			t.Errorf("nice %d: err = %v; want the range", n, err)
		}
	}
}
