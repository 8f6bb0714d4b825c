//go:build !unix

package eval

import "os/exec"

// isolateProcess keeps exec's default: cancellation kills the process itself.
func isolateProcess(*exec.Cmd) {}
