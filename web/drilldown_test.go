package web

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestStepDeps(t *testing.T) {
	w := func(i, parent, depth int32, role, access string) store.Step {
		return store.Step{RunID: "r", Index: i, Parent: parent, Depth: depth, Role: role, Access: access}
	}
	tests := []struct {
		name      string
		steps     []store.Step
		wantDeps  [][]int
		wantKinds [][]string
	}{
		{"no planning call: empty access lists stand alone, all and named lists link siblings",
			[]store.Step{w(0, -1, 0, "worker", "[]"), w(1, -1, 0, "worker", `"all"`), w(2, -1, 0, "worker", "[0]")},
			[][]int{nil, {0}, {0}}, [][]string{nil, {"access"}, {"access"}}},
		{"planning call feeds steps without access; access lists name plan steps, not indexes",
			[]store.Step{w(0, -1, 0, "conductor", ""), w(1, -1, 0, "worker", "[]"), w(2, -1, 0, "worker", "[]"),
				w(3, -1, 0, "worker", "[1]")},
			[][]int{nil, {0}, {0}, {2}}, [][]string{nil, {"plan"}, {"plan"}, {"access"}}},
		{"nested workflow: its planning call hangs off the parent, its steps off that call",
			fixtureNestedTrace().Steps,
			[][]int{nil, {0}, {0}, {2}, {3}, {1, 2}},
			[][]string{nil, {"plan"}, {"plan"}, {"nest"}, {"plan"}, {"access", "access"}}},
		{"a retried fallback has no dependencies",
			[]store.Step{w(0, -1, 0, "fallback", "")}, [][]int{nil}, [][]string{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps, kinds := stepDeps(tt.steps)
			for i := range tt.steps {
				if !slices.Equal(deps[i], tt.wantDeps[i]) || !slices.Equal(kinds[i], tt.wantKinds[i]) {
					t.Errorf("step %d: deps %v %v, want %v %v", i, deps[i], kinds[i], tt.wantDeps[i], tt.wantKinds[i])
				}
			}
		})
	}
}

func TestRunDrillNested(t *testing.T) {
	steps := fixtureNestedTrace().Steps
	d := newRunDrill(newMarkdown(), steps)

	var crit []int32
	for _, n := range d.Graph.Nodes {
		if n.Critical {
			crit = append(crit, n.Step.Index)
		}
	}
	// #5 ends last; of its dependencies (#1, #2) #2 ends later; #2 hangs off #0.
	if want := []int32{0, 2, 5}; !slices.Equal(crit, want) {
		t.Errorf("critical path = %v, want %v", crit, want)
	}
	tl := d.Timeline
	if tl.SpanMs != 2600 || tl.CriticalMs != 2600 {
		t.Errorf("span %v ms, critical %v ms; want 2600 and 2600", tl.SpanMs, tl.CriticalMs)
	}
	// At 500 ms #1 (300–800), #2 (300–1200) and #4 (500–1100) run; #3 ended at 500.
	if tl.MaxParallel != 3 {
		t.Errorf("max parallel = %d, want 3", tl.MaxParallel)
	}
	if len(d.Graph.Frames) != 1 || d.Graph.Frames[0].Parent != 2 {
		t.Fatalf("frames = %+v, want one nested under #2", d.Graph.Frames)
	}
	f := d.Graph.Frames[0]
	for _, n := range d.Graph.Nodes {
		inside := n.X >= f.X && n.Y >= f.Y && n.X+n.W <= f.X+f.W && n.Y+n.H <= f.Y+f.H
		if inside != (n.Step.Depth == 1) {
			t.Errorf("node #%d (depth %d) inside the nested frame = %v", n.Step.Index, n.Step.Depth, inside)
		}
	}
	// Layers: a node is right of everything it depends on.
	deps, _ := stepDeps(steps)
	for i, ds := range deps {
		for _, j := range ds {
			if d.Graph.Nodes[j].X >= d.Graph.Nodes[i].X {
				t.Errorf("node #%d is not right of its dependency #%d", i, j)
			}
		}
	}
	for i, b := range tl.Bars {
		if b.X < 0 || b.X+b.W > timelineBarsW+0.01 {
			t.Errorf("bar %d spans %v..%v px, outside 0..%v", i, b.X, b.X+b.W, timelineBarsW)
		}
	}
}

func TestDiffAnswers(t *testing.T) {
	tests := []struct{ name, want, got string }{
		{"same", "3 h 25 min", "3 h 25 min"},
		{"changed words", "The trip takes 3 h 25 min.", "The trip takes 3 hours 25 minutes."},
		{"empty candidate", "Paris.", ""},
		{"unicode", "durée : 3 h", "durée : 4 h ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, ins, del := diffAnswers(tt.want, tt.got)
			var a, b strings.Builder
			var nIns, nDel int
			for _, op := range ops {
				if op.Op <= 0 {
					a.WriteString(op.Text)
				}
				if op.Op >= 0 {
					b.WriteString(op.Text)
				}
				switch op.Op {
				case 1:
					nIns += len([]rune(op.Text))
				case -1:
					nDel += len([]rune(op.Text))
				}
			}
			if a.String() != tt.want || b.String() != tt.got {
				t.Errorf("ops rebuild %q / %q, want %q / %q", a.String(), b.String(), tt.want, tt.got)
			}
			if ins != nIns || del != nDel {
				t.Errorf("counts +%d −%d, ops say +%d −%d", ins, del, nIns, nDel)
			}
			if (tt.want == tt.got) != (ins == 0 && del == 0) {
				t.Errorf("same=%v but +%d −%d", tt.want == tt.got, ins, del)
			}
		})
	}
}

func TestRenderOutputSanitizes(t *testing.T) {
	md := newMarkdown()
	got, err := md.renderOutput("**bold** [ok](https://example.com) [bad](javascript:alert(1))\n\n" +
		"![pixel](https://tracker.example/p.gif)\n\n" + xssScript + "\n\n" + xssImg + "\n\n| a |\n|---|\n| 1 |\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "<img", "onerror", "javascript:", "tracker.example"} {
		if strings.Contains(got, bad) {
			t.Errorf("rendered output holds %q:\n%s", bad, got)
		}
	}
	for _, good := range []string{"<strong>bold</strong>", `href="https://example.com"`, "<table>", `rel="nofollow noreferrer"`} {
		if !strings.Contains(got, good) {
			t.Errorf("rendered output lacks %q:\n%s", good, got)
		}
	}
}

func TestTimelineEmptyAndZeroLatency(t *testing.T) {
	if tl := newTimeline(nil, nil, nil); len(tl.Bars) != 0 || tl.Width != 0 {
		t.Errorf("empty timeline = %+v", tl)
	}
	s := store.Step{RunID: "r", Index: 0, Role: "worker", StartedAt: time.Unix(0, 0)}
	tl := newTimeline([]store.Step{s}, []string{"a"}, []bool{true})
	if len(tl.Bars) != 1 || tl.Bars[0].W < 2 {
		t.Errorf("a zero-latency step must still draw a visible bar: %+v", tl.Bars)
	}
}
