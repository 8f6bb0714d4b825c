package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// readReviewed reads a JSONL fixture of store.ReviewedPair rows.
func readReviewed(t *testing.T, path string) []store.ReviewedPair {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []store.ReviewedPair
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r store.ReviewedPair
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// The fixture (testdata/reviews/agreement.jsonl) is 66 reviewed pairs of
// judge-x, one label each, inclusion probability 1. By hand: the judge's
// outcomes (rows: win, loss, tie, inconsistent) against the labels (columns:
// candidate, incumbent, tie) are
//
//	win          20  5  3   (28)
//	loss          4 15  2   (21)
//	tie           2  3  6   (11)
//	inconsistent  3  2  1   ( 6)
//	             (29)(25)(12)  66
//
// raw agreement p_o = (20 + 15 + 6)/66 = 41/66; chance p_e = (28·29 + 21·25
// + 11·12 + 6·0)/66² = 1469/4356; κ = (41/66 − 1469/4356)/(1 − 1469/4356) =
// 1237/2887 ≈ 0.42847; FCE 1969's SE ≈ 0.084956 (exact fractions). An
// inconsistent pair is always a disagreement.
func TestAgreementOfHandComputation(t *testing.T) {
	rows := readReviewed(t, "testdata/reviews/agreement.jsonl")
	h := AgreementOf(rows, 0.95)
	a, ok := h.Judge("judge-x")
	if !ok || len(h.Judges) != 1 {
		t.Fatalf("judges %+v", h.Judges)
	}
	o := a.Overall
	if o.Pairs != 66 || o.Reviews != 66 || h.Pairs != 66 || h.Reviews != 66 {
		t.Errorf("pairs %d reviews %d (review totals %d, %d), want 66", o.Pairs, o.Reviews, h.Pairs, h.Reviews)
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %.10f, want %.10f", name, got, want)
		}
	}
	near("agreement", o.Agreement, 41.0/66)
	if o.Kappa == nil {
		t.Fatalf("no κ: %s", o.Note)
	}
	near("p_e", o.Kappa.Expected, 1469.0/4356)
	near("κ", o.Kappa.Kappa, 1237.0/2887)
	near("SE", o.Kappa.SE, 0.08495610840849227)
	near("n", o.Kappa.N, 66)
	if !strings.Contains(o.KappaText(), "κ 0.43 (95% CI 0.26 to 0.59)") {
		t.Errorf("κ text %q", o.KappaText())
	}
	// Per set and per segment: every pair in exactly one set; 33 English, 33 Russian.
	sets := map[string]int{}
	for _, f := range a.BySet {
		sets[f.Scope] = f.Pairs
	}
	if sets["set:gsm8k-150"]+sets[ScopeLive] != 66 || sets[ScopeLive] == 0 || len(sets) != 2 {
		t.Errorf("per set %v", sets)
	}
	segs := map[string]int{}
	for _, f := range a.BySegment {
		segs[f.Scope] = f.Pairs
	}
	if segs["segment:lang:en"] != 33 || segs["segment:lang:ru"] != 33 || segs["segment:len:0-127"] != 66 {
		t.Errorf("per segment %v", segs)
	}
	if h.Reviewers.Pairs != 0 || h.Reviewers.Kappa != nil {
		t.Errorf("no pair has two reviewers, got %+v", h.Reviewers)
	}
}

