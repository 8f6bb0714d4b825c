package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// slashFixture opens a store holding a suite-case trace whose request id holds
// "/" and a suite run whose id holds one too.
func slashFixture(t *testing.T) (store.Store, store.Trace, store.SuiteRun) {
	t.Helper()
	st := engine.Open(t)
	tr := fixtureTrace()
	id := "suite-20261130-0001/gsm8k-test-0"
	tr.Request.RequestID = id
	tr.Request.Source = store.SourceSuite
	for i := range tr.Runs {
		tr.Runs[i].RequestID = id
		tr.Runs[i].RunID = id + "/" + tr.Runs[i].RunID
	}
	for i := range tr.Steps {
		tr.Steps[i].RunID = id + "/" + tr.Steps[i].RunID
	}
	for i := range tr.Scores {
		tr.Scores[i].RequestID = id
		tr.Scores[i].RunID = id + "/" + tr.Scores[i].RunID
	}
	seed(t, st, tr)
	sr := fixtureSuiteRun()
	sr.SuiteRunID = "nightly/gsm8k/2026-11-30"
	sr.ReportHTML = "<html><body>report</body></html>"
	if err := st.InsertSuiteRuns(context.Background(), []store.SuiteRun{sr}); err != nil {
		t.Fatal(err)
	}
	return st, tr, sr
}

// TestSlashFixturePages runs the page tests that only read over one store
// holding slashFixture's trace and suite run (one engine database for both).
func TestSlashFixturePages(t *testing.T) {
	st, tr, sr := slashFixture(t)
	t.Run("IDsWithSlashes", func(t *testing.T) { testIDsWithSlashes(t, st, tr, sr) })
	t.Run("HeadAnswersLikeGet", func(t *testing.T) { testHeadAnswersLikeGet(t, st, tr, sr) })
}

// testIDsWithSlashes: every page that takes an id answers for ids holding "/",
// sent escaped (%2F, as the pages link them) or raw, under any base path.
func testIDsWithSlashes(t *testing.T, st store.Store, tr store.Trace, sr store.SuiteRun) {
	inc, cand := tr.Runs[0].RunID, tr.Runs[1].RunID
	for _, base := range []string{"", "/ui"} {
		cfg := NewDefaultConfig()
		cfg.BasePath = base
		h := newTestServer(t, st, cfg)
		u := urls{base}
		tests := []struct {
			name, target, want string
		}{
			{"trace escaped", u.trace(tr.Request.RequestID), tr.Request.RequestID},
			{"trace raw", base + "/traces/" + tr.Request.RequestID, tr.Request.RequestID},
			{"suite run escaped", u.suiteRun(sr.SuiteRunID), sr.Headline},
			{"suite run raw", base + "/suite-runs/" + sr.SuiteRunID, sr.Headline},
			{"report.json escaped", u.reportJSON(sr.SuiteRunID), `"gates"`},
			{"report.json raw", base + "/suite-runs/" + sr.SuiteRunID + "/report.json", `"gates"`},
			{"report.html escaped", base + "/suite-runs/" + url.PathEscape(sr.SuiteRunID) + "/report.html", "report"},
			{"compare runs", u.compareRuns(inc, cand), cand},
			{"compare suite runs", u.compareSuiteRuns(sr.SuiteRunID, sr.SuiteRunID, "", false), sr.SuiteRunID},
		}
		for _, tt := range tests {
			t.Run(base+" "+tt.name, func(t *testing.T) {
				rec := get(t, h, tt.target)
				if rec.Code != http.StatusOK {
					t.Fatalf("GET %s = %d, want 200:\n%s", tt.target, rec.Code, limitText(rec.Body.String(), 800))
				}
				if body := rec.Body.String(); !strings.Contains(body, tt.want) && !strings.Contains(body, htmlEsc(tt.want)) {
					t.Errorf("GET %s does not show %q", tt.target, tt.want)
				}
			})
		}
		// The traces list links the trace by its escaped id.
		rec := get(t, h, base+"/traces")
		if !strings.Contains(rec.Body.String(), `href="`+u.trace(tr.Request.RequestID)+`"`) {
			t.Errorf("the traces list does not link %s", u.trace(tr.Request.RequestID))
		}
		if rec := get(t, h, base+"/traces/"+url.PathEscape("suite-x/none")); rec.Code != http.StatusNotFound {
			t.Errorf("an unknown id with a slash answers %d, want 404", rec.Code)
		}
	}
}

func htmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// testHeadAnswersLikeGet: HEAD on every page gives GET's status and headers and
// no body, over a real HTTP server.
func testHeadAnswersLikeGet(t *testing.T, st store.Store, tr store.Trace, sr store.SuiteRun) {
	srv := httptest.NewServer(newTestServer(t, st, NewDefaultConfig()))
	defer srv.Close()
	u := urls{""}
	for _, target := range []string{"/", "/overview", "/workers", "/traces", u.trace(tr.Request.RequestID), "/traces/none",
		"/suite-runs", u.suiteRun(sr.SuiteRunID), u.reportJSON(sr.SuiteRunID), u.compareRuns(tr.Runs[0].RunID, tr.Runs[1].RunID),
		"/static/style.css"} {
		t.Run(target, func(t *testing.T) {
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			g, err := client.Get(srv.URL + target)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, g.Body)
			g.Body.Close()
			req, _ := http.NewRequest(http.MethodHead, srv.URL+target, nil)
			h, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(h.Body)
			h.Body.Close()
			if h.StatusCode != g.StatusCode || h.Header.Get("Content-Type") != g.Header.Get("Content-Type") || len(b) != 0 {
				t.Errorf("HEAD %d %q (%d body bytes); GET %d %q", h.StatusCode, h.Header.Get("Content-Type"), len(b), g.StatusCode, g.Header.Get("Content-Type"))
			}
		})
	}
}

// testServerErrorsAreLogged (TestFixturePages): a 5xx page logs its cause with the path.
func testServerErrorsAreLogged(t *testing.T, st store.Store) {
	var buf bytes.Buffer
	gin.SetMode(gin.TestMode)
	r := gin.New()
	if err := Register(r, ReadersOf(store.NewRoles(failingStore{st})), NewDefaultConfig(), WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/traces/req-7f3a9c", "/traces"} {
		buf.Reset()
		rec := get(t, r, target)
		mustStatus(t, rec, http.StatusInternalServerError)
		if log := buf.String(); !strings.Contains(log, errBoom.Error()) || !strings.Contains(log, target) {
			t.Errorf("GET %s: log %q does not hold the cause and the path", target, log)
		}
	}
	buf.Reset()
	mustStatus(t, get(t, r, "/traces/no-such?x=1"), http.StatusInternalServerError)
	buf.Reset()
	if rec := get(t, newTestServerLogged(t, st, &buf), "/traces/no-such"); rec.Code != http.StatusNotFound || buf.Len() != 0 {
		t.Errorf("a 404 logged %q", buf.String())
	}
}

func newTestServerLogged(t *testing.T, st store.Store, buf *bytes.Buffer) *gin.Engine {
	t.Helper()
	r := gin.New()
	if err := Register(r, ReadersOf(store.NewRoles(st)), NewDefaultConfig(), WithLogger(slog.New(slog.NewTextHandler(buf, nil)))); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTracePageShowsWhatHappened: reasoning apart from the answer, every choice
// and tool call, the incumbent's HTTP status and rate-limit headers, a partial
// answer, unknown latency as unknown, and no NUL byte in the HTML.
func TestTracePageShowsWhatHappened(t *testing.T) {
	st := engine.Open(t)
	tr := fixtureTrace()
	tr.Request.Input = `[{"role":"user","content":"weather in Paris?\u0000"}]`
	inc := &tr.Runs[0]
	inc.Status, inc.HTTPStatus, inc.LatencyMs = store.StatusError, 429, 0
	inc.Error = `the incumbent answered HTTP 429 Too Many Requests: {"error":{"message":"Rate limit reached"}} (Retry-After: 20)`
	inc.ResponseHeaders = map[string]string{"retry-after": "20", "x-ratelimit-remaining-requests": "0"}
	cand := &tr.Runs[1]
	cand.Reasoning = "The user wants the weather.\x00"
	cand.Partial = true
	cand.Choices = `[{"index":0,"content":"Checking.","tool_calls":[{"index":0,"id":"call_a","type":"function","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]},` +
		`{"index":1,"content":"It is sunny.","finish_reason":"stop"}]`
	tr.Steps[0].LatencyMs = 0
	seed(t, st, tr)
	rec := get(t, newTestServer(t, st, NewDefaultConfig()), "/traces/"+tr.Request.RequestID)
	mustStatus(t, rec, http.StatusOK)
	body := rec.Body.String()
	if strings.ContainsRune(body, 0) {
		t.Error("the page holds a NUL byte")
	}
	doc := parseHTML(t, body)
	one := func(id string) string {
		t.Helper()
		n := byTestID(doc, id)
		if len(n) == 0 {
			t.Fatalf("no %s on the page", id)
		}
		return text(n[0])
	}
	if got := one("run-http-status"); got != "429" {
		t.Errorf("http status %q", got)
	}
	if got := one("run-headers"); !strings.Contains(got, "retry-after") || !strings.Contains(got, "20") || !strings.Contains(got, "x-ratelimit-remaining-requests") {
		t.Errorf("headers %q", got)
	}
	if got := one("run-latency"); got != "unknown" {
		t.Errorf("incumbent latency %q, want unknown", got)
	}
	if got := one("run-reasoning"); !strings.Contains(got, "The user wants the weather.") {
		t.Errorf("reasoning %q", got)
	}
	if got := one("run-partial"); !strings.Contains(got, "Partial answer") {
		t.Errorf("partial note %q", got)
	}
	if n := byTestID(doc, "run-choice"); len(n) != 2 {
		t.Errorf("%d choices shown, want 2", len(n))
	}
	if got := one("tool-call-name"); got != "get_weather" {
		t.Errorf("tool call %q", got)
	}
	if got := one("tool-call-arguments"); got != `{"city":"Paris"}` {
		t.Errorf("tool call arguments %q", got)
	}
	for _, id := range []string{"step-row", "step-detail"} {
		n := byTestID(doc, id)
		if len(n) == 0 || !strings.Contains(text(n[0]), "unknown") || strings.Contains(text(n[0]), "0.0 ms") {
			t.Errorf("%s of a step of unknown latency must show unknown, never 0.0 ms", id)
		}
	}
	if strings.Contains(body, "0.0–") {
		t.Error("the timeline shows a 0.0 ms span for a step of unknown latency")
	}
}

// TestOverviewNamesItsTimeBases: requests count by received time, runs by start
// time; when runs in the window belong to requests received before it (a
// replay), the page says how many and why the two counts differ.
func TestOverviewNamesItsTimeBases(t *testing.T) {
	st := engine.Open(t)
	ctx := context.Background()
	window := overviewQuery{From: t0, To: t0.Add(time.Hour)}
	var reqs []store.Request
	var runs []store.Run
	for i := range 5 {
		id := fmt.Sprintf("r%d", i)
		received := t0.Add(10 * time.Minute)
		if i >= 2 {
			received = t0.Add(-72 * time.Hour) // recorded days ago, replayed now
		}
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: received, Source: store.SourceReplay, App: "a", Input: `[{"role":"user","content":"q"}]`})
		runs = append(runs, store.Run{RunID: id + "/c", RequestID: id, Pipeline: "conductor", Mode: store.ModeCandidate,
			StartedAt: t0.Add(20 * time.Minute), LatencyMs: 100, Status: store.StatusOK})
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, get(t, newTestServer(t, st, NewDefaultConfig()), urls{}.overviewWith(window)).Body.String())
	if got := text(byTestID(doc, "count-requests")[0]); got != "2" {
		t.Errorf("requests received = %q, want 2", got)
	}
	if got := text(byTestID(doc, "count-shadow")[0]); got != "5" {
		t.Errorf("shadow runs = %q, want 5", got)
	}
	note := byTestID(doc, "count-basis-note")
	if len(note) != 1 || !strings.Contains(text(note[0]), "the other 3 were received earlier") {
		t.Errorf("no note naming the 3 requests received before the window")
	}
	cards := text(byTestID(doc, "overview-counts")[0])
	for _, want := range []string{"Requests received", "by received time", "Shadow runs started", "by start time"} {
		if !strings.Contains(cards, want) {
			t.Errorf("the counts do not name their time basis %q: %q", want, cards)
		}
	}
}

