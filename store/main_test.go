package store

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
	"github.com/conductor-shadow/conductor-shadow/store/internal/schemacopy"
)

// The embedded engine allows one data folder per process, so the package's tests
// share one folder (a temp dir) and isolate themselves by database: every
// openTestStore call gets a database of its own.
var testEngine struct {
	dir     string
	missing error     // set when libchdb.so is absent: engine tests skip
	keeper  *sqlStore // holds the engine open for the whole run
	// tpl is the keeper's migrated database, which openTestStore copies
	// (schemacopy); nil when the copy was found unlike it: every store migrates.
	tpl *schemacopy.Template
	seq atomic.Int64
}

// testTemplate is the keeper's database, the schema openTestStore copies:
// a name no statement text holds otherwise.
const testTemplate = "store_test_template"

func TestMain(m *testing.M) {
	if dir := os.Getenv(stuckShutdownEnv); dir != "" {
		os.Exit(stuckShutdownMain(dir)) // a child of TestShutdownAbandonsAStuckStatement
	}
	if _, err := chdb.FindLibrary(); err != nil {
		testEngine.missing = err
	} else {
		dir, err := os.MkdirTemp("", "store-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "store tests: temp dir:", err)
			os.Exit(1)
		}
		testEngine.dir = dir
		keeper, err := open(context.Background(), testConfig(dir, testTemplate))
		if err != nil {
			fmt.Fprintln(os.Stderr, "store tests: open embedded engine:", err)
			os.Exit(1)
		}
		testEngine.keeper = keeper
		if testEngine.tpl, err = schemacopy.New(context.Background(), dir, testTemplate, "store_test_probe"); err != nil {
			fmt.Fprintln(os.Stderr, "store tests: every store migrates its own database:", err)
		}
	}
	// Leaks are looked for after the engine is closed: its thread
	// (embedded_nice) must have ended with it.
	code := m.Run()
	testEngine.tpl.Close()
	if testEngine.keeper != nil {
		testEngine.keeper.Close()
		os.RemoveAll(testEngine.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on a successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// needEngine skips t when libchdb.so is absent (only then).
func needEngine(t testing.TB) {
	t.Helper()
	if testEngine.missing != nil {
		t.Skipf("embedded engine unavailable, run `make libchdb` or set CHDB_LIB_PATH: %v", testEngine.missing)
	}
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// testDatabase returns a database name unique to this call.
func testDatabase(t testing.TB) string {
	name := strings.ToLower(nonIdent.ReplaceAllString(t.Name(), "_"))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return fmt.Sprintf("t%d_%s", testEngine.seq.Add(1), name)
}

// openTestStore opens an embedded store on the shared folder in a fresh database,
// closed at the end of the test. The database starts as a copy of the
// migrated template (schemacopy); openMigratedTestStore migrates it instead.
func openTestStore(t testing.TB) *sqlStore {
	t.Helper()
	needEngine(t)
	db := testDatabase(t)
	if testEngine.tpl != nil {
		if err := testEngine.tpl.CopyTo(context.Background(), db); err != nil {
			t.Fatal(err)
		}
	}
	return openTestDatabase(t, db)
}

// openMigratedTestStore is openTestStore with a database open migrates from
// nothing: for the tests of the migrations themselves.
func openMigratedTestStore(t testing.TB) *sqlStore {
	t.Helper()
	needEngine(t)
	return openTestDatabase(t, testDatabase(t))
}

func openTestDatabase(t testing.TB, db string) *sqlStore {
	t.Helper()
	s, err := open(context.Background(), testConfig(testEngine.dir, db))
	if err != nil {
		t.Fatalf("open test store: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		// Its tables' background tasks stop with the database
		// (schemacopy.Template.Drop).
		if err := testEngine.tpl.Drop(context.Background(), db); err != nil {
			t.Logf("store tests: %v", err)
		}
	})
	return s
}

// testConfig is the default store config on path and database.
func testConfig(path, database string) Config {
	c := NewDefaultConfig()
	c.Path, c.Database = path, database
	c.EmbeddedNice = 0 // as storetest's engine: the priority is chdb's TestEngineThreadsNiced
	return c
}
