package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

var liveT0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func liveRun(id, req, pipeline, version, mode, status string, at time.Time) Run {
	return Run{RunID: id, RequestID: req, Pipeline: pipeline, PipelineVersion: version, Mode: mode, Status: status,
		StartedAt: at, CostUSD: 0.01, LatencyMs: 900, FinalOutput: "42"}
}

// The first live candidate run of a version records its sequence's start;
// incumbent runs, suite runs and later runs do not move it, a run stored out
// of order that started earlier does, and so does one written by another
// writer of the same database.
func TestSequenceStartsRecordedByInsertRuns(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	suite := liveRun("s1", "suite-1/c1", "conductor", "v1", ModeCandidate, StatusOK, liveT0.Add(-time.Hour))
	suite.SuiteRunID = "suite-1"
	batches := [][]Run{
		{liveRun("i1", "r1", "single:gpt-5", "i", ModeIncumbent, StatusOK, liveT0.Add(-2*time.Hour)), suite},
		{liveRun("c1", "r1", "conductor", "v1", ModeCandidate, StatusOK, liveT0),
			liveRun("c2", "r2", "conductor", "v1", ModeCandidate, StatusError, liveT0.Add(time.Minute))},
		{liveRun("c3", "r3", "conductor", "v1", ModeCandidate, StatusOK, liveT0.Add(time.Hour)),
			liveRun("m1", "r3", "moa-3", "m1", ModeCandidate, StatusCancelled, liveT0.Add(2*time.Hour))},
	}
	for _, b := range batches {
		if err := s.InsertRuns(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	want := []SequenceStart{
		{Pipeline: "conductor", PipelineVersion: "v1", StartedAt: liveT0, FirstRunID: "c1"},
		{Pipeline: "moa-3", PipelineVersion: "m1", StartedAt: liveT0.Add(2 * time.Hour), FirstRunID: "m1"},
	}
	check := func(label string, want []SequenceStart) {
		t.Helper()
		got, err := s.SequenceStarts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: starts = %v, want %v", label, got, want)
		}
	}
	check("in order", want)
	var rows []SequenceStart
	if rows, _ = queryRows[SequenceStart](ctx, s.t, "SELECT pipeline, pipeline_version, started_at, first_run_id FROM "+s.db+".live_sequences"); len(rows) != 2 {
		t.Errorf("live_sequences holds %d rows, want one per version (2): %v", len(rows), rows)
	}

	// Out of order: a run that started before the recorded start.
	if err := s.InsertRuns(ctx, []Run{liveRun("c0", "r0", "conductor", "v1", ModeCandidate, StatusOK, liveT0.Add(-time.Minute))}); err != nil {
		t.Fatal(err)
	}
	want[0] = SequenceStart{Pipeline: "conductor", PipelineVersion: "v1", StartedAt: liveT0.Add(-time.Minute), FirstRunID: "c0"}
	check("out of order", want)

	// Another writer (its own cache) records its first batch; the start stays the earliest.
	other := &sqlStore{t: s.t, db: s.db, dbName: s.dbName}
	if err := other.InsertRuns(ctx, []Run{liveRun("c9", "r9", "conductor", "v1", ModeCandidate, StatusOK, liveT0.Add(5*time.Hour))}); err != nil {
		t.Fatal(err)
	}
	check("second writer", want)
	if got := LatestSequences(append(want, SequenceStart{Pipeline: "conductor", PipelineVersion: "v2", StartedAt: liveT0.Add(time.Hour)})); len(got) != 2 || got[0].PipelineVersion != "v2" || got[1].Pipeline != "moa-3" {
		t.Errorf("LatestSequences = %v, want conductor v2 and moa-3", got)
	}
}

// LiveObservations reads one request per observation — the first candidate
// run that was neither cancelled nor skipped, failures included — with the
// incumbent's run, the earliest real live judgment (no canary, no suite
// judgment, no other version's) and the segment columns, in start order
// within the window.
func TestLiveObservations(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := func(m int) time.Time { return liveT0.Add(time.Duration(m) * time.Minute) }
	var reqs []Request
	var runs []Run
	for i, seg := range []Request{{Language: "ru", HasTable: true, LengthBucket: "128-511", App: "bot"}, {Language: "en", LengthBucket: "0-127", App: "bot"},
		{Language: "en", HasCode: true, App: "ide"}, {Language: "de", App: "bot"}, {Language: "en", App: "bot"}} {
		id := fmt.Sprintf("r%d", i)
		seg.RequestID, seg.ReceivedAt, seg.Source, seg.Input = id, at(10*i), SourceTap, "[]"
		reqs = append(reqs, seg)
		inc := liveRun("i"+id, id, "single:gpt-5", "i", ModeIncumbent, StatusOK, at(10*i))
		inc.CostUSD, inc.LatencyMs = 0.02, 1200
		runs = append(runs, inc)
	}
	runs = append(runs,
		liveRun("c0", "r0", "conductor", "v1", ModeCandidate, StatusOK, at(1)),
		liveRun("c1", "r1", "conductor", "v1", ModeCandidate, StatusError, at(11)),
		// r2: cancelled by a stop, then shadowed again: the second run is the observation.
		liveRun("c2a", "r2", "conductor", "v1", ModeCandidate, StatusCancelled, at(21)),
		liveRun("c2b", "r2", "conductor", "v1", ModeCandidate, StatusBudgetExceeded, at(25)),
		// r3: skipped by the daily cap: no observation.
		liveRun("c3", "r3", "conductor", "v1", ModeCandidate, StatusSkipped, at(31)),
		// r4: outside the window.
		liveRun("c4", "r4", "conductor", "v1", ModeCandidate, StatusOK, at(90)),
		liveRun("x0", "r0", "conductor", "v2", ModeCandidate, StatusOK, at(2)),
	)
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	j := func(run, outcome, canary, suite, version string, prob float64, m int) Judgment {
		return Judgment{RequestID: "r0", SuiteRunID: suite, Pipeline: "conductor", PipelineVersion: version, CandidateRunID: run,
			Judge: "judge-" + outcome, Canary: canary, Outcome: outcome, InclusionProb: prob, JudgedAt: at(m)}
	}
	if err := s.InsertJudgments(ctx, []Judgment{
		j("c0", JudgmentWin, "", "", "v1", 0.25, 3),
		j("c0", JudgmentLoss, "", "", "v1", 0.5, 4), // a later judge: not the one read
		j("c0", JudgmentLoss, "identical", "", "v1", 1, 2),
		j("c0", JudgmentLoss, "", "suite-1", "v1", 1, 1),
		j("c0", JudgmentLoss, "", "", "v2", 1, 1),
	}); err != nil {
		t.Fatal(err)
	}
	q := LiveQuery{Pipeline: "conductor", PipelineVersion: "v1", From: at(0), To: at(60)}
	obs, err := s.LiveObservations(ctx, q, LivePage{})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 3 {
		t.Fatalf("observations = %+v, want r0, r1, r2", obs)
	}
	// Page by page: one at a time after a cursor gives the same sequence.
	var paged []string
	for page := (LivePage{Limit: 1}); ; {
		got, err := s.LiveObservations(ctx, q, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		if len(got) != 1 {
			t.Fatalf("a page of 1 holds %d", len(got))
		}
		paged = append(paged, got[0].RequestID+"/"+got[0].CandidateRunID+"/"+got[0].Outcome)
		page.AfterAt, page.AfterID = got[0].StartedAt, got[0].RequestID
	}
	if fmt.Sprint(paged) != "[r0/c0/win r1/c1/ r2/c2b/]" {
		t.Errorf("pages: %v", paged)
	}
	o := obs[0]
	if o.RequestID != "r0" || o.CandidateRunID != "c0" || o.Status != StatusOK || !o.IncumbentFound || o.IncumbentStatus != StatusOK ||
		o.IncumbentCostUSD != 0.02 || o.IncumbentLatencyMs != 1200 || o.CostUSD != 0.01 || o.LatencyMs != 900 ||
		o.Outcome != JudgmentWin || o.InclusionProb != 0.25 || o.Judge != "judge-win" || !o.JudgedAt.Equal(at(3)) ||
		o.Language != "ru" || !o.HasTable || o.LengthBucket != "128-511" || o.App != "bot" {
		t.Errorf("r0 = %+v", o)
	}
	if obs[1].RequestID != "r1" || obs[1].Status != StatusError || obs[1].Outcome != "" || obs[1].Language != "en" {
		t.Errorf("r1 = %+v", obs[1])
	}
	if obs[2].RequestID != "r2" || obs[2].CandidateRunID != "c2b" || obs[2].Status != StatusBudgetExceeded || !obs[2].HasCode || obs[2].App != "ide" {
		t.Errorf("r2 = %+v, want the budget_exceeded run after the cancelled one", obs[2])
	}
	if _, err := s.LiveObservations(ctx, LiveQuery{Pipeline: "conductor"}, LivePage{}); err == nil {
		t.Error("a query without a window was accepted")
	}
}

// LiveCoverage counts each recorded exchange once per dimension, in the stage
// it reached, with the shed rows' reasons.
func TestLiveCoverage(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := func(m int) time.Time { return liveT0.Add(time.Duration(m) * time.Minute) }
	type spec struct {
		lang, shed string
		cand       string // candidate run status, "" for none
		pending    bool
		outcome    string
	}
	specs := []spec{
		{lang: "en", cand: StatusOK, outcome: JudgmentWin},
		{lang: "en", cand: StatusOK, outcome: JudgmentError},
		{lang: "en", cand: StatusOK},
		{lang: "en", cand: StatusError},
		{lang: "ru", cand: StatusSkipped},
		{lang: "ru", cand: StatusCancelled},
		{lang: "ru", pending: true},
		{lang: "ru"},
		{lang: "ru", shed: "queue_full"},
		{lang: "ru", shed: "queue_full"},
		{lang: "ru", shed: "admission"},
		{lang: "en", cand: StatusOK, outcome: JudgmentUnjudged},
	}
	var reqs []Request
	var runs []Run
	var work []Work
	var js []Judgment
	for i, sp := range specs {
		id := fmt.Sprintf("r%d", i)
		reqs = append(reqs, Request{RequestID: id, ReceivedAt: at(i), Source: SourceTap, Input: "[]", Language: sp.lang, HasTable: i%2 == 0, App: "bot", NotShadowed: sp.shed})
		runs = append(runs, liveRun("i"+id, id, "single:gpt-5", "i", ModeIncumbent, StatusOK, at(i)))
		if sp.cand != "" {
			runs = append(runs, liveRun("c"+id, id, "conductor", "v1", ModeCandidate, sp.cand, at(i)))
		}
		if sp.pending {
			work = append(work, Work{RequestID: id, Pipeline: "conductor", PipelineVersion: "v1", Status: WorkPending, ReceivedAt: at(i)})
		}
		if sp.outcome != "" {
			js = append(js, Judgment{RequestID: id, Pipeline: "conductor", PipelineVersion: "v1", CandidateRunID: "c" + id, Judge: "j", Outcome: sp.outcome, InclusionProb: 0.5, JudgedAt: at(i)})
		}
	}
	// A suite request and one outside the window are not recorded traffic.
	reqs = append(reqs, Request{RequestID: "suite-1/c", ReceivedAt: at(1), Source: SourceSuite, Input: "[]"},
		Request{RequestID: "late", ReceivedAt: at(200), Source: SourceTap, Input: "[]"})
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertWork(ctx, work); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJudgments(ctx, js); err != nil {
		t.Fatal(err)
	}
	cov, err := s.LiveCoverage(ctx, LiveQuery{Pipeline: "conductor", PipelineVersion: "v1", From: at(0), To: at(100)})
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]CoverageCell{}
	for _, c := range cov.Cells {
		cells[c.Dimension+"="+c.Value] = c
	}
	if len(cov.Cells) == 0 || cov.Cells[0].Dimension != CoverageAll {
		t.Fatalf("cells = %+v, want the total first", cov.Cells)
	}
	for key, want := range map[string]CoverageCell{
		"all=":      {Recorded: 12, Shed: 3, Shadowed: 5, Skipped: 1, Owed: 2, Missing: 1, Answered: 4, Judged: 1, JudgeErrors: 1, NotJudged: 1},
		"lang=en":   {Recorded: 5, Shadowed: 5, Answered: 4, Judged: 1, JudgeErrors: 1, NotJudged: 1},
		"lang=ru":   {Recorded: 7, Shed: 3, Skipped: 1, Owed: 2, Missing: 1},
		"table=yes": {Recorded: 6, Shed: 2, Shadowed: 2, Skipped: 1, Owed: 1, Answered: 2, Judged: 1},
		"app=bot":   {Recorded: 12, Shed: 3, Shadowed: 5, Skipped: 1, Owed: 2, Missing: 1, Answered: 4, Judged: 1, JudgeErrors: 1, NotJudged: 1},
	} {
		got := cells[key]
		got.Dimension, got.Value = "", ""
		if got != want {
			t.Errorf("%s: %+v, want %+v", key, got, want)
		}
	}
	if fmt.Sprint(cov.Reasons) != "[{queue_full 2} {admission 1}]" {
		t.Errorf("reasons = %v", cov.Reasons)
	}
}

// LiveJudgeStats reads the live judgments of one version in the window only,
// canaries counted apart.
func TestLiveJudgeStats(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := func(m int) time.Time { return liveT0.Add(time.Duration(m) * time.Minute) }
	mk := func(req, suite, version, outcome, canary string, passed bool, m int) Judgment {
		return Judgment{RequestID: req, SuiteRunID: suite, Pipeline: "conductor", PipelineVersion: version, CandidateRunID: "c-" + req + canary,
			Judge: "claude-sonnet-4", Outcome: outcome, Canary: canary, CanaryPassed: passed, JudgedAt: at(m), InclusionProb: 0.25,
			Verdict1: "A", Verdict2: "B"}
	}
	if err := s.InsertJudgments(ctx, []Judgment{
		mk("a", "", "v1", JudgmentWin, "", false, 1), mk("b", "", "v1", JudgmentInconsistent, "", false, 2),
		mk("c", "", "v1", JudgmentError, "", false, 3), mk("a", "", "v1", JudgmentLoss, "padded", false, 4),
		mk("d", "suite-1", "v1", JudgmentLoss, "", false, 5), mk("e", "", "v2", JudgmentLoss, "", false, 6),
		mk("f", "", "v1", JudgmentLoss, "", false, 500),
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LiveJudgeStats(ctx, LiveQuery{Pipeline: "conductor", PipelineVersion: "v1", From: at(0), To: at(100)}.Judgments())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Wins != 1 || got[0].Inconsistent != 1 || got[0].Errors != 1 || got[0].Losses != 0 ||
		got[0].Canaries != 1 || got[0].CanariesFailed != 1 || got[0].PositionConsistency != 0.5 {
		t.Errorf("live judge stats = %+v", got)
	}
	if _, err := s.LiveJudgeStats(ctx, LiveJudgmentQuery{PipelineVersion: "v1", From: at(0), To: at(100)}); err == nil {
		t.Error("a version without its pipeline was accepted")
	}
}
