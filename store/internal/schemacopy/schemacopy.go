// Package schemacopy gives test stores their schema without replaying the
// migrations: it copies a database store.Open migrated once (the template)
// into each new test database with one CREATE per table, in the table's final
// form as the engine prints it, and one INSERT … SELECT per table holding rows
// (the migration records). Replaying every migration's CREATE, ALTER and
// INSERT is about 110 statements, near 1 s of engine CPU per test store; a
// copy is about 25. store.Open then finds every migration applied and runs the
// rest of its opening as ever (schema check, retention, forget settings).
//
// New checks the copy before it is used: it copies the template once and
// compares every table of the copy with the template's (engine, CREATE
// statement, row count). When they differ, or a table is of a kind a copy
// does not handle, New fails and the caller migrates each database itself.
package schemacopy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
)

// Template is a migrated database on the process's embedded engine that new
// databases copy.
type Template struct {
	ref     *chdb.Ref
	db      string   // the template database
	creates []string // with db's name in place, in creation order
	copies  []string // tables holding rows
}

// Table is one table of a database: its name, engine, CREATE statement with
// the database's own name replaced by the template's, and rows (count()).
type Table struct {
	Name   string `json:"name"`
	Engine string `json:"engine"`
	Create string `json:"create_table_query"`
	Rows   uint64 `json:"-"`
}

func quote(ident string) string { return "`" + strings.ReplaceAll(ident, "`", "\\`") + "`" }

func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// New reads the migrated database template on the engine of the data folder
// path (open in this process) and checks a copy of it, made in database
// probe and dropped afterwards, is the same. template must be a name no
// statement holds otherwise followed by a dot: copies replace "template."
// by their database. Errors say why the template cannot be used.
func New(ctx context.Context, path, template, probe string) (*Template, error) {
	ref, err := chdb.OpenWith(path, chdb.Options{})
	if err != nil {
		return nil, fmt.Errorf("schemacopy: %w", err)
	}
	tpl := &Template{ref: ref, db: template}
	if err := tpl.load(ctx, probe); err != nil {
		tpl.Close()
		return nil, err
	}
	return tpl, nil
}

func (tpl *Template) load(ctx context.Context, probe string) error {
	tables, err := tpl.Tables(ctx, tpl.db)
	if err != nil {
		return err
	}
	// Tables first, then the views that read them; no other kind is copied.
	var views []string
	for _, t := range tables {
		switch {
		case strings.HasSuffix(t.Engine, "MergeTree"):
			tpl.creates = append(tpl.creates, t.Create)
			if t.Rows > 0 {
				tpl.copies = append(tpl.copies, t.Name)
			}
		case t.Engine == "View" || t.Engine == "MaterializedView":
			views = append(views, t.Create)
		default:
			return fmt.Errorf("schemacopy: table %s.%s has engine %s, which a copy does not handle", tpl.db, t.Name, t.Engine)
		}
	}
	tpl.creates = append(tpl.creates, views...)
	if err := tpl.CopyTo(ctx, probe); err != nil {
		return err
	}
	got, err := tpl.Tables(ctx, probe)
	if err != nil {
		return err
	}
	if _, err := tpl.ref.Query(ctx, "DROP DATABASE IF EXISTS "+quote(probe)+" SYNC", "TabSeparated"); err != nil {
		return fmt.Errorf("schemacopy: drop probe database %s: %w", probe, err)
	}
	if !slices.Equal(got, tables) {
		return fmt.Errorf("schemacopy: a copy of %s differs from it:\n got %+v\nwant %+v", tpl.db, got, tables)
	}
	return nil
}

// Tables lists db's tables by name, with db's name in their CREATE statements
// replaced by the template's.
func (tpl *Template) Tables(ctx context.Context, db string) ([]Table, error) {
	out, err := tpl.ref.Query(ctx, "SELECT name, engine, create_table_query FROM system.tables WHERE database = "+quoteString(db)+" ORDER BY name", "JSONEachRow")
	if err != nil {
		return nil, fmt.Errorf("schemacopy: list tables of %s: %w", db, err)
	}
	var tables []Table
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var t Table
		if err := json.Unmarshal([]byte(line), &t); err != nil {
			return nil, fmt.Errorf("schemacopy: list tables of %s: %w", db, err)
		}
		if strings.HasPrefix(t.Name, ".inner") {
			continue // a materialized view's own table: its CREATE makes it
		}
		t.Create = strings.ReplaceAll(t.Create, db+".", tpl.db+".")
		if strings.HasSuffix(t.Engine, "MergeTree") {
			n, err := tpl.ref.Query(ctx, "SELECT count() FROM "+quote(db)+"."+quote(t.Name), "TabSeparated")
			if err != nil {
				return nil, fmt.Errorf("schemacopy: count %s.%s: %w", db, t.Name, err)
			}
			if _, err := fmt.Sscan(string(n), &t.Rows); err != nil {
				return nil, fmt.Errorf("schemacopy: count %s.%s: %q: %w", db, t.Name, n, err)
			}
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// CopyTo creates database db as a copy of the template. A database that
// exists already (a store opened again) is left as it is, to store.Open.
func (tpl *Template) CopyTo(ctx context.Context, db string) error {
	n, err := tpl.ref.Query(ctx, "SELECT count() FROM system.databases WHERE name = "+quoteString(db), "TabSeparated")
	if err != nil {
		return fmt.Errorf("schemacopy: look for database %s: %w", db, err)
	}
	if strings.TrimSpace(string(n)) != "0" {
		return nil
	}
	stmts := []string{"CREATE DATABASE " + quote(db)}
	for _, c := range tpl.creates {
		stmts = append(stmts, strings.ReplaceAll(c, tpl.db+".", quote(db)+"."))
	}
	for _, name := range tpl.copies {
		stmts = append(stmts, "INSERT INTO "+quote(db)+"."+quote(name)+" SELECT * FROM "+quote(tpl.db)+"."+quote(name))
	}
	for _, s := range stmts {
		if _, err := tpl.ref.Query(ctx, s, "TabSeparated"); err != nil {
			return fmt.Errorf("schemacopy: copy %s to %s: %w", tpl.db, db, err)
		}
	}
	return nil
}

// Drop drops database db and its tables at once (DROP DATABASE … SYNC): a
// test's database once its store is closed. Every MergeTree table keeps
// background tasks scheduled on the engine (old parts cleared about once a
// second), so databases left behind by earlier tests cost a test binary's
// engine CPU until the process ends: about a fifth of a core idle with a
// hundred test databases, a thirtieth of that with one. Safe on a nil
// Template (nothing is dropped) and for a database that does not exist.
func (tpl *Template) Drop(ctx context.Context, db string) error {
	if tpl == nil || tpl.ref == nil {
		return nil
	}
	if db == tpl.db {
		return fmt.Errorf("schemacopy: drop %s: it is the template", db)
	}
	if _, err := tpl.ref.Query(ctx, "DROP DATABASE IF EXISTS "+quote(db)+" SYNC", "TabSeparated"); err != nil {
		return fmt.Errorf("schemacopy: drop database %s: %w", db, err)
	}
	return nil
}

// Close releases the template's reference on the engine. Safe on nil and twice.
func (tpl *Template) Close() {
	if tpl != nil && tpl.ref != nil {
		tpl.ref.Close()
		tpl.ref = nil
	}
}
