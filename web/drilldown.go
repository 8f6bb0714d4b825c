package web

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Layout constants of the server-drawn SVGs, in CSS pixels.
const (
	graphNodeW   = 188.0 // a workflow node's width
	graphNodeH   = 58.0  // a workflow node's height
	graphGapX    = 44.0  // horizontal gap between layers
	graphGapY    = 16.0  // vertical gap between nodes of one layer
	graphPad     = 14.0  // padding around the drawing
	graphNestPad = 6.0   // padding of a nested workflow's frame around its steps

	timelineLabelW = 220.0 // width of the step labels left of the bars
	timelineBarsW  = 640.0 // width of the bars' area
	timelineRowH   = 22.0  // height of one step's row
	timelineAxisH  = 20.0  // height of the time axis under the rows

	// diffTimeout bounds the diff of two answers; past it go-diff returns a coarser diff.
	diffTimeout = 200 * time.Millisecond
)

// diffOp is one piece of a text diff: Op is -1 (only in the incumbent's answer),
// 0 (in both) or +1 (only in the candidate's).
type diffOp struct {
	Op   int
	Text string
}

// answerDiff is a candidate's answer compared with the incumbent's.
type answerDiff struct {
	Candidate runView
	Incumbent string   // the incumbent's pipeline name
	Ops       []diffOp // the candidate's answer as edits of the incumbent's
	Same      bool     // the two answers are equal byte for byte
	Inserted  int      // characters only in the candidate's answer
	Deleted   int      // characters only in the incumbent's answer
}

// diffAnswers diffs want (the incumbent's answer) against got (a candidate's) with
// diff-match-patch (github.com/sergi/go-diff), cleaned up to word-like boundaries
// so people read edits, not scattered characters. Counts are in runes.
func diffAnswers(want, got string) (ops []diffOp, ins, del int) {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = diffTimeout
	diffs := dmp.DiffCleanupSemantic(dmp.DiffMain(want, got, false))
	for _, d := range diffs {
		op := 0
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op, ins = 1, ins+len([]rune(d.Text))
		case diffmatchpatch.DiffDelete:
			op, del = -1, del+len([]rune(d.Text))
		}
		ops = append(ops, diffOp{Op: op, Text: d.Text})
	}
	return ops, ins, del
}

// newAnswerDiffs compares every candidate's final answer with the first incumbent
// run's; nil when the trace has no incumbent run.
func newAnswerDiffs(v traceView) []answerDiff {
	inc := v.incumbents()
	if len(inc) == 0 {
		return nil
	}
	var out []answerDiff
	for _, c := range v.candidates() {
		d := answerDiff{Candidate: c, Incumbent: inc[0].Run.Pipeline,
			Same: c.Run.FinalOutput == inc[0].Run.FinalOutput}
		d.Ops, d.Inserted, d.Deleted = diffAnswers(inc[0].Run.FinalOutput, c.Run.FinalOutput)
		out = append(out, d)
	}
	return out
}

// stepDetail is one step with what the page shows about it beyond the table row.
type stepDetail struct {
	Step       store.Step
	PlanIdx    int           // position in its workflow (what access lists name), -1 outside one
	Anchor     string        // element id, for deep links ("step-<run>-<index>")
	Context    []chatMessage // the exact messages the worker was sent (Step.Messages)
	ContextOK  bool          // Context decoded; false: Step.Messages is shown as stored
	OutputHTML string        // Step.Output rendered as Markdown and sanitized
}

// stepAnchor is the element id of a step's detail block.
func stepAnchor(runID string, index int32) string {
	return "step-" + runID + "-" + strconv.Itoa(int(index))
}

// graphNode is one step drawn in the workflow graph. X, Y, W, H in px.
type graphNode struct {
	X, Y, W, H float64
	Step       store.Step
	PlanIdx    int
	Anchor     string
	Critical   bool // on the run's critical path
}

// graphEdge is a dependency drawn from one node's right side to another's
// left side (Path, SVG path data, routed by layoutDAG). Kind: "access" (the
// later step's access list names the earlier), "plan" (the planning call
// produced the step) or "nest" (a recursive workflow step under its parent);
// All marks an access edge of an "all" list (drawn apart: such a step sees
// every earlier step).
type graphEdge struct {
	Path     string
	From, To int32 // Step.Index of both ends
	Kind     string
	All      bool
	Critical bool
}

// graphFrame is the dashed frame around the steps of a nested (recursive) workflow.
type graphFrame struct {
	X, Y, W, H float64
	Parent     int32 // Step.Index of the step that spawned the nested workflow
	Depth      int32
}

// workflowGraph is a run's steps drawn as a layered graph: a step's layer is one
// more than the deepest step it depends on, so steps in one column could run in
// parallel. Width and Height in px.
type workflowGraph struct {
	ID            string // unique on the page (its arrowhead's id)
	Width, Height float64
	Nodes         []graphNode
	Edges         []graphEdge
	Frames        []graphFrame
}

