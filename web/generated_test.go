package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Generated load-test rows are never shown as production: the overview
// leaves them out unless asked for them (source=generated, said on the page
// and kept by its form), and the traces list filters on them.
func TestGeneratedRowsOnThePages(t *testing.T) {
	st := engine.Open(t)
	tr := fixtureTrace()
	seed(t, st, tr)
	if _, err := store.Generate(t.Context(), st, store.GenerateSpec{Requests: 7, From: t0.Add(-30 * time.Minute), To: t0}); err != nil {
		t.Fatal(err)
	}
	h := newTestServer(t, st, NewDefaultConfig())
	window := overviewQuery{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}
	for _, tt := range []struct {
		generated     bool
		wantRequests  string
		wantGenerated int
	}{{false, "1", 0}, {true, "7", 1}} {
		q := window
		q.Generated = tt.generated
		rec := get(t, h, urls{}.overviewWith(q))
		mustStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		if got := text(byTestID(doc, "count-requests")[0]); got != tt.wantRequests {
			t.Errorf("generated=%v: requests %q, want %s", tt.generated, got, tt.wantRequests)
		}
		// The coverage chart is of the rows shown: one bucket of the one
		// production request, or the generated requests' buckets.
		if dots := len(byTag(byTestID(doc, "coverage-chart")[0], "circle")); tt.generated != (dots > 1) {
			t.Errorf("generated=%v: the coverage chart has %d buckets", tt.generated, dots)
		}
		if n := len(byTestID(doc, "overview-generated")); n != tt.wantGenerated {
			t.Errorf("generated=%v: %d notes saying the rows are generated", tt.generated, n)
		}
		if tt.generated && !strings.Contains(rec.Body.String(), `<input type="hidden" name="source" value="generated">`) {
			t.Error("the overview's form drops source=generated")
		}
	}
	mustStatus(t, get(t, h, "/overview?source=tap"), http.StatusBadRequest)

	rows := byTestID(parseHTML(t, get(t, h, "/traces?source=generated").Body.String()), "trace-row")
	if len(rows) != 7 {
		t.Errorf("traces of source generated: %d rows, want 7", len(rows))
	}
	rec := get(t, h, "/traces?source=bogus")
	mustStatus(t, rec, http.StatusBadRequest)
	if !strings.Contains(rec.Body.String(), "tap, replay, suite, generated") {
		t.Errorf("the refusal does not list the sources: %s", rec.Body.String())
	}
}
