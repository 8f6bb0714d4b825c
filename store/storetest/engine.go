package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
	"github.com/conductor-shadow/conductor-shadow/store/internal/schemacopy"
)

// templateDatabase is the database the engine's keeper store migrates, which
// every Open copies (schemacopy): a name no statement text holds otherwise.
const templateDatabase = "storetest_template"

// Engine is the embedded ClickHouse engine (chDB) one test binary shares. The
// engine allows one data folder per process, so a package's TestMain starts one
// Engine and every test opens a database of its own on it (Open): the tests of
// other packages run the real engine, with its SQL, its ReplacingMergeTree
// merges and its types, not a second engine of ours.
//
//	var engine *storetest.Engine
//
//	func TestMain(m *testing.M) {
//		engine = storetest.StartEngine()
//		engine.VerifyTestMain(m) // or: code := m.Run(); engine.Close(); os.Exit(code)
//	}
//
// Do not use it in package store's own tests: they hold the process's engine
// through store.OpenTestStore.
type Engine struct {
	dir     string
	keeper  store.Store          // holds the engine open for the whole run
	missing error                // libchdb.so could not be loaded: Open skips (fails under CI)
	tpl     *schemacopy.Template // nil: every Open migrates its database itself
	seq     atomic.Int64
}

// StartEngine opens the embedded engine on a fresh temporary folder. It never
// fails: an engine that cannot start is remembered and reported by every Open
// (a skip when libchdb.so is missing outside CI, a test failure otherwise).
func StartEngine() *Engine {
	e := &Engine{}
	dir, err := os.MkdirTemp("", "storetest-engine-")
	if err != nil {
		e.missing = fmt.Errorf("storetest: engine folder: %w", err)
		return e
	}
	e.dir = dir
	keeper, err := store.Open(context.Background(), e.config(templateDatabase))
	if err != nil {
		e.missing = fmt.Errorf("storetest: open embedded engine: %w", err)
		return e
	}
	e.keeper = keeper
	if e.tpl, err = schemacopy.New(context.Background(), dir, templateDatabase, "storetest_probe"); err != nil {
		fmt.Fprintf(os.Stderr, "storetest: every Open migrates its own database: %v\n", err)
	}
	return e
}

// VerifyTestMain runs the package's tests (m.Run), closes the engine, then
// fails a passing run when goroutines are left (goleak.Find with opts). The
// check comes after Close, so the engine's own thread (store.embedded_nice)
// must have ended with it. It exits the process with the run's code.
//
//	func TestMain(m *testing.M) {
//		engine = storetest.StartEngine()
//		engine.VerifyTestMain(m)
//	}
func (e *Engine) VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	e.Close()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on a successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Close closes the engine and removes its folder. Safe on a nil Engine and twice.
func (e *Engine) Close() {
	if e == nil {
		return
	}
	e.tpl.Close()
	e.tpl = nil
	if e.keeper != nil {
		_ = e.keeper.Close()
		e.keeper = nil
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
		e.dir = ""
	}
}

