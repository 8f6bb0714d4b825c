package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Names the review page must never show: the pipelines, the judge, the run
// ids' parts and the canary kind.
const (
	reviewIncumbent = "legacy-chain-v3"
	reviewCandidate = "planner-7b-x"
	reviewJudge     = "judge-model-q"
)

var reviewKey = []byte("test PII key for reviewer pseudonyms")

// seedReviewPairs stores n judged pairs of suite run "sr-review" (answers
// "incumbent answer N" and "candidate answer N", the judge a win on each)
// and a canary on pair 0; it returns the pairs' request ids.
func seedReviewPairs(t *testing.T, st store.Store, n int) []string {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	var reqs []store.Request
	var runs []store.Run
	var js []store.Judgment
	for i := range n {
		id := fmt.Sprintf("sr-review/case-%d", i)
		ids = append(ids, id)
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: at, Source: store.SourceSuite,
			Input: fmt.Sprintf(`[{"role":"user","content":"Question number %d: which way is north?"}]`, i)})
		inc, cand := id+"/"+reviewIncumbent, id+"/"+reviewCandidate
		runs = append(runs,
			store.Run{RunID: inc, RequestID: id, SuiteRunID: "sr-review", Pipeline: reviewIncumbent, Mode: store.ModeIncumbent, Status: store.StatusOK, StartedAt: at,
				FinalOutput: fmt.Sprintf("incumbent answer %d", i)},
			store.Run{RunID: cand, RequestID: id, SuiteRunID: "sr-review", Pipeline: reviewCandidate, Mode: store.ModeCandidate, Status: store.StatusOK, StartedAt: at,
				FinalOutput: fmt.Sprintf("candidate answer %d", i)})
		js = append(js, store.Judgment{RequestID: id, SuiteRunID: "sr-review", Pipeline: reviewCandidate, CandidateRunID: cand,
			IncumbentPipeline: reviewIncumbent, IncumbentRunID: inc, Judge: reviewJudge, JudgeWorker: reviewJudge, Outcome: store.JudgmentWin,
			Verdict1: store.VerdictCandidate, Verdict2: store.VerdictCandidate, JudgedAt: at, InclusionProb: 1})
	}
	js = append(js, store.Judgment{RequestID: ids[0], SuiteRunID: "sr-review", Pipeline: reviewCandidate, CandidateRunID: ids[0] + "/" + reviewIncumbent,
		Judge: reviewJudge, Canary: "identical", CanaryPassed: true, Outcome: store.JudgmentTie, JudgedAt: at, InclusionProb: 1})
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := store.NewRoles(st).JudgmentWriter.InsertJudgments(ctx, js); err != nil {
		t.Fatal(err)
	}
	return ids
}

// newReviewServer registers the UI with its review writer and key, every
// judged pair in the sample.
func newReviewServer(t *testing.T, st store.Store) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.TestMode)
	cfg := NewDefaultConfig()
	cfg.Review.SampleShare = 1
	r := gin.New()
	roles := store.NewRoles(st)
	if err := Register(r, ReadersOf(roles), cfg, WithWriters(WritersOf(roles)), WithReviewerKey(reviewKey)); err != nil {
		t.Fatal(err)
	}
	return r
}

