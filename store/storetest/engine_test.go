package storetest_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

var engine *storetest.Engine

func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	code := m.Run()
	engine.Close()
	engine.Close() // safe twice
	os.Exit(code)
}

// Each Open is a database of its own on the one engine: what one test writes,
// another does not see, and CountRows reads the last write of each key.
func TestEngineOpensIsolatedStores(t *testing.T) {
	a, b := engine.Open(t), engine.Open(t)
	f := storetest.NewFixture("req-iso", storetest.T0())
	for range 2 { // the second write replaces the first
		if err := f.Insert(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := storetest.MustCountRows(t, a), (storetest.Counts{Requests: 1, Runs: 3, Steps: 4, Scores: 2, SuiteRuns: 0, Cases: 0}); got != want {
		t.Errorf("counts after two identical writes = %+v, want %+v", got, want)
	}
	if got := storetest.MustCountRows(t, b); got != (storetest.Counts{}) {
		t.Errorf("the other database holds %+v, want nothing", got)
	}
}

// A store opened on a copy of the template database has every table exactly
// as a store whose database store.Open migrated from nothing: same engine,
// same CREATE statement (columns, defaults, codecs, order, TTLs, settings),
// same rows (the migration records), with the default config and with
// retention edits applied at the open.
func TestOpenCopiesTheMigratedSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*store.Config)
	}{
		{"default", func(*store.Config) {}},
		{"retention", func(c *store.Config) {
			c.Retention = store.RetentionConfig{Requests: 48 * time.Hour, Runs: 24 * time.Hour, Bodies: time.Hour, Work: 0}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			migrated := engine.OpenSchema(t, tc.edit, false)
			copied := engine.OpenSchema(t, tc.edit, true)
			if len(migrated) < 10 {
				t.Fatalf("migrated database has %d tables, want the whole schema", len(migrated))
			}
			if !slices.Equal(copied, migrated) {
				t.Errorf("copied schema differs from the migrated one:\ncopied:\n%s\nmigrated:\n%s", strings.Join(copied, "\n"), strings.Join(migrated, "\n"))
			}
		})
	}
}
