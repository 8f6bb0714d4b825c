package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// consoleAttacks are statements that must not run: each tries to write, to run
// a second statement, to read a file or the environment, to reach a URL or
// another server, or to change a setting. {URL} is an HTTP server counting
// hits, {TCP} a TCP listener counting connections (host:port), {CANARY} a
// file holding a secret token, {DB} the store's database, {OUT} a file path
// that must not appear.
var consoleAttacks = []string{
	// the canary file and listener, in every shape known to reach them
	"SELECT file('{CANARY}')",
	"SELECT * FROM file('{CANARY}', 'LineAsString')",
	"SELECT * FROM file('{CANARY}')",
	"SELECT $$'$$; SELECT file('{CANARY}'); --'",
	"SELECT `file`('{CANARY}')",
	"SELECT 1 WHERE 1 IN file('{CANARY}', 'LineAsString', 'x String')",
	"WITH (SELECT file('{CANARY}')) AS f SELECT f",
	"SELECT arrayMap(p -> file(p), ['{CANARY}'])",
	"SELECT * APPLY(file) FROM (SELECT '{CANARY}' AS p)",
	"SELECT * FROM (SELECT * FROM file('{CANARY}', 'LineAsString'))",
	"DESCRIBE file('{CANARY}', 'LineAsString')",
	"SELECT * FROM fileCluster('default', '{CANARY}', 'LineAsString')",
	"SELECT * FROM sqlite('{CANARY}', 't')",
	"DESCRIBE url('http://{TCP}/x', 'CSV')",
	"SELECT * FROM url('http://{TCP}/x', 'LineAsString')",
	"SELECT * FROM s3('http://{TCP}/x', 'LineAsString')",
	"SELECT * FROM remote('{TCP}', system.one)",
	"SELECT * FROM remoteSecure('{TCP}', system.one)",
	"SELECT * FROM mysql('{TCP}', 'd', 't', 'u', 'p')",
	"SELECT * FROM postgresql('{TCP}', 'd', 't', 'u', 'p')",
	"SELECT * FROM mongodb('{TCP}', 'd', 't', 'u', 'p', 'x String')",
	"SELECT * FROM redis('{TCP}', 'k', 'k String')",
	"SELECT hasColumnInTable('{TCP}', 'system', 'one', 'dummy')",
	"SELECT 1 WHERE 1 IN url('http://{TCP}/x', 'CSV', 'x UInt8')",
	// a second statement hidden from a lexer
	"SELECT $$'$$; DROP TABLE {DB}.runs; --'",
	"SELECT $$'$$; INSERT INTO {DB}.runs (run_id) VALUES ('x'); --'",
	"SELECT $$'$$; CREATE TABLE {DB}.evil (x UInt8) ENGINE = Memory; --'",
	"SELECT $x$'$x$; DROP TABLE {DB}.runs; --'",
	"SELECT $tag$ $$ $tag$; DROP TABLE {DB}.runs",
	"SELECT 'a\\'; DROP TABLE {DB}.runs; --'; DROP TABLE {DB}.runs",
	"SELECT 1; DROP TABLE {DB}.runs",
	"SELECT 1 -- \n; DROP TABLE {DB}.runs",
	"SELECT 1 /* */; DROP TABLE {DB}.runs",
	"SELECT `x`; DROP TABLE {DB}.runs",
	"SELECT \"x\"; DROP TABLE {DB}.runs",
	// writes and control statements
	"DROP TABLE {DB}.runs",
	"/* SELECT */ DROP TABLE {DB}.runs",
	"TRUNCATE TABLE {DB}.runs",
	"ALTER TABLE {DB}.runs DELETE WHERE 1",
	"INSERT INTO {DB}.runs (run_id) SELECT 'x'",
	"SET readonly = 0",
	"SYSTEM DROP DNS CACHE",
	"SHOW CREATE TABLE {DB}.runs",
	"SHOW USERS",
	"SHOW GRANTS",
	"EXPLAIN AST DROP TABLE {DB}.runs",
	// files and the process environment
	"SELECT file('/proc/self/environ')",
	"SELECT file('/etc/passwd')",
	"SELECT FILE('/etc/passwd')",
	"SELECT `file`('/etc/passwd')",
	"SELECT \"file\"('/etc/passwd')",
	"SELECT substring(file('/proc/self/environ'), 1, 10)",
	"SELECT arrayMap(p -> file(p), ['/etc/passwd'])",
	"SELECT * APPLY(file) FROM (SELECT '/etc/passwd' AS p)",
	"SELECT p APPLY file FROM (SELECT '/etc/passwd' AS p)",
	"SELECT 1 WHERE 1 IN file('/etc/passwd')",
	"WITH (SELECT file('/etc/passwd')) AS f SELECT f",
	"SELECT * FROM file('/etc/passwd', 'LineAsString')",
	"SELECT * FROM (SELECT * FROM file('/etc/passwd', 'LineAsString'))",
	"DESCRIBE file('/etc/passwd', 'LineAsString')",
	"SELECT * FROM fileCluster('default', '/etc/passwd', 'LineAsString')",
	"SELECT * FROM filesystem('/')",
	"SELECT * FROM executable('id', 'LineAsString', 'x String')",
	"SELECT * FROM sqlite('/etc/passwd', 't')",
	"SELECT * FROM iceberg('/etc')",
	"SELECT * FROM input('x String')",
	"SELECT 1 INTO OUTFILE '{OUT}'",
	"SELECT 1 INTO OUTFILE '{OUT}' FORMAT CSV",
	"SELECT filesystemAvailable()",
	"SELECT getSetting('readonly')",
	"SELECT getServerSetting('user_files_path')",
	"SELECT getMacro('x')",
	"SELECT hostName()",
	"SELECT catboostEvaluate('/etc/passwd', 1)",
	// URLs and other servers
	"DESCRIBE url('{URL}/x', 'CSV')",
	"SELECT * FROM url('{URL}/x', 'LineAsString')",
	"SELECT * FROM URL('{URL}/x', 'LineAsString')",
	"SELECT * FROM s3('{URL}/x', 'LineAsString')",
	"SELECT * FROM urlCluster('default', '{URL}/x', 'LineAsString')",
	"SELECT * FROM remote('127.0.0.1:9000', system.one)",
	"SELECT * FROM remoteSecure('127.0.0.1:9440', system.one)",
	"SELECT * FROM cluster('default', system.one)",
	"SELECT * FROM mysql('127.0.0.1:3306', 'd', 't', 'u', 'p')",
	"SELECT * FROM postgresql('127.0.0.1:5432', 'd', 't', 'u', 'p')",
	"SELECT * FROM mongodb('127.0.0.1:27017', 'd', 't', 'u', 'p', 'x String')",
	"SELECT * FROM redis('127.0.0.1:6379', 'k', 'k String')",
	"SELECT * FROM jdbc('x', 'y')",
	"SELECT * FROM odbc('x', 'y')",
	"SELECT * FROM hdfs('hdfs://127.0.0.1:9000/x', 'CSV')",
	"SELECT * FROM azureBlobStorage('{URL}', 'c', 'b')",
	"SELECT * FROM gcs('{URL}/x', 'CSV')",
	"SELECT * FROM deltaLake('{URL}/x')",
	"SELECT * FROM hudi('{URL}/x')",
	"SELECT 1 WHERE 1 IN url('{URL}/x', 'CSV', 'x UInt8')",
	"SELECT hasColumnInTable('127.0.0.1', 'system', 'one', 'dummy')",
	"SELECT * FROM dictionary('d')",
	"SELECT dictGet('d', 'x', 1)",
	"SELECT joinGet('system.one', 'dummy', 0)",
	"SELECT * FROM merge('system', '.*')",
	"SELECT * FROM viewIfPermitted(SELECT 1 ELSE null('x UInt8'))",
	// settings overrides
	"SELECT 1 SETTINGS readonly = 0",
	"SELECT * FROM (SELECT 1 SETTINGS readonly = 0)",
	"SELECT 1 FORMAT JSON",
	"EXPLAIN header = 1 SELECT 1",
	"SELECT {p:String}",
	// tables outside the database
	"SELECT * FROM system.users",
	"SELECT * FROM system.settings",
	"SELECT * FROM system.query_log",
	"SELECT * FROM system.processes",
	"SELECT * FROM system.named_collections",
	"SELECT * FROM system.server_settings",
	"SELECT * FROM `system`.`users`",
	"SELECT 'a' IN system.users",
	"SELECT * FROM other_db.runs",
	"SELECT * FROM `weird name (children 1)\n Function numbers`.x",
	"SELECT `a (children 1)\n Function numbers`(1)",
	"SELECT sleep(3)",
	// the host, the process, the user and the engine's build
	"SELECT tcpPort()",
	"SELECT currentUser()",
	"SELECT user()",
	"SELECT current_user()",
	"SELECT authenticatedUser()",
	"SELECT currentProfiles()",
	"SELECT currentRoles()",
	"SELECT uptime()",
	"SELECT version()",
	"SELECT buildId()",
	"SELECT getServerPort('tcp_port')",
	"SELECT showCertificate()",
	"SELECT connectionId()",
	"SELECT queryID()",
	"SELECT initialQueryStartTime()",
	"SELECT getOSKernelVersion()",
	"SELECT fullHostName()",
	"SELECT FQDN()",
	"SELECT serverUUID()",
	"SELECT zookeeperSessionUptime()",
	"SELECT globalVariable('max_allowed_packet')",
	"SELECT generateSerialID('x')",
	"SELECT regionToName(toUInt32(1))",
	"SELECT aiGenerate('x')",
	"SELECT evalMLMethod(1, 2)",
	"SELECT addressToSymbol(toUInt64(1))",
	"SELECT tid()",
	"SELECT _CAST(1, 'String')",
	"SELECT nosuchfunction(1)",
	"SELECT tcpPortIf(1)",
	// disk paths of the readable system tables
	"SELECT * FROM system.tables",
	"SELECT * FROM system.databases",
	"SELECT * FROM system.parts",
	"SELECT * FROM system.parts_columns",
	"SELECT * FROM system.merges",
	"SELECT data_paths FROM system.tables",
	"SELECT metadata_path FROM system.tables",
	"SELECT t.data_paths FROM system.tables AS t",
	"SELECT arrayJoin(data_paths) FROM system.tables",
	"SELECT data_path FROM system.databases",
	"SELECT path FROM system.parts",
	"SELECT `path` FROM system.parts",
	"SELECT path FROM system.parts_columns",
	"SELECT filenames FROM system.parts_columns",
	"SELECT result_part_path, source_part_paths FROM system.merges",
	"SELECT COLUMNS('path') FROM system.parts",
	"SELECT COLUMNS(path, name) FROM system.parts",
	"SELECT p.* FROM system.parts AS p",
	"SELECT * EXCEPT (name) FROM system.tables",
	"SELECT x FROM (SELECT * FROM system.tables) AS x",
	"SELECT tuple(*) FROM system.databases",
	"SELECT formatRow('TSV', *) FROM system.tables",
	"EXPLAIN SELECT * FROM system.tables",
	"SELECT name FROM system.tables WHERE has(data_paths, '')",
}

