package main

import (
	"os"
	"testing"
)

// asCommandEnv, set in a process's environment, makes this test binary run
// as the command itself (main) instead of the tests: the tests that start the
// command as OS processes run the binary they are in (commandBinary), which
// holds the same code as `go build` would link, so no second link (about
// 6 s of CPU) is needed. startServe sets it for each process it starts; the
// processes serve starts inherit it.
const asCommandEnv = "CONDUCTOR_SHADOW_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(asCommandEnv) != "":
		main()
		os.Exit(0)
	case os.Getenv(lowerThreadsEnv) != "":
		os.Exit(lowerThreadsMain()) // a child of TestLowerAllThreadsIdle
	}
	os.Exit(m.Run())
}
