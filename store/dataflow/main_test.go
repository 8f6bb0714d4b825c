package dataflow

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

var engine *storetest.Engine

// TestMain runs the tests on one real embedded engine and fails a passing
// run that leaves goroutines behind (a flow meter's flush loop not stopped).
func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	engine.VerifyTestMain(m)
}
