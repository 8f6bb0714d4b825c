package chdb

import (
	"fmt"
	"runtime"
)

// engineThread runs every call into the library on one OS thread whose
// niceness was lowered before the engine started. Linux niceness is per
// thread and a thread starts at its creator's: the engine's own threads
// (query pipelines, merges, the background schedule pool), all started from
// the calling thread or from each other, run at the same lower priority. So
// in one process the kernel, not a feedback loop, gives the HTTP path (the
// Go runtime's threads, at the process's own priority) the CPU first when
// both want it. A nil *engineThread runs calls on the caller's thread.
type engineThread struct {
	calls chan func()
	done  chan struct{}
	tid   int // the OS thread's id
}

// startEngineThread starts the thread by niceness steps below the process's
// priority (by ≥ 1; the result capped at 19). Errors: the kernel refused the
// niceness (the thread is ended).
func startEngineThread(by int) (*engineThread, error) {
	t := &engineThread{calls: make(chan func()), done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, so no
		// other goroutine ever runs at the lowered priority.
		runtime.LockOSThread()
		if _, err := lowerThreadPriority(by); err != nil {
			started <- fmt.Errorf("chdb: engine thread niceness +%d: %w", by, err)
			return
		}
		t.tid = threadID()
		started <- nil
		for {
			select {
			case f := <-t.calls:
				f()
			case <-t.done:
				return
			}
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return t, nil
}

// do runs f on the engine thread and returns when f has. Calls are already
// serialized by the engine lock (or process.mu at connect and close).
func (t *engineThread) do(f func()) {
	if t == nil {
		f()
		return
	}
	ran := make(chan struct{})
	t.calls <- func() { f(); close(ran) }
	<-ran
}

// stop ends the thread once its current call (if any) has returned. Safe on
// nil; called once, after the connection is closed.
func (t *engineThread) stop() {
	if t != nil {
		close(t.done)
	}
}
