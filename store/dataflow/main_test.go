package dataflow

import (
	"os"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

var engine *storetest.Engine

func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	code := m.Run()
	engine.Close()
	os.Exit(code)
}
