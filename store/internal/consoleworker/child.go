package consoleworker

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
)

// serve is the child: it answers the parent's requests on in with replies on
// out until in closes, and returns the process's exit code. It trusts its
// parent (the pipes are its only input); the console's checks run in the
// parent, on what this engine's parser says.
func serve(in io.Reader, out io.Writer) int {
	dec, enc := gob.NewDecoder(in), gob.NewEncoder(out)
	var c child
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "console worker: read request:", err)
			return 2
		}
		rep := c.handle(req)
		if err := enc.Encode(&rep); err != nil {
			fmt.Fprintln(os.Stderr, "console worker: write reply:", err)
			return 2
		}
	}
}

// child is the worker's state: its engine, open after hello, and the tables
// it made.
type child struct {
	ref    *chdb.Ref
	db     string          // quoted database
	tables map[string]made // by name
}

// made is a table the child made: the statement it was made by, its data
// folder, and whether parts are attached.
type made struct {
	create, data string
	attached     bool
}

func (c *child) handle(req request) reply {
	ctx := context.Background() // the parent bounds every call by killing the process
	var (
		rep reply
		err error
	)
	switch {
	case req.Op == "hello":
		err = c.hello(ctx, req)
	case c.ref == nil:
		err = errors.New("console worker: no engine (hello first)")
	case req.Op == "query":
		rep.Out, err = c.ref.QueryAfter(ctx, req.Pre, req.SQL, req.Format)
	case req.Op == "classify":
		var a chdb.Analysis
		a, err = c.ref.Classify(ctx, req.SQL)
		if errors.Is(err, chdb.ErrNoClassifier) {
			rep.Analysis.NoClassifier, err = true, nil
		} else if err == nil {
			rep.Analysis = Analysis{Statements: a.Statements, Class: uint32(a.Class)}
		}
	case req.Op == "attach":
		err = c.attach(ctx, req.Tables)
	case req.Op == "detach":
		err = c.detach(ctx)
	default:
		err = fmt.Errorf("console worker: unknown request %q", req.Op)
	}
	if err != nil {
		rep.Err = err.Error()
	}
	return rep
}

// hello lowers the process's CPU priority, opens the engine on req.Dir,
// creates the database and runs the session statements.
func (c *child) hello(ctx context.Context, req request) error {
	if c.ref != nil {
		return errors.New("console worker: hello twice")
	}
	// No core file of a worker killed mid-statement.
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	lowerPriority(req.Nice)
	ref, err := chdb.Open(req.Dir)
	if err != nil {
		return err
	}
	c.ref, c.db = ref, quoteIdent(req.Database)
	if _, err := ref.Query(ctx, "CREATE DATABASE IF NOT EXISTS "+c.db, "TabSeparated"); err != nil {
		return err
	}
	for _, s := range req.Session {
		if _, err := ref.Query(ctx, s, "TabSeparated"); err != nil {
			return fmt.Errorf("session %q: %w", s, err)
		}
	}
	return nil
}

