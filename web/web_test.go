package web

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestFixturePages runs the page tests that only read over one store holding
// fixtureTrace, fixtureSuiteRun and fixtureOlderSuiteRun: one engine database
// (about a second of migrations) for all of them. A test that writes records of
// its own opens its own store.
func TestFixturePages(t *testing.T) {
	st := engine.Open(t)
	seed(t, st, fixtureTrace())
	if err := st.InsertSuiteRuns(context.Background(), []store.SuiteRun{fixtureOlderSuiteRun(), fixtureSuiteRun()}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		test func(*testing.T, store.Store)
	}{
		{"TracePage", testTracePage},
		{"TracePageErrors", testTracePageErrors},
		{"TracesRowContent", testTracesRowContent},
		{"SuiteRunPages", testSuiteRunPages},
		{"RootStaticAndBasePath", testRootStaticAndBasePath},
		{"RegisterRejectsBadInput", testRegisterRejectsBadInput},
		{"PagesNameTheMissingRole", testPagesNameTheMissingRole},
		{"ServerErrorsAreLogged", testServerErrorsAreLogged},
		{"AuthMiddleware", testAuthMiddleware},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, st) })
	}
}

func testTracePage(t *testing.T, st store.Store) {
	tr := fixtureTrace()
	rec := get(t, newTestServer(t, st, NewDefaultConfig()), "/traces/"+tr.Request.RequestID)
	mustStatus(t, rec, http.StatusOK)
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	body := rec.Body.String()
	doc := parseHTML(t, body)

	t.Run("untrusted output is escaped", func(t *testing.T) {
		for _, raw := range []string{xssScript, xssImg, "<script"} {
			if strings.Contains(body, raw) {
				t.Errorf("body holds unescaped %q", raw)
			}
		}
		for _, raw := range []string{xssScript, xssImg} {
			if !strings.Contains(body, html.EscapeString(raw)) {
				t.Errorf("body lacks the escaped form of %q", raw)
			}
		}
	})

	t.Run("input messages keep whitespace", func(t *testing.T) {
		msgs := byTestID(doc, "input-message")
		if len(msgs) != 2 {
			t.Fatalf("input messages = %d, want 2", len(msgs))
		}
		var roles, pres []string
		for _, m := range msgs {
			for c := m.FirstChild; c != nil; c = c.NextSibling {
				switch {
				case c.Data == "pre":
					pres = append(pres, rawText(c))
				case attr(c, "class") == "role":
					roles = append(roles, text(c))
				}
			}
		}
		if want := []string{"system", "user"}; !slices.Equal(roles, want) {
			t.Errorf("roles = %q, want %q", roles, want)
		}
		want := []string{"You are a careful math tutor.",
			"A train leaves at 09:40 and arrives at 13:05.\n    How long is the trip?\n\n(show   your work)"}
		if !slices.Equal(pres, want) {
			t.Errorf("message <pre>s = %q, want %q", pres, want)
		}
	})

	t.Run("run columns: incumbent first, then candidates", func(t *testing.T) {
		cols := byTestID(doc, "run-column")
		var ids, modes []string
		for _, c := range cols {
			ids = append(ids, attr(c, "data-run-id"))
			modes = append(modes, attr(c, "data-mode"))
		}
		if want := []string{"run-inc-1", "run-cond-1", "run-single-1"}; !slices.Equal(ids, want) {
			t.Fatalf("run columns = %v, want %v", ids, want)
		}
		if modes[0] != store.ModeIncumbent {
			t.Errorf("first column mode = %q", modes[0])
		}
		for i, r := range tr.Runs {
			got := text(cols[i])
			for _, want := range []string{r.Pipeline, r.Status, fmtMs(r.LatencyMs) + " ms", fmtUSD(r.CostUSD),
				fmtInt(r.TokensIn) + " / " + fmtInt(r.TokensOut)} {
				if !strings.Contains(got, want) {
					t.Errorf("column %s lacks %q: %s", r.RunID, want, got)
				}
			}
			sim := len(byTestID(cols[i], "simulated-badge")) > 0
			if sim != r.Simulated {
				t.Errorf("column %s SIMULATED badge = %v, want %v", r.RunID, sim, r.Simulated)
			}
		}
		if got := text(cols[2]); !strings.Contains(got, "502 Bad Gateway") {
			t.Errorf("failed run column lacks its error: %s", got)
		}
	})

	t.Run("every step shows its access list", func(t *testing.T) {
		rows := byTestID(doc, "step-row")
		if len(rows) != len(tr.Steps) {
			t.Fatalf("step rows = %d, want %d", len(rows), len(tr.Steps))
		}
		want := map[string]string{"0": "none", "1": "all", "2": "steps 0, 1"}
		for _, row := range rows {
			idx := attr(row, "data-step-index")
			cells := byTestID(row, "access-cell")
			if len(cells) != 1 {
				t.Fatalf("step %s: %d access cells", idx, len(cells))
			}
			if got := text(cells[0]); got != want[idx] {
				t.Errorf("step %s access = %q, want %q", idx, got, want[idx])
			}
		}
	})

	t.Run("plan raw and parsed", func(t *testing.T) {
		raw := byTestID(doc, "plan-raw")
		if len(raw) != 1 || !strings.Contains(text(raw[0]), `access_list = [[], "all", [0, 1]]`) {
			t.Fatalf("plan-raw = %d elements", len(raw))
		}
		var got []string
		for _, c := range byTestID(doc, "plan-access") {
			got = append(got, text(c))
		}
		if want := []string{"none", "all", "steps 0, 1"}; !slices.Equal(got, want) {
			t.Errorf("plan access = %v, want %v", got, want)
		}
	})

	t.Run("scores and simulation note", func(t *testing.T) {
		if n := len(byTestID(doc, "score-row")); n != len(tr.Scores) {
			t.Errorf("score rows = %d, want %d", n, len(tr.Scores))
		}
		if len(byTestID(doc, "simulation-note")) != 1 {
			t.Error("no simulation note on a trace with simulated runs")
		}
	})
}

