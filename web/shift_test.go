package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// seedSegments stores live requests received in the last hour: 60 Russian
// prompts with tables and 60 English ones.
func seedSegments(t *testing.T, st store.Store) {
	t.Helper()
	now := time.Now().UTC().Add(-time.Hour)
	var reqs []store.Request
	for i := range 120 {
		r := store.Request{RequestID: fmt.Sprintf("seg-%03d", i), ReceivedAt: now.Add(time.Duration(i) * time.Second),
			Source: store.SourceTap, App: "bot", Input: `[{"role":"user","content":"x"}]`, LengthBucket: "0-127", Novelty: 0.1, Language: "en"}
		if i%2 == 0 {
			r.Language, r.HasTable = "ru", true
		}
		if i%4 == 1 { // 30 English prompts mostly of words no set holds
			r.Novelty = 0.9
		}
		reqs = append(reqs, r)
	}
	if err := st.InsertRequests(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
}

// TestSegmentPages runs the page tests that only read over one store holding
// seedSegments' requests (one engine database for both).
func TestSegmentPages(t *testing.T) {
	st := engine.Open(t)
	seedSegments(t, st)
	t.Run("ShiftPageFlagsASetThatNoLongerRepresentsProduction", func(t *testing.T) {
		testShiftPageFlagsASetThatNoLongerRepresentsProduction(t, st)
	})
	t.Run("TracesAndOverviewSegmentFilters", func(t *testing.T) { testTracesAndOverviewSegmentFilters(t, st) })
}

func testShiftPageFlagsASetThatNoLongerRepresentsProduction(t *testing.T, st store.Store) {
	cfg := NewDefaultConfig()
	cfg.ShiftSets = []string{"testdata/shift_set.jsonl", "testdata/missing.jsonl"}
	h := newTestServer(t, st, cfg)
	rec := get(t, h, "/shift?window=24h")
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	sets := byTestID(doc, "shift-set")
	if len(sets) != 2 {
		t.Fatalf("%d set sections, want 2", len(sets))
	}
	verdict := byTestID(doc, "shift-verdict")
	if len(verdict) != 1 || attr(verdict[0], "data-flagged") != "true" {
		t.Fatalf("the English-only set is not flagged against half-Russian traffic")
	}
	var dims []string
	for _, d := range byTestID(doc, "shift-dimension") {
		dims = append(dims, attr(d, "data-dimension"))
	}
	if !slices.Equal(dims, []string{"language", "has_table", "has_code", "length_bucket"}) {
		t.Errorf("dimensions %v", dims)
	}
	if len(byTestID(doc, "shift-error")) != 1 {
		t.Error("the missing set does not say why it is missing")
	}
	mustStatus(t, get(t, h, "/shift?window=soon"), http.StatusBadRequest)
}

func testTracesAndOverviewSegmentFilters(t *testing.T, st store.Store) {
	h := newTestServer(t, st, NewDefaultConfig())
	rec := get(t, h, "/traces?limit=500&language=ru&has_table=yes")
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	rows := byTestID(doc, "trace-row")
	if len(rows) != 60 {
		t.Fatalf("%d rows for Russian prompts with tables, want 60", len(rows))
	}
	for _, c := range byTestID(doc, "trace-segments") {
		if got := text(c); got != "ru · table · 0-127" {
			t.Fatalf("segments cell %q", got)
		}
	}
	rec = get(t, h, "/traces?limit=500&min_novelty=0.5")
	mustStatus(t, rec, http.StatusOK)
	doc = parseHTML(t, rec.Body.String())
	if n := len(byTestID(doc, "trace-row")); n != 30 {
		t.Errorf("%d rows with novelty ≥ 0.5, want 30", n)
	}
	if in := byTestID(doc, "filter-min-novelty"); len(in) == 0 || attr(in[0], "value") != "0.5" {
		t.Error("the novelty filter does not keep its value")
	}
	for _, bad := range []string{"has_table=maybe", "language=russian", "length_bucket=huge", "min_novelty=2", "min_novelty=much"} {
		mustStatus(t, get(t, h, "/traces?"+bad), http.StatusBadRequest)
		mustStatus(t, get(t, h, "/overview?"+bad), http.StatusBadRequest)
	}
	if body := get(t, h, "/overview?min_novelty=2").Body.String(); !strings.Contains(body, "Bad query: filter: min_novelty") {
		t.Error("the overview does not name the bad filter")
	}
	rec = get(t, h, "/overview?language=en")
	mustStatus(t, rec, http.StatusOK)
	doc = parseHTML(t, rec.Body.String())
	if got := text(byTestID(doc, "count-requests")[0]); got != "60" {
		t.Errorf("overview requests for language=en: %s, want 60", got)
	}
	rec = get(t, h, "/overview?min_novelty=0.9")
	mustStatus(t, rec, http.StatusOK)
	if got := text(byTestID(parseHTML(t, rec.Body.String()), "count-requests")[0]); got != "30" {
		t.Errorf("overview requests for min_novelty=0.9: %s, want 30", got)
	}
}

// TestOverviewNamesWorseSegments: the overview's latest verdict of a candidate
// names the segments where its suite run found it significantly worse.
func TestOverviewNamesWorseSegments(t *testing.T) {
	var outs []eval.Outcome
	add := func(id string, segs []string, incPass, candPass bool) {
		base := eval.Outcome{CaseID: id, Category: "chat", Status: store.StatusOK, Segments: segs, LatencyMs: 100, Calls: 1}
		inc, cand := base, base
		inc.Pipeline, inc.Mode, inc.Passed = "single:gpt-5", store.ModeIncumbent, incPass
		cand.Pipeline, cand.Mode, cand.Passed = "conductor", store.ModeCandidate, candPass
		outs = append(outs, inc, cand)
	}
	for i := range 40 {
		add(fmt.Sprintf("en-%d", i), []string{"lang:en"}, true, true)
	}
	for i := range 30 {
		add(fmt.Sprintf("ru-%d", i), []string{"lang:ru", "table", "lang:ru+table"}, true, i%10 == 0)
	}
	now := time.Now().UTC()
	rep := eval.BuildReport(eval.ReportMeta{SuiteRunID: "sr-seg", SetName: "traffic", Incumbent: "single:gpt-5", Candidates: []string{"conductor"},
		StartedAt: now.Add(-time.Minute), FinishedAt: now}, outs)
	if err := rep.Analyze(eval.AnalysisOptions{Resamples: 200}); err != nil {
		t.Fatal(err)
	}
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	sr := store.SuiteRun{SuiteRunID: "sr-seg", SetName: "traffic", Incumbent: "single:gpt-5", Candidates: []string{"conductor"},
		StartedAt: now.Add(-time.Minute), FinishedAt: now, Status: "done", Verdict: rep.Verdict, Headline: rep.Headline, ReportJSON: string(js)}
	if err := st.InsertSuiteRuns(context.Background(), []store.SuiteRun{sr}); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(context.Background(), []store.Run{{RunID: "r1", RequestID: "q1", Pipeline: "conductor", Mode: store.ModeCandidate,
		StartedAt: now.Add(-time.Minute), Status: store.StatusOK}}); err != nil {
		t.Fatal(err)
	}
	rec := get(t, newTestServer(t, st, NewDefaultConfig()), "/overview")
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	worse := byTestID(doc, "worse-segments")
	if len(worse) != 1 {
		t.Fatalf("%d worse-segment lines, want 1", len(worse))
	}
	if got := text(worse[0]); !strings.Contains(got, "lang:ru+table (-") || strings.Contains(got, "lang:en") {
		t.Errorf("worse-segment line %q", got)
	}
}
