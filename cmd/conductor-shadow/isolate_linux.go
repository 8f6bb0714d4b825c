//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// isolationSupported: Linux keeps niceness per thread and kills a child
// whose parent died (Pdeathsig).
const isolationSupported = true

// lowerAllThreads sets every thread of this process by niceness steps below
// the process's own niceness (capped at 19), and with idle under the idle
// scheduling policy (SCHED_IDLE), repeating over /proc/self/task until a pass
// finds none left: a thread the Go runtime or the engine starts later is
// cloned from a lowered one and inherits both, so the whole process stays
// lowered. Called first thing in the shadow side, before anything heavy.
// Returns the niceness set.
func lowerAllThreads(by int, idle bool) (int, error) {
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0, fmt.Errorf("niceness: %w", err)
	}
	target := min(20-raw+by, 19) // the raw system call answers 20 − niceness
	for pass := 0; pass < 100; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return 0, fmt.Errorf("niceness: %w", err)
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			r, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
			if err != nil {
				continue // the thread ended
			}
			if 20-r < target {
				if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, target); err != nil {
					return 0, fmt.Errorf("niceness %d of thread %d: %w", target, tid, err)
				}
				changed = true
			}
			if idle {
				attr, err := unix.SchedGetAttr(tid, 0)
				if err != nil {
					continue // the thread ended
				}
				if attr.Policy != unix.SCHED_IDLE {
					attr.Policy, attr.Flags = unix.SCHED_IDLE, 0
					if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
						return 0, fmt.Errorf("idle scheduling policy of thread %d: %w", tid, err)
					}
					changed = true
				}
			}
		}
		if !changed {
			return target, nil
		}
	}
	return target, nil
}

// childAttr makes the shadow side die with the front (even at kill -9) and
// keeps it out of the terminal's process group, so Ctrl-C reaches the front
// only and the front stops it after draining.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
