package eval

import (
	"strings"
	"testing"
)

// Runs that answered without part of their input are counted per pipeline,
// in the headline and in the Markdown report, and graded like any other.
func TestReportCountsInputReduced(t *testing.T) {
	var outs []Outcome
	for i, c := range []string{"c1", "c2", "c3"} {
		outs = append(outs,
			Outcome{CaseID: c, Pipeline: "inc", Mode: "incumbent", Status: "ok", Passed: true, Value: 1, LatencyMs: 100},
			Outcome{CaseID: c, Pipeline: "cand", Mode: "candidate", Status: "ok", Passed: i != 0, Value: 1, LatencyMs: 100, InputReduced: i < 2})
	}
	r := BuildReport(ReportMeta{SuiteRunID: "s", SetName: "pictures", Incumbent: "inc", Candidates: []string{"cand"}}, outs)
	var cand, inc Stats
	for _, p := range r.Pipelines {
		if p.Pipeline == "cand" {
			cand = p.Overall
		} else {
			inc = p.Overall
		}
	}
	if cand.InputReduced != 2 || inc.InputReduced != 0 || cand.Graded != 3 || cand.Passed != 2 {
		t.Errorf("candidate input reduced %d (graded %d, passed %d), incumbent %d", cand.InputReduced, cand.Graded, cand.Passed, inc.InputReduced)
	}
	if !strings.Contains(r.Headline, "2 runs on reduced input") {
		t.Errorf("headline %q", r.Headline)
	}
	if md := r.Markdown(); !strings.Contains(md, "cand: 2 of 3 runs answered without part of their input") {
		t.Errorf("markdown lacks the input-reduced line:\n%s", md)
	}
}