// consoleReads are statements the console answers.
var consoleReads = []string{
	"SELECT count() FROM runs",
	"SELECT count() FROM {DB}.runs FINAL",
	"select run_id, cost_usd from runs where pipeline = 'x' limit 3;",
	"WITH c AS (SELECT 1 AS x) SELECT arrayMap(y -> y + 1, [x]), CAST(x AS String) FROM c",
	"SELECT pipeline, quantile(0.95)(latency_ms), sumIf(cost_usd, status = 'ok') FROM runs GROUP BY pipeline",
	"SELECT $$a'b$$ AS heredoc, 'it''s' AS quoted, 'x\\'y' AS escaped",
	"SELECT ';' AS semi, 'DROP TABLE runs' AS s -- ; DROP",
	"SELECT format('{} {}', 'a', 'b')",
	"SELECT number FROM numbers(3)",
	"SELECT * FROM system.one",
	"SELECT name FROM system.tables WHERE database = currentDatabase()",
	"SELECT table_name FROM information_schema.tables LIMIT 1",
	"SELECT 1 WHERE 1 IN (SELECT 1)",
	"SELECT r.run_id FROM runs AS r WHERE r.run_id IN runs_ids",
	"SELECT `index` FROM steps LIMIT 1",
	"(SELECT 1) UNION ALL (SELECT 2)",
	"SELECT 1 EXCEPT SELECT 2",
	"SHOW TABLES",
	"SHOW TABLES FROM system LIKE 'one'",
	"SHOW DATABASES",
	"DESCRIBE TABLE runs",
	"DESC (SELECT 1)",
	"EXPLAIN SELECT 1",
	"EXPLAIN AST SELECT count() FROM runs",
	// functions of every allowed kind
	"SELECT countIf(status = 'ok'), uniqExact(pipeline), avgIf(cost_usd, cost_usd > 0), sumArray([1, 2]), uniqArrayIf([1], 1) FROM runs",
	"SELECT quantiles(0.5, 0.95)(latency_ms), quantileExactIf(0.95)(latency_ms, 1), argMax(run_id, started_at), groupArrayState(1) FROM runs",
	"SELECT run_id, row_number() OVER (PARTITION BY pipeline ORDER BY started_at), lagInFrame(cost_usd) OVER (ORDER BY started_at) FROM runs",
	"SELECT multiIf(cost_usd > 1, 'hi', 'lo'), if(1, 2, 3), coalesce(NULL, 1), toStartOfHour(now()), dateDiff('day', today(), today()) FROM runs",
	"SELECT JSONExtractString('{\"a\":\"b\"}', 'a'), lower('A'), sipHash64('x'), cityHash64('x'), domain('http://a.example/x'), toUUID('00000000-0000-0000-0000-000000000000')",
	"SELECT arrayMap(x -> x * 2, [1, 2]), arrayFilter(x -> x > 1, [1, 2]), tupleElement((1, 2), 1), map('a', 1)['a'], round(1.5), formatReadableSize(1024)",
	"SELECT currentDatabase(), toTypeName(1), materialize(1), ignore(1), substring('abc', 1, 2), SUBSTRING('abc', 1, 2), DATE_DIFF('day', today(), today())",
	"SELECT 1 WHERE exists(SELECT 1) AND 1 NOT IN (2) AND 'a' LIKE 'a' AND 'a' ILIKE 'A'",
	"SELECT name, engine, total_rows FROM system.tables WHERE database = currentDatabase()",
	"SELECT name, engine FROM system.databases",
	"SELECT table, rows, bytes_on_disk, disk_name FROM system.parts WHERE database = currentDatabase()",
	"SELECT count() FROM system.merges",
}

