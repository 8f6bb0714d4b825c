package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// pairState is what the page shows of the current pair: its token ("" when
// none is left) and the text of the answers shown as A and B.
type pairState struct {
	Token string `json:"token"`
	A     string `json:"a"`
	B     string `json:"b"`
	Done  bool   `json:"done"`
}

const pairStateJS = `(() => {
  const p = document.querySelector('[data-testid="review-pair"]');
  const t = [...document.querySelectorAll('[data-testid="answer-text"]')].map(e => e.textContent);
  return {token: p ? p.dataset.token : "", a: t[0] || "", b: t[1] || "", done: !!document.querySelector('[data-testid="review-done"]')};
})()`

// nextPair waits until the page shows a pair other than after (or that
// nothing is left) and returns it.
func nextPair(t *testing.T, ctx context.Context, after string) pairState {
	t.Helper()
	for range 200 {
		var s pairState
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := chromedp.Run(tctx, chromedp.Evaluate[pairState](pairStateJS))
		cancel()
		if err == nil && (s.Done || (s.Token != "" && s.Token != after)) {
			return s
		}
		run(t, ctx, chromedp.Sleep(50*time.Millisecond))
	}
	t.Fatalf("the page never moved past the pair %q", after)
	return pairState{}
}

// The review page in chromium: the reviewer enters a name once; pairs are
// labelled with the keyboard — the candidate's answer better with A or B in
// each order the shuffle showed, a tie with T — and one skipped with S; the
// store holds the labels with the shuffle undone, and the skip. The page's
// text names no pipeline, judge or canary kind, and the page raises no error
// (its CSP lets only its own script run).
func TestBrowserReviewKeyboard(t *testing.T) {
	st := engine.Open(t)
	seedReviewPairs(t, st, 8)
	srv := httptest.NewServer(newReviewServer(t, st))
	t.Cleanup(srv.Close)
	ctx, log := newBrowser(t)

	load(t, ctx, log, srv.URL+"/review")
	run(t, ctx, chromedp.Steps(
		chromedp.SendKeys(chromedp.CSS(`[data-testid="reviewer-name"]`), "Ada Lovelace"),
		chromedp.Click(chromedp.CSS(`[data-testid="reviewer-save"]`)),
	))
	cur := nextPair(t, ctx, "")
	wants := map[string]string{}      // request id → the label that must be stored
	shownFirst := map[string]string{} // request id → whose answer was A
	abDone := map[string]bool{}       // orders labelled with A or B
	tie, skip := false, false
	for i := 0; !(len(abDone) == 2 && tie && skip); i++ {
		if cur.Done {
			t.Fatalf("the sample ran out after %d pairs: orders labelled with A/B %v, tie %v, skip %v", i, abDone, tie, skip)
		}
		body := run(t, ctx, chromedp.Evaluate[string](`document.body.innerText`))
		for _, hidden := range []string{reviewIncumbent, reviewCandidate, reviewJudge, "identical", "sr-review"} {
			if strings.Contains(body, hidden) {
				t.Errorf("pair %d: the page's text holds %q", i, hidden)
			}
		}
		if errs := log.take(); len(errs) > 0 {
			t.Errorf("pair %d: browser errors %q", i, errs)
		}
		num := strings.TrimPrefix(strings.TrimPrefix(cur.A, "incumbent answer "), "candidate answer ")
		req := "sr-review/case-" + num
		candA := strings.HasPrefix(cur.A, "candidate")
		if !candA && !strings.HasPrefix(cur.A, "incumbent") || !strings.HasSuffix(cur.B, " answer "+num) {
			t.Fatalf("pair %d shows %q and %q", i, cur.A, cur.B)
		}
		order := map[bool]string{true: store.VerdictCandidate, false: store.VerdictIncumbent}[candA]
		shownFirst[req] = order
		var key string
		switch {
		case !abDone[order]:
			// The candidate's answer is better: A when it was shown first.
			abDone[order], wants[req], key = true, store.VerdictCandidate, map[bool]string{true: "a", false: "b"}[candA]
			if len(abDone) == 2 {
				// The second order: the incumbent's answer is better.
				wants[req], key = store.VerdictIncumbent, map[bool]string{true: "b", false: "a"}[candA]
			}
		case !tie:
			tie, wants[req], key = true, store.VerdictTie, "t"
		default:
			skip, wants[req], key = true, store.ReviewSkip, "s"
		}
		run(t, ctx, chromedp.KeyEvent(key))
		cur = nextPair(t, ctx, cur.Token)
	}
	got := reviewsOf(t, st)
	if len(got) != len(wants) {
		t.Fatalf("%d reviews stored for %d keys pressed: %v", len(got), len(wants), got)
	}
	for k, v := range got {
		req := strings.Fields(k)[0]
		f := strings.Fields(v) // choice, shown first, label
		if f[1] != shownFirst[req] || f[2] != wants[req] {
			t.Errorf("%s: stored %q, want shown first %s and label %s", req, v, shownFirst[req], wants[req])
		}
	}
	t.Logf("%d pairs by keyboard (3 labels and a skip at least): %v", len(got), got)
	if errs := log.take(); len(errs) > 0 {
		t.Errorf("browser errors %q", errs)
	}
}
