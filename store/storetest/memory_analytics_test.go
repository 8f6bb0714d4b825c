package storetest_test

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

func TestMemoryAnalyticsContract(t *testing.T) {
	storetest.RunAnalyticsContract(t, func(t *testing.T) store.Store { return storetest.NewMemory() })
}
