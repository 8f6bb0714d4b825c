// Package chdb is a thin, lazily loaded binding to libchdb, the embedded ClickHouse
// engine, through purego (no cgo). Nothing is loaded until Open is called, so a
// binary that never opens the embedded store runs without the library.
//
// The engine keeps one connection per process. Open hands out shared references
// to that connection: opening the same data folder again returns the same
// connection; opening a different folder while one is open is an error. The
// connection is closed when its last reference is closed. This per-process
// registry is the package's only global state; it mirrors the engine's own.
package chdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrLibraryMissing: libchdb.so could not be found or loaded.
var ErrLibraryMissing = errors.New("libchdb.so missing")

// DefaultSearchPaths returns where the library is looked for, in order, after
// $CHDB_LIB_PATH: /usr/local/lib/libchdb.so, then ./.libchdb/libchdb.so (where
// `make libchdb` puts it).
func DefaultSearchPaths() []string {
	return []string{"/usr/local/lib/libchdb.so", "./.libchdb/libchdb.so"}
}

// cConnection mirrors `struct chdb_connection_ { void *internal_data; }`;
// chdb_connect returns a pointer to the C `chdb_connection` (a pointer to it).
type cConnection struct {
	internal unsafe.Pointer
}

// cResult is the opaque `chdb_result`.
type cResult struct {
	internal unsafe.Pointer
}

type lib struct {
	path          string
	connect       func(argc int, argv []*byte) *cConnection
	closeConn     func(conn *cConnection)
	query         func(conn unsafe.Pointer, query string, format string) *cResult
	destroyResult func(res *cResult)
	resultBuffer  func(res *cResult) *byte
	resultLength  func(res *cResult) uintptr
	resultError   func(res *cResult) string
	// classify is chdb_classify_query_n (chdb-core 26.7.1 and later); nil when
	// the library predates it.
	classify func(conn unsafe.Pointer, sql *byte, sqlLen uintptr, db *byte, dbLen uintptr, out *cAnalysis) int32
}

// cAnalysis mirrors chdb_query_analysis_v1: the caller sets size; the engine
// fills the rest.
type cAnalysis struct {
	size       uint32
	statements uint32
	flags      uint32
	class      uint32
}

// engineLock serializes the calls into the engine's one connection. A caller
// waits for it until its context ends (lock), so a statement stuck inside the
// engine makes the others give up at their own deadlines instead of queueing
// without end; the lock also tracks the call in flight and the waiters, for
// readiness (InFlight) and a bounded close.
type engineLock struct {
	sem chan struct{} // one token: held while a call runs

	mu      sync.Mutex
	current Call               // the call in flight; zero when none
	waiters map[*int]time.Time // waiting callers, by when they started to wait
}

func newEngineLock() *engineLock {
	return &engineLock{sem: make(chan struct{}, 1), waiters: map[*int]time.Time{}}
}

// lock takes the engine for the call labelled label, or returns ctx's error
// when ctx ends first.
func (l *engineLock) lock(ctx context.Context, label string) error {
	select {
	case l.sem <- struct{}{}: // free: no wait to record
	default:
		key := new(int)
		l.mu.Lock()
		l.waiters[key] = time.Now()
		l.mu.Unlock()
		var err error
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			err = ctx.Err()
		}
		l.mu.Lock()
		delete(l.waiters, key)
		l.mu.Unlock()
		if err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.current = Call{Label: label, Since: time.Now()}
	l.mu.Unlock()
	return nil
}

func (l *engineLock) unlock() {
	l.mu.Lock()
	l.current = Call{}
	l.mu.Unlock()
	<-l.sem
}

