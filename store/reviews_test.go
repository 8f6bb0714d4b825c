package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// reviewFixture stores n judged suite pairs (request, both runs, one
// judgment each by judge "judge-a"; pair 0 also by "judge-b"), a canary and
// a judge error on pair 1 (never in the sample), a live pair and the suite
// run row; it returns the suite pairs' keys.
func reviewFixture(t *testing.T, s *sqlStore, n int) []PairKey {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var reqs []Request
	var runs []Run
	var js []Judgment
	var keys []PairKey
	add := func(id, suite string, prob float64, judges ...string) {
		reqs = append(reqs, Request{RequestID: id, ReceivedAt: at, Source: SourceSuite, Input: `[{"role":"user","content":"prompt of ` + id + `"}]`,
			Language: "ru", HasTable: true, LengthBucket: "0-127"})
		runs = append(runs,
			Run{RunID: id + "/inc", RequestID: id, SuiteRunID: suite, Pipeline: "single:gpt-5", Mode: ModeIncumbent, Status: StatusOK, StartedAt: at, FinalOutput: "incumbent answer of " + id},
			Run{RunID: id + "/cand", RequestID: id, SuiteRunID: suite, Pipeline: "conductor", Mode: ModeCandidate, Status: StatusOK, StartedAt: at, FinalOutput: "candidate answer of " + id})
		for _, jd := range judges {
			js = append(js, Judgment{RequestID: id, SuiteRunID: suite, Pipeline: "conductor", CandidateRunID: id + "/cand",
				IncumbentPipeline: "single:gpt-5", IncumbentRunID: id + "/inc", Judge: jd, JudgeWorker: jd, PromptVersion: "judge-pairwise-v2",
				JudgedAt: at, Outcome: JudgmentWin, Verdict1: VerdictCandidate, Verdict2: VerdictCandidate, InclusionProb: prob})
		}
		if suite != "" {
			keys = append(keys, PairKey{RequestID: id, Pipeline: "conductor", CandidateRunID: id + "/cand"})
		}
	}
	for i := range n {
		judges := []string{"judge-a"}
		if i == 0 {
			judges = append(judges, "judge-b")
		}
		add(fmt.Sprintf("suite-r/c%03d", i), "suite-r", 1, judges...)
	}
	add("live-1", "", 0.25, "judge-a")
	js = append(js,
		Judgment{RequestID: keys[1].RequestID, SuiteRunID: "suite-r", Pipeline: "conductor", CandidateRunID: keys[1].RequestID + "/inc",
			Judge: "judge-a", Canary: "identical", CanaryPassed: true, Outcome: JudgmentTie, JudgedAt: at, InclusionProb: 1},
		// A pair only ever judged in error is no pair to review, nor a live
		// pair decided without the judge or left unjudged.
		Judgment{RequestID: "suite-r/err", SuiteRunID: "suite-r", Pipeline: "conductor", CandidateRunID: "suite-r/err/cand",
			IncumbentRunID: "suite-r/err/inc", Judge: "judge-a", Outcome: JudgmentError, JudgedAt: at, InclusionProb: 1, Error: "timeout"},
		Judgment{RequestID: "live-1", Pipeline: "planner-b", CandidateRunID: "live-1/cand", IncumbentRunID: "live-1/inc",
			Judge: "judge-a", Outcome: JudgmentLoss, JudgedAt: at, InclusionProb: 0.25, Note: "the candidate run has no answer"},
		Judgment{RequestID: "live-1", Pipeline: "planner", CandidateRunID: "live-1/cand", IncumbentRunID: "live-1/inc",
			Judge: "judge-a", Outcome: JudgmentUnjudged, JudgedAt: at, InclusionProb: 0.25, Note: "budget: spent"})
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJudgments(ctx, js); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSuiteRuns(ctx, []SuiteRun{{SuiteRunID: "suite-r", SetName: "gsm8k-150", StartedAt: at, Status: "done"}}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// The review sample on the real engine: real decided pairs only (no canary,
// no judge error), the same sample on every read, a reviewed pair never
// offered again to its reviewer, a second review of it refused, and the
// reviews read back with each judgment of their pair, the set and the
// segments.
func TestReviewsRoundTrip(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	keys := reviewFixture(t, s, 6)
	q := ReviewQueueQuery{Reviewer: "rev-1", Share: 1, Limit: 10}
	got, err := s.ReviewQueue(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sample != 7 || got.Reviewed != 0 || len(got.Pairs) != 7 {
		t.Fatalf("queue: sample %d reviewed %d pairs %d, want 7 real decided pairs (6 suite, 1 live)", got.Sample, got.Reviewed, len(got.Pairs))
	}
	first := got.Pairs[0]
	if !strings.HasPrefix(first.CandidateAnswer, "candidate answer of ") || !strings.HasPrefix(first.IncumbentAnswer, "incumbent answer of ") ||
		!strings.Contains(first.Input, "prompt of "+first.RequestID) || first.IncumbentRunID != first.RequestID+"/inc" {
		t.Errorf("first pair %+v", first)
	}
	again, err := s.ReviewQueue(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got.Pairs {
		if again.Pairs[i].Key() != got.Pairs[i].Key() {
			t.Fatalf("the order changed between reads at %d", i)
		}
	}
	other, err := s.ReviewQueue(ctx, ReviewQueueQuery{Reviewer: "rev-2", Share: 1, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	same := true
	for i := range other.Pairs {
		same = same && other.Pairs[i].Key() == got.Pairs[i].Key()
	}
	if same {
		t.Error("two reviewers get the pairs in the same order; the order must be random per reviewer")
	}
	live, err := s.ReviewQueue(ctx, ReviewQueueQuery{Reviewer: "rev-1", Share: 1, Live: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if live.Sample != 1 || len(live.Pairs) != 1 || live.Pairs[0].RequestID != "live-1" || live.Pairs[0].JudgedProb != 0.25 {
		t.Errorf("live queue %+v", live)
	}

	// rev-1 labels pair 0 (A = the incumbent's answer, key B: the candidate
	// is better) and skips pair 2; rev-2 labels pair 0 as a tie.
	label, err := ReviewLabel(ChoiceB, VerdictIncumbent)
	if err != nil || label != VerdictCandidate {
		t.Fatalf("ReviewLabel(B, incumbent first) = %q, %v", label, err)
	}
	at := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC)
	review := func(k PairKey, reviewer, choice, shown string) Review {
		l, err := ReviewLabel(choice, shown)
		if err != nil {
			t.Fatal(err)
		}
		return Review{RequestID: k.RequestID, Pipeline: k.Pipeline, CandidateRunID: k.CandidateRunID, IncumbentRunID: k.RequestID + "/inc",
			SuiteRunID: "suite-r", Reviewer: reviewer, ShownFirst: shown, Choice: choice, Label: l, InclusionProb: 1, SampleShare: 1, ReviewedAt: at}
	}
	for _, r := range []Review{review(keys[0], "rev-1", ChoiceB, VerdictIncumbent), review(keys[2], "rev-1", ChoiceSkip, VerdictCandidate),
		review(keys[0], "rev-2", ChoiceTie, VerdictCandidate)} {
		if err := s.AddReview(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddReview(ctx, review(keys[0], "rev-1", ChoiceA, VerdictCandidate)); !errors.Is(err, ErrReviewed) {
		t.Errorf("a second review of the pair by its reviewer: %v, want ErrReviewed", err)
	}
	got, err = s.ReviewQueue(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sample != 7 || got.Reviewed != 2 || len(got.Pairs) != 5 {
		t.Errorf("after 2 reviews: sample %d reviewed %d pairs %d", got.Sample, got.Reviewed, len(got.Pairs))
	}
	for _, p := range got.Pairs {
		if p.Key() == keys[0] || p.Key() == keys[2] {
			t.Errorf("pair %v offered again to its reviewer", p.Key())
		}
	}

	rows, err := s.ReviewedPairs(ctx, ReviewedQuery{Texts: true})
	if err != nil {
		t.Fatal(err)
	}
	// Pair 0: rev-1 and rev-2, each with judge-a and judge-b; the skip is out.
	if len(rows) != 4 {
		t.Fatalf("%d reviewed rows, want 4: %+v", len(rows), rows)
	}
	r := rows[0]
	if r.Reviewer != "rev-1" || r.Judge != "judge-a" || r.Label != VerdictCandidate || r.ShownFirst != VerdictIncumbent || r.Outcome != JudgmentWin ||
		r.SetName != "gsm8k-150" || r.Language != "ru" || !r.HasTable || r.LengthBucket != "0-127" || !r.ReviewedAt.Equal(at) ||
		r.CandidateAnswer != "candidate answer of "+keys[0].RequestID || !strings.Contains(r.Input, "prompt of") || r.InclusionProb != 1 {
		t.Errorf("row %+v", r)
	}
	if rows[1].Judge != "judge-b" || rows[2].Reviewer != "rev-2" || rows[2].Label != VerdictTie {
		t.Errorf("rows %+v", rows)
	}
	byJudge, err := s.ReviewedPairs(ctx, ReviewedQuery{Judge: "judge-b", SuiteRunID: "suite-r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(byJudge) != 2 || byJudge[0].Judge != "judge-b" || byJudge[0].Input != "" {
		t.Errorf("judge-b's rows %+v", byJudge)
	}
	if none, err := s.ReviewedPairs(ctx, ReviewedQuery{Live: true}); err != nil || len(none) != 0 {
		t.Errorf("live reviews %v, %v", none, err)
	}

	for _, bad := range []ReviewQueueQuery{{Share: 1}, {Reviewer: "x", Share: 0}, {Reviewer: "x", Share: 1.5},
		{Reviewer: "x", Share: 1, SuiteRunID: "s", Live: true}, {Reviewer: "x", Share: 1, Limit: -1}} {
		if _, err := s.ReviewQueue(ctx, bad); err == nil {
			t.Errorf("queue %+v accepted", bad)
		}
	}
	bad := review(keys[1], "rev-1", ChoiceA, VerdictCandidate)
	bad.Label = VerdictIncumbent
	if err := s.AddReview(ctx, bad); err == nil || !strings.Contains(err.Error(), "does not follow") {
		t.Errorf("a label that contradicts the choice: %v", err)
	}
}

// A share samples that share of the judged pairs, the same ones on every
// read and for every reviewer, and a subset of a larger share's sample.
func TestReviewSampleShare(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	reviewFixture(t, s, 300)
	sample := func(share float64, reviewer string) map[PairKey]bool {
		t.Helper()
		got, err := s.ReviewQueue(ctx, ReviewQueueQuery{Reviewer: reviewer, Share: share, SuiteRunID: "suite-r", Limit: MaxReviewQueueLimit})
		if err != nil {
			t.Fatal(err)
		}
		out := map[PairKey]bool{}
		for _, p := range got.Pairs {
			out[p.Key()] = true
		}
		if got.Sample < int64(len(out)) {
			t.Fatalf("sample %d smaller than the %d pairs returned", got.Sample, len(out))
		}
		return out
	}
	// 300 pairs at 0.2: 60 expected, sd √(300·0.2·0.8) ≈ 6.9.
	a, b := sample(0.2, "rev-1"), sample(0.2, "rev-2")
	if len(a) < 39 || len(a) > 81 {
		t.Errorf("share 0.2 of 300 pairs sampled %d", len(a))
	}
	for k := range a {
		if !b[k] {
			t.Fatalf("pair %v in rev-1's sample, not in rev-2's: the sample must not depend on the reviewer", k)
		}
	}
	if len(a) != len(b) {
		t.Errorf("reviewers' samples differ in size: %d and %d", len(a), len(b))
	}
	small := sample(0.05, "rev-1")
	for k := range small {
		if !a[k] {
			t.Errorf("pair %v in the 0.05 sample, not in the 0.2 sample", k)
		}
	}
	t.Logf("share 0.2 of 300 judged pairs: %d sampled; share 0.05: %d", len(a), len(small))
}

// Forgetting a subject removes the reviews of its requests' pairs.
func TestForgetRemovesReviews(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	keys := reviewFixture(t, s, 2)
	if err := s.InsertRequests(ctx, []Request{{RequestID: keys[0].RequestID, ReceivedAt: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC),
		Source: SourceSuite, SubjectHash: "hash-alice", Input: "[]"}}); err != nil {
		t.Fatal(err)
	}
	r := Review{RequestID: keys[0].RequestID, Pipeline: keys[0].Pipeline, CandidateRunID: keys[0].CandidateRunID, Reviewer: "rev-1",
		ShownFirst: VerdictCandidate, Choice: ChoiceA, Label: VerdictCandidate, InclusionProb: 1, SampleShare: 1, ReviewedAt: time.Now()}
	if err := s.AddReview(ctx, r); err != nil {
		t.Fatal(err)
	}
	rep, err := s.ForgetSubject(ctx, "hash-alice", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.ReviewedPairs(ctx, ReviewedQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reviews != 1 || len(rows) != 0 {
		t.Errorf("forget report %+v, reviews left %d", rep, len(rows))
	}
}

// ReviewedPairs reads a page of whole pairs: with a page of one pair, each
// page holds every review and judgment of one pair, the next page starts
// after it, and the pages joined are the rows of one full read. A pair whose
// only review is a skip is on no page.
func TestReviewedPairsPages(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	keys := reviewFixture(t, s, 4)
	at := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC)
	add := func(k PairKey, reviewer, choice string) {
		l, err := ReviewLabel(choice, VerdictCandidate)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddReview(ctx, Review{RequestID: k.RequestID, Pipeline: k.Pipeline, CandidateRunID: k.CandidateRunID, IncumbentRunID: k.RequestID + "/inc",
			SuiteRunID: "suite-r", Reviewer: reviewer, ShownFirst: VerdictCandidate, Choice: choice, Label: l, InclusionProb: 1, SampleShare: 1, ReviewedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	// Pair 0 (two judges) by two reviewers, pair 1 skipped, pairs 2 and 3 once.
	add(keys[0], "rev-1", ChoiceA)
	add(keys[0], "rev-2", ChoiceTie)
	add(keys[1], "rev-1", ChoiceSkip)
	add(keys[2], "rev-1", ChoiceB)
	add(keys[3], "rev-2", ChoiceA)
	full, err := s.ReviewedPairs(ctx, ReviewedQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 6 {
		t.Fatalf("full read: %d rows, want 6 (pair 0: 2 reviews × 2 judges; pairs 2 and 3: 1 each)", len(full))
	}
	var joined []ReviewedPair
	wantPages := []struct {
		key  PairKey
		rows int
	}{{keys[0], 4}, {keys[2], 1}, {keys[3], 1}}
	q := ReviewedQuery{Limit: 1}
	for i := 0; ; i++ {
		page, err := s.ReviewedPairs(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if i == len(wantPages) {
			if len(page) != 0 {
				t.Errorf("a page after the last pair: %+v", page)
			}
			break
		}
		if len(page) != wantPages[i].rows {
			t.Fatalf("page %d: %d rows, want %d", i, len(page), wantPages[i].rows)
		}
		for _, r := range page {
			if r.Key() != wantPages[i].key {
				t.Errorf("page %d holds pair %v, want only %v", i, r.Key(), wantPages[i].key)
			}
		}
		joined = append(joined, page...)
		q.After = page[len(page)-1].Key()
	}
	if fmt.Sprint(joined) != fmt.Sprint(full) {
		t.Errorf("the pages joined differ from the full read:\n%+v\n%+v", joined, full)
	}
	two, err := s.ReviewedPairs(ctx, ReviewedQuery{Limit: 2, After: keys[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(two) != 2 || two[0].Key() != keys[2] || two[1].Key() != keys[3] {
		t.Errorf("two pairs after pair 0: %+v", two)
	}
	if got := (ReviewedQuery{Limit: MaxReviewedPairs + 1}).PageLimit(); got != MaxReviewedPairs {
		t.Errorf("PageLimit above the cap = %d", got)
	}
}
