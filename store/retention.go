package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// retentionTable is one table's TTL settings: the time column rows age by,
// the table TTL rule for a configuration ("" for none) and the text columns
// Retention.Bodies empties.
type retentionTable struct {
	name    string
	timeCol string
	bodies  []string
	rule    func(RetentionConfig) string
	// mergeFirst: rows of one key must meet in a merge before the TTL applies.
	mergeFirst bool
}

// after is the rule "rows of col older than the duration get deleted".
func after(col string, d func(RetentionConfig) time.Duration) func(RetentionConfig) string {
	return func(r RetentionConfig) string {
		if d(r) <= 0 {
			return ""
		}
		return ttlExpr(col, d(r))
	}
}

var retentionTables = []retentionTable{
	{"requests", "received_at", []string{"input"}, after("received_at", func(r RetentionConfig) time.Duration { return r.Requests }), false},
	{"runs", "started_at", []string{"final_output", "reasoning", "choices", "tool_calls", "plan_raw", "plan"}, after("started_at", func(r RetentionConfig) time.Duration { return r.Runs }), false},
	{"steps", "started_at", []string{"subtask", "messages", "output", "tool_calls", "reasoning"}, after("started_at", func(r RetentionConfig) time.Duration { return r.Steps }), false},
	{"scores", "created_at", []string{"explanation"}, after("created_at", func(r RetentionConfig) time.Duration { return r.Scores }), false},
	// Judgments are scores of pairs: they age like scores; the judge's raw replies are bodies.
	{"judgments", "judged_at", []string{"raw_1", "raw_2"}, after("judged_at", func(r RetentionConfig) time.Duration { return r.Scores }), false},
	{"shadow_work", "inserted_at", nil, workTTL, true},
	// The offered counts are the coverage of the requests: they age with them.
	{"tap_offered", "window_start", nil, after("window_start", func(r RetentionConfig) time.Duration { return r.Requests }), false},
}

// workTTL is shadow_work's rule. A done row is bookkeeping only (the run it
// marks is in runs, and a stored run counts as done by itself, see
// PendingWork), so done rows go Work after they were written (inserted_at, not
// received_at: ClickHouse also applies TTLs at INSERT, and a done mark written
// for an old backlog request must not be dropped on arrival, leaving its
// pending row alone). A merge replaces the pending row by the done one before
// the TTL deletes it. A pending row is never expired while its request row may
// exist: pending rows go only after Requests (from received_at), when the
// request row they need has gone too (PendingWork leaves out work whose
// request row is missing, so such a row could never be done).
func workTTL(r RetentionConfig) string {
	var rules []string
	if r.Work > 0 {
		rules = append(rules, ttlExpr("inserted_at", r.Work)+" WHERE status = '"+WorkDone+"'")
	}
	if r.Requests > 0 {
		rules = append(rules, ttlExpr("received_at", r.Requests)+" WHERE status = '"+WorkPending+"'")
	}
	return strings.Join(rules, ", ")
}

// ttlExpr is the TTL expression for rows aging by col: d after the row's time.
// ClickHouse renders it back exactly so in SHOW CREATE TABLE.
func ttlExpr(col string, d time.Duration) string {
	return "toDateTime(" + col + ") + toIntervalSecond(" + strconv.FormatInt(int64(d/time.Second), 10) + ")"
}

// tableTTL returns the table TTL clause of a one-line CREATE TABLE text: what
// follows " TTL " after the ENGINE, up to " SETTINGS "; "" when there is none.
func tableTTL(create string) string {
	engine := create
	if i := strings.Index(create, "ENGINE = "); i >= 0 {
		engine = create[i:]
	}
	_, ttl, ok := strings.Cut(engine, " TTL ")
	if !ok {
		return ""
	}
	if i := strings.Index(ttl, " SETTINGS "); i >= 0 {
		ttl = ttl[:i]
	}
	return strings.TrimSpace(ttl)
}

// retentionStatements compares each table's current DDL (SHOW CREATE TABLE
// text, by table) with r and returns the ALTERs that make them equal: MODIFY
// TTL / REMOVE TTL for the table, MODIFY COLUMN … TTL / REMOVE TTL for the text
// bodies. A table already as configured gets no statement, so opening the
// store again changes nothing.
func (s *sqlStore) retentionStatements(r RetentionConfig, current map[string]string) []string {
	var out []string
	for _, t := range retentionTables {
		create := strings.Join(strings.Fields(current[t.name]), " ") // one line, as system.tables shows it
		target := s.mutationTarget(t.name)
		want, has := t.rule(r), tableTTL(create)
		switch {
		case want != "" && has != want:
			if t.mergeFirst {
				// MODIFY TTL rewrites each part on its own: merge first, so a
				// pending row and the done row replacing it share one part and
				// an expired done mark never leaves its pending row behind.
				out = append(out, "OPTIMIZE TABLE "+target+" FINAL")
			}
			out = append(out, "ALTER TABLE "+target+" MODIFY TTL "+want)
		case want == "" && has != "":
			out = append(out, "ALTER TABLE "+target+" REMOVE TTL")
		}
		bodyWant := ""
		if r.Bodies > 0 {
			bodyWant = ttlExpr(t.timeCol, r.Bodies)
		}
		for _, col := range t.bodies {
			has := columnTTL(create, col)
			switch {
			case bodyWant != "" && has != bodyWant:
				out = append(out, "ALTER TABLE "+target+" MODIFY COLUMN `"+col+"` TTL "+bodyWant)
			case bodyWant == "" && has != "":
				out = append(out, "ALTER TABLE "+target+" MODIFY COLUMN `"+col+"` REMOVE TTL")
			}
		}
	}
	return out
}

// columnTTL returns the TTL expression of column col in a one-line CREATE
// TABLE text ("`col` String DEFAULT ” TTL <expr>, ..."), "" when it has none.
func columnTTL(create, col string) string {
	i := strings.Index(create, "`"+col+"` ")
	if i < 0 {
		return ""
	}
	def := create[i:]
	if end := strings.Index(def, ", `"); end >= 0 {
		def = def[:end]
	}
	if end := strings.Index(def, ", INDEX "); end >= 0 {
		def = def[:end]
	}
	if end := strings.Index(def, ") ENGINE"); end >= 0 {
		def = def[:end]
	}
	_, expr, ok := strings.Cut(def, " TTL ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(expr)
}

// applyRetention sets the tables' TTLs to r (see RetentionConfig).
func (s *sqlStore) applyRetention(ctx context.Context, r RetentionConfig) error {
	type row struct {
		Name   string `json:"name"`
		Create string `json:"create_table_query"`
	}
	names := make([]string, len(retentionTables))
	for i, t := range retentionTables {
		names[i] = t.name
		if s.cluster != "" {
			names[i] += localSuffix
		}
	}
	rows, err := queryRows[row](ctx, s.t,
		"SELECT name, create_table_query FROM system.tables WHERE database = {db:String} AND has({names:Array(String)}, name)",
		Params{}.Str("db", s.dbName).Strs("names", names))
	if err != nil {
		return fmt.Errorf("store: retention: read tables: %w", err)
	}
	current := map[string]string{}
	for _, r := range rows {
		current[strings.TrimSuffix(r.Name, localSuffix)] = r.Create
	}
	for _, stmt := range s.retentionStatements(r, current) {
		if err := s.t.exec(ctx, stmt, nil); err != nil {
			return fmt.Errorf("store: retention: %s: %w", stmt, err)
		}
	}
	return nil
}
