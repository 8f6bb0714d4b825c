package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lowerThreadsEnv makes the test binary a child that lowers its own threads
// (lowerAllThreads by 3, idle policy), starts more, and prints each thread's
// niceness and scheduling policy (/proc/self/task/*/stat fields 19 and 41).
const lowerThreadsEnv = "CONDUCTOR_SHADOW_TEST_LOWER_THREADS"

func lowerThreadsMain() int {
	if _, err := lowerAllThreads(3, true); err != nil {
		fmt.Println("error", err)
		return 1
	}
	// Threads started after the lowering: locked goroutines force new ones.
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			runtime.LockOSThread()
			wg.Done()
			<-release
		}()
	}
	wg.Wait()
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		stat, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		fmt.Println("thread", task.Name(), f[16], f[38]) // fields 19 (nice) and 41 (policy)
	}
	close(release)
	return 0
}

// TestLowerAllThreadsIdle: with idle, every thread of the process, those
// started afterwards included, runs under SCHED_IDLE (policy 5) and at least
// by steps lower than the process started.
func TestLowerAllThreadsIdle(t *testing.T) {
	if !isolationSupported {
		t.Skip("per-thread scheduling is Linux's")
	}
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := min(20-raw+3, 19)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lowerThreadsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	threads := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "thread" {
			t.Fatalf("child printed %q", line)
		}
		threads++
		if nice, _ := strconv.Atoi(f[2]); nice < want {
			t.Errorf("thread %s at nice %d, want ≥ %d", f[1], nice, want)
		}
		if f[3] != "5" {
			t.Errorf("thread %s under scheduling policy %s, want 5 (SCHED_IDLE)", f[1], f[3])
		}
	}
	if threads < 5 {
		t.Errorf("child reported %d threads, want at least the 4 it started after lowering and its main one", threads)
	}
}
