package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func showCreate(t *testing.T, s *sqlStore, table string) string {
	t.Helper()
	res, err := s.t.queryText(context.Background(), "SHOW CREATE TABLE "+s.db+"."+table) // not through the console: it refuses SHOW CREATE
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows[0][0]
}

// The configured retention shows up as table and column TTLs on the real
// engine; opening again with other figures replaces them, with zero removes them.
func TestRetentionTTLs(t *testing.T) {
	needEngine(t)
	ctx := context.Background()
	cfg := testConfig(testEngine.dir, testDatabase(t))
	day := 24 * time.Hour
	steps := []struct {
		name      string
		retention RetentionConfig
		want      map[string][]string // table → fragments of SHOW CREATE TABLE
		notWant   map[string][]string
	}{
		{"set", RetentionConfig{Requests: 90 * day, Runs: 365 * day, Steps: 90 * day, Scores: 365 * day, Bodies: 30 * day, Work: 7 * day},
			map[string][]string{
				"requests": {"`input` String TTL toDateTime(received_at) + toIntervalSecond(2592000)", "TTL toDateTime(received_at) + toIntervalSecond(7776000)"},
				"runs": {"`final_output` String TTL toDateTime(started_at) + toIntervalSecond(2592000)", "TTL toDateTime(started_at) + toIntervalSecond(31536000)",
					"`reasoning` String DEFAULT '' TTL toDateTime(started_at) + toIntervalSecond(2592000)"},
				"steps":       {"`output` String TTL toDateTime(started_at) + toIntervalSecond(2592000)", "`messages` String TTL", "TTL toDateTime(started_at) + toIntervalSecond(7776000)"},
				"scores":      {"`explanation` String TTL", "TTL toDateTime(created_at) + toIntervalSecond(31536000)"},
				"shadow_work": {"TTL toDateTime(inserted_at) + toIntervalSecond(604800) WHERE status = 'done', toDateTime(received_at) + toIntervalSecond(7776000) WHERE status = 'pending'"},
			}, nil},
		{"changed", RetentionConfig{Requests: 30 * day, Bodies: 7 * day},
			map[string][]string{"requests": {"TTL toDateTime(received_at) + toIntervalSecond(2592000)", "`input` String TTL toDateTime(received_at) + toIntervalSecond(604800)"},
				"shadow_work": {"TTL toDateTime(received_at) + toIntervalSecond(2592000) WHERE status = 'pending' SETTINGS"}},
			map[string][]string{"runs": {"toIntervalSecond(31536000)"}, "scores": {"toIntervalSecond(31536000)"}, "shadow_work": {"WHERE status = 'done'"}}},
		{"removed", RetentionConfig{}, nil, map[string][]string{"requests": {" TTL "}, "runs": {" TTL "}, "steps": {" TTL "}, "scores": {" TTL "}, "shadow_work": {" TTL "}}},
	}
	for _, st := range steps {
		cfg.Retention = st.retention
		s, err := open(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: open: %v", st.name, err)
		}
		for table, frags := range st.want {
			create := strings.Join(strings.Fields(showCreate(t, s, table)), " ")
			for _, f := range frags {
				if !strings.Contains(create, f) {
					t.Errorf("%s: %s lacks %q:\n%s", st.name, table, f, create)
				}
			}
		}
		for table, frags := range st.notWant {
			create := showCreate(t, s, table)
			for _, f := range frags {
				if strings.Contains(create, f) {
					t.Errorf("%s: %s still has %q:\n%s", st.name, table, f, create)
				}
			}
		}
		// Opening again as configured changes nothing.
		if again := s.retentionStatements(st.retention, currentCreates(t, s)); len(again) != 0 {
			t.Errorf("%s: reopening would run %v", st.name, again)
		}
		s.Close()
	}
}

func currentCreates(t *testing.T, s *sqlStore) map[string]string {
	out := map[string]string{}
	for _, rt := range retentionTables {
		out[rt.name] = showCreate(t, s, rt.name)
	}
	return out
}

