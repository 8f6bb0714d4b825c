package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestParseOverviewQuery(t *testing.T) {
	now := time.Date(2025, 6, 2, 10, 30, 20, 0, time.UTC)
	q, err := parseOverviewQuery(url.Values{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2025, 6, 2, 10, 31, 0, 0, time.UTC); !q.To.Equal(want) || !q.From.Equal(want.Add(-24*time.Hour)) {
		t.Errorf("default window = %v..%v", q.From, q.To)
	}
	in := overviewQuery{App: "support-bot", From: t0.Truncate(time.Second).Add(-time.Hour), To: t0.Truncate(time.Second)}
	back, err := parseOverviewQuery(in.values(), now)
	if err != nil || back != in {
		t.Errorf("round trip = %+v, %v; want %+v", back, err, in)
	}
	for _, bad := range []string{"from=soon", "from=2025-06-02T00:00&to=2025-06-01T00:00"} {
		v, _ := url.ParseQuery(bad)
		if _, err := parseOverviewQuery(v, now); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestBucketFor(t *testing.T) {
	tests := []struct {
		span time.Duration
		want int
	}{
		{time.Minute, 60}, {48 * time.Minute, 60}, {49 * time.Minute, 300}, {24 * time.Hour, 1800 * 2},
		{7 * 24 * time.Hour, 6 * 3600}, {365 * 24 * time.Hour, 86400},
	}
	for _, tt := range tests {
		if got := bucketFor(tt.span); got != tt.want {
			t.Errorf("bucketFor(%v) = %d, want %d", tt.span, got, tt.want)
		}
		if got := bucketFor(tt.span); 86400%got != 0 {
			t.Errorf("bucket %d does not divide a day", got)
		}
	}
}

// TestBrowserTracesPages runs the page tests that only read over one store
// holding browserTraces and fixtureSuiteRun with its verdict (one engine
// database for all of them).
func TestBrowserTracesPages(t *testing.T) {
	st := engine.Open(t)
	for _, tr := range browserTraces() {
		seed(t, st, tr)
	}
	if err := st.InsertSuiteRuns(context.Background(), []store.SuiteRun{verdictSuiteRun()}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		test func(*testing.T, store.Store)
	}{
		{"OverviewPage", testOverviewPage},
		{"WorkersPage", testWorkersPage},
		{"TracesSearchFilters", testTracesSearchFilters},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, st) })
	}
}

// verdictSuiteRun is fixtureSuiteRun with its PASS verdict.
func verdictSuiteRun() store.SuiteRun {
	sr := fixtureSuiteRun()
	sr.Verdict = "PASS"
	return sr
}

func testOverviewPage(t *testing.T, st store.Store) {
	sr := verdictSuiteRun()
	h := newTestServer(t, st, NewDefaultConfig())
	q := overviewQuery{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}
	rec := get(t, h, urls{}.overviewWith(q))
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	if got := text(byTestID(doc, "count-requests")[0]); got != "3" {
		t.Errorf("requests = %q, want 3", got)
	}
	if got := text(byTestID(doc, "count-shadow")[0]); got != "3" {
		t.Errorf("shadow runs = %q, want 3 (two conductor runs, one single-model run)", got)
	}
	if got := text(byTestID(doc, "count-errors")[0]); got != "1" {
		t.Errorf("runs not ok = %q, want 1", got)
	}
	rows := map[string][2]string{}
	var order []string
	for _, r := range byTestID(doc, "overview-row") {
		p := attr(r, "data-pipeline")
		order = append(order, p)
		rows[p] = [2]string{text(byTestID(r, "agreement")[0]), text(byTestID(r, "verdict")[0])}
	}
	if want := []string{"incumbent:gpt-5", "conductor", "single:claude-sonnet-4"}; !slices.Equal(order, want) {
		t.Fatalf("pipelines = %q, want %q", order, want)
	}
	// Neither conductor answer equals the incumbent's; the failed single-model run pairs with nothing.
	if got := rows["conductor"][0]; got != "0.0% 0 of 2" {
		t.Errorf("conductor agreement = %q", got)
	}
	if got := rows["single:claude-sonnet-4"][0]; got != "—" {
		t.Errorf("single agreement = %q, want —", got)
	}
	if got := rows["conductor"][1]; !strings.HasPrefix(got, "PASS "+shortID(sr.SuiteRunID, 16)) || !strings.HasSuffix(got, sr.Headline) {
		t.Errorf("conductor verdict = %q", got)
	}
	running := map[string]string{}
	for _, r := range byTestID(doc, "overview-row") {
		running[attr(r, "data-pipeline")] = text(byTestID(r, "running-verdict")[0])
	}
	// Two disagreeing pairs: undecided, and agreement alone cannot show the margin.
	if got := running["conductor"]; !strings.HasPrefix(got, "INCONCLUSIVE 0% to PASS") || !strings.Contains(got, "agreement alone cannot PASS") {
		t.Errorf("conductor running verdict = %q", got)
	}
	if got := running["single:claude-sonnet-4"]; got != "no answered pairs" {
		t.Errorf("single running verdict = %q", got)
	}
	if got := rows["single:claude-sonnet-4"][1]; got != "no suite run" {
		t.Errorf("single verdict = %q", got)
	}
	if n := len(byTestID(byTestID(doc, "cost-chart")[0], "chart-line")); n != 3 {
		t.Errorf("cost chart lines = %d, want 3 (one per pipeline)", n)
	}
	if n := len(byTestID(byTestID(doc, "latency-chart")[0], "chart-line")); n != 6 {
		t.Errorf("latency chart lines = %d, want 6 (p50 and p95 per pipeline)", n)
	}

	t.Run("app filter", func(t *testing.T) {
		q := q
		q.App = "billing"
		doc := parseHTML(t, get(t, h, urls{}.overviewWith(q)).Body.String())
		if got := text(byTestID(doc, "count-requests")[0]); got != "1" {
			t.Errorf("billing requests = %q, want 1", got)
		}
		if len(byTestID(doc, "overview-empty")) != 1 {
			t.Error("billing has no runs: the page should say so")
		}
	})
	t.Run("bad window answers 400", func(t *testing.T) {
		mustStatus(t, get(t, h, "/overview?from=2025-06-02T00:00&to=2025-06-01T00:00"), http.StatusBadRequest)
	})
	t.Run("a store without overview answers 501 naming the role", func(t *testing.T) {
		mustUnsupported(t, get(t, newTestServer(t, basicStore{st}, NewDefaultConfig()), "/overview"), "store.OverviewReader")
	})
}

