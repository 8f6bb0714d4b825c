package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema change: migrations/NNNN_name.sql.
type migration struct {
	version    int
	name       string
	statements []string // with ${DB} still in place
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations parses the embedded migration files, ordered by version.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("store: migration file %q is not named NNNN_name.sql", e.Name())
		}
		body, err := fs.ReadFile(migrationFS, path.Join("migrations", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", e.Name(), err)
		}
		v, _ := strconv.Atoi(m[1])
		stmts, err := splitStatements(string(body))
		if err != nil {
			return nil, fmt.Errorf("store: migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: m[2], statements: stmts})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("store: two migrations with version %04d", out[i].version)
		}
	}
	return out, nil
}

// splitStatements splits SQL text on ';' outside quotes and comments, dropping
// empty and comment-only statements.
func splitStatements(sql string) ([]string, error) {
	toks, err := lexSQL(sql)
	if err != nil {
		return nil, err
	}
	var out []string
	start := -1 // offset of the current statement's first token
	for _, t := range toks {
		switch {
		case t.text == ";" && start >= 0:
			out = append(out, strings.TrimSpace(sql[start:t.pos]))
			start = -1
		case t.text != ";" && start < 0:
			start = t.pos
		}
	}
	if start >= 0 {
		out = append(out, strings.TrimSpace(sql[start:]))
	}
	return out, nil
}

// migrate creates the database and the schema_migrations table, then applies
// every embedded migration not yet recorded there, in order. Applying twice is a
// no-op. Statements use IF NOT EXISTS, so a migration interrupted half-way is
// completed on the next open.
func (s *sqlStore) migrate(ctx context.Context, log *slog.Logger) error {
	migs, err := loadMigrations()
	if err != nil {
		return err
	}
	boot, err := s.ddl(bootStatements(s.db))
	if err != nil {
		return err
	}
	for _, q := range boot {
		if err := s.t.exec(ctx, q, nil); err != nil {
			return fmt.Errorf("store: migrate: create schema_migrations: %w", err)
		}
	}
	applied, err := s.appliedMigrations(ctx)
	if err != nil {
		return err
	}
	for _, m := range migs {
		if applied[m.version] {
			continue
		}
		stmts, err := s.ddl(substituteDB(m.statements, s.db))
		if err != nil {
			return fmt.Errorf("store: migrate %04d_%s: %w", m.version, m.name, err)
		}
		for _, stmt := range stmts {
			if err := s.t.exec(ctx, stmt, nil); err != nil {
				return fmt.Errorf("store: migrate %04d_%s: %w", m.version, m.name, err)
			}
		}
		rec := "INSERT INTO " + s.db + ".schema_migrations (version, name) VALUES ({version:UInt32}, {name:String})"
		if err := s.t.exec(ctx, rec, Params{}.Int("version", int64(m.version)).Str("name", m.name)); err != nil {
			return fmt.Errorf("store: migrate %04d_%s: record: %w", m.version, m.name, err)
		}
	}
	return s.repairSchema(ctx, migs, log)
}

// createdTable matches the table a migration statement creates.
var createdTable = regexp.MustCompile(`(?i)^CREATE TABLE IF NOT EXISTS \$\{DB\}\.([A-Za-z0-9_]+)`)

// repairSchema makes sure every table the migrations create exists. A table
// dropped after its migration was recorded (by hand, or by a statement that
// should never have run) is recreated, empty, by applying every migration
// again (each statement is IF NOT EXISTS), and the repair is logged with the
// tables' names: their rows are gone. A table still missing afterwards fails
// the open with its name.
func (s *sqlStore) repairSchema(ctx context.Context, migs []migration, log *slog.Logger) error {
	missing, err := s.missingTables(ctx, migs)
	if err != nil || len(missing) == 0 {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Warn("store: tables were missing and are recreated empty; their rows are lost", "database", s.db, "tables", missing)
	for _, m := range migs {
		stmts, err := s.ddl(substituteDB(m.statements, s.db))
		if err != nil {
			return fmt.Errorf("store: migrate: recreate %s: %04d_%s: %w", strings.Join(missing, ", "), m.version, m.name, err)
		}
		for _, stmt := range stmts {
			if err := s.t.exec(ctx, stmt, nil); err != nil {
				return fmt.Errorf("store: migrate: recreate %s: %04d_%s: %w", strings.Join(missing, ", "), m.version, m.name, err)
			}
		}
	}
	if still, err := s.missingTables(ctx, migs); err != nil {
		return err
	} else if len(still) > 0 {
		return fmt.Errorf("store: migrate: tables %s of database %s are missing and could not be recreated", strings.Join(still, ", "), s.db)
	}
	return nil
}

// bootStatements create the database and the schema_migrations table.
func bootStatements(db string) []string {
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + db,
		"CREATE TABLE IF NOT EXISTS " + db + ".schema_migrations\n(\n" +
			"    version    UInt32,\n    name       String,\n" +
			"    applied_at DateTime64(3, 'UTC') DEFAULT now64(3)\n)\n" +
			"ENGINE = ReplacingMergeTree(applied_at)\nORDER BY version",
	}
}

// substituteDB replaces ${DB} in each statement with the quoted database.
func substituteDB(stmts []string, db string) []string {
	out := make([]string, len(stmts))
	for i, st := range stmts {
		out[i] = strings.ReplaceAll(st, "${DB}", db)
	}
	return out
}

// missingTables returns the tables the migrations create that the database lacks.
func (s *sqlStore) missingTables(ctx context.Context, migs []migration) ([]string, error) {
	type row struct {
		Name string `json:"name"`
	}
	rows, err := queryRows[row](ctx, s.t, "SELECT name FROM system.tables WHERE database = {db:String}", Params{}.Str("db", s.dbName))
	if err != nil {
		return nil, fmt.Errorf("store: migrate: list tables: %w", err)
	}
	have := map[string]bool{}
	for _, r := range rows {
		have[r.Name] = true
	}
	var missing []string
	for _, m := range migs {
		for _, stmt := range m.statements {
			if c := createdTable.FindStringSubmatch(stmt); c != nil && !have[c[1]] && !slices.Contains(missing, c[1]) {
				missing = append(missing, c[1])
			}
		}
	}
	return missing, nil
}

// appliedMigrations returns the versions recorded in schema_migrations.
func (s *sqlStore) appliedMigrations(ctx context.Context) (map[int]bool, error) {
	type row struct {
		Version int `json:"version"`
	}
	rows, err := queryRows[row](ctx, s.t, "SELECT version FROM "+s.db+".schema_migrations FINAL ORDER BY version")
	if err != nil {
		return nil, fmt.Errorf("store: migrate: read schema_migrations: %w", err)
	}
	out := map[int]bool{}
	for _, r := range rows {
		out[r.Version] = true
	}
	return out, nil
}