func testTracePageErrors(t *testing.T, st store.Store) {
	tests := []struct {
		name       string
		st         store.Store
		target     string
		wantStatus int
		wantText   string
	}{
		{"unknown trace", st, "/traces/no-such-id", http.StatusNotFound, `No trace with id "no-such-id".`},
		{"unknown suite run", st, "/suite-runs/nope", http.StatusNotFound, `No suite run with id "nope".`},
		{"store failure", failingStore{st}, "/traces/req-7f3a9c", http.StatusInternalServerError, "could not load this trace"},
		{"list failure", failingStore{st}, "/traces", http.StatusInternalServerError, "could not load this trace list"},
		{"bad before", st, "/traces?before=yesterday", http.StatusBadRequest, `before "yesterday" is not an RFC 3339 time`},
		{"before_id alone", st, "/traces?before_id=x", http.StatusBadRequest, "before_id needs before"},
		{"bad limit", st, "/traces?limit=0", http.StatusBadRequest, "limit"},
		{"unknown source", st, "/traces?source=kafka", http.StatusBadRequest, `source "kafka" must be one of tap, replay, suite`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, newTestServer(t, tt.st, NewDefaultConfig()), tt.target)
			mustStatus(t, rec, tt.wantStatus)
			if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
			doc := parseHTML(t, rec.Body.String())
			msg := byTestID(doc, "error-message")
			if len(msg) != 1 || !strings.Contains(text(msg[0]), tt.wantText) {
				t.Errorf("error message does not hold %q:\n%s", tt.wantText, limitText(rec.Body.String(), 3000))
			}
			if strings.Contains(rec.Body.String(), errBoom.Error()) {
				t.Error("the page leaks the internal error")
			}
		})
	}
}

var errBoom = errors.New("clickhouse: connection refused to 10.0.0.7:9000")

