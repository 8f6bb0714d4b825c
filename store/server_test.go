package store

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	chparams "github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// The server transport cannot be exercised here (no server on the test machine);
// these check its value rendering, which must match the embedded engine's.
func TestServerRendering(t *testing.T) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7_000_000, time.UTC)
	s := "x\xff'"
	tests := []struct {
		v      any
		dbType string
		want   string
	}{
		{"a\tb", "String", "a\tb"},
		{at, "DateTime64(3, 'UTC')", "2026-02-03 04:05:06.007"},
		{at, "DateTime", "2026-02-03 04:05:06"},
		{at, "Date", "2026-02-03"},
		{[]string{"a", "b'"}, "Array(String)", `['a','b\'']`},
		{map[string]string{"k": "v"}, "Map(String, String)", "{'k':'v'}"},
		{(*string)(nil), "Nullable(String)", `\N`},
		{&s, "Nullable(String)", s},
		{0.25, "Float64", "0.25"},
		{uint64(7), "UInt64", "7"},
		{true, "Bool", "true"},
	}
	for _, tc := range tests {
		if got := renderText(reflect.ValueOf(tc.v), tc.dbType, false); got != tc.want {
			t.Errorf("renderText(%v, %s) = %q; want %q", tc.v, tc.dbType, got, tc.want)
		}
	}
}

// Values scanned by the driver land in the model fields as the embedded path
// puts them: numbers converted, NULL and empty containers as zero, the epoch as
// the zero time.
func TestAssignScanned(t *testing.T) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7_000_000, time.FixedZone("x", 3600))
	str := "s\xff"
	tests := []struct {
		name string
		src  any
		want any
	}{
		{"string bytes kept", "a\x00\xff'", "a\x00\xff'"},
		{"uint64 count into int", uint64(7), 7},
		{"int32 into int32", int32(-3), int32(-3)},
		{"float64", 0.25, 0.25},
		{"bool", true, true},
		{"time in UTC", at, at.UTC()},
		{"epoch is zero", time.Unix(0, 0).UTC(), time.Time{}},
		{"nullable string", &str, str},
		{"null string", (*string)(nil), ""},
		{"array", []string{"a", "b"}, []string{"a", "b"}},
		{"empty array is nil", []string{}, []string(nil)},
		{"map", map[string]string{"k": "v"}, map[string]string{"k": "v"}},
		{"empty map is nil", map[string]string{}, map[string]string(nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := reflect.New(reflect.TypeOf(tc.want)).Elem()
			if err := assignScanned(dst, tc.src); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dst.Interface(), tc.want) {
				t.Errorf("got %#v; want %#v", dst.Interface(), tc.want)
			}
		})
	}
	for _, bad := range []struct {
		src any
		dst any
	}{{"7", 0}, {1, ""}, {at, ""}, {true, 0}} {
		if err := assignScanned(reflect.New(reflect.TypeOf(bad.dst)).Elem(), bad.src); err == nil {
			t.Errorf("assignScanned(%T into %T) succeeded", bad.src, bad.dst)
		}
	}
}

