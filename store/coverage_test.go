package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestTapCoverage: offered counts from two tap lives and their rewrites,
// request rows shadowed, not shadowed, metadata-only, cancelled and skipped,
// judged and a canary, and a suite case, in two windows; each stage is
// counted where it belongs.
func TestTapCoverage(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	route := "/v1/chat/completions"
	// Window 1 (10:00): tap A counts 3 then 6 (rewritten), tap B 2, one dropped.
	// Window 2 (11:00): tap A 1.
	counts := []OfferedCount{
		{WindowStart: t0, TapID: "a", Source: OfferedProxy, Route: route, App: "bot", Offered: 3},
		{WindowStart: t0.Add(time.Minute), TapID: "b", Source: OfferedProxy, Route: route, App: "bot", Offered: 2, RecordDropped: 1},
		{WindowStart: t0.Add(time.Hour), TapID: "a", Source: OfferedProxy, Route: route, App: "bot", Offered: 1},
		{WindowStart: t0, TapID: "a", Source: OfferedProxy, Route: route, App: "other", Offered: 9},
	}
	if err := s.InsertOffered(ctx, counts); err != nil {
		t.Fatal(err)
	}
	counts[0].Offered = 6
	if err := s.InsertOffered(ctx, counts[:1]); err != nil {
		t.Fatal(err)
	}
	req := func(id string, at time.Time, notShadowed, omitted string) Request {
		r := Request{RequestID: id, ReceivedAt: at, Source: SourceTap, App: "bot", Input: "[]", Route: route,
			NotShadowed: notShadowed, BodyOmitted: omitted, Language: "en", LengthBucket: "0-127", HasCode: id == "shadowed-1"}
		if omitted != "" {
			r.Language, r.LengthBucket = "", ""
		}
		return r
	}
	reqs := []Request{
		req("shadowed-1", t0.Add(time.Second), "", ""),
		req("shadowed-2", t0.Add(2*time.Second), "", ""),
		req("shed", t0.Add(3*time.Second), "shed_latency", ""),
		req("meta", t0.Add(4*time.Second), "too_large", "too_large"),
		req("cancelled", t0.Add(5*time.Second), "", ""),
		req("late", t0.Add(time.Hour+time.Second), "queue_full", "record_budget"),
		{RequestID: "case", ReceivedAt: t0.Add(time.Second), Source: SourceSuite, App: "bot", Input: "[]"},
	}
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	run := func(req, status string) Run {
		return Run{RunID: req + "-" + status, RequestID: req, Pipeline: "conductor", Mode: ModeCandidate, StartedAt: t0, Status: status}
	}
	runs := []Run{run("shadowed-1", StatusOK), run("shadowed-2", StatusError), run("cancelled", StatusCancelled), run("meta", StatusSkipped),
		{RunID: "inc", RequestID: "shadowed-1", Pipeline: "incumbent:gpt-5", Mode: ModeIncumbent, StartedAt: t0, Status: StatusOK},
		{RunID: "suite", RequestID: "case", SuiteRunID: "sr", Pipeline: "conductor", Mode: ModeCandidate, StartedAt: t0, Status: StatusOK}}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	judgments := []Judgment{
		{RequestID: "shadowed-1", Pipeline: "conductor", CandidateRunID: "shadowed-1-ok", Judge: "j", JudgedAt: t0, Outcome: JudgmentWin},
		{RequestID: "shadowed-2", Pipeline: "conductor", CandidateRunID: "shadowed-2-error", Judge: "j", JudgedAt: t0, Outcome: JudgmentTie, Canary: "identical"},
	}
	if err := s.InsertJudgments(ctx, judgments); err != nil {
		t.Fatal(err)
	}

	cov, err := s.TapCoverage(ctx, CoverageQuery{From: t0, To: t0.Add(2 * time.Hour), App: "bot", BucketSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	want := []CoverageWindow{
		{Window: t0, Route: route, App: "bot", CoverageStage: CoverageStage{Offered: 8, RecordDropped: 1, Recorded: 5, NotShadowed: 2, BodyOmitted: 1, Shadowed: 2, Judged: 1}},
		{Window: t0.Add(time.Hour), Route: route, App: "bot", CoverageStage: CoverageStage{Offered: 1, Recorded: 1, NotShadowed: 1, BodyOmitted: 1}},
	}
	if got := fmt.Sprintf("%+v", cov.Windows); got != fmt.Sprintf("%+v", want) {
		t.Errorf("windows\n got %s\nwant %+v", got, want)
	}
	if wantTotal := (CoverageStage{Offered: 9, RecordDropped: 1, Recorded: 6, NotShadowed: 3, BodyOmitted: 2, Shadowed: 2, Judged: 1}); cov.Total != wantTotal {
		t.Errorf("total = %+v, want %+v", cov.Total, wantTotal)
	}
	if got, want := fmt.Sprint(cov.NotShadowed), "[{queue_full 1} {shed_latency 1} {too_large 1}]"; got != want {
		t.Errorf("not shadowed = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(cov.BodyOmitted), "[{record_budget 1} {too_large 1}]"; got != want {
		t.Errorf("body omitted = %s, want %s", got, want)
	}
	cells := map[string]CoverageStage{}
	for _, c := range cov.Segments {
		cells[c.Dimension+"="+c.Value] = c.CoverageStage
	}
	for cell, want := range map[string]CoverageStage{
		"language=en":      {Recorded: 4, NotShadowed: 1, Shadowed: 2, Judged: 1},
		"language=unknown": {Recorded: 2, NotShadowed: 2, BodyOmitted: 2},
		"has_code=yes":     {Recorded: 1, Shadowed: 1, Judged: 1},
		"has_code=no":      {Recorded: 3, NotShadowed: 1, Shadowed: 1},
	} {
		if cells[cell] != want {
			t.Errorf("segment %s = %+v, want %+v", cell, cells[cell], want)
		}
	}

	// One window over the whole span, every app.
	all, err := s.TapCoverage(ctx, CoverageQuery{From: t0, To: t0.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Windows) != 2 || !all.Windows[0].Window.Equal(t0) || all.Windows[1].App != "other" || all.Windows[1].Offered != 9 || all.Total.Offered != 18 {
		t.Errorf("whole span = %+v", all.Windows)
	}
	for _, q := range []CoverageQuery{{From: t0, To: t0}, {From: t0, To: t0.Add(time.Hour), BucketSeconds: 7}} {
		if _, err := s.TapCoverage(ctx, q); err == nil {
			t.Errorf("%+v: no error", q)
		}
	}
}