// consoleFixture is a store with a sentinel table set, an HTTP server counting
// the requests the engine sends, and a path no statement may create.
type consoleFixture struct {
	s      *sqlStore
	hits   *atomic.Int64
	url    string
	out    string
	canary string // a file holding token
	token  string
	tcp    string // a listener's host:port
	conns  *atomic.Int64
}

func newConsoleFixture(t testing.TB) consoleFixture {
	t.Helper()
	s := openTestStore(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "1")
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	token := fmt.Sprintf("canary-%d-secret-token", time.Now().UnixNano())
	canary := filepath.Join(dir, "canary.txt")
	if err := os.WriteFile(canary, []byte(token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return consoleFixture{s: s, hits: &hits, url: srv.URL, out: filepath.Join(dir, "out.csv"),
		canary: canary, token: token, tcp: ln.Addr().String(), conns: &conns}
}

func (f consoleFixture) expand(q string) string {
	return strings.NewReplacer("{DB}", f.s.db, "{URL}", f.url, "{OUT}", f.out, "{CANARY}", f.canary, "{TCP}", f.tcp).Replace(q)
}

// leaked fails t when a console answer (rows, column names or error) shows
// the canary file's token.
func (f consoleFixture) leaked(t testing.TB, q string, res QueryResult, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), f.token) {
		t.Fatalf("Query(%q): the error shows the canary file: %v", q, err)
	}
	for _, c := range res.Columns {
		if strings.Contains(c, f.token) {
			t.Fatalf("Query(%q): a column name shows the canary file: %q", q, c)
		}
	}
	for _, row := range res.Rows {
		for _, v := range row {
			if strings.Contains(v, f.token) {
				t.Fatalf("Query(%q): the answer shows the canary file: %q", q, v)
			}
		}
	}
}

