package storetest_test

import (
	"os"
	"testing"

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
