package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// pairTraces writes 12 requests, each with a production incumbent run
// (cost 0.002 USD, 1000 ms, answer "42") and two candidates: "conductor" with
// a cost and latency growing with the request number (request 5's latency
// unknown), answering "42" on even requests; "moa" costing 0.1 USD always.
// Requests 0..5 are judged for the conductor (0, 3: loss; 1, 4: win; 2, 5: tie)
// and request 0 also for moa (win). Request 12 has only a conductor run.
func pairTraces(t *testing.T, s *sqlStore) time.Time {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 5, 6, 8, 0, 0, 0, time.UTC)
	var reqs []Request
	var runs []Run
	var js []Judgment
	for i := range 13 {
		id := fmt.Sprintf("req-%02d", i)
		at := t0.Add(time.Duration(i) * time.Minute)
		reqs = append(reqs, Request{RequestID: id, ReceivedAt: at, Source: SourceTap, App: "bot", Input: `[{"role":"user","content":"q` + id + `"}]`})
		if i < 12 {
			runs = append(runs, Run{RunID: id + "/inc", RequestID: id, Pipeline: "incumbent:gpt-4-1106-preview", Mode: ModeIncumbent,
				StartedAt: at, LatencyMs: 1000, CostUSD: 0.002, Status: StatusOK, FinalOutput: "The answer is 42."})
		}
		ans := "The answer is 42"
		if i%2 == 1 {
			ans = "It is 41."
		}
		lat := 500 + 100*float64(i)
		if i == 5 {
			lat = 0
		}
		runs = append(runs,
			Run{RunID: id + "/cond", RequestID: id, Pipeline: "conductor", PipelineVersion: "v2", Mode: ModeCandidate, StartedAt: at,
				LatencyMs: lat, CostUSD: 0.001 * float64(i), Status: StatusOK, FinalOutput: ans},
			Run{RunID: id + "/moa", RequestID: id, Pipeline: "moa", Mode: ModeCandidate, StartedAt: at, LatencyMs: 9000, CostUSD: 0.1, Status: StatusOK, FinalOutput: "42"})
		if i < 6 {
			js = append(js, Judgment{RequestID: id, Pipeline: "conductor", CandidateRunID: id + "/cond", Judge: "j", JudgedAt: at,
				Outcome: []string{JudgmentLoss, JudgmentWin, JudgmentTie}[i%3], InclusionProb: 1})
		}
	}
	js = append(js,
		Judgment{RequestID: "req-00", Pipeline: "moa", CandidateRunID: "req-00/moa", Judge: "j", JudgedAt: t0, Outcome: JudgmentWin, InclusionProb: 1},
		// A canary and an error never count as the pair's judgment.
		Judgment{RequestID: "req-06", Pipeline: "conductor", CandidateRunID: "req-06/cond", Judge: "j", Canary: "identical", Outcome: JudgmentTie},
		Judgment{RequestID: "req-07", Pipeline: "conductor", CandidateRunID: "req-07/cond", Judge: "j", Outcome: JudgmentError})
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJudgments(ctx, js); err != nil {
		t.Fatal(err)
	}
	return t0
}

