package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// OpenSchema opens a store as OpenConfig does, its database a copy of the
// template when copySchema is set or migrated by store.Open from nothing, and
// returns every table of the database after store.Open: name, engine, row
// count and CREATE statement (the database's name replaced by the template's).
func (e *Engine) OpenSchema(t testing.TB, edit func(*store.Config), copySchema bool) []string {
	t.Helper()
	if e.tpl == nil {
		t.Fatal("storetest: the schema template is not in use")
	}
	_, db := e.open(t, edit, copySchema)
	tables, err := e.tpl.Tables(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tb := range tables {
		out = append(out, tb.Name+" "+tb.Engine+" rows="+strconv.FormatUint(tb.Rows, 10)+"\n"+tb.Create)
	}
	return out
}