// failingStore fails GetTrace and SearchTraces.
type failingStore struct{ store.Store }

func (failingStore) GetTrace(context.Context, string) (store.Trace, error) {
	return store.Trace{}, fmt.Errorf("store: get trace: %w", errBoom)
}

func (failingStore) SearchTraces(context.Context, store.TraceSearch) ([]store.TraceSummary, error) {
	return nil, fmt.Errorf("store: search traces: %w", errBoom)
}

// seedMany writes n requests from several apps and sources, some received at the
// same instant (to exercise the keyset tie-break), and returns them.
func seedMany(t *testing.T, st store.Store, n int) []store.Request {
	t.Helper()
	apps := []string{"support-bot", "code-review", "search"}
	srcs := []string{store.SourceTap, store.SourceTap, store.SourceReplay, store.SourceSuite}
	var reqs []store.Request
	var runs []store.Run
	for i := range n {
		at := t0.Add(-time.Duration(i/3) * time.Minute) // three requests per instant
		id := fmt.Sprintf("req-%03d", i)
		topic := []string{"refund policy", "nil pointer", "weather in Lyon"}[i%3]
		reqs = append(reqs, store.Request{
			RequestID: id, ReceivedAt: at, Source: srcs[i%4], App: apps[i%3], Category: "general",
			Input: fmt.Sprintf(`[{"role":"user","content":"question %d about %s"}]`, i, topic),
		})
		runs = append(runs,
			store.Run{RunID: id + "-inc", RequestID: id, Pipeline: "incumbent:gpt-5", Mode: store.ModeIncumbent,
				StartedAt: at, LatencyMs: float64(1000 + i), Status: store.StatusOK, CostUSD: 0.002},
			store.Run{RunID: id + "-cond", RequestID: id, Pipeline: "conductor", Mode: store.ModeCandidate,
				StartedAt: at, LatencyMs: float64(2000 + i), Status: store.StatusOK, CostUSD: 0.001, Simulated: true})
	}
	ctx := context.Background()
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	return reqs
}

// newestFirst orders requests as the traces list must.
func newestFirst(reqs []store.Request) []string {
	s := slices.Clone(reqs)
	slices.SortFunc(s, func(a, b store.Request) int {
		return cmp.Or(b.ReceivedAt.Compare(a.ReceivedAt), strings.Compare(b.RequestID, a.RequestID))
	})
	ids := make([]string, len(s))
	for i, r := range s {
		ids[i] = r.RequestID
	}
	return ids
}

// listPage fetches one traces page and returns its row ids and the Older link.
func listPage(t *testing.T, h http.Handler, target string) (ids []string, older string) {
	t.Helper()
	rec := get(t, h, target)
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	for _, row := range byTestID(doc, "trace-row") {
		ids = append(ids, attr(row, "data-request-id"))
	}
	if links := byTestID(doc, "older-link"); len(links) == 1 {
		older = attr(links[0], "href")
	}
	return ids, older
}

// TestManyTracesPages runs the traces list tests that only read over one
// store holding seedMany's 12 requests (one engine database for all of them).
func TestManyTracesPages(t *testing.T) {
	st := engine.Open(t)
	reqs := seedMany(t, st, 12)
	t.Run("TracesPagination", func(t *testing.T) { testTracesPagination(t, st, reqs) })
	t.Run("TracesOlderLinkCarriesCursor", func(t *testing.T) { testTracesOlderLinkCarriesCursor(t, st, reqs) })
	t.Run("TracesFilters", func(t *testing.T) { testTracesFilters(t, st, reqs) })
}