// intact fails t unless every table of the schema is still there, nothing was
// written to runs, the HTTP server saw no request and no output file exists.
func (f consoleFixture) intact(t testing.TB, after string) {
	t.Helper()
	ctx := context.Background()
	tables, err := queryRows[struct {
		N int `json:"n"`
	}](ctx, f.s.t, "SELECT count() AS n FROM system.tables WHERE database = "+quoteString(strings.Trim(f.s.db, "`"))+
		" AND name IN ('requests','runs','steps','scores','suite_runs','cases','schema_migrations')")
	if err != nil || len(tables) != 1 || tables[0].N != 7 {
		t.Fatalf("after %q: schema tables = %+v, %v; want all 7", after, tables, err)
	}
	runs, err := queryRows[struct {
		N int `json:"n"`
	}](ctx, f.s.t, "SELECT count() AS n FROM "+f.s.db+".runs WHERE run_id = 'x'")
	if err != nil || runs[0].N != 0 {
		t.Fatalf("after %q: a run was written: %+v, %v", after, runs, err)
	}
	if n := f.hits.Load(); n != 0 {
		t.Fatalf("after %q: the engine sent %d HTTP request(s)", after, n)
	}
	if n := f.conns.Load(); n != 0 {
		t.Fatalf("after %q: the engine opened %d TCP connection(s) to the canary listener", after, n)
	}
	if _, err := os.Stat(f.out); err == nil {
		t.Fatalf("after %q: %s was written", after, f.out)
	}
}

