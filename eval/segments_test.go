package eval

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/shift"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestSegmentNames(t *testing.T) {
	got := SegmentNames(segment.Segments{Language: "ru", HasTable: true, LengthBucket: "128-511"})
	want := []string{"lang:ru", "table", "lang:ru+table", "len:128-511"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("SegmentNames = %v, want %v", got, want)
	}
	if got := SegmentNames(segment.Segments{}); fmt.Sprint(got) != "[lang:unknown]" {
		t.Errorf("empty segments: %v", got)
	}
}

// TestReportSaysWhichSegmentRegressed builds outcomes where the candidate
// matches the incumbent on English prompts and fails on Russian prompts with
// tables: the report must name that segment as worse, after Holm's correction.
func TestReportSaysWhichSegmentRegressed(t *testing.T) {
	var outs []Outcome
	add := func(id string, segs []string, incPass, candPass bool) {
		base := Outcome{CaseID: id, Category: "chat", Status: store.StatusOK, Segments: segs, LatencyMs: 100, CostUSD: 0.001, Calls: 1}
		inc, cand := base, base
		inc.Pipeline, inc.Mode, inc.Passed = "inc", store.ModeIncumbent, incPass
		cand.Pipeline, cand.Mode, cand.Passed = "cand", store.ModeCandidate, candPass
		outs = append(outs, inc, cand)
	}
	for i := range 60 {
		add(fmt.Sprintf("en-%d", i), SegmentNames(segment.Segments{Language: "en", LengthBucket: "0-127"}), i%3 != 0, i%3 != 0)
	}
	for i := range 30 {
		add(fmt.Sprintf("ru-%d", i), SegmentNames(segment.Segments{Language: "ru", HasTable: true, LengthBucket: "0-127"}), true, i%10 == 0)
	}
	r := BuildReport(ReportMeta{SuiteRunID: "s", Incumbent: "inc", Candidates: []string{"cand"}}, outs)
	if err := r.Analyze(AnalysisOptions{Resamples: 200}); err != nil {
		t.Fatal(err)
	}
	md := r.Markdown()
	i := strings.Index(md, "The candidate is worse on ")
	if i < 0 {
		t.Fatalf("no segment regression stated:\n%s", md)
	}
	line := md[i : i+strings.Index(md[i:], "\n")]
	for _, want := range []string{"lang:ru+table", "lang:ru ", "table "} {
		if !strings.Contains(line, want) {
			t.Errorf("regression line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "lang:en") {
		t.Errorf("regression line %q names the English segment, where nothing changed", line)
	}
}

// TestSuiteReportShiftSection: with ShiftWindow set, a suite report compares
// the set's segment mix with the live traffic in the store (suite cases left out).
func TestSuiteReportShiftSection(t *testing.T) {
	ctx := context.Background()
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	now := time.Now().UTC()
	var live []store.Request
	for i := range 150 {
		live = append(live, store.Request{RequestID: fmt.Sprintf("live-%d", i), ReceivedAt: now.Add(-time.Duration(i) * time.Minute),
			Source: store.SourceTap, App: "bot", Input: "[]", Language: "ru", HasTable: true, LengthBucket: "0-127", Novelty: -1})
	}
	if err := st.InsertRequests(ctx, live); err != nil {
		t.Fatal(err)
	}
	inc, cand := reportPipelines()
	rep, err := RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: "suite-shift", ShiftWindow: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Shift == nil {
		t.Fatalf("no shift section: %s", rep.ShiftError)
	}
	if rep.Shift.LiveRequests != 150 || rep.Shift.SetCases != 5 {
		t.Errorf("shift over %d live requests and %d cases, want 150 and 5", rep.Shift.LiveRequests, rep.Shift.SetCases)
	}
	// Five cases are below the 30 a verdict needs: the section says so.
	if rep.Shift.Enough || rep.Shift.Flagged || !strings.Contains(rep.Markdown(), "## Shift: report-mini against live traffic") {
		t.Errorf("enough %v flagged %v; markdown:\n%s", rep.Shift.Enough, rep.Shift.Flagged, rep.Markdown())
	}
	if rep.Shift.Dimensions[0].PSI < shift.PSISignificant {
		t.Errorf("language PSI %.3f: an English set against Russian traffic must be far apart", rep.Shift.Dimensions[0].PSI)
	}
}
