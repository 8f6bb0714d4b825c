package web

import (
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// fixtureNestedTrace is a conductor run with a planning call (#0), two
// independent workflow steps (#1, #2), a nested workflow spawned by #2 (its own
// planning call #3 and step #4) and a final step (#5) reading plan steps 0 and 1;
// steps #1 and #2 run in parallel.
func fixtureNestedTrace() store.Trace {
	nested := store.Trace{Request: store.Request{RequestID: "req-nested", ReceivedAt: t0.Add(-time.Minute),
		Source: store.SourceTap, App: "search", Category: "qa", Input: `[{"role":"user","content":"capital of France?"}]`}}
	start := t0.Add(-time.Minute)
	nested.Runs = []store.Run{
		{RunID: "run-n-inc", RequestID: "req-nested", Pipeline: "incumbent:gpt-5", Mode: store.ModeIncumbent,
			StartedAt: start, LatencyMs: 800, Status: store.StatusOK, FinalOutput: "Paris."},
		{RunID: "run-n-cond", RequestID: "req-nested", Pipeline: "conductor", Mode: store.ModeCandidate,
			StartedAt: start, LatencyMs: 2600, Status: store.StatusOK, FinalOutput: "Paris is the capital.",
			Plan: `{"steps":[{"worker":"a","subtask":"s0","access":[]},{"worker":"b","subtask":"s1","access":[]},{"worker":"c","subtask":"s2","access":[0,1]}]}`},
	}
	st := func(i, parent, depth int32, role, worker, access string, at, lat float64) store.Step {
		return store.Step{RunID: "run-n-cond", Index: i, Parent: parent, Depth: depth, Role: role, Worker: worker,
			Access: access, Messages: "[]", Status: store.StatusOK, Attempt: 1, LatencyMs: lat, CostUSD: 0.001,
			StartedAt: start.Add(time.Duration(at * float64(time.Millisecond))), Output: "out " + worker}
	}
	nested.Steps = []store.Step{
		st(0, -1, 0, "conductor", "conductor-7b", "", 0, 300),
		st(1, -1, 0, "worker", "a", "[]", 300, 500),
		st(2, -1, 0, "worker", "b", "[]", 300, 900),
		st(3, 2, 1, "conductor", "conductor-7b", "", 400, 100),
		st(4, 2, 1, "worker", "b-sub", "[]", 500, 600),
		st(5, -1, 0, "worker", "c", "[0,1]", 1200, 1400),
	}
	return nested
}