// TestConsoleRefusesAttacks runs every attack on the real engine: each fails
// with ErrReadOnly, and afterwards the schema is intact, no request left the
// engine and no file was written.
func TestConsoleRefusesAttacks(t *testing.T) {
	f := newConsoleFixture(t)
	check, embedded := f.recordWorkerSQL() // FuzzConsoleCheck's checks, run here on its seeds
	ctx := context.Background()
	for _, q := range consoleAttacks {
		q = f.expand(q)
		res, err := f.s.Query(ctx, q)
		if embedded {
			check(t, q, res, err)
		}
		// Refused by the console's rules, or not even parsed by the engine.
		if !errors.Is(err, ErrReadOnly) && (err == nil || !strings.Contains(err.Error(), "(SYNTAX_ERROR)")) {
			t.Errorf("Query(%q) = %v, %v; want ErrReadOnly", q, res, err)
		}
		if err != nil && (strings.Contains(err.Error(), "root:") || strings.Contains(err.Error(), "PATH=")) {
			t.Errorf("Query(%q): the error shows file contents: %v", q, err)
		}
		f.leaked(t, q, res, err)
		f.intact(t, q)
	}
}

// TestConsoleAnswersReads: the console still answers what analysts write.
func TestConsoleAnswersReads(t *testing.T) {
	f := newConsoleFixture(t)
	ctx := context.Background()
	if err := f.s.InsertRuns(ctx, []Run{{RunID: "r1", RequestID: "q1", Pipeline: "x", Status: "ok", CostUSD: 0.5}}); err != nil {
		t.Fatal(err)
	}
	check, embedded := f.recordWorkerSQL() // FuzzConsoleCheck's checks, run here on its seeds
	for _, q := range consoleReads {
		q = strings.ReplaceAll(f.expand(q), "runs_ids", "(SELECT run_id FROM runs)")
		res, err := f.s.Query(ctx, q)
		if err != nil {
			t.Errorf("Query(%q): %v", q, err)
		}
		if embedded {
			check(t, q, res, err)
		}
	}
	res, err := f.s.Query(ctx, "SELECT $$a'b$$ AS h, count() AS n FROM runs")
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "a'b" || res.Rows[0][1] != "1" {
		t.Fatalf("heredoc and count: %+v, %v", res, err)
	}
	f.intact(t, "reads")
}

