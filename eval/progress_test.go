package eval

import (
	"bytes"
	"context"
	"fmt"
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

// TestOnProgress: every finished case hands the run's state to OnProgress in
// order (what the suite-run API streams), and a ProgressPrinter fed those
// states draws what a local run draws.
func TestOnProgress(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, cand := reportPipelines()
	var states []SuiteProgress
	_, err = RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand},
		SuiteOptions{SuiteRunID: "suite-on", Concurrency: 3, OnProgress: func(p SuiteProgress) { states = append(states, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 5 {
		t.Fatalf("%d states, want one per case: %+v", len(states), states)
	}
	for i, s := range states {
		if s.Done != i+1 || s.Total != 5 || s.SuiteRunID != "suite-on" {
			t.Fatalf("state %d: %+v", i, s)
		}
	}
	if last := states[4]; last.Errors != 1 || fmt.Sprintf("%.4f", last.CostUSD) != "0.0240" {
		t.Fatalf("last state %+v, want cost $0.0240 and 1 error", last)
	}
	for _, bar := range []bool{false, true} {
		var out bytes.Buffer
		p := NewProgressPrinter(&out, &bar)
		for _, s := range states {
			p.Update(s)
		}
		want := "suite suite-on: 5/5 cases (100%), cost $0.0240, 1 errors"
		if bar {
			want = "5/5"
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("bar=%v: %q lacks %q", bar, out.String(), want)
		}
	}
	NewProgressPrinter(nil, nil).Update(states[0]) // no writer: nothing, no panic
}