// testTracesPagination walks every page of 12 requests received three at a
// time: pages that end on a group of ties (3) or split one (4, 5), a short
// last page (5), an exact single page (12) and a short one (13).
func testTracesPagination(t *testing.T, st store.Store, reqs []store.Request) {
	want := newestFirst(reqs)
	for _, cfg := range []Config{NewDefaultConfig(), {BasePath: "/ui", Title: "shadow"}} {
		for _, limit := range []int{1, 3, 4, 5, 12, 13} {
			t.Run(fmt.Sprintf("base=%q/limit=%d", cfg.BasePath, limit), func(t *testing.T) {
				h := newTestServer(t, st, cfg)
				target := fmt.Sprintf("%s/traces?limit=%d", cfg.BasePath, limit)
				var got []string
				pages := 0
				for target != "" {
					ids, older := listPage(t, h, target)
					if len(ids) > limit {
						t.Fatalf("page %d has %d rows, limit %d", pages, len(ids), limit)
					}
					if older != "" {
						if len(ids) != limit {
							t.Fatalf("page %d: Older link on a short page", pages)
						}
						u, err := url.Parse(older)
						if err != nil {
							t.Fatal(err)
						}
						if !strings.HasPrefix(u.Path, cfg.BasePath+"/traces") {
							t.Fatalf("Older link %q lacks the base path", older)
						}
						// The cursor is the last row's (received_at, request_id).
						last := ids[len(ids)-1]
						if u.Query().Get("before_id") != last {
							t.Fatalf("Older link before_id = %q, want last row %q", u.Query().Get("before_id"), last)
						}
					}
					got = append(got, ids...)
					target = older
					if pages++; pages > len(want)+1 {
						t.Fatal("pagination does not end")
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("walked rows (%d pages)\n got %v\nwant %v", pages, got, want)
				}
				if wantPages := max(1, (len(want)+limit-1)/limit); pages != wantPages {
					t.Errorf("pages = %d, want %d", pages, wantPages)
				}
			})
		}
	}
}

func testTracesOlderLinkCarriesCursor(t *testing.T, st store.Store, reqs []store.Request) {
	byID := map[string]store.Request{}
	for _, r := range reqs {
		byID[r.RequestID] = r
	}
	h := newTestServer(t, st, NewDefaultConfig())
	ids, older := listPage(t, h, "/traces?limit=2&app=&q=")
	u, err := url.Parse(older)
	if err != nil || older == "" {
		t.Fatalf("Older link %q: %v", older, err)
	}
	before, err := time.Parse(time.RFC3339Nano, u.Query().Get("before"))
	if err != nil {
		t.Fatalf("before %q: %v", u.Query().Get("before"), err)
	}
	last := byID[ids[len(ids)-1]]
	if !before.Equal(last.ReceivedAt) || u.Query().Get("before_id") != last.RequestID {
		t.Errorf("cursor = (%v, %q), want (%v, %q)", before, u.Query().Get("before_id"), last.ReceivedAt, last.RequestID)
	}
	if u.Query().Get("limit") != "2" {
		t.Errorf("Older link drops the limit: %q", older)
	}
	// Page 2 offers the way back to the newest page.
	rec := get(t, h, older)
	if n := len(byTestID(parseHTML(t, rec.Body.String()), "newest-link")); n != 1 {
		t.Errorf("newest links on page 2 = %d", n)
	}
}

func testTracesFilters(t *testing.T, st store.Store, reqs []store.Request) {
	h := newTestServer(t, st, NewDefaultConfig())
	tests := []struct {
		name  string
		query url.Values
		keep  func(store.Request) bool
	}{
		{"no filter", url.Values{}, func(store.Request) bool { return true }},
		{"app", url.Values{"app": {"code-review"}}, func(r store.Request) bool { return r.App == "code-review" }},
		{"source", url.Values{"source": {"replay"}}, func(r store.Request) bool { return r.Source == store.SourceReplay }},
		{"text", url.Values{"q": {"weather"}}, func(r store.Request) bool { return strings.Contains(r.Input, "weather") }},
		{"app and source", url.Values{"app": {"support-bot"}, "source": {"tap"}},
			func(r store.Request) bool { return r.App == "support-bot" && r.Source == store.SourceTap }},
		{"no match", url.Values{"app": {"nothing-here"}}, func(store.Request) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kept []store.Request
			for _, r := range reqs {
				if tt.keep(r) {
					kept = append(kept, r)
				}
			}
			want := newestFirst(kept)
			rec := get(t, h, "/traces?"+tt.query.Encode())
			mustStatus(t, rec, http.StatusOK)
			doc := parseHTML(t, rec.Body.String())
			var got []string
			for _, row := range byTestID(doc, "trace-row") {
				got = append(got, attr(row, "data-request-id"))
			}
			if !slices.Equal(got, want) {
				t.Errorf("rows = %v, want %v", got, want)
			}
			if len(want) == 0 && len(byTestID(doc, "no-traces")) != 1 {
				t.Error("empty result lacks the 'no traces' note")
			}
			// The form shows the active filters.
			form := byTestID(doc, "trace-filters")[0]
			for _, k := range []string{"app", "q"} {
				if v := tt.query.Get(k); v != "" && !strings.Contains(renderNode(t, form), `value="`+v+`"`) {
					t.Errorf("filter form does not show %s=%q", k, v)
				}
			}
		})
	}
}