// TestOverviewLiveSegments: the overview shows each candidate's running
// verdict per segment of the window's live traffic with Holm's correction,
// read from the real engine: PASS on English prompts, undecided on Russian
// prompts with tables where the answers differ on a third; the segment filter
// narrows the table to the segments of the selected requests.
func TestOverviewLiveSegments(t *testing.T) {
	st := engine.Open(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var reqs []store.Request
	var runs []store.Run
	add := func(id string, i int, req store.Request, agree bool) {
		started := at.Add(time.Duration(i) * time.Minute)
		req.RequestID, req.ReceivedAt, req.Source, req.App, req.Input = id, started, store.SourceTap, "bot", "[]"
		reqs = append(reqs, req)
		out := "42"
		if !agree {
			out = "41"
		}
		runs = append(runs,
			store.Run{RunID: id + "-inc", RequestID: id, Pipeline: "incumbent:gpt-5", Mode: store.ModeIncumbent, StartedAt: started, Status: store.StatusOK, FinalOutput: "42"},
			store.Run{RunID: id + "-cand", RequestID: id, Pipeline: "conductor", Mode: store.ModeCandidate, StartedAt: started, Status: store.StatusOK, FinalOutput: out})
	}
	for i := range 600 {
		add("en-"+strconv.Itoa(i), 2*i, store.Request{Language: "en", LengthBucket: "0-127"}, true)
	}
	for i := range 150 {
		add("ru-"+strconv.Itoa(i), 2*i+1, store.Request{Language: "ru", HasTable: true, LengthBucket: "128-511"}, (i+1)%3 != 0)
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	h := newTestServer(t, st, NewDefaultConfig())
	day := overviewQuery{From: at, To: at.Add(24 * time.Hour)}
	ruOnly := day
	ruOnly.Seg = store.SegmentFilter{Language: "ru"}
	tests := []struct {
		name string
		q    overviewQuery
		want map[string]string // segment -> verdict
	}{
		{"all live traffic", day, map[string]string{"lang:en": "PASS", "len:0-127": "PASS",
			"lang:ru": "INCONCLUSIVE", "table": "INCONCLUSIVE", "lang:ru+table": "INCONCLUSIVE", "len:128-511": "INCONCLUSIVE"}},
		{"Russian requests only", ruOnly, map[string]string{"lang:ru": "INCONCLUSIVE", "table": "INCONCLUSIVE",
			"lang:ru+table": "INCONCLUSIVE", "len:128-511": "INCONCLUSIVE"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(t, h, urls{}.overviewWith(tc.q))
			mustStatus(t, rec, http.StatusOK)
			doc := parseHTML(t, rec.Body.String())
			if c := byTestID(doc, "live-correction"); len(c) != 1 || !strings.Contains(text(c[0]), "Holm's step-down correction") {
				t.Errorf("the page must state the correction: %v", c)
			}
			got := map[string]string{}
			for _, r := range byTestID(doc, "live-segment") {
				if attr(r, "data-candidate") != "conductor" {
					t.Errorf("segment row of %q", attr(r, "data-candidate"))
				}
				seg := attr(r, "data-segment")
				got[seg] = text(byTestID(r, "live-segment-verdict")[0])
				advice := text(byTestID(r, "live-segment-advice")[0])
				if got[seg] == "INCONCLUSIVE" && !strings.Contains(advice, "agreement alone cannot PASS") {
					t.Errorf("%s advice %q", seg, advice)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("segment verdicts\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}
