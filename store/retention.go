package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// retentionTable is one table's TTL settings: the time column rows age by and
// the text columns Retention.Bodies empties.
type retentionTable struct {
	name    string
	timeCol string
	bodies  []string
	ttl     func(RetentionConfig) time.Duration
}

var retentionTables = []retentionTable{
	{"requests", "received_at", []string{"input"}, func(r RetentionConfig) time.Duration { return r.Requests }},
	{"runs", "started_at", []string{"final_output", "reasoning", "choices", "tool_calls", "plan_raw", "plan"}, func(r RetentionConfig) time.Duration { return r.Runs }},
	{"steps", "started_at", []string{"subtask", "messages", "output", "reasoning"}, func(r RetentionConfig) time.Duration { return r.Steps }},
	{"scores", "created_at", []string{"explanation"}, func(r RetentionConfig) time.Duration { return r.Scores }},
}

// ttlExpr is the TTL expression for rows aging by col: d after the row's time.
// ClickHouse renders it back exactly so in SHOW CREATE TABLE.
func ttlExpr(col string, d time.Duration) string {
	return "toDateTime(" + col + ") + toIntervalSecond(" + strconv.FormatInt(int64(d/time.Second), 10) + ")"
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
		want := ""
		if d := t.ttl(r); d > 0 {
			want = ttlExpr(t.timeCol, d)
		}
		// The table TTL is the last clause before SETTINGS.
		engine := create
		if i := strings.Index(create, "ENGINE = "); i >= 0 {
			engine = create[i:]
		}
		has := strings.Contains(engine, " TTL ")
		switch {
		case want != "" && !strings.Contains(engine, " TTL "+want):
			out = append(out, "ALTER TABLE "+target+" MODIFY TTL "+want)
		case want == "" && has:
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