// Each pair weighs 1/π however many reviewers it has, and skips and judge
// errors count nowhere. By hand: pair X (π 0.5, weight 2) judged a win,
// labelled candidate by rev-a and tie by rev-b (1 each); pair Y (π 1)
// judged a loss, labelled incumbent: agreement (1 + 1)/3 = 2/3; cells
// win/candidate 1/3, win/tie 1/3, loss/incumbent 1/3, so p_e = (2/3)(1/3) +
// (1/3)(1/3) = 1/3 and κ = (2/3 − 1/3)/(2/3) = 0.5; Kish's n = (2 + 1)²/(4 +
// 1) = 1.8. The reviewers disagree on X: inter-reviewer agreement 0.
func TestAgreementOfWeights(t *testing.T) {
	at := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC)
	row := func(req, reviewer, label, outcome string, prob float64, min int) store.ReviewedPair {
		return store.ReviewedPair{RequestID: req, Pipeline: "conductor", CandidateRunID: req + "-cand", SuiteRunID: "s", SetName: "set",
			Reviewer: reviewer, Label: label, InclusionProb: prob, ReviewedAt: at.Add(time.Duration(min) * time.Minute), Judge: "judge-x", Outcome: outcome}
	}
	rows := []store.ReviewedPair{
		row("x", "rev-a", store.VerdictCandidate, store.JudgmentWin, 0.5, 0),
		row("x", "rev-b", store.VerdictTie, store.JudgmentWin, 0.5, 1),
		row("y", "rev-a", store.VerdictIncumbent, store.JudgmentLoss, 1, 2),
		row("z", "rev-a", store.ReviewSkip, store.JudgmentWin, 1, 3),         // a skip
		row("w", "rev-a", store.VerdictCandidate, store.JudgmentError, 1, 4), // a judge error: in the review totals only
	}
	h := AgreementOf(rows, 0.95)
	a, _ := h.Judge("judge-x")
	o := a.Overall
	if o.Pairs != 2 || o.Reviews != 3 || math.Abs(o.Agreement-2.0/3) > 1e-12 || o.Kappa == nil ||
		math.Abs(o.Kappa.Kappa-0.5) > 1e-12 || math.Abs(o.Kappa.N-1.8) > 1e-12 {
		t.Errorf("overall %+v kappa %+v", o, o.Kappa)
	}
	if h.Pairs != 3 || h.Reviews != 4 {
		t.Errorf("review totals: %d pairs, %d labels; want 3 and 4 (the skip apart)", h.Pairs, h.Reviews)
	}
	if r := h.Reviewers; r.Pairs != 1 || r.Agreement != 0 {
		t.Errorf("reviewers %+v", r)
	}
	if ev := a.Evidence(); ev.Pairs != 2 || ev.Kappa != o.Kappa {
		t.Errorf("evidence %+v", ev)
	}
	// One label everywhere: κ is undefined and says so.
	one := AgreementOf([]store.ReviewedPair{row("x", "rev-a", store.VerdictTie, store.JudgmentTie, 1, 0)}, 0.95)
	if f := one.Judges[0].Overall; f.Kappa != nil || !strings.Contains(f.Note, "undefined") || f.Agreement != 1 {
		t.Errorf("single label %+v", f)
	}
}

// The export is one line per pair: the prompt, the answers in the stated
// order (incumbent, candidate), every label by time and every judge's
// verdict; a pair whose answers are gone is left out and counted.
func TestLabelledPairs(t *testing.T) {
	at := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC)
	base := store.ReviewedPair{RequestID: "r1", Pipeline: "conductor", CandidateRunID: "r1-c", SuiteRunID: "s1", SetName: "gsm8k-150",
		InclusionProb: 0.2, Input: `[{"role":"user","content":"2+2?"}]`, IncumbentAnswer: "4", CandidateAnswer: "four"}
	rows := []store.ReviewedPair{}
	for _, r := range []struct {
		reviewer, label, judge, outcome string
		min                             int
	}{{"rev-b", store.VerdictCandidate, "judge-a", store.JudgmentWin, 5}, {"rev-b", store.VerdictCandidate, "judge-b", store.JudgmentTie, 5},
		{"rev-a", store.VerdictTie, "judge-a", store.JudgmentWin, 1}, {"rev-a", store.VerdictTie, "judge-b", store.JudgmentTie, 1},
		{"rev-c", store.VerdictCandidate, "judge-a", store.JudgmentWin, 9}, {"rev-c", store.VerdictCandidate, "judge-b", store.JudgmentTie, 9}} {
		x := base
		x.Reviewer, x.Label, x.Judge, x.Outcome, x.ReviewedAt = r.reviewer, r.label, r.judge, r.outcome, at.Add(time.Duration(r.min)*time.Minute)
		x.ShownFirst, x.Verdict1, x.Verdict2 = store.VerdictIncumbent, store.VerdictCandidate, store.VerdictCandidate
		rows = append(rows, x)
	}
	gone := base
	gone.RequestID, gone.IncumbentAnswer, gone.CandidateAnswer, gone.Reviewer, gone.Label = "r2", "", "", "rev-a", store.VerdictTie
	live := base
	live.RequestID, live.SuiteRunID, live.SetName, live.Input, live.Reviewer, live.Label = "r3", "", "", "not json", "rev-a", store.VerdictIncumbent
	rows = append(rows, gone, live)
	pairs, skipped := LabelledPairs(rows)
	if len(pairs) != 2 || skipped != 1 {
		t.Fatalf("%d pairs, %d skipped; want 2 and 1", len(pairs), skipped)
	}
	p := pairs[0]
	if p.Order != [2]string{"incumbent", "candidate"} || p.Answers != [2]string{"4", "four"} || p.Set != "gsm8k-150" ||
		string(p.Prompt) != base.Input || len(p.Labels) != 3 || p.Labels[0].Reviewer != "rev-a" || p.Majority != store.VerdictCandidate ||
		len(p.Judges) != 2 || p.Judges[1].Judge != "judge-b" || p.Judges[0].IncumbentFirst != store.VerdictCandidate || p.InclusionProb != 0.2 {
		t.Errorf("pair %+v", p)
	}
	if q := pairs[1]; q.Set != ScopeLive || string(q.Prompt) != `"not json"` || q.Majority != store.VerdictIncumbent || len(q.Judges) != 0 {
		t.Errorf("live pair %+v", q)
	}
}