// do sends a request with a JSON body (when body is not nil) and cookies.
func do(t *testing.T, h http.Handler, method, target string, body any, cookies []*http.Cookie, edit ...func(*http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req := httptest.NewRequest(method, target, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	for _, e := range edit {
		e(req)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// reviewStore reads the stored reviews back, all of them, skips included.
func reviewsOf(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	res, err := st.Query(context.Background(), "SELECT request_id, reviewer, choice, shown_first, label FROM reviews FINAL ORDER BY request_id, reviewer")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range res.Rows {
		out[r[0]+" "+r[1]] = r[2] + " " + r[3] + " " + r[4]
	}
	return out
}

// The review endpoints through the handlers: the name form, the cookie, a
// blinded pair, a label stored with the shuffle undone, a second label of
// the same pair refused, tokens bound to their reviewer, bad bodies refused.
func TestReviewEndpoints(t *testing.T) {
	st := engine.Open(t)
	seedReviewPairs(t, st, 3)
	h := newReviewServer(t, st)

	rec := get(t, h, "/review")
	mustStatus(t, rec, http.StatusOK)
	if len(byTestID(parseHTML(t, rec.Body.String()), "reviewer-form")) != 1 {
		t.Fatal("without a name the page asks for one")
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("review page CSP %q", csp)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}

	// The name: JSON only, kept in an HttpOnly, SameSite=Strict cookie.
	mustStatus(t, do(t, h, http.MethodPost, "/review/reviewer", nil, nil, func(r *http.Request) {
		r.Body = http.NoBody
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}), http.StatusUnsupportedMediaType)
	mustStatus(t, do(t, h, http.MethodPost, "/review/reviewer", map[string]string{"name": strings.Repeat("x", 65)}, nil), http.StatusBadRequest)
	rec = do(t, h, http.MethodPost, "/review/reviewer", map[string]string{"name": "Ada Lovelace"}, nil)
	mustStatus(t, rec, http.StatusOK)
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/review" {
		t.Fatalf("cookies %+v", cookies)
	}

	rec = do(t, h, http.MethodGet, "/review", nil, cookies)
	mustStatus(t, rec, http.StatusOK)
	body := rec.Body.String()
	doc := parseHTML(t, body)
	for _, hidden := range []string{reviewIncumbent, reviewCandidate, reviewJudge, "identical", "sr-review"} {
		if strings.Contains(body, hidden) {
			t.Errorf("the review page holds %q", hidden)
		}
	}
	pair := byTestID(doc, "review-pair")
	if len(pair) != 1 || len(byTestID(doc, "answer-text")) != 2 || !strings.Contains(body, "Question number") {
		t.Fatalf("no pair on the page:\n%s", limitText(body, 3000))
	}
	if !strings.Contains(text(byTestID(doc, "review-progress")[0]), "0 of 3 pairs of the sample reviewed") {
		t.Errorf("progress %q", text(byTestID(doc, "review-progress")[0]))
	}
	token := attr(pair[0], "data-token")
	a := text(byTestID(doc, "answer-text")[0])

	// Key B: the answer shown second is better.
	mustStatus(t, do(t, h, http.MethodPost, "/review/labels", map[string]string{"token": token, "choice": "X"}, cookies), http.StatusBadRequest)
	mustStatus(t, do(t, h, http.MethodPost, "/review/labels", map[string]string{"token": token[:len(token)-2] + "AA", "choice": "B"}, cookies), http.StatusBadRequest)
	mustStatus(t, do(t, h, http.MethodPost, "/review/labels", map[string]string{"token": token, "choice": "B"}, nil), http.StatusBadRequest)
	other := []*http.Cookie{{Name: reviewerCookie, Value: "Grace"}}
	mustStatus(t, do(t, h, http.MethodPost, "/review/labels", map[string]string{"token": token, "choice": "B"}, other), http.StatusForbidden)
	mustStatus(t, do(t, h, http.MethodPost, "/review/labels", map[string]string{"token": token, "choice": "B"}, cookies), http.StatusOK)
	mustStatus(t, do(t, h, http.MethodPost, "/review/labels", map[string]string{"token": token, "choice": "A"}, cookies), http.StatusConflict)
	got := reviewsOf(t, st)
	ada := ingest.ReviewerID(reviewKey, "Ada Lovelace")
	if len(got) != 1 {
		t.Fatalf("reviews %v", got)
	}
	for k, v := range got {
		want := "B candidate incumbent" // A showed the candidate's answer: B means the incumbent's
		if strings.HasPrefix(a, "incumbent") {
			want = "B incumbent candidate"
		}
		if !strings.HasSuffix(k, " "+ada) || v != want {
			t.Errorf("stored %q → %q, want reviewer %s and %q (A showed %q)", k, v, ada, want, a)
		}
	}

	// The next pair; a basic-auth user reviews under their own pseudonym.
	rec = do(t, h, http.MethodGet, "/review", nil, cookies)
	if strings.Contains(rec.Body.String(), token) || !strings.Contains(rec.Body.String(), "1 of 3 pairs") {
		t.Error("the reviewed pair is offered again")
	}
	rec = do(t, h, http.MethodGet, "/review", nil, nil, func(r *http.Request) { r.SetBasicAuth("grace", "secret") })
	if doc := parseHTML(t, rec.Body.String()); text(byTestID(doc, "reviewer")[0]) != "grace" || len(byTestID(doc, "reviewer-change")) != 0 ||
		!strings.Contains(rec.Body.String(), "0 of 3 pairs") {
		t.Errorf("basic-auth reviewer: %s", limitText(rec.Body.String(), 1500))
	}

	rec = get(t, h, "/review/agreement")
	mustStatus(t, rec, http.StatusOK)
	doc = parseHTML(t, rec.Body.String())
	if j := byTestID(doc, "judge-agreement"); len(j) != 1 || attr(j[0], "data-judge") != reviewJudge || attr(byTestID(doc, "judge-review-status")[0], "data-badge") != "NOT VALIDATED" {
		t.Errorf("agreement page: %s", limitText(rec.Body.String(), 2000))
	}
	mustStatus(t, get(t, h, "/review?live=2"), http.StatusBadRequest)
}

// Without the review writer or the key the review page says so (501).
func TestReviewNeedsItsRoles(t *testing.T) {
	st := engine.Open(t)
	gin.SetMode(gin.TestMode)
	for name, opts := range map[string][]Option{
		"no writer": {WithReviewerKey(reviewKey)},
		"no key":    {WithWriters(WritersOf(store.NewRoles(st)))},
	} {
		r := gin.New()
		if err := Register(r, ReadersOf(store.NewRoles(st)), NewDefaultConfig(), opts...); err != nil {
			t.Fatal(err)
		}
		rec := get(t, r, "/review")
		if rec.Code != http.StatusNotImplemented {
			t.Errorf("%s: GET /review %d", name, rec.Code)
		}
		if rec := do(t, r, http.MethodPost, "/review/labels", map[string]string{"token": "x", "choice": "A"}, nil); rec.Code != http.StatusNotImplemented {
			t.Errorf("%s: POST /review/labels %d", name, rec.Code)
		}
	}
}
