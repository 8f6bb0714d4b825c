package eval

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// OpenTestStore returns a migrated store on a fresh database of the test
// binary's embedded engine (engine.Open, started in TestMain), closed when t
// ends: the external tests (package eval_test) share that one engine.
func OpenTestStore(t testing.TB) store.Store {
	t.Helper()
	return engine.Open(t)
}