// ExportReviews on the engine: the reviewed pairs of the store as JSON
// Lines, with the prompt and both answers read back.
func TestExportReviews(t *testing.T) {
	ctx := t.Context()
	st := engine.Open(t)
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := st.InsertRequests(ctx, []store.Request{{RequestID: "r1", ReceivedAt: at, Source: store.SourceSuite, Input: `[{"role":"user","content":"2+2?"}]`}}); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, []store.Run{{RunID: "r1-i", RequestID: "r1", Pipeline: "single:gpt-5", Mode: store.ModeIncumbent, Status: store.StatusOK, StartedAt: at, FinalOutput: "4"},
		{RunID: "r1-c", RequestID: "r1", Pipeline: "conductor", Mode: store.ModeCandidate, Status: store.StatusOK, StartedAt: at, FinalOutput: "four"}}); err != nil {
		t.Fatal(err)
	}
	roles := store.NewRoles(st)
	if err := roles.JudgmentWriter.InsertJudgments(ctx, []store.Judgment{{RequestID: "r1", SuiteRunID: "s1", Pipeline: "conductor", CandidateRunID: "r1-c",
		IncumbentRunID: "r1-i", Judge: "judge-a", Outcome: store.JudgmentWin, Verdict1: store.VerdictCandidate, Verdict2: store.VerdictCandidate, JudgedAt: at, InclusionProb: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := roles.ReviewWriter.AddReview(ctx, store.Review{RequestID: "r1", Pipeline: "conductor", CandidateRunID: "r1-c", IncumbentRunID: "r1-i", SuiteRunID: "s1",
		Reviewer: "rev-a", ShownFirst: store.VerdictIncumbent, Choice: store.ChoiceB, Label: store.VerdictCandidate, InclusionProb: 0.2, SampleShare: 0.2, ReviewedAt: at}); err != nil {
		t.Fatal(err)
	}
	// A second reviewed pair, whose runs are gone: left out and counted.
	if err := roles.ReviewWriter.AddReview(ctx, store.Review{RequestID: "r2", Pipeline: "conductor", CandidateRunID: "r2-c", IncumbentRunID: "r2-i", SuiteRunID: "s1",
		Reviewer: "rev-a", ShownFirst: store.VerdictCandidate, Choice: store.ChoiceTie, Label: store.VerdictTie, InclusionProb: 0.2, SampleShare: 0.2, ReviewedAt: at}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	sum, err := ExportReviews(ctx, roles.ReviewReader, store.ReviewedQuery{}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if sum != (ExportSummary{Pairs: 1, Labels: 1, Skipped: 1}) || len(lines) != 1 {
		t.Fatalf("summary %+v, lines %q", sum, lines)
	}
	// Read a pair a page, the export is the same.
	var paged bytes.Buffer
	if psum, err := ExportReviews(ctx, roles.ReviewReader, store.ReviewedQuery{Limit: 1}, &paged); err != nil || psum != sum || paged.String() != buf.String() {
		t.Errorf("a pair a page: %+v, %v\n%s", psum, err, paged.String())
	}
	pages := 0
	stop := errors.New("stop")
	if err := ReadReviews(ctx, roles.ReviewReader, store.ReviewedQuery{Limit: 1}, func([]store.ReviewedPair) error { pages++; return stop }); !errors.Is(err, stop) || pages != 1 {
		t.Errorf("fn's error: %v after %d pages, want it at once", err, pages)
	}
	var back LabelledPair
	if err := json.Unmarshal([]byte(lines[0]), &back); err != nil {
		t.Fatal(err)
	}
	if back.Answers != [2]string{"4", "four"} || back.Majority != store.VerdictCandidate || len(back.Judges) != 1 || back.Judges[0].Outcome != store.JudgmentWin ||
		!strings.Contains(string(back.Prompt), "2+2?") || back.InclusionProb != 0.2 {
		t.Errorf("exported %s", lines[0])
	}
}
