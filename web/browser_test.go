package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Browser-test settings, from the environment.
const (
	// envChromium overrides the browser binary (default: /usr/bin/chromium, then "chromium" on PATH).
	envChromium = "CHROMIUM_PATH"
	// envArtifacts is the directory screenshots are written to (default: a test temp dir).
	envArtifacts = "WEB_TEST_ARTIFACTS"
)

// Payloads that would set a window flag and the document title if they ran.
const (
	xssRunScript = `<script>window.__xss="script";document.title="pwned"</script>`
	xssRunImg    = `<img src=x onerror="window.__xss='img';document.title='pwned'">`
)

// chromiumPath finds Debian's chromium. Absent: the test fails in CI (CI=true),
// where .ci/run installs it, and is skipped elsewhere.
func chromiumPath(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv(envChromium), "/usr/bin/chromium"}
	if p, err := exec.LookPath("chromium"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	msg := "browser tests need Debian's chromium at /usr/bin/chromium (apt-get install chromium) or " + envChromium
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browserTraces is the data the browser sees: the realistic trace with payloads
// that would flag their execution, a conductor run with a planning call and a
// nested workflow, and two traces of other apps for the filter.
func browserTraces() []store.Trace {
	tr := fixtureTrace()
	tr.Runs[1].FinalOutput = "3 hours 25 minutes. " + xssRunScript + " " + xssRunImg
	tr.Steps[2].Output = "Checked. **3 hours 25 minutes.**\n\n" + xssRunScript + "\n\n" + xssRunImg
	tr.Steps[1].Messages = `[{"role":"user","content":"Compute the duration. ` + strings.ReplaceAll(xssRunImg, `"`, `\"`) + `"}]`

	nested := fixtureNestedTrace()
	other := store.Trace{Request: store.Request{RequestID: "req-billing", ReceivedAt: t0.Add(-2 * time.Minute),
		Source: store.SourceReplay, App: "billing", Input: `[{"role":"user","content":"refund?"}]`}}
	return []store.Trace{tr, nested, other}
}

// browserServer serves the UI over a store on the embedded engine holding browserTraces and a
// suite run whose report carries executable payloads.
func browserServer(t *testing.T) (*httptest.Server, []store.Trace) {
	t.Helper()
	st := engine.Open(t)
	trs := browserTraces()
	for _, tr := range trs {
		seed(t, st, tr)
	}
	sr := fixtureSuiteRun()
	sr.ReportMarkdown += "\n" + xssRunScript + "\n\n" + xssRunImg + "\n"
	sr.ReportHTML = "<!DOCTYPE html><html><head><title>report</title><style>h1{color:#123}</style></head><body><h1>Gates</h1>" +
		xssRunScript + xssRunImg + "</body></html>"
	if err := st.InsertSuiteRuns(context.Background(), []store.SuiteRun{sr}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newTestServer(t, st, NewDefaultConfig()))
	t.Cleanup(srv.Close)
	return srv, trs
}

// consoleLog collects what the page reports as errors: console.error calls,
// uncaught exceptions and browser log entries of level error (failed loads, CSP
// violations), read from chromedp.Console.
type consoleLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *consoleLog) add(m chromedp.ConsoleMessage) {
	if m.Type != chromedp.ConsoleError && !m.IsException() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, m.String()+" "+m.URL)
}

// take returns and clears the collected errors.
func (l *consoleLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.errs
	l.errs = nil
	return out
}

// newBrowser starts a headless chromium with a fresh profile and returns a tab
// context and its console log.
func newBrowser(t *testing.T) (context.Context, *consoleLog) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		wg.Wait()
	})
	// The first action starts the browser; it runs without a deadline because a
	// deadline on it would bound the whole browser's life.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	log := &consoleLog{}
	msgs := chromedp.Console(ctx)
	wg.Go(func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			log.add(m)
		}
	})
	return ctx, log
}

// run runs one action with a deadline and fails the test on error.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// artifactsDir is where screenshots go: $WEB_TEST_ARTIFACTS or a temp dir.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts dir: %v", err)
	}
	return dir
}

// screenshot writes a full-page PNG of the current page to dir/name.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	img := run(t, ctx, chromedp.FullScreenshot(100))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatalf("write screenshot: %v", err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(img))
}

