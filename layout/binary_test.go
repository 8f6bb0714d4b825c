package layout_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The production binary links no stand-in, test helper or simulator: the
// load harness and its stand-ins live in cmd/loadtest, the simulated pool in
// cmd/simllm, the in-memory Kafka in cmd/devkafka, the fakes in the *test
// packages. Checked on what `go list -deps` says the binary links.
func TestProductionBinaryLinksNoStandIn(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../cmd/conductor-shadow").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"store") || !slices.Contains(deps, module+"cmd/conductor-shadow") {
		t.Fatalf("go list -deps names no store or main package: %q", deps)
	}
	forbidden := []string{
		"net/http/httptest", "testing", "github.com/twmb/franz-go/pkg/kfake",
		module + "store/storetest", module + "ingest/incumbenttest", module + "shadow/shadowtest", module + "shadow/simpool",
	}
	for _, d := range deps {
		inModule := strings.HasPrefix(d, module)
		switch {
		case slices.Contains(forbidden, d):
			t.Errorf("cmd/conductor-shadow links %s", d)
		case inModule && strings.HasSuffix(d, "test"):
			t.Errorf("cmd/conductor-shadow links the test helper %s", d)
		case inModule && strings.HasPrefix(d, module+"cmd/") && d != module+"cmd/conductor-shadow" &&
			!strings.HasPrefix(d, module+"cmd/internal/"):
			t.Errorf("cmd/conductor-shadow links another command's package %s", d)
		}
	}
}
