package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestValidityProgress: the bar goes to stderr, only when it is a terminal or
// with --progress, and never into the --json output.
func TestValidityProgress(t *testing.T) {
	for _, forced := range []bool{false, true} {
		var stdout, stderr bytes.Buffer
		args := []string{"validity", "--n", "50", "--suites", "20", "--json"}
		if forced {
			args = append(args, "--progress")
		}
		if err := run(t.Context(), args, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || v["suites"] != float64(20) {
			t.Fatalf("--progress=%v: stdout is not the JSON result (%v): %q", forced, err, stdout.String())
		}
		if got := stderr.String(); forced != strings.Contains(got, "20/20") || (!forced && got != "") {
			t.Fatalf("--progress=%v: stderr %q", forced, got)
		}
	}
}