// load navigates to url, waits for the page and asserts it raised no errors.
func load(t *testing.T, ctx context.Context, log *consoleLog, url string) {
	t.Helper()
	run(t, ctx, chromedp.Steps(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("footer"))))
	settle(t, ctx)
	if errs := log.take(); len(errs) > 0 {
		t.Errorf("%s raised errors in the browser:\n  %s", url, strings.Join(errs, "\n  "))
	}
}

// settle gives late events (failed sub-resources, console messages) time to arrive.
func settle(t *testing.T, ctx context.Context) {
	t.Helper()
	run(t, ctx, chromedp.Sleep(200*time.Millisecond))
}

// count returns the number of elements matching a CSS selector.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
}

// notExecuted asserts that no payload ran: the flag is unset and the title is wantTitle.
func notExecuted(t *testing.T, ctx context.Context, wantTitle string) {
	t.Helper()
	if flag := run(t, ctx, chromedp.Evaluate[string](`String(window.__xss)`)); flag != "undefined" {
		t.Errorf("a stored payload executed: window.__xss = %q", flag)
	}
	if title := run(t, ctx, chromedp.Title()); title != wantTitle {
		t.Errorf("document.title = %q, want %q (a payload may have run)", title, wantTitle)
	}
}

func TestBrowser(t *testing.T) {
	srv, trs := browserServer(t)
	ctx, log := newBrowser(t)
	dir := artifactsDir(t)
	overviewURL := urls{}.overviewWith(overviewQuery{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)})

	t.Run("every page loads without errors", func(t *testing.T) {
		for _, path := range []string{"/traces", "/traces/" + trs[0].Request.RequestID, "/traces/req-nested",
			"/suite-runs", "/suite-runs/" + fixtureSuiteRun().SuiteRunID, "/traces?app=nothing-matches",
			"/traces?worker=b-sub&grade=passed&min_ms=1", "/traces?language=en&has_table=no&length_bucket=0-127",
			"/overview", "/overview?language=ru&has_code=yes", "/shift", "/shift?window=24h", overviewURL,
			urls{}.workersWith(overviewQuery{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}, ""),
			urls{}.compareRuns("run-inc-1", "run-cond-1"), urls{}.compareRuns("run-n-cond", "run-cond-1")} {
			load(t, ctx, log, srv.URL+path)
		}
	})

	t.Run("the error watcher sees a failed load", func(t *testing.T) {
		// The main document answering 404 is logged as a failed resource: proof
		// that the checks above would see an error if a page raised one.
		run(t, ctx, chromedp.Steps(chromedp.Navigate(srv.URL+"/traces/no-such-trace"), chromedp.WaitReady(chromedp.CSS("footer"))))
		settle(t, ctx)
		if errs := log.take(); len(errs) == 0 {
			t.Error("a 404 page raised no browser error; the console watcher is not working")
		}
	})

	t.Run("a filter changes the rows and lands in the URL", func(t *testing.T) {
		load(t, ctx, log, srv.URL+"/traces")
		if n := count(t, ctx, `[data-testid="trace-row"]`); n != len(trs) {
			t.Fatalf("unfiltered rows = %d, want %d", n, len(trs))
		}
		run(t, ctx, chromedp.Steps(
			chromedp.SendKeys(chromedp.CSS(`form[data-testid="trace-filters"] input[name="app"]`), "search"),
			chromedp.Submit(chromedp.CSS(`form[data-testid="trace-filters"]`)),
		))
		// Submitting navigates; wait until the filtered page is the current one.
		loc := run(t, ctx, chromedp.Location())
		for i := 0; i < 100 && !strings.Contains(loc, "app=search"); i++ {
			run(t, ctx, chromedp.Sleep(50*time.Millisecond))
			loc = run(t, ctx, chromedp.Location())
		}
		if !strings.Contains(loc, "app=search") {
			t.Fatalf("location after filtering = %q, want app=search in it", loc)
		}
		run(t, ctx, chromedp.WaitReady(chromedp.CSS("footer")))
		settle(t, ctx)
		ids := run(t, ctx, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll('[data-testid="trace-row"]')].map(r => r.dataset.requestId)`))
		if len(ids) != 1 || ids[0] != "req-nested" {
			t.Errorf("filtered rows = %q, want [req-nested]", ids)
		}
		if errs := log.take(); len(errs) > 0 {
			t.Errorf("errors while filtering: %q", errs)
		}
	})

	t.Run("graph and timeline render", func(t *testing.T) {
		load(t, ctx, log, srv.URL+"/traces/req-nested")
		sel := `[data-run-id="run-n-cond"] `
		if n := count(t, ctx, sel+`[data-testid="graph-node"]`); n != 6 {
			t.Errorf("graph nodes = %d, want 6 (one per step)", n)
		}
		if n := count(t, ctx, sel+`[data-testid="timeline-bar"]`); n != 6 {
			t.Errorf("timeline bars = %d, want 6", n)
		}
		if n := count(t, ctx, sel+`[data-testid="graph-frame"]`); n != 1 {
			t.Errorf("nested-workflow frames = %d, want 1", n)
		}
		// Drawn, not just present: the SVGs and their shapes have a size on screen.
		sizes := run(t, ctx, chromedp.Evaluate[map[string]float64](`(() => {
			const q = s => document.querySelector('[data-run-id="run-n-cond"] ' + s).getBoundingClientRect();
			const g = q('[data-testid="workflow-graph"]'), tl = q('[data-testid="timeline"]');
			const node = q('[data-testid="graph-node"] rect'), bar = q('[data-testid="timeline-bar"] rect');
			const edge = q('[data-testid="graph-edge"]');
			return {graphW: g.width, graphH: g.height, timelineW: tl.width, timelineH: tl.height,
				nodeW: node.width, barW: bar.width, edgeW: edge.width + edge.height};
		})()`))
		for k, v := range sizes {
			if v <= 0 {
				t.Errorf("%s = %v px, want > 0 (not rendered)", k, v)
			}
		}
		if count(t, ctx, `[data-run-id="run-n-cond"] [data-testid="timeline-bar"].critical`) == 0 {
			t.Error("no timeline bar is marked on the critical path")
		}
	})

	t.Run("stored payloads do not execute on the trace page", func(t *testing.T) {
		load(t, ctx, log, srv.URL+"/traces/"+trs[0].Request.RequestID)
		// Open every <details> so all step outputs and contexts are laid out.
		run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('details').forEach(d => d.open = true); 0`))
		settle(t, ctx)
		notExecuted(t, ctx, "Trace "+trs[0].Request.RequestID+" · conductor-shadow")
		shown := run(t, ctx, chromedp.TextContent(chromedp.CSS(`[data-run-id="run-cond-1"] [data-testid="run-output"]`)))
		if !strings.Contains(shown, xssRunScript) {
			t.Errorf("the answer's text %q should show the payload as text", shown)
		}
		if n := count(t, ctx, `main img, main script`); n != 0 {
			t.Errorf("main holds %d <img>/<script> elements from stored text, want 0", n)
		}
		if errs := log.take(); len(errs) > 0 {
			t.Errorf("errors with every detail open: %q", errs)
		}
		screenshot(t, ctx, dir, "trace_page.png")
	})

	t.Run("overview charts render", func(t *testing.T) {
		load(t, ctx, log, srv.URL+overviewURL)
		if n := count(t, ctx, `[data-testid="latency-chart"] polyline`); n != 6 {
			t.Errorf("latency lines = %d, want 6", n)
		}
		w := run(t, ctx, chromedp.Evaluate[float64](`document.querySelector('[data-testid="cost-chart"] svg').getBoundingClientRect().width`))
		if w <= 0 {
			t.Errorf("cost chart width = %v px", w)
		}
		screenshot(t, ctx, dir, "overview_page.png")
	})

	t.Run("stored payloads do not execute on the report page", func(t *testing.T) {
		sr := fixtureSuiteRun()
		load(t, ctx, log, srv.URL+"/suite-runs/"+sr.SuiteRunID)
		notExecuted(t, ctx, "Suite run "+sr.SuiteRunID+" · conductor-shadow")
		if n := count(t, ctx, `[data-testid="report"] table`); n != 1 {
			t.Errorf("report tables = %d, want 1 (the Markdown table rendered)", n)
		}
		screenshot(t, ctx, dir, "report_page.png")
	})

	t.Run("the stored HTML report is sandboxed", func(t *testing.T) {
		run(t, ctx, chromedp.Steps(chromedp.Navigate(srv.URL+"/suite-runs/"+fixtureSuiteRun().SuiteRunID+"/report.html"),
			chromedp.WaitReady(chromedp.CSS("h1"))))
		settle(t, ctx)
		log.take() // the blocked payloads are reported as violations: expected here
		notExecuted(t, ctx, "report")
		if color := run(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('h1')).color`)); color != "rgb(17, 34, 51)" {
			t.Errorf("the report's own inline style did not apply: h1 color %q", color)
		}
	})

}
