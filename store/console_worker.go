package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/internal/consoleworker"
)

// On the embedded engine the SQL console never runs in the store's engine,
// which runs one statement at a time and cannot interrupt one (a single
// editDistance call over long strings ran 13 s; an 8,000-branch multiIf spent
// 4 s in analysis; both held every tap write and page read behind them). A
// console statement runs in a console worker instead:
//
//  1. a child process (this binary again, consoleworker) opens an engine of its
//     own in <data>/console/console_<pid>_<id>, at the lowest CPU priority
//     (nice 19), with the parse limits set for its session, and makes the
//     database's tables; one is started ahead, so a statement rarely waits;
//  2. the console's checks (console.go) ask that engine's parser, never the
//     store's;
//  3. the store's engine freezes the tables the statement reads (ALTER TABLE …
//     FREEZE: hard links of the current parts, a few ms per table) and the
//     worker moves the frozen parts into its tables (ATTACH PARTITION ALL),
//     with merges stopped: it reads the tables as they were at the freeze
//     (QueryResult.SnapshotAt);
//  4. the worker runs the statement; the store kills it (SIGKILL) at the
//     console's time limit, whatever the statement is doing, and removes its
//     folder and the frozen parts; a worker that answered deletes the parts
//     it attached and is kept for the next statement. Nothing of a snapshot
//     outlives its statement; leftovers of a crashed process are removed at
//     the next Open.
//
// So a statement that gets past every check still cannot hold the tap's
// writes or the pages' reads: they never wait for it, only for the freeze.

// consoleWorkerNice is the console workers' niceness: the lowest CPU
// priority, so the tap and the pages go first on a busy machine.
const consoleWorkerNice = 19

// consoleKillGrace is how long before the kill the engine's own timeout
// (max_execution_time) is set to fire, so a statement the engine can
// interrupt ends with the engine's message (and keeps its worker for the
// next statement) rather than a kill.
const consoleKillGrace = 250 * time.Millisecond

// ErrQueryKilled: a console statement ran to the console's time limit and
// its worker was killed (the engine could not interrupt it).
var ErrQueryKilled = errors.New("store: query: the statement ran to the console's time limit and was ended")

// consoleSession are the worker engine's session settings: the parse limits,
// which a statement's own SETTINGS cannot set for its own parse (the text is
// wrapped in formatQuery('…'), so its size limit leaves room for quoting).
func consoleSession(unbounded bool) []string {
	if unbounded {
		return nil
	}
	return []string{
		fmt.Sprintf("SET max_query_size = %d", 2*consoleMaxQueryBytes+4096),
		fmt.Sprintf("SET max_parser_depth = %d", consoleMaxParserDepth),
		fmt.Sprintf("SET max_ast_elements = %d", consoleMaxASTElements),
		fmt.Sprintf("SET max_expanded_ast_elements = %d", consoleMaxExpandedASTElements),
		fmt.Sprintf("SET max_ast_depth = %d", consoleMaxASTDepth),
	}
}

// consoleWorkerStart bounds how long a console statement waits for its
// worker (the idle one, or one starting: about 0.1–0.5 s of the machine's
// time) before it gets ErrQueryBusy; the time limit starts after.
const consoleWorkerStart = 30 * time.Second

// consoleIdleTimeout is how long an idle console worker is kept for the
// next statement before it is killed.
const consoleIdleTimeout = time.Minute

// consoleWorkers are one store's console workers: the ones in use, and at
// most one idle worker for the next statement. A worker that answered (or
// refused) its statement holds no snapshot any more and goes back to idle; a
// worker killed at the time limit is replaced by one started in the
// background. Shutdown kills them all.
type consoleWorkers struct {
	start func(ctx context.Context) (*consoleworker.Worker, error) // a fresh worker

	mu        sync.Mutex
	live      map[*consoleworker.Worker]struct{} // in use or idle
	idle      *consoleworker.Worker
	idleTimer *time.Timer
	closed    bool
	warming   sync.WaitGroup
	pending   chan struct{}      // closed when the worker being started ahead is idle (or failed); nil: none
	cleaning  sync.WaitGroup     // kills of discarded workers
	stopWarm  context.CancelFunc // ends a worker start in the background
	warmCtx   context.Context
}

func newConsoleWorkers(start func(ctx context.Context) (*consoleworker.Worker, error)) *consoleWorkers {
	ctx, cancel := context.WithCancel(context.Background())
	return &consoleWorkers{start: start, live: map[*consoleworker.Worker]struct{}{}, warmCtx: ctx, stopWarm: cancel}
}