// The batch INSERT names exactly the model's ch-tagged fields, and every field
// is a column of the migrated table (on the real engine) with a Go type the
// driver appends to that column type; every column without a DEFAULT has a field.
func TestBatchColumnsMatchDDL(t *testing.T) {
	s := openTestStore(t)
	goTypes := map[string]reflect.Kind{
		"String": reflect.String, "LowCardinality(String)": reflect.String, "Int32": reflect.Int32, "Int64": reflect.Int64,
		"Float64": reflect.Float64, "Bool": reflect.Bool, "DateTime64(3, 'UTC')": reflect.Struct,
		"Array(String)": reflect.Slice, "Map(String, String)": reflect.Map,
	}
	for _, tc := range []struct {
		table string
		typ   reflect.Type
	}{
		{"requests", reflect.TypeFor[Request]()}, {"runs", reflect.TypeFor[Run]()}, {"steps", reflect.TypeFor[Step]()},
		{"scores", reflect.TypeFor[Score]()}, {"suite_runs", reflect.TypeFor[SuiteRun]()}, {"cases", reflect.TypeFor[Case]()},
		{"audit_log", reflect.TypeFor[AuditEntry]()}, {"shadow_work", reflect.TypeFor[Work]()},
		{"forgotten_subjects", reflect.TypeFor[ForgottenSubject]()}, {"judgments", reflect.TypeFor[Judgment]()},
		{"verdict_notices", reflect.TypeFor[VerdictNotice]()}, {"suite_looks", reflect.TypeFor[SuiteLook]()}, {"flow_exports", reflect.TypeFor[FlowExport]()},
	} {
		t.Run(tc.table, func(t *testing.T) {
			type col struct {
				Name        string `json:"name"`
				Type        string `json:"type"`
				DefaultKind string `json:"default_kind"`
			}
			cols, err := queryRows[col](context.Background(), s.t, "SELECT name, type, default_kind FROM system.columns WHERE database = {db:String} AND table = {t:String}",
				Params{}.Str("db", s.dbName).Str("t", tc.table))
			if err != nil {
				t.Fatal(err)
			}
			ddl := map[string]col{}
			for _, c := range cols {
				ddl[c.Name] = c
			}
			fields := map[string]bool{}
			for i := range tc.typ.NumField() {
				f := tc.typ.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if f.Tag.Get("ch") != "" {
					t.Errorf("field %s: a second column name in a ch tag; the json tag names the column", f.Name)
				}
				fields[name] = true
				c, ok := ddl[name]
				if !ok {
					t.Errorf("field %s: no column %q in %s", f.Name, name, tc.table)
					continue
				}
				if want, ok := goTypes[c.Type]; !ok || f.Type.Kind() != want {
					t.Errorf("field %s (%s) into column %s %s", f.Name, f.Type, name, c.Type)
				}
			}
			for name, c := range ddl {
				if !fields[name] && c.DefaultKind == "" {
					t.Errorf("column %s.%s has no field and no default", tc.table, name)
				}
			}
		})
	}
	if got, want := batchInsertSQL("`db`", "runs", []string{"run_id", "index"}), "INSERT INTO `db`.runs (`run_id`, `index`)"; got != want {
		t.Errorf("batch insert statement %q; want %q", got, want)
	}
}

// A server batch gets each row's values in the order of its columns, a zero
// time as the Unix epoch.
func TestRowValuesFollowColumns(t *testing.T) {
	run := Run{RunID: "r-1", RequestID: "q-1", LatencyMs: 1.5, ResponseHeaders: map[string]string{"retry-after": "2"}, Calls: 3}
	cols, vals := columnsOf[Run](), rowValues(reflect.ValueOf(run))
	if len(cols) != len(vals) {
		t.Fatalf("%d columns, %d values", len(cols), len(vals))
	}
	want := map[string]any{"run_id": "r-1", "request_id": "q-1", "latency_ms": 1.5, "calls": int32(3),
		"response_headers": map[string]string{"retry-after": "2"}, "started_at": epoch}
	for i, c := range cols {
		if w, ok := want[c]; ok && !reflect.DeepEqual(vals[i], w) {
			t.Errorf("column %s = %#v, want %#v", c, vals[i], w)
		}
		delete(want, c)
	}
	if len(want) > 0 {
		t.Errorf("columns missing: %v", want)
	}
}

// Bound parameters reach the engine as values, never as SQL: quotes,
// backslashes, control bytes and invalid UTF-8 come back exactly.
func TestParamsBindOnEngine(t *testing.T) {
	s := openTestStore(t)
	at := time.Date(2026, 2, 3, 4, 5, 6, 7_000_000, time.UTC)
	for _, v := range []string{"plain", "it's", `back\slash`, "tab\tnew\nline\r", "bytes \xff\xfe", "'); DROP TABLE runs; --", ""} {
		type row struct {
			V  string    `json:"v"`
			N  int64     `json:"n"`
			At time.Time `json:"at"`
			A  []string  `json:"a"`
		}
		rows, err := queryRows[row](context.Background(), s.t, "SELECT {v:String} AS v, length({v:String}) AS n, {at:DateTime64(3, 'UTC')} AS at, {a:Array(String)} AS a",
			Params{}.Str("v", v).Time("at", at).Strs("a", []string{v, "x"}))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if len(rows) != 1 || rows[0].V != v || rows[0].N != int64(len(v)) || !rows[0].At.Equal(at) || !reflect.DeepEqual(rows[0].A, []string{v, "x"}) {
			t.Errorf("%q came back as %+v", v, rows)
		}
	}
}

// readQuotedField undoes a quoted Field dump as the server's readQuoted does:
// the quotes go, and \\, \', \n, \t, \r and \0 become their bytes.
func readQuotedField(t *testing.T, dump string) string {
	t.Helper()
	if len(dump) < 2 || dump[0] != '\'' || dump[len(dump)-1] != '\'' {
		t.Fatalf("field dump %q is not quoted", dump)
	}
	return unescapeTSV([]byte(dump[1 : len(dump)-1]))
}

