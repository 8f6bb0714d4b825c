package store

import (
	"errors"
	"strings"
	"testing"
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

func TestReadOnlyStatementAppendsSettings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1\nSETTINGS readonly = 1"},
		{"SELECT 1;  ", "SELECT 1\nSETTINGS readonly = 1"},
		{"SELECT 1 -- note", "SELECT 1 -- note\nSETTINGS readonly = 1"},
	}
	for _, tc := range tests {
		got, err := readOnlyStatement(tc.in, queryLimits{})
		if err != nil || got != tc.want {
			t.Errorf("readOnlyStatement(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
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
