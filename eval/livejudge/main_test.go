package livejudge_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// engine is the real embedded engine the tests store live pairs and their
// judgments in, a database per test (engine.Open).
var engine *storetest.Engine

func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		engine.Close()
		os.Exit(code)
	}))
}