func testTracesRowContent(t *testing.T, st store.Store) {
	rec := get(t, newTestServer(t, st, NewDefaultConfig()), "/traces")
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	rows := byTestID(doc, "trace-row")
	if len(rows) != 1 {
		t.Fatalf("rows = %d", len(rows))
	}
	got := text(rows[0])
	for _, want := range []string{
		"2025-06-02 10:00:00.123 UTC", "support-bot", "A train leaves at 09:40",
		"conductor", "+1", // the pair's candidate (first by name) and the other candidate pipeline
		"+$0.0217", "+2810 ms", "differ", // conductor minus incumbent: cost, latency; the answers differ
		"error", "ok",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("row lacks %q: %s", want, got)
		}
	}
	// The absolute figures and the source and category are in the cells' titles.
	html := renderNode(t, rows[0])
	for _, want := range []string{"source tap, category math", "incumbent $0.00218, candidate $0.02384",
		"incumbent 2310 ms, candidate 5120 ms", "conductor against incumbent:gpt-5"} {
		if !strings.Contains(html, want) {
			t.Errorf("row titles lack %q: %s", want, html)
		}
	}
	if !strings.Contains(renderNode(t, rows[0]), `href="/traces/req-7f3a9c"`) {
		t.Error("row does not link to its trace")
	}
	if len(byTestID(doc, "simulation-note")) != 1 || len(byTestID(doc, "simulation-legend")) != 1 {
		t.Error("traces page does not explain simulated figures")
	}
}

