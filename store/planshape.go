package store

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// PlanShapeSep joins the steps of a plan shape.
const PlanShapeSep = " → "

// PlanShape returns the canonical shape of a stored workflow (Run.Plan, the
// JSON {"steps":[{"worker":…,"access":…}]} shadow.Plan.JSON writes): each
// step's worker followed by its access list — nothing for [] (the step sees
// no earlier step), "[all]" for "all", "[0,2]" for a list of plan steps —
// joined by PlanShapeSep, e.g. "qwen3-32b → gpt-5[all] → claude-sonnet-4[1]".
// Subtasks are left out: two plans of one shape call the same workers in the
// same order with the same visibility. A step without a worker name is
// "model N" (its model_id). "" for an empty or unreadable plan (no workflow:
// the fallback answered, or the candidate is not a conductor).
//
// The SQL stores keep the same shape in runs.plan_shape, computed by the
// engine from plan when a run is written (migration 0260);
// TestPlanShapeSQLMatchesGo holds the two equal.
func PlanShape(plan string) string {
	var p struct {
		Steps []map[string]json.RawMessage `json:"steps"`
	}
	if strings.TrimSpace(plan) == "" || json.Unmarshal([]byte(plan), &p) != nil {
		return ""
	}
	parts := make([]string, 0, len(p.Steps))
	for _, st := range p.Steps {
		var worker string
		_ = json.Unmarshal(st["worker"], &worker)
		if worker == "" {
			var id int64
			_ = json.Unmarshal(st["model_id"], &id)
			worker = "model " + strconv.FormatInt(id, 10)
		}
		parts = append(parts, worker+shapeAccess(st["access"]))
	}
	return strings.Join(parts, PlanShapeSep)
}

// shapeAccess renders one step's access list for PlanShape.
func shapeAccess(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "[" + s + "]"
	}
	var idx []int64
	if json.Unmarshal(raw, &idx) != nil || len(idx) == 0 {
		return ""
	}
	out := make([]string, len(idx))
	for i, n := range idx {
		out[i] = strconv.FormatInt(n, 10)
	}
	return "[" + strings.Join(out, ",") + "]"
}

// CriticalSlackMs is how far (ms) a step may end after another step started
// and still count as what that step waited for: starts are stored to the ms
// and latencies as measured, so a step that began the moment another ended
// can look as if it began a fraction of a ms early.
const CriticalSlackMs = 1.0

// CriticalPath marks the critical path of one run's steps (any order): the
// chain that ends at the step finishing last, each step preceded by its
// blocker — the step that finished last at or before it started (within
// CriticalSlackMs) and before it finished; ties go to the later-recorded
// step. It reads only the timeline (start and latency), so waits for a worker
// slot count like waits for a dependency — the timing-based critical path of
// distributed tracing (Jaeger's "last finishing child" walk). Steps of unknown
// latency (0) end where they start. The trace page marks it and the plans
// page attributes latency by it (CriticalPathSQL); TestCriticalPathSQLMatchesGo
// holds the two equal.
func CriticalPath(steps []Step) []bool {
	on := make([]bool, len(steps))
	if len(steps) == 0 {
		return on
	}
	base := firstStart(steps)
	start := func(i int) float64 { return msSince(base, steps[i].StartedAt) }
	end := func(i int) float64 { return start(i) + max(steps[i].LatencyMs, 0) }
	last := 0
	for i := range steps {
		if end(i) >= end(last) && (end(i) > end(last) || steps[i].Index > steps[last].Index) {
			last = i
		}
	}
	for cur := last; cur >= 0; {
		on[cur] = true
		next := -1
		for j := range steps {
			if j == cur || end(j) > start(cur)+CriticalSlackMs || end(j) >= end(cur) {
				continue
			}
			if next < 0 || end(j) > end(next) || (end(j) == end(next) && steps[j].Index > steps[next].Index) {
				next = j
			}
		}
		cur = next
	}
	return on
}

// LatencyParts splits a run's wall time (runStart, latencyMs) along its
// critical path (CriticalPath): own[i] is step i's own time on the path (its
// end less the later of its start and its blocker's end; 0 off the path),
// waitMs the time the path spent between a blocker's end and the next step's
// start, outsideMs the rest of latencyMs (before the first step, after the
// last; negative when the steps' clocks run past the run's). The parts sum to
// latencyMs exactly.
func LatencyParts(runStart time.Time, latencyMs float64, steps []Step) (own []float64, waitMs, outsideMs float64) {
	own = make([]float64, len(steps))
	on := CriticalPath(steps)
	base := firstStart(steps)
	if len(steps) == 0 {
		base = runStart
	}
	ms := func(t time.Time) float64 { return msSince(base, t) }
	var path []int
	for i := range steps {
		if on[i] {
			path = append(path, i)
		}
	}
	// The path in time order: each step ends before the next one ends.
	for a := 1; a < len(path); a++ {
		for b := a; b > 0 && ms(steps[path[b]].StartedAt)+steps[path[b]].LatencyMs < ms(steps[path[b-1]].StartedAt)+steps[path[b-1]].LatencyMs; b-- {
			path[b], path[b-1] = path[b-1], path[b]
		}
	}
	prevEnd := ms(runStart)
	for _, i := range path {
		s := ms(steps[i].StartedAt)
		e := s + max(steps[i].LatencyMs, 0)
		begin := max(s, prevEnd)
		own[i] = e - begin
		waitMs += begin - prevEnd
		prevEnd = e
	}
	outsideMs = latencyMs - (prevEnd - ms(runStart))
	return own, waitMs, outsideMs
}

// firstStart is the earliest start of steps (the zero time for none): the
// origin both CriticalPath and the SQL measure from, so that ms since it keep
// sub-ms latencies exact in a float64.
func firstStart(steps []Step) time.Time {
	var t time.Time
	for i, s := range steps {
		if i == 0 || s.StartedAt.Before(t) {
			t = s.StartedAt
		}
	}
	return t
}

// msSince is t − base in ms (µs resolution).
func msSince(base, t time.Time) float64 { return float64(t.Sub(base).Microseconds()) / 1000 }
