//go:build !linux

package consoleworker

import "syscall"

// sysProcAttr puts the child in a process group of its own, so a terminal's
// Ctrl-C reaches the parent only. (Without Linux's parent-death signal, a
// child whose parent died ends at its next request, when the pipe is gone.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
