package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
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
		reqs = append(reqs, r)
	}
	if err := st.InsertRequests(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
}

func TestShiftPageFlagsASetThatNoLongerRepresentsProduction(t *testing.T) {
	st := storetest.NewMemory()
	seedSegments(t, st)
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

func TestTracesAndOverviewSegmentFilters(t *testing.T) {
	st := storetest.NewMemory()
	seedSegments(t, st)
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
	for _, bad := range []string{"has_table=maybe", "language=russian", "length_bucket=huge"} {
		mustStatus(t, get(t, h, "/traces?"+bad), http.StatusBadRequest)
		mustStatus(t, get(t, h, "/overview?"+bad), http.StatusBadRequest)
	}
	rec = get(t, h, "/overview?language=en")
	mustStatus(t, rec, http.StatusOK)
	doc = parseHTML(t, rec.Body.String())
	if got := text(byTestID(doc, "count-requests")[0]); got != "60" {
		t.Errorf("overview requests for language=en: %s, want 60", got)
	}
}
