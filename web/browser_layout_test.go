package web

import (
	"fmt"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// wideSuiteRun is a suite run as wide as a real one gets: the report the eval
// package renders (its golden file, with the 16-column overall table) and a case
// table of one column per pipeline, eight pipelines with long names.
func wideSuiteRun(t *testing.T) (store.SuiteRun, []store.Score) {
	t.Helper()
	report, err := os.ReadFile("../eval/testdata/report.golden.md")
	if err != nil {
		t.Fatal(err)
	}
	sr := fixtureSuiteRun()
	sr.SuiteRunID = "sr-wide"
	sr.ReportMarkdown = string(report)
	sr.Candidates = []string{"conductor:rl-conductor-7b-2025-05", "moa:3:gpt-5+claude-sonnet-4.5+gemini-2.5-pro",
		"self-refine:claude-sonnet-4.5-x3", "chain:planner-gpt-5/solver-qwen3-32b-thinking", "single:deepseek-r1-distill-qwen-32b",
		"fugu:orchestrator-api-v1", "single:gemini-2.5-flash-lite-preview"}
	var scores []store.Score
	for _, p := range append([]string{sr.Incumbent}, sr.Candidates...) {
		vals := map[string][]float64{}
		for c := range 12 {
			vals[fmt.Sprintf("gsm8k-test-%04d-long-case-identifier", c)] = []float64{float64(c % 2)}
		}
		scores = append(scores, suiteScores(sr.SuiteRunID, p, vals)...)
	}
	return sr, scores
}

// TestBrowserSuiteRunTablesFitAt1400: at a 1400×900 viewport every table of the
// suite-run page (the report's and the case table) either fits its container or
// scrolls inside it, so its last column can be reached; nothing widens the page.
func TestBrowserSuiteRunTablesFitAt1400(t *testing.T) {
	st := engine.Open(t)
	sr, scores := wideSuiteRun(t)
	if err := st.InsertSuiteRuns(t.Context(), []store.SuiteRun{sr}); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertScores(t.Context(), scores); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newTestServer(t, st, NewDefaultConfig()))
	t.Cleanup(srv.Close)
	ctx, log := newBrowser(t)
	run(t, ctx, chromedp.Emulate(device.Info{Width: 1400, Height: 900, Scale: 1}))
	load(t, ctx, log, srv.URL+"/suite-runs/"+sr.SuiteRunID)
	screenshot(t, ctx, artifactsDir(t), "suite_run_1400.png")

	type box struct {
		Name                      string
		ScrollWidth, ClientWidth  float64
		Overflow                  string  // the container's computed overflow-x
		LastRight, ContainerRight float64 // after scrolling the container to its end
		Rows                      int
	}
	boxes := run(t, ctx, chromedp.Evaluate[[]box](`Array.from(document.querySelectorAll('main table')).map((tbl, i) => {
		// A table that scrolls by itself is its own container.
		const c = ['auto', 'scroll'].includes(getComputedStyle(tbl).overflowX) ? tbl : tbl.parentElement;
		c.scrollLeft = c.scrollWidth;
		const cells = tbl.querySelectorAll('tr:first-child > *');
		const last = cells[cells.length - 1].getBoundingClientRect();
		return {Name: tbl.dataset.testid || ('table ' + i), ScrollWidth: c.scrollWidth, ClientWidth: c.clientWidth,
			Overflow: getComputedStyle(c).overflowX, LastRight: last.right, ContainerRight: c.getBoundingClientRect().right,
			Rows: tbl.rows.length};
	})`))
	var sawCases, sawWide bool
	for _, b := range boxes {
		t.Logf("%s: container scroll %.0f / client %.0f px, overflow-x %s, last column right %.0f, container right %.0f",
			b.Name, b.ScrollWidth, b.ClientWidth, b.Overflow, b.LastRight, b.ContainerRight)
		sawCases = sawCases || (b.Name == "suite-cases" && b.Rows == 13)
		sawWide = sawWide || b.ScrollWidth > b.ClientWidth
		if b.ScrollWidth > b.ClientWidth+1 && b.Overflow != "auto" && b.Overflow != "scroll" {
			t.Errorf("%s overflows its container (%.0f > %.0f px) and the container does not scroll (overflow-x %s)",
				b.Name, b.ScrollWidth, b.ClientWidth, b.Overflow)
		}
		if b.LastRight > b.ContainerRight+1 || b.LastRight > 1400 {
			t.Errorf("%s: last column ends at %.0f px, past its container (%.0f px) or the viewport: unreachable",
				b.Name, b.LastRight, b.ContainerRight)
		}
	}
	if !sawCases {
		t.Errorf("no case table of 12 cases among %d tables", len(boxes))
	}
	if !sawWide {
		t.Error("no table is wider than its container at 1400 px: the fixture no longer tests scrolling")
	}
	if w := run(t, ctx, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`)); w > 1400 {
		t.Errorf("the page is %.0f px wide at a 1400 px viewport: something overflows main", w)
	}
}
