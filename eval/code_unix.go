//go:build unix

package eval

import (
	"os/exec"
	"syscall"
)

// isolateProcess starts the test program in its own process group and makes
// cancellation kill the whole group, so children it forks die with it.
func isolateProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
