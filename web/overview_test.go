package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
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
	// Two unjudged pairs and one failed run: their sequences run, undecided.
	for _, p := range []string{"conductor", "single:claude-sonnet-4"} {
		if got := running[p]; !strings.HasPrefix(got, "INCONCLUSIVE keep shadowing") || !strings.Contains(got, "since") {
			t.Errorf("%s live verdict = %q", p, got)
		}
	}
	if got := running["incumbent:gpt-5"]; got != "" {
		t.Errorf("incumbent live verdict = %q, want none", got)
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

// TestOverviewLiveVerdict: the overview shows each candidate's live verdict
// from the real engine — its sequence since its newest version's first live
// run, with the rule, the recommendation, the rollback rule, every row it
// rests on — and the coverage of the page's window. The window and the
// segment filter change only the coverage table, never the verdict.
func TestOverviewLiveVerdict(t *testing.T) {
	st := engine.Open(t)
	start := time.Now().UTC().Add(-96 * time.Hour).Truncate(time.Millisecond)
	pairs := make([]storetest.LivePair, 4000)
	for i := range pairs {
		pairs[i] = storetest.LivePair{Language: []string{"en", "ru"}[i%2], Outcome: store.JudgmentTie, InclusionProb: 1}
	}
	storetest.InsertLivePairs(t, st.(interface {
		store.TraceWriter
		store.JudgmentWriter
	}), "conductor", "v1", start, time.Minute, pairs)
	if err := st.(store.JudgmentWriter).InsertJudgments(context.Background(), []store.Judgment{{RequestID: "canary", Pipeline: "conductor", PipelineVersion: "v1",
		CandidateRunID: "canary", Judge: "judge-x", Canary: "identical", CanaryPassed: true, Outcome: store.JudgmentTie, JudgedAt: start, InclusionProb: 1}}); err != nil {
		t.Fatal(err)
	}
	h := newTestServer(t, st, NewDefaultConfig())
	day1 := overviewQuery{From: start, To: start.Add(24 * time.Hour)}
	day2 := overviewQuery{From: start.Add(24 * time.Hour), To: start.Add(48 * time.Hour), Seg: store.SegmentFilter{Language: "ru"}}
	var verdicts []string
	for _, q := range []overviewQuery{day1, day2} {
		rec := get(t, h, urls{}.overviewWith(q))
		mustStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		v := byTestID(doc, "live-verdict")
		if len(v) != 1 || attr(v[0], "data-candidate") != "conductor" {
			t.Fatalf("live verdicts %d", len(v))
		}
		rule := text(byTestID(doc, "live-rule")[0])
		if !strings.Contains(rule, "change no live verdict") || !strings.Contains(rule, gate.LiveRule) {
			t.Errorf("rule %q", rule)
		}
		rec2 := text(byTestID(v[0], "live-recommendation")[0])
		if !strings.HasPrefix(rec2, "Cut over") {
			t.Errorf("recommendation %q: an equal candidate on 4,000 judged pairs cuts over", rec2)
		}
		if rb := text(byTestID(v[0], "live-rollback")[0]); !strings.Contains(rb, "-5.0 pts") {
			t.Errorf("rollback rule %q", rb)
		}
		gates := map[string]bool{}
		for _, g := range byTestID(v[0], "live-gate") {
			gates[attr(g, "data-gate")] = true
		}
		for _, g := range []string{"quality", "cost", "latency", gate.GateCoverage, gate.GatePositionConsistency, gate.GateCanaries} {
			if !gates[g] {
				t.Errorf("row %s missing: %v", g, gates)
			}
		}
		cov := map[string]string{}
		for _, r := range byTestID(v[0], "live-coverage-row") {
			cov[attr(r, "data-dimension")+"="+attr(r, "data-value")] = text(byTestID(r, "live-coverage-share")[0])
		}
		if cov["all="] != "100.0%" || cov["lang=ru"] != "100.0%" {
			t.Errorf("coverage %v", cov)
		}
		var row string
		for _, r := range byTestID(doc, "overview-row") {
			if attr(r, "data-pipeline") == "conductor" {
				row = text(byTestID(r, "running-verdict")[0])
			}
		}
		verdicts = append(verdicts, text(byTestID(v[0], "live-gates")[0]))
		if !strings.HasPrefix(row, "PASS cut over") {
			t.Errorf("conductor row %q", row)
		}
		verdicts = append(verdicts, row)
	}
	if verdicts[0] != verdicts[2] || verdicts[1] != verdicts[3] {
		t.Errorf("the window changed the live verdict: %q", verdicts)
	}
}
