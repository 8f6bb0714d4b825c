package web

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestNewWorkerRows(t *testing.T) {
	uses := []store.WorkerUse{
		{Worker: "gpt-5", Category: "math", Position: store.PositionFinal, Steps: 3, CostUSD: 0.06, LatencyMs: 600},
		{Worker: "gpt-5", Category: "qa", Position: store.PositionFirst, Steps: 1, CostUSD: 0.02, LatencyMs: 200},
		{Worker: "qwen3-32b", Category: "math", Position: store.PositionFirst, Steps: 4, CostUSD: 0.02, LatencyMs: 200},
	}
	rows := newWorkerRows(uses)
	var names []string
	for _, r := range rows {
		names = append(names, r.Worker)
	}
	if !slices.Equal(names, []string{"gpt-5", "qwen3-32b"}) {
		t.Fatalf("order = %q (most steps first, ties by name)", names)
	}
	g := rows[0]
	if g.Steps != 4 || g.StepShare != "50.0%" || g.CostShare != "80.0%" || g.LatShare != "80.0%" {
		t.Errorf("gpt-5 = %+v", g)
	}
	if g.Positions[store.PositionFinal] != 3 || g.Positions[store.PositionFirst] != 1 || g.Categories != "math 3, qa 1" {
		t.Errorf("gpt-5 positions %v categories %q", g.Positions, g.Categories)
	}
	var many []store.WorkerUse
	for i := range maxWorkerCategories + 3 {
		many = append(many, store.WorkerUse{Worker: "gpt-5", Category: string(rune('a' + i)), Position: store.PositionOnly, Steps: int64(20 - i)})
	}
	if got, want := newWorkerRows(many)[0].Categories, "a 20, b 19, c 18, d 17, e 16, f 15, g 14, h 13, 3 more categories 33"; got != want {
		t.Errorf("categories beyond %d: got %q, want %q", maxWorkerCategories, got, want)
	}
	if len(newWorkerRows(nil)) != 0 {
		t.Error("no uses, no rows")
	}
}

func testWorkersPage(t *testing.T, st store.Store) {
	h := newTestServer(t, st, NewDefaultConfig())
	q := overviewQuery{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}
	rec := get(t, h, urls{}.workersWith(q, "conductor"))
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	got := map[string][3]string{}
	for _, r := range byTestID(doc, "worker-row") {
		got[attr(r, "data-worker")] = [3]string{text(byTestID(r, "position-first")[0]), text(byTestID(r, "position-middle")[0]),
			text(byTestID(r, "position-final")[0])}
	}
	// Conductor runs: qwen3-32b → gpt-5 → claude-sonnet-4 (math), and a → b → c (qa; b-sub is nested).
	want := map[string][3]string{
		"qwen3-32b": {"1", "0", "0"}, "gpt-5": {"0", "1", "0"}, "claude-sonnet-4": {"0", "0", "1"},
		"a": {"1", "0", "0"}, "b": {"0", "1", "0"}, "c": {"0", "0", "1"},
	}
	if len(got) != len(want) {
		t.Errorf("workers = %v, want %v", got, want)
	}
	for w, p := range want {
		if got[w] != p {
			t.Errorf("%s first/middle/final = %v, want %v", w, got[w], p)
		}
	}
	mustStatus(t, get(t, h, "/workers?from=x"), http.StatusBadRequest)
	mustUnsupported(t, get(t, newTestServer(t, basicStore{st}, NewDefaultConfig()), "/workers"), "store.WorkerReader")
}
