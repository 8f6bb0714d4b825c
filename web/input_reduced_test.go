package web

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// A run that answered without part of its input (an image no worker of it
// takes) is marked on the trace page with the reason, on its row of the traces
// list, and counted on the overview, overall and per pipeline.
func TestInputReducedIsShown(t *testing.T) {
	st := engine.Open(t)
	tr := fixtureTrace()
	const reason = "1 of 1 media parts reached no call of the run (its workers do not take them): image image/png, 146,000 bytes, sha256 3f9a1c2b4d5e"
	for i := range tr.Runs {
		if tr.Runs[i].Pipeline == "conductor" {
			tr.Runs[i].InputReduced, tr.Runs[i].InputReducedReason = true, reason
		}
	}
	seed(t, st, tr)
	h := newTestServer(t, st, NewDefaultConfig())

	doc := parseHTML(t, get(t, h, "/traces/"+tr.Request.RequestID).Body.String())
	badges, notes := byTestID(doc, "input-reduced"), byTestID(doc, "run-input-reduced")
	if len(badges) != 1 || attr(badges[0], "title") != reason || len(notes) != 1 || !strings.Contains(text(notes[0]), reason) {
		t.Errorf("trace page: %d badges, %d notes", len(badges), len(notes))
	}

	rec := get(t, h, "/traces")
	mustStatus(t, rec, http.StatusOK)
	rows := byTestID(parseHTML(t, rec.Body.String()), "trace-row")
	if len(rows) != 1 || len(byTestID(rows[0], "input-reduced")) != 1 {
		t.Errorf("traces list: %d rows, the row not marked input reduced", len(rows))
	}

	rec = get(t, h, urls{}.overviewWith(overviewQuery{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}))
	mustStatus(t, rec, http.StatusOK)
	ov := parseHTML(t, rec.Body.String())
	if got := text(byTestID(ov, "count-input-reduced")[0]); got != "1" {
		t.Errorf("overview: input reduced %q, want 1", got)
	}
	per := map[string]string{}
	for _, r := range byTestID(ov, "overview-row") {
		per[attr(r, "data-pipeline")] = text(byTestID(r, "input-reduced-runs")[0])
	}
	if per["conductor"] != "1" || per["incumbent:gpt-5"] != "0" {
		t.Errorf("overview per pipeline: %v", per)
	}
}
