//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// isolationSupported: per-thread niceness and Pdeathsig are Linux's; elsewhere
// the all-in-one server stays one process.
const isolationSupported = false

func lowerAllThreads(int, bool) (int, error) {
	return 0, errors.New("per-thread niceness needs Linux")
}

func childAttr() *syscall.SysProcAttr { return nil }