func (e *Engine) config(database string) store.Config {
	c := store.NewDefaultConfig()
	c.Path, c.Database = e.dir, database
	// The engine at the test process's priority: test packages run side by
	// side, and a niced engine would wait behind another package's CPU-bound
	// simulations. The priority itself is chdb's TestEngineThreadsNiced.
	c.EmbeddedNice = 0
	return c
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// Open returns a migrated store in a database no other Open shares, closed when
// t ends. The database starts as a copy of the one StartEngine migrated
// (schemacopy: one CREATE per table instead of every migration), then
// store.Open opens it as any other. Without libchdb.so it skips t, or fails it when the CI environment
// variable is set (CI installs the engine, so a skip there would hide tests).
func (e *Engine) Open(t testing.TB) store.Store {
	t.Helper()
	return e.OpenConfig(t, func(*store.Config) {})
}

// OpenConfig is Open with the store config adjusted by edit first (limits,
// retention); Path and Database are the engine's.
func (e *Engine) OpenConfig(t testing.TB, edit func(*store.Config)) store.Store {
	t.Helper()
	st, _ := e.open(t, edit, true)
	return st
}

// open is OpenConfig; a new database is a copy of the template database
// (schemacopy) when copySchema is set and the template is in use, else
// store.Open migrates it. It returns the store and its database.
func (e *Engine) open(t testing.TB, edit func(*store.Config), copySchema bool) (store.Store, string) {
	t.Helper()
	if e == nil || e.missing != nil {
		err := errors.New("storetest: no Engine started in TestMain")
		if e != nil {
			err = e.missing
		}
		if os.Getenv("CI") != "" || !errors.Is(err, store.ErrEngineMissing) {
			t.Fatalf("embedded engine: %v", err)
		}
		t.Skipf("embedded engine unavailable, run `make libchdb` or set CHDB_LIB_PATH: %v", err)
	}
	name := strings.ToLower(nonIdent.ReplaceAllString(t.Name(), "_"))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	cfg := e.config(fmt.Sprintf("t%d_%s", e.seq.Add(1), name))
	edit(&cfg)
	cfg.Path = e.dir
	if e.tpl != nil && copySchema && cfg.DSN == "" {
		if err := e.tpl.CopyTo(context.Background(), cfg.Database); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("storetest: open store: %v", err)
	}
	t.Cleanup(func() {
		_ = st.Close()
		if cfg.DSN == "" {
			e.drop(t, cfg.Database)
		}
	})
	return st, cfg.Database
}

// drop drops a closed test store's database (schemacopy.Template.Drop): the
// engine stops the background tasks of its tables, which would otherwise run
// until the test binary ends. A failure is logged, not failed: the test ran.
func (e *Engine) drop(t testing.TB, db string) {
	if err := e.tpl.Drop(context.Background(), db); err != nil {
		t.Logf("storetest: %v", err)
	}
}

// Counts is the number of distinct records per table (after the
// ReplacingMergeTree's FINAL: the last write of each key).
type Counts struct {
	Requests, Runs, Steps, Scores, SuiteRuns, Cases int
}

// CountRows counts st's distinct records per table with one read-only console
// statement. Errors are the console's (store.Console.Query).
func CountRows(ctx context.Context, st store.Console) (Counts, error) {
	res, err := st.Query(ctx, `SELECT
		(SELECT count() FROM requests FINAL), (SELECT count() FROM runs FINAL),
		(SELECT count() FROM steps FINAL), (SELECT count() FROM scores FINAL),
		(SELECT count() FROM suite_runs FINAL), (SELECT count() FROM cases FINAL)`)
	if err != nil {
		return Counts{}, fmt.Errorf("storetest: count rows: %w", err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 6 {
		return Counts{}, fmt.Errorf("storetest: count rows: got %d rows", len(res.Rows))
	}
	var n [6]int
	for i, v := range res.Rows[0] {
		if _, err := fmt.Sscan(v, &n[i]); err != nil {
			return Counts{}, fmt.Errorf("storetest: count rows: column %d %q: %w", i, v, err)
		}
	}
	return Counts{Requests: n[0], Runs: n[1], Steps: n[2], Scores: n[3], SuiteRuns: n[4], Cases: n[5]}, nil
}

// MustCountRows is CountRows failing t on error.
func MustCountRows(t testing.TB, st store.Console) Counts {
	t.Helper()
	c, err := CountRows(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// RequireEngine skips t when the embedded engine's library (libchdb.so) is
// not installed, and fails it instead under CI: for tests that run binaries
// that open the embedded store in their own processes.
func RequireEngine(t testing.TB) {
	t.Helper()
	if _, err := chdb.FindLibrary(); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("libchdb is missing: `make test` installs it (make libchdb)")
	}
	t.Skip("libchdb is not installed (make libchdb)")
}
