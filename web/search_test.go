package web

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestSearchQueryRoundTrip(t *testing.T) {
	q := traceQuery{App: "support-bot", Q: "paris", Candidate: "conductor", Worker: "gpt-5", Status: "error",
		MinCost: 0.001, MaxCost: 0.25, MinMs: 100, MaxMs: 2500.5, Grade: store.GradeFailed,
		From: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 6, 2, 12, 30, 15, 0, time.UTC),
		Before: time.Date(2025, 6, 2, 10, 0, 0, 123_000_000, time.UTC), BeforeID: "req-9"}
	u, err := url.Parse(urls{"/ui"}.tracesWith(q))
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseTraceQuery(u.Query())
	if err != nil || back != q {
		t.Fatalf("deep link %s round trip = %+v, %v; want %+v", u, back, err, q)
	}
	// A browser's datetime-local value (minutes, no zone) is read as UTC.
	v, _ := url.ParseQuery("from=2025-06-01T08:15")
	if got, err := parseTraceQuery(v); err != nil || !got.From.Equal(time.Date(2025, 6, 1, 8, 15, 0, 0, time.UTC)) {
		t.Errorf("datetime-local from = %v, %v", got.From, err)
	}
	for _, bad := range []string{"min_cost=-1", "max_ms=fast", "min_cost=2&max_cost=1", "grade=maybe",
		"from=yesterday", "from=2025-06-02T00:00&to=2025-06-01T00:00", "min_ms=Inf"} {
		v, _ := url.ParseQuery(bad)
		if _, err := parseTraceQuery(v); err == nil {
			t.Errorf("parseTraceQuery(%q): no error", bad)
		}
	}
}

// basicStore has only the roles every store.Store has: no store.TraceReader
// (it cannot search), store.OverviewReader, store.RunComparer or
// store.WorkerReader.
type basicStore struct{ store.Store }

func testTracesSearchFilters(t *testing.T, st store.Store) {
	h := newTestServer(t, st, NewDefaultConfig())
	rows := func(target string) []string {
		t.Helper()
		rec := get(t, h, target)
		mustStatus(t, rec, http.StatusOK)
		var ids []string
		for _, n := range byTestID(parseHTML(t, rec.Body.String()), "trace-row") {
			ids = append(ids, attr(n, "data-request-id"))
		}
		return ids
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"req-7f3a9c", "req-nested", "req-billing"}},
		{"worker=b-sub", []string{"req-nested"}},
		{"candidate=single:claude-sonnet-4", []string{"req-7f3a9c"}},
		{"status=error", []string{"req-7f3a9c"}},
		{"grade=passed", []string{"req-7f3a9c"}},
		{"q=capital", []string{"req-nested"}},
		{"min_ms=10000", []string{"req-7f3a9c"}},
		{"max_cost=0.01&min_ms=1", []string{"req-nested"}},
		{"to=" + url.QueryEscape(fmtFormTime(t0)), []string{"req-nested", "req-billing"}},
	}
	for _, tt := range tests {
		if got := rows("/traces?" + tt.query); !slices.Equal(got, tt.want) {
			t.Errorf("/traces?%s rows = %q, want %q", tt.query, got, tt.want)
		}
	}
	t.Run("the form keeps the filters", func(t *testing.T) {
		rec := get(t, h, "/traces?worker=b-sub&grade=failed&min_cost=0.5")
		mustStatus(t, rec, http.StatusOK)
		body := rec.Body.String()
		for _, want := range []string{`name="worker" value="b-sub"`, `value="failed" selected`, `name="min_cost" min="0" step="any" value="0.5"`} {
			if !strings.Contains(body, want) {
				t.Errorf("form lacks %s", want)
			}
		}
	})
	t.Run("bad filter answers 400", func(t *testing.T) {
		mustStatus(t, get(t, h, "/traces?min_cost=2&max_cost=1"), http.StatusBadRequest)
	})
	t.Run("a store that cannot search answers 501 naming the role", func(t *testing.T) {
		plain := newTestServer(t, basicStore{st}, NewDefaultConfig())
		for _, target := range []string{"/traces?worker=b-sub", "/traces?app=search"} {
			mustUnsupported(t, get(t, plain, target), "store.TraceReader")
		}
	})
}
