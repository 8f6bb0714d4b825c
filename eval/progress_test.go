package eval

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestProgress(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	for _, bar := range []bool{false, true} {
		var out bytes.Buffer
		inc, cand := reportPipelines()
		id := "suite-p"
		if bar {
			id = "suite-p-bar"
		}
		_, err := RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand},
			SuiteOptions{SuiteRunID: id, Concurrency: 1, Progress: &out, progressBar: &bar})
		if err != nil {
			t.Fatal(err)
		}
		got := out.String()
		// Totals over both pipelines: 0.008 + 0.016 USD; one failed run.
		if !strings.Contains(got, "cost $0.0240, 1 errors") {
			t.Errorf("bar=%v: no final cost and errors in %q", bar, got)
		}
		if bar {
			if !strings.Contains(got, "5/5") || !strings.Contains(got, "100%") {
				t.Errorf("bar: %q", got)
			}
		} else if n := strings.Count(got, "\n"); n != 5 || !strings.Contains(got, "suite suite-p: 5/5 cases (100%), cost $0.0240, 1 errors") {
			t.Errorf("lines: %d\n%s", n, got)
		}
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
}
