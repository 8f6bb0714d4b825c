package eval

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

func liveSegment(v gate.LiveVerdict, name string) *gate.LiveSegment {
	for i := range v.Segments {
		if v.Segments[i].Segment == name {
			return &v.Segments[i]
		}
	}
	return nil
}

// TestLiveVerdictsFromStore: the running verdicts read the store's pairs with
// their segment columns; the candidate PASSes on English prompts after Holm's
// correction and stays undecided on Russian prompts with tables, where
// agreement alone cannot show it is at most the margin worse.
func TestLiveVerdictsFromStore(t *testing.T) {
	st := engine.Open(t)
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	storetest.InsertLiveTraffic(t, st, at, 600, 150)
	la := st.(store.LiveAgreement)
	day := store.OverviewQuery{From: at, To: at.Add(24 * time.Hour), BucketSeconds: liveDayBucket}
	ruOnly := day
	ruOnly.Segments = store.SegmentFilter{Language: "ru"}
	tests := []struct {
		name      string
		q         store.OverviewQuery
		pairs     int
		segments  map[string][2]int // pairs, differing
		passed    []string
		undecided []string
	}{
		{"all live traffic", day, 750,
			map[string][2]int{"lang:en": {600, 0}, "len:0-127": {600, 0}, "lang:ru": {150, 50}, "table": {150, 50}, "lang:ru+table": {150, 50}, "len:128-511": {150, 50}},
			[]string{"lang:en", "len:0-127"}, []string{"lang:ru", "table", "lang:ru+table", "len:128-511"}},
		{"the overview's segment filter", ruOnly, 150,
			map[string][2]int{"lang:ru": {150, 50}, "table": {150, 50}, "lang:ru+table": {150, 50}, "len:128-511": {150, 50}},
			nil, []string{"lang:ru", "table", "lang:ru+table", "len:128-511"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec, err := LiveVerdicts(context.Background(), la, tc.q, gate.NewDefaultPolicy())
			if err != nil {
				t.Fatal(err)
			}
			if len(sec.Verdicts) != 1 || sec.Verdicts[0].Candidate != "conductor" || sec.Verdicts[0].Pairs != tc.pairs {
				t.Fatalf("verdicts %+v", sec.Verdicts)
			}
			v := sec.Verdicts[0]
			if len(v.Segments) != len(tc.segments) {
				t.Errorf("segments %+v, want %v", v.Segments, tc.segments)
			}
			for name, want := range tc.segments {
				if s := liveSegment(v, name); s == nil || s.Pairs != want[0] || s.Disagree != want[1] || s.AdjustedP < s.P {
					t.Errorf("%s: %+v, want pairs/differing %v", name, s, want)
				}
			}
			for _, name := range tc.passed {
				if s := liveSegment(v, name); s == nil || s.Verdict != gate.Pass || s.AdjustedP > 0.025 {
					t.Errorf("%s should PASS: %+v", name, s)
				}
			}
			for _, name := range tc.undecided {
				if s := liveSegment(v, name); s == nil || s.Verdict != gate.Inconclusive || !strings.Contains(s.Advice, "agreement alone cannot PASS") {
					t.Errorf("%s should stay undecided: %+v", name, s)
				}
			}
		})
	}
	t.Run("an invalid window is the store's error", func(t *testing.T) {
		if _, err := LiveVerdicts(context.Background(), la, store.OverviewQuery{From: at, To: at, BucketSeconds: liveDayBucket}, gate.NewDefaultPolicy()); err == nil {
			t.Error("want an error")
		}
	})
}

// TestSuiteReportLiveSection: a scheduled suite run with a live window shows
// the running verdict on that window's shadow traffic, overall and per
// segment, in its Markdown, HTML and JSON.
func TestSuiteReportLiveSection(t *testing.T) {
	ctx := context.Background()
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	storetest.InsertLiveTraffic(t, st, time.Now().UTC().Add(-20*time.Hour), 300, 120)
	inc, cand := reportPipelines()
	rep, err := RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: "suite-live", ShiftWindow: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Live == nil {
		t.Fatalf("no live section: %s", rep.LiveError)
	}
	if len(rep.Live.Verdicts) != 1 || rep.Live.Verdicts[0].Pairs != 420 || rep.Live.To.Sub(rep.Live.From) != 24*time.Hour {
		t.Fatalf("live section %+v", rep.Live)
	}
	md := rep.Markdown()
	for _, want := range []string{"## Running verdict on live traffic", "### conductor: ", "Holm's step-down correction",
		"| lang:ru+table | 120 | 40 |", "Progress to PASS: "} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	page, err := rep.HTML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-testid="live-section"`, `data-testid="live-segments"`, `data-testid="live-advice"`, "Holm&#39;s step-down correction"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if got := strings.Count(page, `data-testid="live-segment"`); got != len(rep.Live.Verdicts[0].Segments) {
		t.Errorf("HTML has %d segment rows, want %d", got, len(rep.Live.Verdicts[0].Segments))
	}
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Live *LiveSection `json:"live"`
	}
	if err := json.Unmarshal(js, &back); err != nil || back.Live == nil || len(back.Live.Verdicts[0].Segments) != len(rep.Live.Verdicts[0].Segments) {
		t.Errorf("JSON live section %+v, %v", back.Live, err)
	}
}
