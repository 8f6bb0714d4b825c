package consoleworker

import "syscall"

// sysProcAttr makes the child die with its parent (SIGKILL when the parent's
// thread that started it ends, the process included) and puts it in a process
// group of its own, so a terminal's Ctrl-C reaches the parent only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