// take returns the idle worker (waiting for one being started ahead), or
// starts one within ctx.
func (c *consoleWorkers) take(ctx context.Context) (*consoleworker.Worker, error) {
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if w := c.idle; w != nil {
			c.idle = nil
			c.idleTimer.Stop()
			c.mu.Unlock()
			return w, nil
		}
		pending := c.pending
		if pending == nil {
			break
		}
		c.mu.Unlock()
		select {
		case <-pending:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	w, err := c.start(ctx)
	if err != nil {
		return nil, err
	}
	if !c.track(w) {
		_ = w.Kill()
		return nil, ErrClosed
	}
	return w, nil
}

// track registers w, or reports false once the store shuts down.
func (c *consoleWorkers) track(w *consoleworker.Worker) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.live[w] = struct{}{}
	return true
}

// giveBack makes w, which holds no snapshot, the idle worker (or kills it
// when another is idle already).
func (c *consoleWorkers) giveBack(w *consoleworker.Worker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.idle != nil {
		delete(c.live, w)
		go w.Kill()
		return
	}
	c.setIdleLocked(w)
}

func (c *consoleWorkers) setIdleLocked(w *consoleworker.Worker) {
	c.idle = w
	c.idleTimer = time.AfterFunc(consoleIdleTimeout, func() {
		c.mu.Lock()
		if c.idle != w {
			c.mu.Unlock()
			return
		}
		c.idle = nil
		delete(c.live, w)
		c.mu.Unlock()
		_ = w.Kill()
	})
}

// discard kills w and removes its folder in the background (Shutdown waits
// for it), and starts the next statement's worker.
func (c *consoleWorkers) discard(w *consoleworker.Worker) {
	c.mu.Lock()
	delete(c.live, w)
	c.cleaning.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.cleaning.Done()
		_ = w.Kill()
	}()
	c.warm()
}

// warm starts a worker in the background when none is idle, so the next
// statement does not wait for one.
func (c *consoleWorkers) warm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.idle != nil || c.pending != nil {
		return
	}
	c.warming.Add(1)
	pending := make(chan struct{})
	c.pending = pending
	go func() {
		defer c.warming.Done()
		ctx, cancel := context.WithTimeout(c.warmCtx, 30*time.Second)
		defer cancel()
		w, err := c.start(ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.pending = nil
		close(pending)
		if err != nil {
			return // the next statement starts its own and reports why
		}
		if c.closed || c.idle != nil {
			go w.Kill()
			return
		}
		c.live[w] = struct{}{}
		c.setIdleLocked(w)
	}()
}

// killAll kills every worker, idle or in use, and refuses new ones; it
// returns how many were in use.
func (c *consoleWorkers) killAll() int {
	c.mu.Lock()
	c.closed = true
	c.stopWarm()
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	inUse := len(c.live)
	if c.idle != nil {
		inUse--
	}
	live := make([]*consoleworker.Worker, 0, len(c.live))
	for w := range c.live {
		live = append(live, w)
	}
	c.live, c.idle = map[*consoleworker.Worker]struct{}{}, nil
	c.mu.Unlock()
	c.warming.Wait()
	for _, w := range live {
		_ = w.Kill()
	}
	c.cleaning.Wait()
	return inUse
}

// workerTransport is the transport of a console worker's engine: the
// console's checks and its statement, nothing else.
type workerTransport struct {
	w      *consoleworker.Worker
	db     string       // quoted database
	record func(string) // tests only: sees every statement sent; nil: none
}

func (t *workerTransport) seen(sql string) {
	if t.record != nil {
		t.record(sql)
	}
}

func (t *workerTransport) exec(ctx context.Context, sql string, params Params) error {
	t.seen(sql)
	_, err := t.w.Query(ctx, setParams(params), sql, "TabSeparated")
	return err
}

func (t *workerTransport) insert(context.Context, string, string, []string, any) error {
	return errors.New("store: console worker: no writes")
}

func (t *workerTransport) queryJSON(ctx context.Context, sql string, params Params) ([][]byte, error) {
	t.seen(sql)
	out, err := t.w.Query(ctx, setParams(params), sql, "JSONEachRow")
	if err != nil {
		return nil, err
	}
	return splitLines(out), nil
}

func (t *workerTransport) queryText(ctx context.Context, sql string) (QueryResult, error) {
	if strings.IndexByte(sql, 0) >= 0 {
		return QueryResult{}, errors.New("statement contains a NUL byte")
	}
	t.seen(sql)
	out, err := t.w.Query(ctx, []string{"USE " + t.db}, sql, "TabSeparatedWithNames")
	if err != nil {
		return QueryResult{}, err
	}
	return parseTSVWithNames(out), nil
}