// state returns the call in flight (zero when none), how many callers wait
// and since when the longest of them waits (zero when none).
func (l *engineLock) state() (Call, int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var oldest time.Time
	for _, at := range l.waiters {
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	return l.current, len(l.waiters), oldest
}

// Call is a statement inside the engine: Label is its first words (cut
// before any quoted value, at most 80 bytes), Since when it started.
type Call struct {
	Label string
	Since time.Time
}

// label renders the start of sql for Call.Label: whitespace collapsed, cut
// before the first quote (values stay out of logs) and at 80 bytes.
func label(sql string) string {
	if i := strings.Index(sql, "FORMAT JSONEachRow"); i >= 0 {
		sql = sql[:i+len("FORMAT JSONEachRow")] // an INSERT's rows follow
	}
	if i := strings.IndexByte(sql, '\''); i >= 0 {
		sql = sql[:i]
	}
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 80 {
		sql = sql[:80] + "…"
	}
	return sql
}

// process holds the library and the engine's single connection.
var process struct {
	mu   sync.Mutex
	lib  *lib
	conn *Conn
}

// FindLibrary returns the first existing file among $CHDB_LIB_PATH and
// DefaultSearchPaths(), or an error wrapping ErrLibraryMissing that names them.
func FindLibrary() (string, error) {
	return findLibrary(os.Getenv("CHDB_LIB_PATH"), DefaultSearchPaths())
}

func findLibrary(env string, defaults []string) (string, error) {
	paths := defaults
	if env != "" {
		paths = append([]string{env}, defaults...)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: looked in %q", ErrLibraryMissing, paths)
}

func loadLocked() (*lib, error) {
	if process.lib != nil {
		return process.lib, nil
	}
	path, err := FindLibrary()
	if err != nil {
		return nil, err
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: load %s: %v", ErrLibraryMissing, path, err)
	}
	l := &lib{path: path}
	syms := []struct {
		fn   any
		name string
	}{
		{&l.connect, "chdb_connect"},
		{&l.closeConn, "chdb_close_conn"},
		{&l.query, "chdb_query"},
		{&l.destroyResult, "chdb_destroy_query_result"},
		{&l.resultBuffer, "chdb_result_buffer"},
		{&l.resultLength, "chdb_result_length"},
		{&l.resultError, "chdb_result_error"},
	}
	for _, s := range syms {
		if _, err := purego.Dlsym(h, s.name); err != nil {
			return nil, fmt.Errorf("%w: %s lacks %s (library too old?)", ErrLibraryMissing, path, s.name)
		}
		purego.RegisterLibFunc(s.fn, h, s.name)
	}
	if _, err := purego.Dlsym(h, "chdb_classify_query_n"); err == nil {
		purego.RegisterLibFunc(&l.classify, h, "chdb_classify_query_n")
	}
	process.lib = l
	return l, nil
}

// Conn is the engine's connection. Calls are serialized by engineLock: a
// caller waits for its turn until its context ends, and the call in flight is
// known (InFlight) so readiness can name a stalled engine and Close can give
// up on one at its deadline.
type Conn struct {
	path string // absolute data folder
	refs int    // open references, guarded by process.mu

	mu     *engineLock // serializes engine calls; guards closed
	l      *lib
	c      *cConnection
	closed bool
	// thread runs every call into the library at the engine's niceness
	// (Options.Nice); nil runs them on the caller's thread.
	thread *engineThread
	// abandoned is set when Close gave up on a statement in flight; no
	// later call runs.
	abandoned atomic.Bool
}

// Ref is one holder's handle on the shared connection; Close releases it once.
type Ref struct {
	once sync.Once
	conn *Conn
}

// Options are how the engine's connection is made.
type Options struct {
	// Nice is how many niceness steps (0–19, as nice(1)'s -n) below the
	// process's own priority the engine's threads run: 0 keeps the
	// process's priority; above it, every call into the library runs on one
	// OS thread lowered by Nice before the engine starts, and the engine's
	// own threads inherit its niceness (engineThread), capped at 19. One
	// exception is the engine's: its memory sampler (MemoryWorker, a thread
	// that wakes to read the process's memory) raises its own priority when
	// allowed. Linux only; elsewhere Open fails for Nice > 0. It applies
	// when the connection is made: a second Open of the same folder shares
	// the first one's threads.
	Nice int
}

// Open is OpenWith(dir, Options{}).
func Open(dir string) (*Ref, error) { return OpenWith(dir, Options{}) }

// OpenWith loads the library if needed and returns a reference to the
// engine's connection for the data folder dir (created if absent). A
// different dir while a connection is open is an error. Errors wrap
// ErrLibraryMissing when the library is absent; a Nice outside 0–19 or one
// the kernel refuses is an error.
func OpenWith(dir string, o Options) (*Ref, error) {
	if o.Nice < 0 || o.Nice > 19 {
		return nil, fmt.Errorf("chdb: nice %d: want 0–19", o.Nice)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("chdb: data folder %q: %w", dir, err)
	}
	process.mu.Lock()
	defer process.mu.Unlock()
	if c := process.conn; c != nil {
		if c.path != abs {
			return nil, fmt.Errorf("chdb: the embedded engine is already open on %s in this process; it allows one data folder per process (asked for %s)", c.path, abs)
		}
		c.refs++
		return &Ref{conn: c}, nil
	}
	l, err := loadLocked()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("chdb: create data folder: %w", err)
	}
	args := []string{"clickhouse", "--path=" + abs}
	argv := make([]*byte, len(args))
	keep := make([][]byte, len(args))
	for i, a := range args {
		keep[i] = append([]byte(a), 0)
		argv[i] = &keep[i][0]
	}
	var thread *engineThread
	if o.Nice > 0 {
		if thread, err = startEngineThread(o.Nice); err != nil {
			return nil, err
		}
	}
	var cc *cConnection
	thread.do(func() { cc = l.connect(len(argv), argv) })
	if cc == nil || cc.internal == nil {
		thread.stop()
		return nil, fmt.Errorf("chdb: connect to %s failed", abs)
	}
	c := &Conn{path: abs, refs: 1, mu: newEngineLock(), l: l, c: cc, thread: thread}
	process.conn = c
	return &Ref{conn: c}, nil
}

// Path is the absolute data folder.
func (r *Ref) Path() string { return r.conn.path }

// LibraryPath is the file the library was loaded from.
func (r *Ref) LibraryPath() string { return r.conn.l.path }

// Query runs one statement and returns the output rendered in format (a
// ClickHouse output format such as "JSONEachRow"), or the engine's error. It
// waits for the engine until ctx ends (ctx's error); once handed to the
// engine a statement runs to its end (bound it with the engine's own
// settings, max_execution_time). The text must not contain NUL bytes (it is
// passed as a C string).
func (r *Ref) Query(ctx context.Context, sql, format string) ([]byte, error) {
	return r.QueryAfter(ctx, nil, sql, format)
}

// QueryAfter runs sql as Query does, with the pre statements (such as "USE db"
// or "SET param_x = '…'") run first under the same lock, so no other call runs
// in between.
func (r *Ref) QueryAfter(ctx context.Context, pre []string, sql, format string) ([]byte, error) {
	c := r.conn
	if err := c.mu.lock(ctx, label(sql)); err != nil {
		return nil, err
	}
	defer c.mu.unlock()
	for _, p := range pre {
		if _, err := c.queryLocked(p, "TabSeparated"); err != nil {
			return nil, err
		}
	}
	return c.queryLocked(sql, format)
}

// InFlight returns the statement inside the engine (ok false when none), how
// many callers wait for the engine and since when the longest of them waits.
func (r *Ref) InFlight() (call Call, ok bool, waiting int, waitingSince time.Time) {
	call, waiting, waitingSince = r.conn.mu.state()
	return call, !call.Since.IsZero(), waiting, waitingSince
}

func (c *Conn) queryLocked(sql, format string) (out []byte, err error) {
	if c.closed || c.abandoned.Load() {
		return nil, errors.New("chdb: connection closed")
	}
	c.thread.do(func() { out, err = c.queryOnThread(sql, format) })
	return out, err
}

// queryOnThread is queryLocked's call into the library, on the engine thread.
func (c *Conn) queryOnThread(sql, format string) ([]byte, error) {
	res := c.l.query(c.c.internal, sql, format)
	if res == nil {
		return nil, nil
	}
	defer c.l.destroyResult(res)
	if msg := c.l.resultError(res); msg != "" {
		c.drainLocked()
		return nil, errors.New(msg)
	}
	n := c.l.resultLength(res)
	buf := c.l.resultBuffer(res)
	if n == 0 || buf == nil {
		return nil, nil
	}
	return append([]byte(nil), unsafe.Slice(buf, n)...), nil
}

// QueryClass is what a statement does to state that outlives it, as the
// engine's own parser decides (chdb_query_class).
type QueryClass uint32

// Query classes, in the engine's order.
const (
	ClassReadOnly       QueryClass = 0 // SELECT, SHOW, DESCRIBE, EXPLAIN
	ClassMutating       QueryClass = 1 // INSERT, CREATE, ALTER, DROP …
	ClassMutatingGlobal QueryClass = 2 // access entities, functions, writes into system
	ClassControl        QueryClass = 3 // USE, SET, SYSTEM, BACKUP, INTO OUTFILE …
	ClassUnknown        QueryClass = 4 // did not parse
)

// Analysis is the engine parser's verdict on a text: how many statements it
// holds and the most restrictive class among them.
type Analysis struct {
	Statements int
	Class      QueryClass
}

// ErrNoClassifier: the loaded library predates chdb_classify_query_n.
var ErrNoClassifier = errors.New("chdb: the loaded libchdb lacks chdb_classify_query_n (added in chdb-core 26.7.1)")

// Classify asks the engine's parser what sql would do, without running it.
// Text that does not parse is ClassUnknown with zero statements. Errors:
// ErrNoClassifier, a closed connection, or ctx's error while waiting for the
// engine.
func (r *Ref) Classify(ctx context.Context, sql string) (Analysis, error) {
	c := r.conn
	if err := c.mu.lock(ctx, "classify"); err != nil {
		return Analysis{}, err
	}
	defer c.mu.unlock()
	return c.classifyLocked(sql)
}

func (c *Conn) classifyLocked(sql string) (Analysis, error) {
	if c.closed || c.abandoned.Load() {
		return Analysis{}, errors.New("chdb: connection closed")
	}
	if c.l.classify == nil {
		return Analysis{}, ErrNoClassifier
	}
	out := cAnalysis{size: uint32(unsafe.Sizeof(cAnalysis{}))}
	buf := append([]byte(sql), 0)
	var st int32
	c.thread.do(func() { st = c.l.classify(c.c.internal, &buf[0], uintptr(len(sql)), nil, 0, &out) })
	runtime.KeepAlive(buf)
	if st != 0 {
		return Analysis{}, errors.New("chdb: chdb_classify_query_n could not analyse the statement")
	}
	return Analysis{Statements: int(out.statements), Class: QueryClass(out.class)}, nil
}

// drainLocked runs a throw-away statement after a failed one. The engine keeps
// what a failed statement had already written to its output (a header line,
// say) and hands it out at the start of the next statement's answer; this
// statement takes it, so the next caller gets only its own rows.
func (c *Conn) drainLocked() {
	if res := c.l.query(c.c.internal, "SELECT 1", "TabSeparated"); res != nil {
		c.l.destroyResult(res)
	}
}

// ErrAbandoned: Close gave up waiting for a statement still inside the
// engine; the connection is left open (the process ends it).
var ErrAbandoned = errors.New("chdb: engine abandoned with a statement still running")

// Close releases this reference; the last one closes the engine's connection,
// waiting for the statement in flight. Safe to call twice.
func (r *Ref) Close() { _ = r.CloseContext(context.Background()) }

// CloseContext releases this reference; the last one closes the engine's
// connection once the statement in flight (if any) has ended, or, when ctx
// ends first, marks the connection closed without closing it (a statement
// cannot be interrupted) and returns an error wrapping ErrAbandoned that
// names the statement, how long it ran and how many callers still waited.
// Every later call on the connection fails. Safe to call twice (nil).
func (r *Ref) CloseContext(ctx context.Context) error {
	var err error
	r.once.Do(func() {
		process.mu.Lock()
		defer process.mu.Unlock()
		c := r.conn
		c.refs--
		if c.refs > 0 {
			return
		}
		process.conn = nil
		if lerr := c.mu.lock(ctx, "close"); lerr != nil {
			call, waiting, _ := c.mu.state()
			err = fmt.Errorf("%w: %q running for %v, %d more caller(s) waiting (%v)", ErrAbandoned, call.Label,
				time.Since(call.Since).Round(time.Millisecond), waiting, lerr)
			c.abandon()
			return
		}
		c.closed = true
		c.thread.do(func() { c.l.closeConn(c.c) })
		c.thread.stop()
		c.mu.unlock()
	})
	return err
}

// abandon marks c abandoned without the engine lock: the statement in flight
// keeps the connection; every call that gets the lock after it fails.
func (c *Conn) abandon() { c.abandoned.Store(true) }