// timelineBar is one step on the run's timeline: X and W in px from the bars'
// area's left edge, Start and End in ms since the run's first step started.
type timelineBar struct {
	Y          float64
	X, W       float64
	Start, End float64
	Step       store.Step
	Anchor     string
	Critical   bool
	Label      string // "#index worker"
}

// timelineTick is one labelled mark of the time axis.
type timelineTick struct {
	X     float64
	Label string // ms since the first step's start
}

// timeline is a Gantt chart of a run's steps. SpanMs is the first start to the
// last end in ms; MaxParallel the most steps running at one instant;
// CriticalMs the critical path's duration: its first step's start to its last
// step's end.
type timeline struct {
	Width, Height float64
	Bars          []timelineBar
	Ticks         []timelineTick
	SpanMs        float64
	MaxParallel   int
	CriticalMs    float64
}

// stepDeps returns, for each step (by position in steps, all of one run ordered by
// Index), the positions of the steps it depends on and the kind of each edge:
// the siblings its access list names ("all" names every earlier sibling; siblings
// share Parent and Depth and are numbered by planStepIndex), else the latest
// earlier planning ("conductor") call of its workflow, else its parent step when
// it belongs to a nested workflow.
func stepDeps(steps []store.Step) (deps [][]int, kinds [][]string) {
	deps = make([][]int, len(steps))
	kinds = make([][]string, len(steps))
	pos := map[int32]int{} // Step.Index → position
	for i, s := range steps {
		pos[s.Index] = i
	}
	planIdx := make([]int, len(steps))
	for i := range steps {
		planIdx[i] = planStepIndex(steps, i)
	}
	for i, s := range steps {
		if s.Role == "worker" {
			all, named := parseAccess(s.Access)
			for j := range i {
				p := steps[j]
				if p.Role != "worker" || p.Parent != s.Parent || p.Depth != s.Depth {
					continue
				}
				if all || slices.Contains(named, planIdx[j]) {
					deps[i] = append(deps[i], j)
					kinds[i] = append(kinds[i], "access")
				}
			}
		}
		if len(deps[i]) > 0 {
			continue
		}
		if s.Role == "worker" {
			for j := i - 1; j >= 0; j-- {
				if steps[j].Role == "conductor" && steps[j].Depth == s.Depth && steps[j].Parent == s.Parent {
					deps[i], kinds[i] = []int{j}, []string{"plan"}
					break
				}
			}
			if len(deps[i]) > 0 {
				continue
			}
		}
		if j, ok := pos[s.Parent]; ok && s.Parent >= 0 && j < i {
			deps[i], kinds[i] = []int{j}, []string{"nest"}
		}
	}
	return deps, kinds
}

// parseAccess decodes a step's access list (store.Step.Access): all is true for
// "all"; named lists the plan-step positions of [0,2]. Anything else names none.
func parseAccess(access string) (all bool, named []int) {
	a := strings.TrimSpace(access)
	if a == `"all"` || a == "all" {
		return true, nil
	}
	_ = json.Unmarshal([]byte(a), &named)
	return false, named
}

// newWorkflowGraph lays out a run's steps (ordered by Index) with layoutDAG:
// a step's layer is one more than the deepest step it depends on, so steps in
// one column could run in parallel; a nested workflow keeps a band of its own,
// framed.
func newWorkflowGraph(steps []store.Step, anchors []string, crit []bool) workflowGraph {
	var g workflowGraph
	if len(steps) == 0 {
		return g
	}
	deps, kinds := stepDeps(steps)
	nodes := make([]dagNode, len(steps))
	var edges []dagEdge
	var meta []graphEdge
	for i, s := range steps {
		if s.Depth > 0 && s.Parent >= 0 {
			nodes[i].Group = strconv.Itoa(int(s.Parent)) + "/" + strconv.Itoa(int(s.Depth))
		}
		all, _ := parseAccess(s.Access)
		for k, j := range deps[i] {
			edges = append(edges, dagEdge{From: j, To: i})
			meta = append(meta, graphEdge{From: steps[j].Index, To: s.Index, Kind: kinds[i][k],
				All: all && kinds[i][k] == "access", Critical: crit[i] && crit[j]})
		}
	}
	lay := layoutDAG(nodes, edges, graphNodeW, graphNodeH, graphGapX, graphGapY, graphPad)
	g.Width, g.Height = lay.Width, lay.Height
	for i := range steps {
		g.Nodes = append(g.Nodes, graphNode{X: lay.X[i], Y: lay.Y[i], W: graphNodeW, H: graphNodeH, Step: steps[i],
			PlanIdx: planStepIndex(steps, i), Anchor: anchors[i], Critical: crit[i]})
	}
	for k := range meta {
		meta[k].Path = lay.Paths[k]
	}
	g.Edges = meta
	// One frame per nested workflow: the bounding box of the steps sharing a parent.
	type key struct{ parent, depth int32 }
	frames := map[key]int{}
	for _, n := range g.Nodes {
		if n.Step.Depth == 0 || n.Step.Parent < 0 {
			continue
		}
		k := key{n.Step.Parent, n.Step.Depth}
		x0, y0 := n.X-graphNestPad, n.Y-graphNestPad
		x1, y1 := n.X+n.W+graphNestPad, n.Y+n.H+graphNestPad
		if fi, ok := frames[k]; ok {
			f := &g.Frames[fi]
			x1, y1 = max(x1, f.X+f.W), max(y1, f.Y+f.H)
			f.X, f.Y = min(f.X, x0), min(f.Y, y0)
			f.W, f.H = x1-f.X, y1-f.Y
			continue
		}
		frames[k] = len(g.Frames)
		g.Frames = append(g.Frames, graphFrame{X: x0, Y: y0, W: x1 - x0, H: y1 - y0, Parent: k.parent, Depth: k.depth})
	}
	return g
}

