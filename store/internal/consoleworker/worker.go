// Package consoleworker runs the SQL console's statements in a child process
// with an embedded engine of its own, so that nothing a statement does inside
// an engine can hold the parent's: the parent kills the child (SIGKILL) at the
// statement's time limit, and a single function call the engine cannot
// interrupt ends with the process.
//
// The child is this same binary, started again with CONDUCTOR_SHADOW_CONSOLE_WORKER=1
// in an environment of its own (no secret of the parent's): the package's init
// sees the variable before main runs, serves the parent over two pipes and
// exits. Any binary that can call Start links that init, so every binary that
// opens an embedded store can serve as its own console worker; nothing else
// is installed.
//
// The parent talks to a Worker one call at a time (Query, Classify, Attach);
// the child runs each in its engine and answers. Its engine's folder is
// removed when the worker is killed (Kill), whatever the statement did.
package consoleworker

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// envMarker is set (to "1") in the child's environment only.
const envMarker = "CONDUCTOR_SHADOW_CONSOLE_WORKER"

func init() {
	if os.Getenv(envMarker) != "1" {
		return
	}
	// Started by Start: serve the parent on fds 3 (requests) and 4 (replies),
	// then end the process before anything else of the binary runs.
	os.Exit(serve(os.NewFile(3, "console-requests"), os.NewFile(4, "console-replies")))
}

// ErrKilled: the worker was killed because its caller's context ended (the
// statement's time limit) before it answered.
var ErrKilled = errors.New("console worker killed at its deadline")

// Options configure one worker.
type Options struct {
	// Dir is the worker engine's data folder (absolute; created, and removed
	// by Kill). Put it on the parent's data file system so that Attach can
	// move the parent's frozen parts in without copying.
	Dir string
	// Library is the libchdb.so the child loads: the parent's, so that both
	// read the same part format.
	Library string
	// Database is created in the worker's engine at start; Query's callers
	// may USE it before anything is attached.
	Database string
	// Session statements run once after the engine opens, before any call
	// (SET of the analysis limits: they apply to every later parse).
	Session []string
	// Nice is the niceness the child gives every thread of its own (0–19;
	// 19 is the lowest CPU priority), before its engine starts any.
	Nice int
}

// Table is one table of the snapshot Attach builds in the worker's engine.
type Table struct {
	Name   string // unquoted table name (of Options.Database)
	Create string // its CREATE TABLE statement (the parent's create_table_query)
	// Parts is a folder holding the table's frozen parts (ALTER TABLE …
	// FREEZE in the parent's engine), each a sub-folder; "" when the table
	// has no part. Attach moves them into the worker's table.
	Parts string
}

// Analysis is the worker engine's verdict on a text (chdb_classify_query_n):
// how many statements it holds and the most restrictive class among them
// (0 read-only); NoClassifier when the library lacks the function.
type Analysis struct {
	Statements   int
	Class        uint32
	NoClassifier bool
}

// request is one call to the child; Op names it.
type request struct {
	Op       string // "hello", "query", "classify", "attach", "detach"
	Dir      string
	Database string
	Session  []string
	Nice     int
	Pre      []string
	SQL      string
	Format   string
	Tables   []Table
}

// reply is the child's answer to one request.
type reply struct {
	Out      []byte
	Err      string
	Analysis Analysis
}

// Worker is one running child. Its methods are safe for concurrent use; calls
// run one at a time.
type Worker struct {
	dir string
	cmd *exec.Cmd
	enc *gob.Encoder
	dec *gob.Decoder
	req io.Closer // the parent's end of the request pipe
	rep io.Closer // the parent's end of the reply pipe
	out *tail     // the child's stdout and stderr, last bytes

	mu sync.Mutex // one call at a time

	killOnce sync.Once
	killErr  error
	exited   chan struct{} // closed once the child was reaped
	waitErr  error         // the child's exit status, set before exited closes
}

// Start spawns a worker and waits until its engine is open (the session
// statements run) or ctx ends, in which case the child is killed. Errors name
// what failed, with the child's last output.
func Start(ctx context.Context, opts Options) (*Worker, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("console worker: find the binary: %w", err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("console worker: pipe: %w", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("console worker: pipe: %w", err)
	}
	out := &tail{max: 4 << 10}
	cmd := exec.Command(exe)
	cmd.Env = childEnv(opts.Library)
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{reqR, repW} // fds 3 and 4
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		reqR.Close()
		reqW.Close()
		repR.Close()
		repW.Close()
		return nil, fmt.Errorf("console worker: start %s: %w", exe, err)
	}
	reqR.Close() // the child's ends
	repW.Close()
	w := &Worker{dir: opts.Dir, cmd: cmd, enc: gob.NewEncoder(reqW), dec: gob.NewDecoder(repR),
		req: reqW, rep: repR, out: out, exited: make(chan struct{})}
	go func() {
		w.waitErr = cmd.Wait()
		close(w.exited)
	}()
	if _, err := w.call(ctx, request{Op: "hello", Dir: opts.Dir, Database: opts.Database, Session: opts.Session, Nice: opts.Nice}); err != nil {
		_ = w.Kill()
		return nil, fmt.Errorf("console worker: start: %w", err)
	}
	return w, nil
}