// checkOneRead implements statementClassifier with the worker engine's
// chdb_classify_query_n.
func (t *workerTransport) checkOneRead(ctx context.Context, sql string) error {
	t.seen(sql)
	a, err := t.w.Classify(ctx, sql)
	if err != nil {
		return fmt.Errorf("store: query: classify: %w", err)
	}
	if a.NoClassifier {
		return nil // an older engine: formatQuery has parsed it as one statement
	}
	if a.Statements != 1 || a.Class != 0 {
		return fmt.Errorf("%w: the engine parses %d statement(s) of class %d", ErrReadOnly, a.Statements, a.Class)
	}
	return nil
}

func (t *workerTransport) close() error { return t.w.Kill() }

// consoleDir is where console workers keep their engines and where the
// store's engine freezes parts for them: <data>/console and <data>/shadow
// (the engine's own folder of frozen parts).
func (e *embedded) consoleDir() string { return filepath.Join(e.ref.Path(), "console") }

// consoleName returns a name no other statement of any process uses:
// console_<pid>_<random>.
func consoleName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("console_%d_%s", os.Getpid(), hex.EncodeToString(b[:]))
}

// removeConsoleLeftovers removes the worker folders and frozen parts that a
// process that ended mid-statement left behind: every console_<pid>_… of
// another pid (the engine allows one process per data folder, so none is in
// use). It returns what it removed.
func (e *embedded) removeConsoleLeftovers() ([]string, error) {
	var removed []string
	var errs []error
	for _, dir := range []string{e.consoleDir(), filepath.Join(e.ref.Path(), "shadow")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, en := range entries {
			rest, ok := strings.CutPrefix(en.Name(), "console_")
			if !ok {
				continue
			}
			pid, _, _ := strings.Cut(rest, "_")
			if n, err := strconv.Atoi(pid); err != nil || n == os.Getpid() {
				continue
			}
			p := filepath.Join(dir, en.Name())
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, p)
		}
	}
	return removed, errors.Join(errs...)
}

// snapshot is one statement's frozen copy of a database's tables.
type snapshot struct {
	at     time.Time // when the first table was frozen
	dir    string    // <data>/shadow/<name>: the frozen parts, removed by remove
	tables []consoleworker.Table
}

// consoleTables lists the MergeTree tables of database db (unquoted) in the
// store's engine with their CREATE statements: what a console worker makes.
func (e *embedded) consoleTables(ctx context.Context, db string) ([]consoleworker.Table, error) {
	type table struct {
		Name   string `json:"name"`
		Create string `json:"create_table_query"`
	}
	rows, err := queryRows[table](ctx, e, "SELECT name, create_table_query FROM system.tables WHERE database = {db:String} AND engine LIKE '%MergeTree' ORDER BY name", Params{}.Str("db", db))
	if err != nil {
		return nil, fmt.Errorf("store: query: snapshot: list tables: %w", err)
	}
	out := make([]consoleworker.Table, len(rows))
	for i, r := range rows {
		out[i] = consoleworker.Table{Name: r.Name, Create: r.Create}
	}
	return out, nil
}

// freeze freezes the MergeTree tables of database db (unquoted) that reads
// names in the store's engine, as name: the engine hard-links each one's
// active parts into <data>/shadow/<name>/. The other tables come without
// parts (the worker has them, empty). Only the store's own statements run
// here.
func (e *embedded) freeze(ctx context.Context, db, name string, reads tableSet) (snapshot, error) {
	snap := snapshot{dir: filepath.Join(e.ref.Path(), "shadow", name)}
	tables, err := e.consoleTables(ctx, db)
	if err != nil {
		return snap, err
	}
	type frozen struct {
		BackupPath string `json:"backup_path"`
	}
	snap.at = time.Now().UTC()
	for _, t := range tables {
		if !reads.has(t.Name) {
			snap.tables = append(snap.tables, t)
			continue
		}
		rows, err := queryRows[frozen](ctx, e, fmt.Sprintf("ALTER TABLE %s.%s FREEZE WITH NAME %s SETTINGS alter_partition_verbose_result = 1",
			quoteIdent(db), quoteIdent(t.Name), quoteString(name)))
		if err != nil {
			return snap, fmt.Errorf("store: query: snapshot: freeze %s: %w", t.Name, err)
		}
		if len(rows) > 0 {
			t.Parts = rows[0].BackupPath
			if !strings.HasPrefix(filepath.Clean(t.Parts), snap.dir+string(filepath.Separator)) {
				return snap, fmt.Errorf("store: query: snapshot: freeze %s: parts outside the snapshot folder", t.Name)
			}
		}
		snap.tables = append(snap.tables, t)
	}
	return snap, nil
}

// remove deletes what is left of the snapshot's frozen parts (the worker
// moved them out; a killed worker may not have).
func (s snapshot) remove() error {
	if s.dir == "" || !strings.HasPrefix(filepath.Base(s.dir), "console_") {
		return nil
	}
	return os.RemoveAll(s.dir)
}

