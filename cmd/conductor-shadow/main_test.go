package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// commandBinary is this command compiled once per test run: linking it takes
// about 10 s of CPU, and the tests that run it as OS processes share one.
var commandBinary binaryBuild

// binaryBuild builds the command into a folder of its own on first use;
// remove deletes the folder.
type binaryBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func (b *binaryBuild) build() (string, error) {
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "conductor-shadow-bin-"); b.err != nil {
			return
		}
		b.bin = filepath.Join(b.dir, "conductor-shadow")
		if out, err := exec.Command("go", "build", "-o", b.bin, ".").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return b.bin, b.err
}

func (b *binaryBuild) remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(lowerThreadsEnv) != "" {
		os.Exit(lowerThreadsMain()) // a child of TestLowerAllThreadsIdle
	}
	code := m.Run()
	commandBinary.remove()
	os.Exit(code)
}
