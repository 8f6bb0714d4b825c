package rewards

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestBuild(t *testing.T) {
	const sr = "suite-1"
	prompt := `[{"role":"system","content":"You are the conductor."},{"role":"user","content":"plan: 2+2"}]`
	run := func(caseID, pipeline, status, plan string) store.Run {
		return store.Run{RunID: caseID + "#" + pipeline, RequestID: sr + "/" + caseID, SuiteRunID: sr, Pipeline: pipeline,
			Status: status, PlanRaw: "model_id = [0]", Plan: plan}
	}
	plan := `{"steps":[{"worker":"w0"}]}`
	d := SuiteData{
		SuiteRunID: sr,
		Cases: []store.Case{
			{CaseID: "c1", Category: "math", Input: "2+2?"}, {CaseID: "c2", Category: "math", Input: "3+3?"},
			{CaseID: "c3", Category: "mmlu", Input: "Q3"}, {CaseID: "c4", Input: "Q4"}, {CaseID: "c5", Input: "Q5"},
		},
		Runs: []store.Run{
			run("c1", "conductor", store.StatusOK, plan),           // correct
			run("c2", "conductor", store.StatusOK, plan),           // wrong
			run("c3", "conductor", store.StatusPlanUnparsable, ""), // unparsable (fallback answered right)
			run("c4", "conductor", store.StatusOK, plan),           // grader error: left out
			run("c5", "conductor", store.StatusOK, plan),           // no score: left out
			run("c1", "single:gpt-5", store.StatusOK, ""),          // no conductor step
		},
		Steps: []store.Step{
			{RunID: "c1#conductor", Index: 3, Role: "conductor", Messages: `[{"role":"user","content":"nested"}]`},
			{RunID: "c1#conductor", Index: 0, Role: "conductor", Messages: prompt},
			{RunID: "c2#conductor", Index: 0, Role: "conductor", Messages: prompt},
			{RunID: "c3#conductor", Index: 0, Role: "conductor", Messages: prompt},
			{RunID: "c4#conductor", Index: 0, Role: "conductor", Messages: prompt},
			{RunID: "c5#conductor", Index: 0, Role: "conductor", Messages: "not json"},
			{RunID: "c1#conductor", Index: 1, Role: "worker"},
		},
		Scores: []store.Score{
			{RunID: "c1#conductor", Passed: true}, {RunID: "c2#conductor", Passed: false},
			{RunID: "c3#conductor", Passed: true}, {RunID: "c4#conductor", Error: "python3 missing"},
			{RunID: "c1#single:gpt-5", Passed: true},
		},
	}
	rows, sum := Build(d)
	if sum != (Summary{Rows: 3, Correct: 1, Wrong: 1, Unparsable: 1, GraderErrors: 1, NoScore: 1, NoPlanningRun: 1}) {
		t.Errorf("summary %+v", sum)
	}
	want := map[string]float64{"c1": 1, "c2": 0.5, "c3": 0}
	for _, r := range rows {
		if w, ok := want[r.CaseID]; !ok || r.Reward != w {
			t.Errorf("%s: reward %v (%s), want %v", r.CaseID, r.Reward, r.Reason, w)
		}
		if string(r.ConductorPrompt) != prompt || r.RawPlan != "model_id = [0]" || r.SuiteRunID != sr {
			t.Errorf("%s: row %+v", r.CaseID, r)
		}
	}
	if rows[0].Task != "2+2?" || rows[0].Category != "math" {
		t.Errorf("task %q", rows[0].Task)
	}
	var buf bytes.Buffer
	if err := Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	n := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["conductor_prompt"].([]any); !ok {
			t.Errorf("conductor_prompt is not the messages array: %v", m["conductor_prompt"])
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d lines", n)
	}
}