// startWorker starts a console worker for the store's database on e's
// engine and makes the database's tables in it (without parts), so that a
// statement only attaches its snapshot.
func (s *sqlStore) startWorker(ctx context.Context, e *embedded) (*consoleworker.Worker, error) {
	tables, err := e.consoleTables(ctx, s.dbName)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(e.consoleDir(), 0o700); err != nil {
		return nil, fmt.Errorf("console worker: %w", err)
	}
	w, err := consoleworker.Start(ctx, consoleworker.Options{
		Dir: filepath.Join(e.consoleDir(), consoleName()), Library: e.ref.LibraryPath(), Database: s.dbName,
		Session: consoleSession(s.console.unchecked), Nice: consoleWorkerNice,
	})
	if err != nil {
		return nil, err
	}
	if err := w.Attach(ctx, tables); err != nil {
		_ = w.Kill()
		return nil, fmt.Errorf("console worker: make the tables: %w", err)
	}
	return w, nil
}

// queryInWorker runs one console statement in a worker over a snapshot of
// the database. The statement first gets its worker: the idle one, or one
// being started, waiting at most workerWait (consoleWorkerStart). From then on the
// console's time limit (queryLimits.timeout) runs: the checks, the snapshot
// and the statement all count, and at the limit the worker is killed.
func (s *sqlStore) queryInWorker(ctx context.Context, e *embedded, sql string) (QueryResult, error) {
	tctx, tcancel := context.WithTimeout(ctx, s.workerWait)
	w, err := s.workers.take(tctx)
	tcancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return QueryResult{}, fmt.Errorf("%w (no console worker started within %v)", ErrQueryBusy, s.workerWait)
		}
		return QueryResult{}, fmt.Errorf("store: query: %w", err)
	}
	limit := s.queryLimits.timeout
	deadline := time.Now().Add(limit)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ended := func(err error) error {
		if ctx.Err() != nil { // the caller gave up (or the server stops): the worker was killed
			return fmt.Errorf("store: query: %w", ctx.Err())
		}
		if errors.Is(err, consoleworker.ErrKilled) || errors.Is(err, context.DeadlineExceeded) && wctx.Err() != nil {
			return fmt.Errorf("%w (time limit %v: narrow it with WHERE or LIMIT, or raise store.embedded_console_timeout)", ErrQueryKilled, limit)
		}
		return err
	}
	used := false // the worker took a snapshot: it deletes it before it is reused
	defer func() {
		if wctx.Err() == nil && w.Alive() && (!used || s.detach(ctx, w) == nil) {
			s.workers.giveBack(w)
			return
		}
		s.workers.discard(w)
	}()
	if s.onWorker != nil {
		s.onWorker()
	}
	wt := &workerTransport{w: w, db: s.db, record: s.onWorkerSQL}
	canon, reads, err := s.console.checkReads(wctx, wt, sql)
	if err != nil {
		return QueryResult{}, ended(err)
	}
	used = true
	name := consoleName()
	snap, err := e.freeze(wctx, s.dbName, name, reads)
	defer snap.remove()
	if err != nil {
		return QueryResult{}, ended(err)
	}
	if err := w.Attach(wctx, snap.tables); err != nil {
		return QueryResult{}, ended(fmt.Errorf("store: query: snapshot: %w", err))
	}
	lim := s.queryLimits
	lim.timeout = max(time.Until(deadline)-consoleKillGrace, consoleKillGrace)
	stmt := s.console.statement(canon, lim)
	if err := wt.checkOneRead(wctx, stmt); err != nil {
		return QueryResult{}, ended(err)
	}
	if s.onStatement != nil {
		s.onStatement()
	}
	res, err := wt.queryText(wctx, stmt)
	if err != nil {
		return QueryResult{}, ended(engineQueryError(err))
	}
	res.SnapshotAt = snap.at
	return res, nil
}

// detach deletes the snapshot w holds, within a few seconds of its own (the
// statement's time may be up).
func (s *sqlStore) detach(ctx context.Context, w *consoleworker.Worker) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return w.Detach(dctx)
}

// engineQueryError wraps the engine's error of a console statement: a
// refusal of the engine's own read-only rules is ErrReadOnly.
func engineQueryError(err error) error {
	if strings.Contains(err.Error(), "(READONLY)") || strings.Contains(err.Error(), "(ACCESS_DENIED)") {
		return fmt.Errorf("%w: %v", ErrReadOnly, shortError(err))
	}
	if err := tooBig(err); err != nil {
		return err
	}
	return fmt.Errorf("store: query: %w", shortError(err))
}