// TestTracesSearchFindsQuotesAndTabs: the input is stored as JSON, yet a search
// for text holding a quote, a tab or a backslash finds it as typed.
func TestTracesSearchFindsQuotesAndTabs(t *testing.T) {
	st := engine.Open(t)
	ctx := context.Background()
	texts := map[string]string{"q-quote": `she said "hello there"`, "q-tab": "a\tb\tc", "q-bs": `C:\Users\ada`, "q-plain": "plain"}
	var reqs []store.Request
	for id, text := range texts {
		in, _ := json.Marshal([]map[string]string{{"role": "user", "content": text}})
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: t0, Source: store.SourceTap, App: "a", Input: string(in)})
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	for _, h := range []http.Handler{newTestServer(t, st, NewDefaultConfig())} {
		for _, tt := range []struct{ q, want string }{{`"hello there"`, "q-quote"}, {"b\tc", "q-tab"}, {`\Users\`, "q-bs"}} {
			ids, _ := listPage(t, h, "/traces?q="+url.QueryEscape(tt.q))
			if len(ids) != 1 || ids[0] != tt.want {
				t.Errorf("search %q found %v, want [%s]", tt.q, ids, tt.want)
			}
		}
	}
}

// TestCompareShowsIncumbentFailure: a candidate is compared against an incumbent
// that failed (HTTP 429): the comparison names the failure beside the answer.
func TestCompareShowsIncumbentFailure(t *testing.T) {
	st := engine.Open(t)
	tr := fixtureTrace()
	inc := &tr.Runs[0]
	inc.Status, inc.HTTPStatus, inc.FinalOutput = store.StatusError, 429, ""
	inc.Error = "the incumbent answered HTTP 429 Too Many Requests (Retry-After: 20)"
	seed(t, st, tr)
	rec := get(t, newTestServer(t, st, NewDefaultConfig()), urls{}.compareRuns(inc.RunID, tr.Runs[1].RunID))
	mustStatus(t, rec, http.StatusOK)
	row := byTestID(parseHTML(t, rec.Body.String()), "compare-failure")
	if len(row) != 1 || !strings.Contains(text(row[0]), "HTTP 429 · the incumbent answered HTTP 429") {
		t.Fatalf("the comparison does not name the incumbent's failure")
	}
}
