package web

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// engine is the real embedded engine the pages read from, a database per test
// (engine.Open).
var engine *storetest.Engine

// TestMain starts the engine and checks that no test leaves goroutines behind
// (the browser tests start chromium and its readers).
func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	engine.VerifyTestMain(m)
}
