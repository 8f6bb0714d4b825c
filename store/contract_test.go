package store_test

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// The embedded store passes the store contract every Store must keep.
func TestEmbeddedContract(t *testing.T) {
	storetest.RunContract(t, func(t *testing.T) store.Store { return store.OpenTestStore(t) })
}