// TestConsoleRunawayQuery: an endless scan ends with the engine's limit error,
// and the store answers the next call.
func TestConsoleRunawayQuery(t *testing.T) {
	f := newConsoleFixture(t)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT count() FROM system.numbers",
		"SELECT count() FROM numbers_mt(1000000000000)",
		"SELECT groupArray(number) FROM numbers(1000000000)",
	} {
		start := time.Now()
		_, err := f.s.Query(ctx, q)
		t.Logf("%s: refused after %v", q, time.Since(start).Round(time.Millisecond))
		if err == nil || !strings.Contains(err.Error(), "TOO_MANY_ROWS") && !strings.Contains(err.Error(), "MEMORY_LIMIT_EXCEEDED") && !strings.Contains(err.Error(), "TIMEOUT_EXCEEDED") {
			t.Errorf("Query(%q): %v; want a limit error", q, err)
		}
	}
	if _, err := f.s.SearchTraces(ctx, TraceSearch{}); err != nil {
		t.Fatalf("a page query after the runaway: %v", err)
	}
}

// TestConsoleBusy: with every slot taken, a console query is refused at once.
func TestConsoleBusy(t *testing.T) {
	f := newConsoleFixture(t)
	if !f.s.console.acquire() {
		t.Fatal("the only slot is free")
	}
	_, err := f.s.Query(context.Background(), "SELECT 1")
	f.s.console.release()
	if !errors.Is(err, ErrQueryBusy) {
		t.Fatalf("Query with no free slot: %v; want ErrQueryBusy", err)
	}
	if _, err := f.s.Query(context.Background(), "SELECT 1"); err != nil {
		t.Fatalf("Query with the slot free again: %v", err)
	}
}

// TestConsoleReadonlyUser: with a console user whose profile is readonly = 2
// the statement carries the limits but not readonly (the engine refuses any
// change of it); with readonly = 1 it carries no settings at all.
func TestConsoleReadonlyUser(t *testing.T) {
	f := newConsoleFixture(t)
	ctx := context.Background()
	lim := queryLimits{timeout: 5 * time.Second, maxRows: 10}
	for _, tc := range []struct {
		readonly int
		want     string
	}{
		{0, "SELECT 1\nSETTINGS " + lim.settings() + "readonly = 1"},
		{2, "SELECT 1\nSETTINGS " + strings.TrimSuffix(lim.settings(), ", ")},
		{1, "SELECT 1"},
	} {
		g := newConsoleGuard(strings.Trim(f.s.db, "`"), 1)
		g.userReadonly = tc.readonly
		got, err := g.prepare(ctx, f.s.t, "select 1;", lim)
		if err != nil || got != tc.want {
			t.Errorf("readonly %d: prepare = %q, %v; want %q", tc.readonly, got, err, tc.want)
			continue
		}
		if _, err := f.s.t.queryText(ctx, got); err != nil {
			t.Errorf("readonly %d: the engine refuses %q: %v", tc.readonly, got, err)
		}
	}
}