func testSuiteRunPages(t *testing.T, st store.Store) {
	sr, older := fixtureSuiteRun(), fixtureOlderSuiteRun()
	h := newTestServer(t, st, NewDefaultConfig())

	t.Run("list", func(t *testing.T) {
		rec := get(t, h, "/suite-runs")
		mustStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		rows := byTestID(doc, "suite-run-row")
		if len(rows) != 2 || attr(rows[0], "data-suite-run-id") != sr.SuiteRunID {
			t.Fatalf("rows: %d, first %q", len(rows), attr(rows[0], "data-suite-run-id"))
		}
		got := text(rows[0])
		for _, want := range []string{"gsm8k-mini", "4e1f2a9b", "incumbent:gpt-5", "conductor, moa:3", "50", "done",
			"2025-06-02 11:00:00.123 UTC", sr.Headline, "SIMULATED"} {
			if !strings.Contains(got, want) {
				t.Errorf("row lacks %q: %s", want, got)
			}
		}
		if strings.Contains(text(rows[1]), "SIMULATED") {
			t.Error("a suite run without a simulated report is marked SIMULATED")
		}
	})

	t.Run("report", func(t *testing.T) {
		rec := get(t, h, "/suite-runs/"+sr.SuiteRunID)
		mustStatus(t, rec, http.StatusOK)
		body := rec.Body.String()
		doc := parseHTML(t, body)
		rep := byTestID(doc, "report")
		if len(rep) != 1 {
			t.Fatal("no report element")
		}
		repHTML := renderNode(t, rep[0])
		for _, want := range []string{"<h1>Suite run report</h1>", "<table>", `<td align="right">0.92</td>`, "<strong>bold</strong>"} {
			if !strings.Contains(repHTML, want) {
				t.Errorf("report lacks %q:\n%s", want, repHTML)
			}
		}
		for _, bad := range []string{"<script", "javascript:", "alert(1)"} {
			if strings.Contains(body, bad) {
				t.Errorf("page holds %q", bad)
			}
		}
		if h := byTestID(doc, "headline"); len(h) != 1 || text(h[0]) != sr.Headline {
			t.Error("headline missing")
		}
		if l := byTestID(doc, "report-json-link"); len(l) != 1 || attr(l[0], "href") != "/suite-runs/"+sr.SuiteRunID+"/report.json" {
			t.Error("report JSON link missing")
		}
		if len(byTestID(doc, "simulation-note")) != 1 {
			t.Error("simulated suite run lacks the simulation note")
		}
	})

	t.Run("report without markdown", func(t *testing.T) {
		rec := get(t, h, "/suite-runs/"+older.SuiteRunID)
		mustStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		if len(byTestID(doc, "no-report")) != 1 || len(byTestID(doc, "report-json-link")) != 0 {
			t.Error("a suite run without a report should say so and not link a JSON report")
		}
	})

	t.Run("report json", func(t *testing.T) {
		rec := get(t, h, "/suite-runs/"+sr.SuiteRunID+"/report.json")
		mustStatus(t, rec, http.StatusOK)
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		if rec.Body.String() != sr.ReportJSON {
			t.Errorf("body = %q", rec.Body.String())
		}
		for _, id := range []string{"nope", older.SuiteRunID} {
			rec := get(t, h, "/suite-runs/"+id+"/report.json")
			mustStatus(t, rec, http.StatusNotFound)
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
				t.Errorf("%s: Content-Type = %q", id, rec.Header().Get("Content-Type"))
			}
		}
	})
}

func testRootStaticAndBasePath(t *testing.T, st store.Store) {
	tests := []struct {
		cfg          Config
		target       string
		wantStatus   int
		wantLocation string
		wantCT       string
	}{
		{NewDefaultConfig(), "/", http.StatusFound, "/traces", ""},
		{Config{BasePath: "/ui", Title: "x"}, "/ui", http.StatusFound, "/ui/traces", ""},
		{Config{BasePath: "/ui", Title: "x"}, "/ui/", http.StatusFound, "/ui/traces", ""},
		{NewDefaultConfig(), "/static/style.css", http.StatusOK, "", "text/css; charset=utf-8"},
		{Config{BasePath: "/ui", Title: "x"}, "/ui/static/style.css", http.StatusOK, "", "text/css; charset=utf-8"},
		{NewDefaultConfig(), "/static/", http.StatusNotFound, "", ""},
		{NewDefaultConfig(), "/static/../web.go", http.StatusNotFound, "", ""},
		{NewDefaultConfig(), "/static/missing.css", http.StatusNotFound, "", ""},
		{Config{BasePath: "/ui", Title: "x"}, "/traces", http.StatusNotFound, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.BasePath+tt.target, func(t *testing.T) {
			rec := get(t, newTestServer(t, st, tt.cfg), tt.target)
			mustStatus(t, rec, tt.wantStatus)
			if got := rec.Header().Get("Location"); got != tt.wantLocation {
				t.Errorf("Location = %q, want %q", got, tt.wantLocation)
			}
			if tt.wantCT != "" && rec.Header().Get("Content-Type") != tt.wantCT {
				t.Errorf("Content-Type = %q, want %q", rec.Header().Get("Content-Type"), tt.wantCT)
			}
		})
	}

	t.Run("links carry the base path", func(t *testing.T) {
		h := newTestServer(t, st, Config{BasePath: "/ui", Title: "shadow UI"})
		rec := get(t, h, "/ui/traces")
		mustStatus(t, rec, http.StatusOK)
		body := rec.Body.String()
		for _, want := range []string{`href="/ui/static/style.css"`, `href="/ui/traces/req-7f3a9c"`, `href="/ui/suite-runs"`, "<title>Traces · shadow UI</title>"} {
			if !strings.Contains(body, want) {
				t.Errorf("page lacks %s", want)
			}
		}
	})
}

