package store_test

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// The embedded store passes the eval history contract.
func TestEmbeddedEvalHistoryContract(t *testing.T) {
	storetest.RunEvalHistoryContract(t, func(t *testing.T) store.Store { return store.OpenTestStore(t) })
}
