//go:build !linux

package chdb

import "errors"

// lowerThreadPriority: only Linux sets niceness per thread.
func lowerThreadPriority(int) (int, error) {
	return 0, errors.New("per-thread niceness needs Linux")
}

// threadID: no thread ids off Linux.
func threadID() int { return 0 }
