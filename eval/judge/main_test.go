package judge_test

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// engine is the real embedded engine the simulations store their suite runs
// in, a database per test (engine.Open).
var engine *storetest.Engine

func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	engine.VerifyTestMain(m)
}
