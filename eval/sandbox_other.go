//go:build !linux

package eval

import (
	"context"
	"errors"
	"os/exec"
)

// sandbox is the Linux bubblewrap sandbox; elsewhere there is none.
type sandbox struct{}

// newSandbox refuses: the code grader's sandbox needs Linux namespaces.
func newSandbox(context.Context, string, string) (*sandbox, error) {
	return nil, errors.New("the code grader's sandbox needs Linux (bubblewrap namespaces and seccomp)")
}

func (*sandbox) command(context.Context, string, []string) (*exec.Cmd, func(), error) {
	return nil, nil, errors.New("no sandbox")
}

func (*sandbox) describe() string { return "none" }