func TestTracePairFigures(t *testing.T) {
	s := openTestStore(t)
	pairTraces(t, s)
	ctx := context.Background()
	page, err := s.SearchTraces(ctx, TraceSearch{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]TraceSummary{}
	for _, p := range page {
		by[p.RequestID] = p
	}
	r3 := by["req-03"]
	// The first candidate by name is "conductor".
	if r3.PairCandidate != "conductor" || r3.PairCandidates != 2 || !r3.Paired || math.Abs(r3.PairCostDeltaUSD-(0.003-0.002)) > 1e-12 ||
		!r3.PairLatencyKnown || r3.PairLatencyDeltaMs != -200 || r3.PairAgreement != 0 || r3.PairJudgment != JudgmentLoss {
		t.Errorf("req-03 = %+v", r3)
	}
	if r := by["req-04"]; r.PairAgreement != 1 || r.PairJudgment != JudgmentWin {
		t.Errorf("req-04: agreement %d judgment %q, want 1 and win (normalized answers agree)", r.PairAgreement, r.PairJudgment)
	}
	if r := by["req-05"]; r.PairLatencyKnown {
		t.Errorf("req-05's latency is unknown: %+v", r)
	}
	if r := by["req-06"]; r.PairJudgment != "" {
		t.Errorf("req-06: a canary is no judgment: %q", r.PairJudgment)
	}
	if r := by["req-07"]; r.PairJudgment != "" {
		t.Errorf("req-07: an error is no judgment: %q", r.PairJudgment)
	}
	if r := by["req-12"]; r.Paired || r.PairAgreement != -1 || r.PairCandidate != "conductor" {
		t.Errorf("req-12 has no incumbent run: %+v", r)
	}
	// The candidate filter picks the pair.
	page, err = s.SearchTraces(ctx, TraceSearch{Candidate: "moa"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range page {
		if p.RequestID == "req-00" && (p.PairCandidate != "moa" || p.PairJudgment != JudgmentWin || math.Abs(p.PairCostDeltaUSD-0.098) > 1e-12) {
			t.Errorf("req-00 against moa: %+v", p)
		}
	}
}

func TestTracesSortedByPairFigures(t *testing.T) {
	s := openTestStore(t)
	pairTraces(t, s)
	ctx := context.Background()
	ids := func(rows []TraceSummary) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.RequestID)
		}
		return out
	}
	all := func(q TraceSearch) []string {
		var out []string
		q.Limit = 5
		for range 10 {
			page, err := s.SearchTraces(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ids(page)...)
			if len(page) < q.Limit {
				break
			}
			last := page[len(page)-1]
			q.AfterValue, q.AfterID = last.SortValue, last.RequestID
		}
		return out
	}
	reqs := func(ns ...int) []string {
		var out []string
		for _, n := range ns {
			out = append(out, fmt.Sprintf("req-%02d", n))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    TraceSearch
		want []string
	}{
		{"cost delta, most expensive first, paged by keyset", TraceSearch{Sort: TraceSortCost}, reqs(11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)},
		{"cost delta ascending", TraceSearch{Sort: TraceSortCost, Asc: true}, reqs(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{"latency delta: only known latencies", TraceSearch{Sort: TraceSortLatency}, reqs(11, 10, 9, 8, 7, 6, 4, 3, 2, 1, 0)},
		{"agreement ascending: disagreements first, ties by request id", TraceSearch{Sort: TraceSortAgreement, Asc: true},
			reqs(1, 3, 5, 7, 9, 11, 0, 2, 4, 6, 8, 10)},
		{"judgment ascending: losses first", TraceSearch{Sort: TraceSortJudgment, Asc: true}, reqs(0, 3, 2, 5, 1, 4)},
		{"against moa: every delta the same, then by request id", TraceSearch{Sort: TraceSortCost, Candidate: "moa"}, reqs(11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)},
		{"with a request filter", TraceSearch{Sort: TraceSortCost, TraceFilter: TraceFilter{Text: "qreq-1"}}, reqs(11, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := all(tc.q); !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
	page, err := s.SearchTraces(ctx, TraceSearch{Sort: TraceSortCost, TraceFilter: TraceFilter{Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if p := page[0]; p.RequestID != "req-11" || p.Runs != 3 || p.InputPreview != "qreq-11" || p.PairAgreement != 0 || math.Abs(p.SortValue-0.009) > 1e-12 {
		t.Errorf("first sorted row %+v: want req-11 with its figures, preview and agreement", p)
	}
	if _, err := s.SearchTraces(ctx, TraceSearch{Sort: "nope"}); err == nil {
		t.Error("unknown sort: no error")
	}
	if _, err := s.SearchTraces(ctx, TraceSearch{AfterID: "x"}); err == nil {
		t.Error("a sorted cursor without a sort: no error")
	}
}

// A pipeline with two runs of one request (an older version and a newer one)
// pairs its newest run, with that run's judgment only — whichever run id
// sorts first, and with the candidate filter or without.
func TestTracePairNewestRun(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 5, 6, 8, 0, 0, 0, time.UTC)
	if err := s.InsertRequests(ctx, []Request{{RequestID: "r", ReceivedAt: t0, Source: SourceTap, App: "bot", Input: `[]`}}); err != nil {
		t.Fatal(err)
	}
	runs := []Run{
		{RunID: "r/inc", RequestID: "r", Pipeline: "incumbent:x", Mode: ModeIncumbent, StartedAt: t0, LatencyMs: 1000, CostUSD: 0.002, Status: StatusOK, FinalOutput: "a"},
		// "r/a-old" sorts before "r/b-new" but started a week earlier.
		{RunID: "r/a-old", RequestID: "r", Pipeline: "conductor", PipelineVersion: "v1", Mode: ModeCandidate, StartedAt: t0.Add(-7 * 24 * time.Hour),
			LatencyMs: 4000, CostUSD: 0.03, Status: StatusOK, FinalOutput: "a"},
		{RunID: "r/b-new", RequestID: "r", Pipeline: "conductor", PipelineVersion: "v2", Mode: ModeCandidate, StartedAt: t0,
			LatencyMs: 1500, CostUSD: 0.003, Status: StatusOK, FinalOutput: "b"},
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	// Only the old run was judged: the new run's pair has no judgment.
	if err := s.InsertJudgments(ctx, []Judgment{{RequestID: "r", Pipeline: "conductor", CandidateRunID: "r/a-old", Judge: "j",
		JudgedAt: t0, Outcome: JudgmentWin, InclusionProb: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []TraceSearch{{}, {Candidate: "conductor"}, {Sort: TraceSortCost}, {Sort: TraceSortCost, Candidate: "conductor"}} {
		page, err := s.SearchTraces(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 1 {
			t.Fatalf("%+v: %d rows", q, len(page))
		}
		p := page[0]
		if math.Abs(p.PairCostDeltaUSD-0.001) > 1e-12 || p.PairLatencyDeltaMs != 500 || p.PairAgreement != 0 || p.PairJudgment != "" ||
			p.PairIncumbent != "incumbent:x" {
			t.Errorf("%+v: pair %+v, want the v2 run (+0.001 USD, +500 ms, differs, not judged)", q, p)
		}
	}
}