// On a cluster the migrations create Replicated tables with Distributed tables
// over them, and retention and deletions name the local tables ON CLUSTER; the
// generated DDL is compared with testdata/cluster_ddl.golden.sql.
func TestClusterDDLGolden(t *testing.T) {
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	s := &sqlStore{db: quoteIdent("shadow"), dbName: "shadow", cluster: "shadow_cluster"}
	var all []string // statements, in order
	var b strings.Builder
	section := func(title string, stmts []string) {
		fmt.Fprintf(&b, "-- %s\n\n", title)
		for _, st := range stmts {
			b.WriteString(st + ";\n\n")
		}
		all = append(all, stmts...)
	}
	boot, err := s.ddl(bootStatements(s.db))
	if err != nil {
		t.Fatal(err)
	}
	section("boot: database and schema_migrations", boot)
	for _, m := range migs {
		stmts, err := s.ddl(substituteDB(m.statements, s.db))
		if err != nil {
			t.Fatalf("migration %04d: %v", m.version, err)
		}
		section(fmt.Sprintf("migration %04d_%s", m.version, m.name), stmts)
	}
	section("retention: requests 90 days, bodies 30 days", s.retentionStatements(RetentionConfig{Requests: 90 * 24 * time.Hour, Bodies: 30 * 24 * time.Hour}, nil))
	section("forget: old_parts_lifetime of the tables it deletes from, set at open", s.forgetSettingStatements(nil))
	forget := s.keyStatements()
	for _, t := range forgetTables {
		forget = append(forget, s.forgetStatement(t.table, t.col, t.kind, "e-0f1e2d3c"))
	}
	section("forget: the erasure's keys (hash and erasure id bound), then its deletions", forget)
	got := b.String()
	golden := filepath.Join("testdata", "cluster_ddl.golden.sql")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create)", err)
	}
	if got != string(want) {
		t.Errorf("cluster DDL differs from %s (UPDATE_GOLDEN=1 rewrites it):\n%s", golden, got)
	}
	for _, stmt := range all {
		if strings.HasPrefix(stmt, "CREATE TABLE") && !strings.Contains(stmt, "ON CLUSTER `shadow_cluster`") {
			t.Errorf("statement not ON CLUSTER: %.80s", stmt)
		}
	}
	if _, err := s.ddl([]string{"DROP TABLE x"}); err == nil {
		t.Error("a statement without a replicated form was accepted on a cluster")
	}
}

// shadow_work's TTL on the real engine: a done mark older than
// retention.work goes, with the pending row it replaced (the work is not
// resurrected as owed) even when the two were written apart; a done mark
// written now for an old request stays; a pending row stays however old while
// its request may exist, and goes only once retention.requests has removed the
// request.
func TestShadowWorkRetention(t *testing.T) {
	needEngine(t)
	ctx := context.Background()
	cfg := testConfig(testEngine.dir, testDatabase(t))
	day := 24 * time.Hour
	cfg.Retention = RetentionConfig{} // rows written first, as before the TTL was set
	s, err := open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	old := time.Now().UTC().Add(-30 * day)
	ts := func(at time.Time) string { return at.Format("2006-01-02 15:04:05.000") }
	// Each INSERT is its own part: a pending row and its done mark meet only
	// in a merge.
	for _, row := range []struct {
		id, status         string
		received, inserted time.Time
	}{
		{"old-done", WorkPending, old, old},
		{"old-done", WorkDone, old, old.Add(time.Minute)},
		{"old-pending", WorkPending, old, old},
		{"backlog-done", WorkPending, old, old},
	} {
		stmt := fmt.Sprintf("INSERT INTO %s.shadow_work (request_id, pipeline, pipeline_version, status, received_at, inserted_at) VALUES ('%s', 'conductor', 'v1', '%s', '%s', '%s')",
			s.db, row.id, row.status, ts(row.received), ts(row.inserted))
		if err := s.t.exec(ctx, stmt, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	cfg.Retention = RetentionConfig{Work: day}
	if s, err = open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// A done mark of an old backlog request, written now (the INSERT applies
	// TTLs too).
	if err := s.InsertWork(ctx, []Work{{RequestID: "backlog-done", Pipeline: "conductor", PipelineVersion: "v1", Status: WorkDone, ReceivedAt: old}}); err != nil {
		t.Fatal(err)
	}
	rows := func() string {
		t.Helper()
		if err := s.t.exec(ctx, "OPTIMIZE TABLE "+s.db+".shadow_work FINAL", nil); err != nil { // a merge, which applies TTLs
			t.Fatal(err)
		}
		res, err := s.t.queryText(ctx, "SELECT arrayStringConcat(groupArray(request_id || ':' || status), ' ') FROM (SELECT request_id, status FROM "+s.db+".shadow_work FINAL ORDER BY request_id)")
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows[0][0]
	}
	if got, want := rows(), "backlog-done:done old-pending:pending"; got != want {
		t.Errorf("shadow_work with retention.work 24h = %q; want %q", got, want)
	}
	s.Close()
	cfg.Retention.Requests = 7 * day
	if s, err = open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(), "backlog-done:done"; got != want {
		t.Errorf("shadow_work after retention.requests 7 days = %q; want %q (pending work of an expired request goes)", got, want)
	}
}
