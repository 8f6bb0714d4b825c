package web

import (
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
)

// firstScreen is what a page shows in a 1400×900 window before any scroll,
// measured by the browser.
type firstScreen struct {
	ViewW, ViewH float64
	ScrollW      float64 // the document's width: more than ViewW scrolls sideways
	Rows         int     // trace rows wholly inside the first screen
	MaxRowH      float64 // the tallest trace row, px
	// The trace page's pair: both answers' boxes and the judgment's top.
	PairTops, PairLefts []float64
	JudgmentTop         float64
	PlanTop             float64
	// The plans page: the shapes table's top and the first shape graph's
	// node boxes [x, y, w, h] and edge end points [x, y].
	ShapesTop float64
	Nodes     [][4]float64
	EdgeEnds  [][2]float64
}

const firstScreenJS = `(() => {
	const r = e => e ? e.getBoundingClientRect() : null;
	const out = {ViewW: innerWidth, ViewH: innerHeight, ScrollW: document.documentElement.scrollWidth,
		Rows: 0, MaxRowH: 0, PairTops: [], PairLefts: [], JudgmentTop: -1, PlanTop: -1, ShapesTop: -1, Nodes: [], EdgeEnds: []};
	for (const tr of document.querySelectorAll('[data-testid="trace-row"]')) {
		const b = r(tr);
		out.MaxRowH = Math.max(out.MaxRowH, b.height);
		if (b.bottom <= innerHeight) out.Rows++;
	}
	for (const c of document.querySelectorAll('[data-testid="pair-answers"] > [data-testid="run-column"]')) {
		out.PairTops.push(r(c).top); out.PairLefts.push(r(c).left);
	}
	const j = document.querySelector('[data-testid="trace-pair"] [data-testid="pair-judgment"]');
	if (j) out.JudgmentTop = r(j).top;
	const p = document.querySelector('[data-testid="pair-plan"]');
	if (p) out.PlanTop = r(p).top;
	const s = document.querySelector('[data-testid="shapes-table"]');
	if (s) out.ShapesTop = r(s).top;
	const g = document.querySelector('[data-testid="shape-graph"] svg') || document.querySelector('[data-testid="shape-graph"]');
	if (g) {
		for (const n of g.querySelectorAll('[data-testid="graph-node"] rect')) { const b = r(n); out.Nodes.push([b.x, b.y, b.width, b.height]); }
		for (const e of g.querySelectorAll('[data-testid="graph-edge"]')) {
			const pt = e.getPointAtLength(e.getTotalLength()), m = e.getScreenCTM();
			out.EdgeEnds.push([pt.x * m.a + m.e, pt.y * m.d + m.f]);
		}
	}
	return out;
})()`

// TestBrowserFirstScreens opens the traces list, a trace and the plans page
// in chromium at 1400×900 and checks what their first screen shows: the list
// one line per trace without sideways scrolling, the trace page's two answers
// side by side with the judgment, the plans page's shapes and a graph whose
// nodes do not overlap and whose edges end in distinct points.
func TestBrowserFirstScreens(t *testing.T) {
	srv := httptest.NewServer(newTestServer(t, plansStore(t), NewDefaultConfig()))
	t.Cleanup(srv.Close)
	ctx, log := newBrowser(t)
	dir := artifactsDir(t)
	run(t, ctx, chromedp.EmulateViewport(1400, 900))
	measure := func(t *testing.T, path, shot string) firstScreen {
		t.Helper()
		load(t, ctx, log, srv.URL+path)
		screenshot(t, ctx, dir, shot)
		return run(t, ctx, chromedp.Evaluate[firstScreen](firstScreenJS))
	}

	t.Run("traces list", func(t *testing.T) {
		s := measure(t, "/traces?candidate=conductor&sort=cost_delta", "traces-sorted.png")
		if s.ScrollW > s.ViewW {
			t.Errorf("the list is %v px wide in a %v px window: it scrolls sideways", s.ScrollW, s.ViewW)
		}
		if s.MaxRowH > 40 {
			t.Errorf("a trace row is %v px tall: want one line", s.MaxRowH)
		}
		if s.Rows < 12 {
			t.Errorf("%d trace rows in the first screen, want at least 12", s.Rows)
		}
	})

	t.Run("trace page", func(t *testing.T) {
		s := measure(t, "/traces/plan-req-02", "trace-pair.png")
		if len(s.PairTops) != 2 {
			t.Fatalf("%d answers in the pair, want 2", len(s.PairTops))
		}
		if s.PairTops[0] != s.PairTops[1] || s.PairLefts[0] >= s.PairLefts[1] || s.PairTops[0] > s.ViewH/2 {
			t.Errorf("answers at tops %v, lefts %v: want side by side, incumbent left, in the upper half", s.PairTops, s.PairLefts)
		}
		if s.JudgmentTop < 0 || s.JudgmentTop > s.ViewH {
			t.Errorf("the judgment is at %v px: want it in the first screen", s.JudgmentTop)
		}
		if s.PlanTop < s.PairTops[0] {
			t.Errorf("the plan (at %v px) comes before the answers", s.PlanTop)
		}
	})

	t.Run("plans page", func(t *testing.T) {
		s := measure(t, "/plans", "plans.png")
		if s.ShapesTop < 0 || s.ShapesTop > s.ViewH {
			t.Errorf("the shapes table is at %v px: want it in the first screen", s.ShapesTop)
		}
		if s.ScrollW > s.ViewW {
			t.Errorf("the plans page is %v px wide in a %v px window", s.ScrollW, s.ViewW)
		}
		if len(s.Nodes) != 2 || len(s.EdgeEnds) != 1 {
			t.Fatalf("first shape graph: %d nodes, %d edges; want the cheap shape's 2 and 1", len(s.Nodes), len(s.EdgeEnds))
		}
	})

	t.Run("the gpt-5 shape's graph", func(t *testing.T) {
		load(t, ctx, log, srv.URL+"/plans?version_key=conductor@v1")
		s := run(t, ctx, chromedp.Evaluate[firstScreen](firstScreenJS))
		if len(s.Nodes) != 3 || len(s.EdgeEnds) != 2 {
			t.Fatalf("%d nodes, %d edges; want 3 and 2 (gpt-5 sees all, claude sees gpt-5)", len(s.Nodes), len(s.EdgeEnds))
		}
		for i, a := range s.Nodes {
			for _, b := range s.Nodes[i+1:] {
				if a[0] < b[0]+b[2] && b[0] < a[0]+a[2] && a[1] < b[1]+b[3] && b[1] < a[1]+a[3] {
					t.Errorf("nodes %v and %v overlap", a, b)
				}
			}
		}
		if s.EdgeEnds[0] == s.EdgeEnds[1] {
			t.Errorf("both edges end in %v: bundled", s.EdgeEnds[0])
		}
	})
}
