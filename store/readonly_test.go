package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckReadOnly(t *testing.T) {
	tests := []struct {
		sql      string
		readOnly bool // want ErrReadOnly
		bad      bool // want a plain error (not ErrReadOnly)
	}{
		{sql: "SELECT 1"},
		{sql: "select count() from runs;"},
		{sql: "  -- leading comment\n/* block */ WITH x AS (SELECT 1) SELECT * FROM x"},
		{sql: "(SELECT 1) UNION ALL (SELECT 2)"},
		{sql: "SHOW TABLES"},
		{sql: "DESCRIBE TABLE runs"},
		{sql: "DESC runs"},
		{sql: "EXPLAIN SELECT 1"},
		{sql: "SELECT ';' AS semi, 'DROP TABLE runs' AS s"},
		{sql: "SELECT format('{} {}', 'a', 'b')"},
		{sql: "SELECT name FROM system.settings LIMIT 1"},
		{sql: "SELECT 1 -- trailing ; comment"},
		{sql: "INSERT INTO runs VALUES ('x')", readOnly: true},
		{sql: "DROP TABLE runs", readOnly: true},
		{sql: "SELECT 1; DROP TABLE x", readOnly: true},
		{sql: "SELECT 1;SELECT 2", readOnly: true},
		{sql: "/* SELECT */ DELETE FROM runs WHERE 1", readOnly: true},
		{sql: "ALTER TABLE runs DELETE WHERE 1", readOnly: true},
		{sql: "SELECT 1 INTO OUTFILE 'x.csv'", readOnly: true},
		{sql: "SELECT 1 FORMAT JSONEachRow", readOnly: true},
		{sql: "SELECT 1 SETTINGS readonly = 0", readOnly: true},
		{sql: "SELECT * FROM (SELECT 1 SETTINGS readonly=0)", readOnly: true},
		{sql: "KILL QUERY WHERE 1", readOnly: true},
		{sql: "SET max_threads = 1", readOnly: true},
		{sql: "", bad: true},
		{sql: " ;; ", bad: true},
		{sql: "SELECT 'unterminated", bad: true},
		{sql: "SELECT 1 /* unterminated", bad: true},
		{sql: "SELECT $$'$$; DROP TABLE shadow.runs; --'", readOnly: true},
		{sql: "SELECT $x$ ' $x$; INSERT INTO runs VALUES ('x')", readOnly: true},
		{sql: "SELECT $$ ; $$ AS heredoc, $t$ ' $t$ AS tagged"},
		{sql: "SELECT 'it\\'s; DROP TABLE runs' AS s"},
		{sql: "SELECT 'it''s; DROP TABLE runs' AS s"},
		{sql: "SELECT `a;b` FROM runs"},
		{sql: "SELECT \"x;y\" FROM runs"},
		{sql: "SELECT 1 /* ; */ -- ;"},
		{sql: "SELECT 'a\\'; DROP TABLE runs; --'"},
		{sql: "SELECT $$ unterminated", bad: true},
	}
	for _, tc := range tests {
		err := CheckReadOnly(tc.sql)
		switch {
		case tc.readOnly && !errors.Is(err, ErrReadOnly):
			t.Errorf("CheckReadOnly(%q) = %v; want ErrReadOnly", tc.sql, err)
		case tc.bad && (err == nil || errors.Is(err, ErrReadOnly)):
			t.Errorf("CheckReadOnly(%q) = %v; want a syntax error", tc.sql, err)
		case !tc.readOnly && !tc.bad && err != nil:
			t.Errorf("CheckReadOnly(%q) = %v; want nil", tc.sql, err)
		}
	}
}

func TestQueryLimitsSettings(t *testing.T) {
	const fixed = "allow_ddl = 0, allow_introspection_functions = 0, "
	tests := []struct {
		lim  queryLimits
		want string
	}{
		{queryLimits{}, consoleWorkLimits + fixed},
		{queryLimits{unbounded: true}, fixed},
		{queryLimits{timeout: 10 * time.Second, maxRows: 5, maxRowsRead: 7, maxMemory: 1 << 20},
			"max_execution_time = 10, timeout_overflow_mode = 'throw', max_result_rows = 5, result_overflow_mode = 'throw', " +
				"max_rows_to_read = 7, read_overflow_mode = 'throw', max_memory_usage = 1048576, " + consoleWorkLimits + fixed},
		{queryLimits{timeout: 1500 * time.Millisecond, maxRowsRead: 7, maxBytesRead: 9},
			"max_execution_time = 1.5, timeout_overflow_mode = 'throw', max_rows_to_read = 7, max_bytes_to_read = 9, read_overflow_mode = 'throw', " +
				consoleWorkLimits + fixed},
		{queryLimits{maxBytesRead: 9}, "max_bytes_to_read = 9, read_overflow_mode = 'throw', " + consoleWorkLimits + fixed},
	}
	for _, tc := range tests {
		if got := tc.lim.settings(); got != tc.want {
			t.Errorf("settings(%+v) = %q; want %q", tc.lim, got, tc.want)
		}
	}
	for _, want := range []string{"max_ast_elements = 10000", "max_expanded_ast_elements = 50000", "max_ast_depth = 200",
		"max_rows_in_join = 10000000", "function_range_max_elements_in_block = 1000000", "max_result_bytes = 67108864"} {
		if !strings.Contains(consoleWorkLimits, want) {
			t.Errorf("the console's work limits lack %q", want)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	got, err := splitStatements("-- head\nCREATE TABLE a (s String DEFAULT ';');\n\n/* ; */ CREATE TABLE b (x UInt8);\n-- tail;\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CREATE TABLE a (s String DEFAULT ';')", "CREATE TABLE b (x UInt8)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q; want %q", got, want)
	}
}

func TestLoadMigrations(t *testing.T) {
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) == 0 || migs[0].version != 1 || migs[0].name != "init" {
		t.Fatalf("migrations = %+v; want 0001_init first", migs)
	}
	var tables []string
	for _, s := range migs[0].statements {
		if !strings.Contains(s, "${DB}.") {
			t.Errorf("statement does not qualify its table with ${DB}: %.60q", s)
		}
		name := strings.Fields(strings.SplitN(s, "${DB}.", 2)[1])[0]
		tables = append(tables, name)
	}
	if got := strings.Join(tables, ","); got != "requests,runs,steps,scores,suite_runs,cases" {
		t.Errorf("tables = %s", got)
	}
}