// Alive reports whether the child is still running (not killed, not ended
// on its own).
func (w *Worker) Alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// PID is the child's process id.
func (w *Worker) PID() int { return w.cmd.Process.Pid }

// Query runs the pre statements, then sql, in the worker's engine and returns
// sql's output rendered in format, or the engine's error. When ctx ends first
// the worker is killed and the error wraps ErrKilled and ctx's error.
func (w *Worker) Query(ctx context.Context, pre []string, sql, format string) ([]byte, error) {
	rep, err := w.call(ctx, request{Op: "query", Pre: pre, SQL: sql, Format: format})
	return rep.Out, err
}

// Classify asks the worker engine's parser what sql would do, without running
// it. ctx as for Query.
func (w *Worker) Classify(ctx context.Context, sql string) (Analysis, error) {
	rep, err := w.call(ctx, request{Op: "classify", SQL: sql})
	return rep.Analysis, err
}

// Attach makes tables in the worker's engine (in Options.Database), as each
// Table.Create says (a table made earlier by the same statement is kept),
// and moves each one's frozen parts in (the folders in Table.Parts are
// emptied), with the engine's merges stopped, so the worker reads a copy of
// the parent's tables as they were frozen. Tables without parts are only
// made: a worker started ahead of its statement makes the schema first.
// Attach the parts of a table once: a second Attach adds them again. ctx as
// for Query.
func (w *Worker) Attach(ctx context.Context, tables []Table) error {
	_, err := w.call(ctx, request{Op: "attach", Tables: tables})
	return err
}

// Detach takes every part Attach moved in out of the worker's tables and
// deletes it: the worker holds nothing of the snapshot and can take the next
// one. ctx as for Query.
func (w *Worker) Detach(ctx context.Context) error {
	_, err := w.call(ctx, request{Op: "detach"})
	return err
}

// Kill ends the child with SIGKILL, reaps it and removes its engine's folder.
// Safe to call twice and after the child ended on its own; it returns the
// folder's removal error, if any.
func (w *Worker) Kill() error {
	w.killOnce.Do(func() {
		_ = w.cmd.Process.Kill()
		<-w.exited
		w.req.Close()
		w.rep.Close()
		if w.dir != "" {
			w.killErr = os.RemoveAll(w.dir)
		}
	})
	return w.killErr
}

// call sends req and waits for its reply, killing the child when ctx ends
// first. An engine error comes back as a plain error with the engine's text.
func (w *Worker) call(ctx context.Context, req request) (reply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return reply{}, err
	}
	type answer struct {
		rep reply
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		if a.err = w.enc.Encode(&req); a.err == nil {
			a.err = w.dec.Decode(&a.rep)
		}
		done <- a
	}()
	select {
	case a := <-done:
		if a.err != nil {
			return reply{}, w.exitError(a.err)
		}
		if a.rep.Err != "" {
			return a.rep, errors.New(a.rep.Err)
		}
		return a.rep, nil
	case <-ctx.Done():
		_ = w.Kill()
		<-done // the pipes closed with the child
		return reply{}, fmt.Errorf("%w (%w)", ErrKilled, ctx.Err())
	}
}

// exitError explains a broken pipe: the child ended on its own (a crash, the
// kernel's OOM killer) with its exit status and last output.
func (w *Worker) exitError(err error) error {
	select {
	case <-w.exited:
	case <-time.After(time.Second):
		_ = w.Kill()
	}
	msg := strings.TrimSpace(w.out.String())
	if msg != "" {
		msg = "; last output: " + msg
	}
	return fmt.Errorf("console worker ended (%v): %w%s", w.waitErr, err, msg)
}

// childEnv is the child's whole environment: the marker, the library to load
// and the parent's time zone (so dates render alike); nothing else of the
// parent's (no secret reaches the child's /proc/self/environ).
func childEnv(library string) []string {
	env := []string{envMarker + "=1", "CHDB_LIB_PATH=" + library, "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	return env
}

// executable is the running binary: /proc/self/exe on Linux (still the same
// file if it was replaced on disk since), else os.Executable.
func executable() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
