package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Screen of the overview's first-screen check, px: what a laptop shows.
const (
	screenW, screenH = 1400, 900
)

// overviewHeadline is one figure the first screen must show: the element's
// data-testid and the texts that mean "empty".
type overviewHeadline struct {
	testID string
	empty  []string
}

// overviewHeadlines are the overview's headline figures after a replay and a
// suite run: each must be present, on the first screen and not empty.
var overviewHeadlines = []overviewHeadline{
	{"count-requests", []string{"", "0"}},
	{"count-shadow", []string{"", "0"}},
	{"count-incumbent", []string{"", "0"}},
	{"production-incumbent", []string{""}},
	{"latest-suite-verdict", []string{"", "—"}},
	{"cutover-answer", []string{""}},
	{"cutover-blocker", []string{""}},
	{"cutover-suite", []string{"", "no suite run"}},
	{"cutover-live", []string{"", "no answered pairs"}},
	{"cutover-agreement", []string{"", "—"}},
	{"cutover-cost-ratio", []string{"", "—"}},
	{"cutover-p95-ratio", []string{"", "—"}},
	{"cutover-suite-quality", []string{"", "—"}},
}

// checkOverviewScreen opens base's overview in headless chromium at
// 1400×900 with its default window, writes a screenshot of the first screen
// ($WEB_TEST_ARTIFACTS or a temp dir) and fails when a headline figure is
// missing, empty or below the fold. Without chromium it skips (fails in CI).
func checkOverviewScreen(t *testing.T, base string) {
	t.Helper()
	chromium := "/usr/bin/chromium"
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		chromium = p
	}
	if _, err := os.Stat(chromium); err != nil {
		if p, lerr := exec.LookPath("chromium"); lerr == nil {
			chromium = p
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("the overview screen check needs chromium: %v", err)
		} else {
			t.Logf("overview screen check skipped: no chromium (%v)", err)
			return
		}
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(screenW, screenH))
	defer cancelAlloc()
	bctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Steps(chromedp.EmulateViewport(screenW, screenH),
		chromedp.Navigate(base+"/overview"), chromedp.WaitReady(chromedp.CSS("footer")))); err != nil {
		t.Fatalf("overview in chromium: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("overview screenshot: %v", err)
	}
	dir := os.Getenv("WEB_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "overview-after-replay.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("overview screenshot: %s (%d bytes)", path, len(png))
	// The charts, scrolled into view, as a second artifact for the reviewer.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const e = document.querySelector('[data-testid="overview-charts"]'); if (e) e.scrollIntoView(); return !!e; })()`)); err == nil {
		if shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "overview-after-replay-charts.png"), shot, 0o644)
		}
		_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.scrollTo(0, 0); return true; })()`))
	}
	// The charts below the table: each draws something.
	for sel, what := range map[string]string{
		`[data-testid="latency-histogram"] rect`: "latency histogram bars",
		`[data-testid="cost-chart"] circle`:      "cost per request points",
		`[data-testid="segment-quality"] rect`:   "quality-by-segment bars",
		`[data-testid="coverage-chart"] circle`:  "coverage points",
	} {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`))
		if err != nil {
			t.Fatalf("count %s: %v", what, err)
		}
		if n == 0 {
			t.Errorf("overview: no %s (screenshot %s)", what, path)
		}
	}
	for _, h := range overviewHeadlines {
		type headline struct {
			Found bool    `json:"found"`
			Text  string  `json:"text"`
			Top   float64 `json:"top"`
			Right float64 `json:"right"`
		}
		js := `(() => { const e = document.querySelector('[data-testid="` + h.testID + `"]');
			if (!e) return {found: false, text: "", top: 0, right: 0};
			const r = e.getBoundingClientRect();
			return {found: true, text: e.innerText.trim(), top: r.top, right: r.right}; })()`
		got, err := chromedp.Run(ctx, chromedp.Evaluate[headline](js))
		if err != nil {
			t.Fatalf("read %s: %v", h.testID, err)
		}
		switch {
		case !got.Found:
			t.Errorf("overview: headline %s is missing (screenshot %s)", h.testID, path)
		case slices.Contains(h.empty, strings.TrimSpace(got.Text)):
			t.Errorf("overview: headline %s is empty: %q (screenshot %s)", h.testID, got.Text, path)
		case got.Top >= screenH:
			t.Errorf("overview: headline %s is below the first screen (top %.0f px of %d)", h.testID, got.Top, screenH)
		case got.Right > screenW:
			t.Errorf("overview: headline %s is cut off on the right (right edge %.0f px of %d)", h.testID, got.Right, screenW)
		}
	}
}
