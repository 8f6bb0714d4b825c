package web

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves goroutines behind (the browser tests start
// chromium and its readers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
