package chdb

import "syscall"

// lowerThreadPriority adds by to the calling OS thread's niceness (capped at
// 19, the lowest priority) and returns the niceness set. Linux: PRIO_PROCESS
// with a thread id names one thread; the raw getpriority system call answers
// 20 − niceness.
func lowerThreadPriority(by int) (int, error) {
	tid := syscall.Gettid()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return 0, err
	}
	nice := min(20-raw+by, 19)
	return nice, syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice)
}

// threadID is the calling OS thread's id.
func threadID() int { return syscall.Gettid() }