// attach makes each table exist as t.Create says (created, or dropped and
// created again when its statement changed since it was made), stops the
// engine's merges (a snapshot is read, never rewritten) and attaches each
// table's frozen parts. Tables without parts are only made: a worker started
// ahead makes the schema so that a statement only attaches.
func (c *child) attach(ctx context.Context, tables []Table) error {
	if c.tables == nil {
		c.tables = map[string]made{}
	}
	changed := false
	for _, t := range tables {
		if m, ok := c.tables[t.Name]; ok && m.create == t.Create {
			continue
		}
		if _, ok := c.tables[t.Name]; ok {
			if _, err := c.ref.Query(ctx, "DROP TABLE "+c.db+"."+quoteIdent(t.Name)+" SYNC", "TabSeparated"); err != nil {
				return fmt.Errorf("drop %s: %w", t.Name, err)
			}
		}
		if _, err := c.ref.Query(ctx, t.Create, "TabSeparated"); err != nil {
			return fmt.Errorf("create %s: %w", t.Name, err)
		}
		out, err := c.ref.QueryAfter(ctx, []string{"USE " + c.db, "SET param_t = " + quoteString(t.Name)},
			"SELECT data_paths[1] FROM system.tables WHERE database = currentDatabase() AND name = {t:String}", "TabSeparatedRaw")
		if err != nil {
			return fmt.Errorf("find %s: %w", t.Name, err)
		}
		data := strings.TrimSpace(string(out))
		if data == "" {
			return fmt.Errorf("find %s: no data folder", t.Name)
		}
		if err := os.RemoveAll(filepath.Join(data, "detached")); err != nil { // the parts of a table dropped above
			return fmt.Errorf("create %s: %w", t.Name, err)
		}
		c.tables[t.Name] = made{create: t.Create, data: data}
		changed = true
	}
	if changed {
		if _, err := c.ref.Query(ctx, "SYSTEM STOP MERGES", "TabSeparated"); err != nil {
			return fmt.Errorf("stop merges: %w", err)
		}
	}
	for _, t := range tables {
		if t.Parts == "" {
			continue
		}
		m := c.tables[t.Name]
		m.attached = true // from here on the table holds parts of the snapshot: detach deletes them
		c.tables[t.Name] = m
		detached := filepath.Join(m.data, "detached")
		if err := os.MkdirAll(detached, 0o700); err != nil {
			return fmt.Errorf("attach %s: %w", t.Name, err)
		}
		parts, err := os.ReadDir(t.Parts)
		if err != nil {
			return fmt.Errorf("attach %s: %w", t.Name, err)
		}
		moved := 0
		for _, p := range parts {
			if !p.IsDir() {
				continue
			}
			if err := os.Rename(filepath.Join(t.Parts, p.Name()), filepath.Join(detached, p.Name())); err != nil {
				return fmt.Errorf("attach %s: move part %s: %w", t.Name, p.Name(), err)
			}
			moved++
		}
		if moved == 0 {
			continue
		}
		if _, err := c.ref.Query(ctx, "ALTER TABLE "+c.db+"."+quoteIdent(t.Name)+" ATTACH PARTITION ALL", "TabSeparated"); err != nil {
			return fmt.Errorf("attach %s: %w", t.Name, err)
		}
	}
	return nil
}

// detach takes every attached part out of the tables (DETACH PARTITION ALL)
// and deletes it, so the worker holds no snapshot any more and can take the
// next one. DETACH leaves the table's own copy of a part on disk, as an
// outdated part, when something in the engine still holds it (the pipeline
// of the statement that just answered may not have let go yet); the engine
// would delete it only minutes later. So a table that still lists a part
// after the DETACH is dropped (DROP TABLE … SYNC waits until nothing holds
// it and deletes its folder) and made again by the next attach.
func (c *child) detach(ctx context.Context) error {
	for name, m := range c.tables {
		if !m.attached {
			continue
		}
		if _, err := c.ref.Query(ctx, "ALTER TABLE "+c.db+"."+quoteIdent(name)+" DETACH PARTITION ALL", "TabSeparated"); err != nil {
			return fmt.Errorf("detach %s: %w", name, err)
		}
		detached := filepath.Join(m.data, "detached")
		if err := os.RemoveAll(detached); err != nil {
			return fmt.Errorf("detach %s: %w", name, err)
		}
		out, err := c.ref.QueryAfter(ctx, []string{"USE " + c.db, "SET param_t = " + quoteString(name)},
			"SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = {t:String}", "TabSeparatedRaw")
		if err != nil {
			return fmt.Errorf("detach %s: count parts left: %w", name, err)
		}
		if strings.TrimSpace(string(out)) != "0" {
			if _, err := c.ref.Query(ctx, "DROP TABLE "+c.db+"."+quoteIdent(name)+" SYNC", "TabSeparated"); err != nil {
				return fmt.Errorf("detach %s: drop: %w", name, err)
			}
			if err := os.RemoveAll(m.data); err != nil {
				return fmt.Errorf("detach %s: %w", name, err)
			}
			delete(c.tables, name)
			continue
		}
		m.attached = false
		c.tables[name] = m
	}
	return nil
}

// lowerPriority sets niceness nice on every thread of the process (Linux's
// niceness is per thread; threads started later inherit their creator's), so
// the engine's threads, started after, all run at it. Errors are ignored: a
// worker at the parent's priority still runs.
func lowerPriority(nice int) {
	if nice <= 0 {
		return
	}
	for range 2 { // again, for a thread the runtime started meanwhile
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice)
			return
		}
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice)
			}
		}
	}
}

// quoteIdent renders a name as a back-quoted identifier (names come from the
// parent's own schema).
func quoteIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// quoteString renders s as a ClickHouse string literal.
func quoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}