// BenchmarkConsoleQuery prints what the console's checks cost on the embedded
// engine: a console query (lexer, formatQuery, EXPLAIN AST, classify, run)
// against the same statement run directly.
func BenchmarkConsoleQuery(b *testing.B) {
	f := newConsoleFixture(b)
	ctx := context.Background()
	const q = "SELECT pipeline, count() FROM runs GROUP BY pipeline"
	b.Run("console", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.s.Query(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.s.t.queryText(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestConsoleHidesDiskPaths: every column of a readable system table that
// can hold a disk path is one the console refuses, and what the console
// answers from each readable system table (whole rows, or every other column
// of the tables with paths) never shows the engine's data folder.
func TestConsoleHidesDiskPaths(t *testing.T) {
	f := newConsoleFixture(t)
	ctx := context.Background()
	if err := f.s.InsertRuns(ctx, []Run{{RunID: "r1", RequestID: "q1", Pipeline: "x", Status: "ok"}}); err != nil {
		t.Fatal(err)
	}
	type col struct {
		Table string `json:"table"`
		Name  string `json:"name"`
	}
	cols, err := queryRows[col](ctx, f.s.t, "SELECT table, name FROM system.columns WHERE database = 'system' ORDER BY table, position")
	if err != nil {
		t.Fatal(err)
	}
	others := map[string][]string{}
	for _, c := range cols {
		if !consoleSystemTables[c.Table] {
			continue
		}
		lower := strings.ToLower(c.Name)
		if strings.Contains(lower, "path") || strings.HasSuffix(lower, "filenames") {
			if !consolePathColumns[lower] || !consolePathTables[c.Table] {
				t.Errorf("system.%s.%s may hold a disk path but the console does not refuse it", c.Table, c.Name)
			}
			continue
		}
		others[c.Table] = append(others[c.Table], c.Name) // nested columns (a.b) unquoted
	}
	dir := testEngine.dir
	for table := range consoleSystemTables {
		if len(others[table]) == 0 {
			continue // not in this engine's build
		}
		q := "SELECT * FROM system." + table + " LIMIT 1000"
		if consolePathTables[table] {
			q = "SELECT " + strings.Join(others[table], ", ") + " FROM system." + table + " LIMIT 1000"
		}
		if strings.HasPrefix(table, "numbers") || strings.HasPrefix(table, "zeros") {
			q = "SELECT * FROM system." + table + " LIMIT 10"
		}
		res, err := f.s.Query(ctx, q)
		if err != nil {
			t.Errorf("Query(%q): %v", q, err)
			continue
		}
		for _, row := range res.Rows {
			for i, v := range row {
				if strings.Contains(v, dir) {
					t.Errorf("system.%s.%s shows the data folder: %q", table, res.Columns[i], v)
				}
			}
		}
	}
}

// TestConsoleCanariesWork: the canaries the attack test and the fuzz target
// watch do catch a read outside the database. Run on the engine directly
// (not through the console), a file() read shows the token and a url() read
// connects to the listener.
func TestConsoleCanariesWork(t *testing.T) {
	f := newConsoleFixture(t)
	ctx := context.Background()
	res, err := f.s.t.queryText(ctx, f.expand("SELECT * FROM file('{CANARY}', 'LineAsString')"))
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != f.token {
		t.Fatalf("the engine read of the canary file = %+v, %v; want the token", res, err)
	}
	_, _ = f.s.t.queryText(ctx, f.expand("SELECT * FROM url('http://{TCP}/x', 'LineAsString') SETTINGS http_max_tries = 1, http_connection_timeout = 1, http_receive_timeout = 1"))
	if f.conns.Load() == 0 {
		t.Fatal("a url() read on the engine did not reach the canary listener")
	}
}

// TestConsoleAllowListNamesEngineFunctions: every name of the reviewed
// allow-list is a function of this engine under its own name (not an alias),
// scalar or aggregate as the list says, and every combinator exists; so the
// list is checked against the engine it allows functions of, and an engine
// that renames one shows here.
func TestConsoleAllowListNamesEngineFunctions(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	p, err := s.console.functionPolicy(ctx, s.t)
	if err != nil {
		t.Fatal(err)
	}
	for _, list := range []struct {
		names     map[string]bool
		aggregate int64
	}{{consoleFunctions, 0}, {consoleAggregates, 1}} {
		for name := range list.names {
			f, ok := p.exact[name]
			switch {
			case !ok:
				t.Errorf("%s: not a function of this engine", name)
			case f.AliasTo != "":
				t.Errorf("%s: an alias of %s; list the function itself", name, f.AliasTo)
			case f.IsAggregate != list.aggregate:
				t.Errorf("%s: is_aggregate %d; listed as %d", name, f.IsAggregate, list.aggregate)
			}
		}
	}
	for c := range consoleCombinators {
		if !slices.Contains(p.combinators, c) {
			t.Errorf("combinator %s: not a combinator of this engine", c)
		}
	}
	if n := len(consoleFunctions) + len(consoleAggregates); n > 500 {
		t.Errorf("the allow-list has %d functions; it is a reviewed list, not the engine's", n)
	}
	t.Logf("allowed: %d scalar and %d aggregate functions of the engine's %d", len(consoleFunctions), len(consoleAggregates), len(p.exact))
}

// TestConsoleAnalysisLimits: a statement over the console's size limits is
// refused before it runs (the text by our own check, the tree by the
// worker engine's parse limits), naming the limits; and our own check of the
// syntax tree refuses what an engine with wider limits (a server's
// defaults: 50,000 elements, depth 1,000) would pass.
func TestConsoleAnalysisLimits(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	nested := "SELECT " + strings.Repeat("abs(", consoleMaxASTDepth) + "1" + strings.Repeat(")", consoleMaxASTDepth)
	wide := "SELECT " + strings.TrimSuffix(strings.Repeat("1, ", consoleMaxASTElements+10), ", ")
	for _, tc := range []struct{ name, sql, want string }{
		{"long text", "SELECT '" + strings.Repeat("x", consoleMaxQueryBytes) + "'", "the console takes at most 65536"},
		{"deep tree", nested, "over the console's size limits"},
		{"wide tree", wide, "over the console's size limits"},
	} {
		_, err := s.Query(ctx, tc.sql)
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 2*maxErrorBytes {
			t.Errorf("%s: %.300v; want a short ErrReadOnly saying %q", tc.name, err, tc.want)
		}
	}
	// Just under the limits the console answers.
	ok := "SELECT " + strings.Repeat("abs(", 40) + "1" + strings.Repeat(")", 40)
	if _, err := s.Query(ctx, ok); err != nil {
		t.Errorf("40 nested calls: %v", err)
	}
	// The Go check on trees the engine's defaults let through.
	for _, tc := range []struct{ name, sql, want string }{
		{"deep tree", nested, "nests deeper than 200 syntax levels"},
		{"wide tree", wide, "syntax elements; the console takes at most 10000"},
	} {
		res, err := s.t.queryText(ctx, "EXPLAIN AST "+tc.sql)
		if err != nil {
			t.Fatalf("%s: the engine's defaults refuse it: %v", tc.name, err)
		}
		var dump strings.Builder
		for _, r := range res.Rows {
			dump.WriteString(r[0] + "\n")
		}
		nodes, err := parseAST(dump.String())
		if err != nil {
			t.Fatal(err)
		}
		if err := checkTreeSize(nodes); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: checkTreeSize = %v; want ErrReadOnly saying %q", tc.name, err, tc.want)
		}
	}
}

// TestConsoleTablesRead: the snapshot freezes the tables a statement names
// (in FROM, joins, subqueries, IN, view()), all of them when it reads a
// system table, none for SHOW TABLES; a WITH name is no table.
func TestConsoleTablesRead(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		sql  string
		want []string // nil with all
		all  bool
	}{
		{"SELECT count() FROM runs", []string{"runs"}, false},
		{"SELECT r.run_id FROM runs AS r JOIN " + s.db + ".steps AS st ON st.run_id = r.run_id WHERE r.request_id IN (SELECT request_id FROM requests)", []string{"requests", "runs", "steps"}, false},
		{"SELECT 1 WHERE 'x' IN scores", []string{"scores"}, false},
		{"SELECT * FROM view(SELECT run_id FROM runs)", []string{"runs"}, false},
		{"WITH c AS (SELECT 1 AS x) SELECT x FROM c", nil, false},
		{"SHOW TABLES", nil, false},
		{"SELECT name, total_rows FROM system.tables WHERE database = currentDatabase()", nil, true},
		{"SELECT table_name FROM information_schema.tables", nil, true},
		{"SELECT count() FROM system.numbers WHERE number IN (SELECT 1)", nil, false},
	} {
		_, reads, err := s.console.checkReads(ctx, s.t, tc.sql)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		var got []string
		for _, table := range []string{"requests", "runs", "steps", "scores", "suite_runs", "cases", "shadow_work"} {
			if !reads.all && reads.has(table) {
				got = append(got, table)
			}
		}
		if reads.all != tc.all || !slices.Equal(got, tc.want) {
			t.Errorf("%s: reads %v (all %v); want %v (all %v)", tc.sql, got, reads.all, tc.want, tc.all)
		}
	}
}