func testRegisterRejectsBadInput(t *testing.T, st store.Store) {
	r := newTestServer(t, st, NewDefaultConfig()) // a valid engine to pass
	if err := Register(nil, ReadersOf(store.NewRoles(st)), NewDefaultConfig()); err == nil {
		t.Error("nil router accepted")
	}
	if err := Register(r.Group("/x"), ReadersOf(store.NewRoles(nil)), NewDefaultConfig()); err == nil {
		t.Error("nil store accepted")
	}
	if err := Register(r.Group("/y"), Readers{}, NewDefaultConfig()); err == nil {
		t.Error("roles without a store accepted")
	}
	if err := Register(r.Group("/z"), ReadersOf(store.NewRoles(st)), Config{BasePath: "ui"}); err == nil {
		t.Error("invalid config accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg     Config
		wantErr string
	}{
		{NewDefaultConfig(), ""},
		{Config{BasePath: "/ui", Title: "t"}, ""},
		{Config{BasePath: "/a/b-c_d.e~", Title: "t"}, ""},
		{Config{BasePath: "ui", Title: "t"}, "must start with"},
		{Config{BasePath: "/ui/", Title: "t"}, "must not end with"},
		{Config{BasePath: "/", Title: "t"}, "must not end with"},
		{Config{BasePath: "//ui", Title: "t"}, `must not contain "//"`},
		{Config{BasePath: "/ui?x=1", Title: "t"}, "use letters"},
		{Config{BasePath: "/u i", Title: "t"}, "use letters"},
		{Config{Title: " "}, "title must not be empty"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tt.cfg, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%+v: error %v, want one containing %q", tt.cfg, err, tt.wantErr)
		}
	}
}

// mustUnsupported checks a page answered 501 with a message naming role.
func mustUnsupported(t *testing.T, rec *httptest.ResponseRecorder, role string) {
	t.Helper()
	mustStatus(t, rec, http.StatusNotImplemented)
	msg := byTestID(parseHTML(t, rec.Body.String()), "error-message")
	if len(msg) != 1 || !strings.Contains(text(msg[0]), role) {
		t.Errorf("the 501 page does not name %s:\n%s", role, limitText(rec.Body.String(), 3000))
	}
}

// Every page over a store without a role it needs answers 501 naming that
// role (never a page showing less); the pages that need only the roles every
// store has still answer.
func testPagesNameTheMissingRole(t *testing.T, st store.Store) {
	sr := fixtureSuiteRun()
	var logs bytes.Buffer
	h := newTestServerLogged(t, basicStore{st}, &logs)
	tests := []struct {
		target string
		role   string // "" when the page needs only the basic roles
	}{
		{"/traces", "store.TraceReader"},
		{"/traces/req-7f3a9c", "store.TraceReader"},
		{"/overview", "store.OverviewReader"},
		{"/workers", "store.WorkerReader"},
		{"/suite-runs/" + sr.SuiteRunID, "store.RunComparer"},
		{"/compare/runs?a=x&b=y", "store.RunComparer"},
		{"/compare/suite-runs?a=x&b=y", "store.RunComparer"},
		{"/suite-runs", ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := get(t, h, tt.target)
			if tt.role == "" {
				mustStatus(t, rec, http.StatusOK)
				return
			}
			mustUnsupported(t, rec, tt.role)
		})
	}
	if logs.Len() != 0 {
		t.Errorf("a missing role is no server failure, but was logged: %s", logs.String())
	}
}
