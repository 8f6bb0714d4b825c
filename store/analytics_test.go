package store_test

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// The embedded store passes the analytics contract.
func TestEmbeddedAnalyticsContract(t *testing.T) {
	storetest.RunAnalyticsContract(t, func(t *testing.T) store.Store { return store.OpenTestStore(t) })
}
