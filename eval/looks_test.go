package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestSuiteRunsAreLooks: a run of 3 cases, then the set's 5 cases, then the
// 5 again, for one candidate version under a plan of 10 cases: the second
// run is look 2 of the first one's plan (read back from the store), the
// third has no new cases and decides nothing, and each decided look is
// stored; another policy version starts a plan of its own.
func TestSuiteRunsAreLooks(t *testing.T) {
	ctx := context.Background()
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	stores := SuiteStoresOf(store.NewRoles(st))
	inc, cand := reportPipelines()
	half := 0.5 // reportPipelines' candidate fails 1 of the first 3 cases
	pol := gate.Policy{Version: "looks-test", Confidence: 0.95, Quality: &gate.QualityGate{MarginPoints: 3}, MaxRunErrorShare: &half,
		Looks: &gate.LooksGate{Spending: "obrien-fleming", MaxCases: 10}}
	run := func(id string, limit int, p gate.Policy) *Report {
		t.Helper()
		rep, err := RunSuite(ctx, stores, set, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: id, Policy: &p, Limit: limit, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	look := func(rep *Report) *gate.LookPlan {
		t.Helper()
		lp := rep.Comparisons[0].Verdict.Look
		if lp == nil {
			t.Fatalf("%s: no look", rep.SuiteRunID)
		}
		return lp
	}
	first := look(run("looks-1", 3, pol))
	if first.This.Index != 1 || first.This.Cases != 3 || first.This.Fraction != 0.3 || first.Blocked {
		t.Errorf("run 1: %+v", first.This)
	}
	rep2 := run("looks-2", 0, pol)
	second := look(rep2)
	if second.This.Index != 2 || second.This.Fraction != 0.5 || len(second.Previous) != 1 || second.Previous[0].SuiteRunID != "looks-1" {
		t.Errorf("run 2: %+v", second)
	}
	if !strings.Contains(rep2.Markdown(), "This run is look 2 of a group-sequential plan of 10 cases") ||
		!strings.Contains(rep2.Comparisons[0].Advice, "make look 3 of the plan") {
		t.Errorf("run 2 report: advice %q\n%s", rep2.Comparisons[0].Advice, rep2.Markdown())
	}
	if third := look(run("looks-3", 0, pol)); !third.Blocked || third.This.Index != 3 {
		t.Errorf("run 3: %+v", third)
	}
	ls := stores.Looks
	key := store.LookKey{SetName: set.Name, Incumbent: inc.Name(), Candidate: cand.Name(), CandidateVersion: "v1", PolicyVersion: "looks-test"}
	stored, err := ls.Looks(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || stored[0].SuiteRunID != "looks-1" || stored[1].SuiteRunID != "looks-2" || stored[1].MaxCases != 10 || stored[1].Spending != "obrien-fleming" {
		t.Errorf("stored looks: %+v", stored)
	}
	other := pol
	other.Version = "looks-test-2"
	if fresh := look(run("looks-4", 0, other)); fresh.This.Index != 1 {
		t.Errorf("another policy version: %+v", fresh.This)
	}
}