// newTimeline draws a run's steps on a time axis from the first step's start.
func newTimeline(steps []store.Step, anchors []string, crit []bool) timeline {
	var tl timeline
	if len(steps) == 0 {
		return tl
	}
	t0 := steps[0].StartedAt
	for _, s := range steps {
		if s.StartedAt.Before(t0) {
			t0 = s.StartedAt
		}
	}
	type span struct{ start, end float64 }
	spans := make([]span, len(steps))
	for i, s := range steps {
		st := float64(s.StartedAt.Sub(t0)) / float64(time.Millisecond)
		spans[i] = span{st, st + max(s.LatencyMs, 0)}
		tl.SpanMs = max(tl.SpanMs, spans[i].end)
	}
	first, last := -1.0, 0.0
	for i := range steps {
		if crit[i] {
			if first < 0 || spans[i].start < first {
				first = spans[i].start
			}
			last = max(last, spans[i].end)
		}
	}
	if first >= 0 {
		tl.CriticalMs = last - first
	}
	scale := timelineBarsW / max(tl.SpanMs, 1)
	for i, s := range steps {
		label := "#" + strconv.Itoa(int(s.Index)) + " " + s.Worker
		if s.Worker == "" {
			label = "#" + strconv.Itoa(int(s.Index)) + " " + s.Role
		}
		tl.Bars = append(tl.Bars, timelineBar{
			Y: float64(i) * timelineRowH, X: spans[i].start * scale, W: max((spans[i].end-spans[i].start)*scale, 2),
			Start: spans[i].start, End: spans[i].end, Step: s, Anchor: anchors[i], Critical: crit[i], Label: label,
		})
		n := 0
		for j := range steps {
			if spans[j].start <= spans[i].start && spans[i].start < spans[j].end {
				n++
			}
		}
		tl.MaxParallel = max(tl.MaxParallel, n)
	}
	for k := 0; k <= 4; k++ {
		ms := tl.SpanMs * float64(k) / 4
		tl.Ticks = append(tl.Ticks, timelineTick{X: ms * scale, Label: fmtMs(ms) + " ms"})
	}
	tl.Width = timelineLabelW + timelineBarsW + 60
	tl.Height = float64(len(steps))*timelineRowH + timelineAxisH
	return tl
}

// runDrill is the drill-down of one run: step details, workflow graph, timeline.
type runDrill struct {
	Details  []stepDetail
	Graph    workflowGraph
	Timeline timeline
}

// newRunDrill builds a run's drill-down; md renders the steps' outputs.
func newRunDrill(md *markdown, steps []store.Step) runDrill {
	var d runDrill
	if len(steps) == 0 {
		return d
	}
	anchors := make([]string, len(steps))
	for i, s := range steps {
		anchors[i] = stepAnchor(s.RunID, s.Index)
		det := stepDetail{Step: s, PlanIdx: planStepIndex(steps, i), Anchor: anchors[i]}
		det.Context, det.ContextOK = parseMessages(s.Messages)
		if s.Output != "" {
			if h, err := md.renderOutput(s.Output); err == nil {
				det.OutputHTML = h
			}
		}
		d.Details = append(d.Details, det)
	}
	// The critical path by the timeline (store.CriticalPath), the one the
	// plans page attributes latency by.
	crit := store.CriticalPath(steps)
	d.Graph = newWorkflowGraph(steps, anchors, crit)
	d.Graph.ID = steps[0].RunID
	d.Timeline = newTimeline(steps, anchors, crit)
	return d
}

// fmtPx renders an SVG coordinate in px with at most one decimal.
func fmtPx(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// truncRunes shortens s to n runes with an ellipsis.
func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// nodeWorker names a node: its worker, else its role.
func nodeWorker(n graphNode) string {
	if n.Step.Worker != "" {
		return n.Step.Worker
	}
	return n.Step.Role
}

// nodeRole is a node's second line: role, plan position and retries.
func nodeRole(n graphNode) string {
	s := n.Step.Role
	if n.PlanIdx >= 0 {
		s += " · plan step " + strconv.Itoa(n.PlanIdx)
	}
	if n.Step.Attempt > 1 {
		s += " · attempt " + strconv.Itoa(int(n.Step.Attempt))
	}
	return s
}
