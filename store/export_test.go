package store

import "testing"

// OpenTestStore opens an embedded store in a fresh database of the package's
// shared test engine, for the external contract tests. It skips t when
// libchdb.so is absent.
func OpenTestStore(t *testing.T) Store { return openTestStore(t) }
