package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func countFinal(t *testing.T, s *sqlStore, table, where string) string {
	t.Helper()
	res, err := s.Query(context.Background(), "SELECT count() FROM "+table+" FINAL WHERE "+where)
	if err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return res.Rows[0][0]
}

func TestMigrationsTwiceAreNoOp(t *testing.T) {
	s := openMigratedTestStore(t)
	ctx := context.Background()
	migs, _ := loadMigrations()
	for range 2 {
		if err := s.migrate(ctx, nil); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
	}
	// Reopening the same database migrates nothing either.
	db := strings.Trim(s.db, "`")
	again, err := open(ctx, testConfig(testEngine.dir, db))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer again.Close()
	res, err := s.Query(ctx, "SELECT count(), countDistinct(version) FROM schema_migrations")
	if err != nil {
		t.Fatal(err)
	}
	n := len(migs)
	if want := []string{itoa(n), itoa(n)}; !reflect.DeepEqual(res.Rows[0], want) {
		t.Errorf("schema_migrations rows = %v; want %v (one per migration, applied once)", res.Rows[0], want)
	}
	res, err = s.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.Rows {
		names = append(names, r[0])
	}
	if got := strings.Join(names, ","); got != "audit_log,cases,flow_exports,forget_keys,forgotten_subjects,judgments,live_sequences,requests,reviews,runs,schema_migrations,scores,shadow_work,steps,suite_looks,suite_runs,tap_offered,verdict_notices" {
		t.Errorf("tables = %s", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestDuplicateWritesCountOnceWithFinal(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	req := Request{RequestID: "dup", ReceivedAt: time.Now(), App: "a", Input: "x"}
	run := Run{RunID: "dup/run", RequestID: "dup", Mode: ModeCandidate, CostUSD: 0.5, Status: StatusOK}
	step := Step{RunID: "dup/run", Index: 0}
	score := Score{RunID: "dup/run", RequestID: "dup", Grader: "exact"}
	sr := SuiteRun{SuiteRunID: "dup-sr"}
	cs := Case{SuiteRunID: "dup-sr", CaseID: "c"}
	for range 2 { // two separate INSERTs: two parts until a merge, one row under FINAL
		if err := s.InsertRequests(ctx, []Request{req}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertRuns(ctx, []Run{run}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertSteps(ctx, []Step{step}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertScores(ctx, []Score{score}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertSuiteRuns(ctx, []SuiteRun{sr}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertCases(ctx, []Case{cs}); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []string{"requests", "runs", "steps", "scores", "suite_runs", "cases"} {
		if got := countFinal(t, s, table, "1"); got != "1" {
			t.Errorf("count() FINAL on %s = %s; want 1", table, got)
		}
	}
	list, err := s.SearchTraces(ctx, TraceSearch{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Runs != 1 || list[0].CandidateCostUSD != 0.5 {
		t.Errorf("listing = %+v; want one trace, one run, cost 0.5", list)
	}
}

// TestEngineKeepsBytes round-trips texts the JSON layer would mangle: invalid
// UTF-8 and NUL bytes survive the embedded engine exactly.
func TestEngineKeepsBytes(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	for i, txt := range awkward {
		id := "bytes-" + itoa(i)
		req := Request{RequestID: id, ReceivedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), Input: txt,
			Metadata: map[string]string{txt + "k": txt}}
		run := Run{RunID: id + "/r", RequestID: id, FinalOutput: txt, PlanRaw: txt}
		if err := s.InsertRequests(ctx, []Request{req}); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if err := s.InsertRuns(ctx, []Run{run}); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		tr, err := s.GetTrace(ctx, id)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if !reflect.DeepEqual(tr.Request, req) {
			t.Errorf("%d: request\n got  %+v\n want %+v", i, tr.Request, req)
		}
		if len(tr.Runs) != 1 || tr.Runs[0].FinalOutput != txt || tr.Runs[0].PlanRaw != txt {
			t.Errorf("%d: run text did not round-trip: %+v", i, tr.Runs)
		}
		// The text search finds invalid-UTF-8 input by a needle of the same bytes.
		if txt != "" {
			got, err := s.SearchTraces(ctx, TraceSearch{TraceFilter: TraceFilter{Text: txt}})
			if err != nil {
				t.Fatalf("%d: SearchTraces: %v", i, err)
			}
			found := false
			for _, g := range got {
				found = found || g.RequestID == id
			}
			if !found {
				t.Errorf("%d: text search for the exact input did not find it", i)
			}
		}
	}
}

func TestQueryReturnsText(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	if err := s.InsertRuns(ctx, []Run{{RunID: "q1", RequestID: "r", Pipeline: "conductor", CostUSD: 0.25,
		StartedAt: time.Date(2026, 2, 3, 4, 5, 6, 7_000_000, time.UTC), FinalOutput: "a\tb\nc\\d"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sql  string
		cols []string
		rows [][]string
	}{
		{"SELECT run_id, cost_usd, started_at, final_output FROM runs", []string{"run_id", "cost_usd", "started_at", "final_output"},
			[][]string{{"q1", "0.25", "2026-02-03 04:05:06.007", "a\tb\nc\\d"}}},
		{"SELECT [1, 2] AS a, map('k', 'v') AS m, NULL AS n;", []string{"a", "m", "n"}, [][]string{{"[1,2]", "{'k':'v'}", `\N`}}},
		{"SELECT 1 AS x WHERE 0", []string{"x"}, [][]string{}},
		{"SHOW TABLES LIKE 'run%'", []string{"name"}, [][]string{{"runs"}}},
	}
	for _, tc := range tests {
		res, err := s.Query(ctx, tc.sql)
		if err != nil {
			t.Errorf("Query(%q): %v", tc.sql, err)
			continue
		}
		if !reflect.DeepEqual(res.Columns, tc.cols) || !reflect.DeepEqual(res.Rows, tc.rows) {
			t.Errorf("Query(%q) = %q %q; want %q %q", tc.sql, res.Columns, res.Rows, tc.cols, tc.rows)
		}
	}
}

// TestQueryEngineReadOnly: statements that pass the statement check but would
// reach outside the database are refused by the engine's readonly mode.
func TestQueryEngineReadOnly(t *testing.T) {
	s := openTestStore(t)
	for _, q := range []string{
		"SELECT * FROM file('/etc/hostname', 'LineAsString')",
		"SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')",
		"WITH a AS (SELECT * FROM file('/etc/hostname', 'LineAsString')) SELECT * FROM a",
	} {
		if _, err := s.Query(context.Background(), q); !errors.Is(err, ErrReadOnly) {
			t.Errorf("Query(%q): err = %v; want ErrReadOnly", q, err)
		}
	}
}

func TestSecondDataFolderRejected(t *testing.T) {
	needEngine(t)
	_, err := Open(context.Background(), testConfig(t.TempDir(), "x"))
	if err == nil || !strings.Contains(err.Error(), "one data folder per process") {
		t.Fatalf("second folder: err = %v; want a clear one-folder error", err)
	}
}

func TestClosedContextIsRefused(t *testing.T) {
	s := openTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.InsertRuns(ctx, []Run{{RunID: "x"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("InsertRuns on a cancelled ctx: %v", err)
	}
}

// TestReopenRecreatesDroppedTable: a table dropped after its migration was
// recorded is recreated on the next open, with the columns of every migration.
func TestReopenRecreatesDroppedTable(t *testing.T) {
	s := openMigratedTestStore(t)
	ctx := context.Background()
	for _, table := range []string{"runs", "steps", "suite_runs"} {
		if err := s.t.exec(ctx, "DROP TABLE "+s.db+"."+table, nil); err != nil {
			t.Fatal(err)
		}
	}
	var logged bytes.Buffer
	cfg := testConfig(testEngine.dir, strings.Trim(s.db, "`"))
	cfg.Log = slog.New(slog.NewTextHandler(&logged, nil))
	again, err := open(ctx, cfg)
	if err != nil {
		t.Fatalf("reopen after a drop: %v", err)
	}
	defer again.Close()
	for _, want := range []string{"level=WARN", "recreated empty", "runs", "steps", "suite_runs"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the repair log %q does not say %q", logged.String(), want)
		}
	}
	if err := again.InsertRuns(ctx, []Run{{RunID: "after-repair"}}); err != nil {
		t.Fatalf("insert into the recreated runs: %v", err)
	}
	if err := again.InsertSuiteRuns(ctx, []SuiteRun{{SuiteRunID: "s1", Verdict: "PASS"}}); err != nil {
		t.Fatalf("insert into the recreated suite_runs (a column of migration 0004): %v", err)
	}
	if err := again.InsertSteps(ctx, []Step{{RunID: "after-repair", CachedInputTokens: 3}}); err != nil {
		t.Fatalf("insert into the recreated steps (a column of migration 0002): %v", err)
	}
	missing, err := again.missingTables(ctx, mustMigrations(t))
	if err != nil || len(missing) != 0 {
		t.Fatalf("missing after repair: %v, %v", missing, err)
	}
}

func mustMigrations(t *testing.T) []migration {
	t.Helper()
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	return migs
}