// A bound value reaches the server as the driver encodes it (a quoted Field
// dump of our escaped text, clickhouse-go's proto.Parameters); undoing the
// dump as the server does and then the escaped form it parses parameters in
// gives back the exact value, as SET param_ does on the embedded engine
// (TestParamsBindOnEngine).
func TestServerParameterEncoding(t *testing.T) {
	for _, v := range []string{"plain", "it's", `back\slash`, "tab\tnew\nline\r", "nul\x00byte", "bytes \xff\xfe", "'); DROP TABLE runs; --"} {
		p := Params{}.Str("v", v)
		var buf chproto.Buffer
		if err := (chparams.Parameters{{Key: "v", Value: p["v"]}}).Encode(&buf, 0); err != nil {
			t.Fatal(err)
		}
		// key (uvarint length + bytes), flags (uvarint), dump (uvarint length + bytes)
		b := buf.Buf
		n, k := binary.Uvarint(b)
		b = b[k+int(n):]
		_, k = binary.Uvarint(b)
		b = b[k:]
		n, k = binary.Uvarint(b)
		dump := string(b[k : k+int(n)])
		if got := unescapeTSV([]byte(readQuotedField(t, dump))); got != v {
			t.Errorf("%q reaches the server as %q, parsed back as %q", v, dump, got)
		}
	}
}

// consoleServerFake stands for a ClickHouse server on the console's path:
// the checks (formatQuery, EXPLAIN AST, system.functions) are answered by the
// embedded engine; the console statement itself is recorded with the query
// id it was sent under and, when hang is set, never answered.
type consoleServerFake struct {
	*embedded
	hang      bool
	mu        sync.Mutex
	statement string
	queryID   string
}

func (f *consoleServerFake) queryText(ctx context.Context, sql string) (QueryResult, error) {
	if !strings.Contains(sql, "\nSETTINGS ") {
		return f.embedded.queryText(ctx, sql) // a check
	}
	f.mu.Lock()
	f.statement, f.queryID = sql, queryIDFrom(ctx)
	f.mu.Unlock()
	if f.hang {
		<-ctx.Done()
		return QueryResult{}, ctx.Err()
	}
	return QueryResult{Columns: []string{"1"}, Rows: [][]string{{"1"}}}, nil
}

// TestConsoleOnServer: on a server the console statement goes out under a
// query id of its own with the limits and readonly appended; when no answer
// comes within the time limit plus serverKillAfter, the store's own
// connection sends KILL QUERY for exactly that id, and the caller gets
// ErrQueryKilled.
func TestConsoleOnServer(t *testing.T) {
	needEngine(t)
	base := openTestStore(t)
	for _, hang := range []bool{false, true} {
		fake := &consoleServerFake{embedded: base.t.(*embedded), hang: hang}
		kills := &recordingTransport{}
		s := &sqlStore{t: kills, consoleT: fake, db: base.db, dbName: base.dbName, console: newConsoleGuard(base.dbName, 1),
			queryLimits: queryLimits{timeout: time.Second, maxRows: 10, maxMemory: 1 << 30}}
		begin := time.Now()
		res, err := s.Query(context.Background(), "SELECT 1")
		took := time.Since(begin)
		fake.mu.Lock()
		stmt, id := fake.statement, fake.queryID
		fake.mu.Unlock()
		for _, want := range []string{"SELECT 1\nSETTINGS max_execution_time = 1, timeout_overflow_mode = 'throw', max_result_rows = 10",
			"max_ast_elements = 10000", "max_rows_in_join = 10000000", "allow_ddl = 0", "readonly = 1"} {
			if !strings.Contains(stmt, want) {
				t.Errorf("hang %v: the statement sent %q lacks %q", hang, stmt, want)
			}
		}
		if !strings.HasPrefix(id, "console-") {
			t.Errorf("hang %v: the statement went out under query id %q; want one of the console's", hang, id)
		}
		sent := kills.take()
		if !hang {
			if err != nil || len(res.Rows) != 1 || len(sent) != 0 {
				t.Errorf("an answered statement: %+v, %v, kills %q; want the answer and no KILL QUERY", res, err, sent)
			}
			continue
		}
		if !errors.Is(err, ErrQueryKilled) {
			t.Errorf("an unanswered statement: %v; want ErrQueryKilled", err)
		}
		if want := "KILL QUERY WHERE query_id = '" + id + "' ASYNC"; len(sent) != 1 || sent[0] != want {
			t.Errorf("kills sent = %q; want [%q]", sent, want)
		}
		t.Logf("the unanswered statement was given up after %v", took)
	}
}
