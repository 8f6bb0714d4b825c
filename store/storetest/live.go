package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// LivePair is one production request InsertLivePairs stores: its prompt's
// language, what became of the candidate's run and its judgment.
type LivePair struct {
	Language string
	// NotShadowed sheds the request before shadowing: it is recorded with
	// this reason and has no runs.
	NotShadowed string
	// CandidateStatus is the candidate run's status ("" means ok).
	CandidateStatus string
	// Outcome is the pair's live judgment (store.JudgmentWin, …), "" for
	// none; InclusionProb its sampling probability (0 means 0.25).
	Outcome       string
	InclusionProb float64
	// CandidateCostUSD and CandidateMs scale the candidate's run (0 means
	// the incumbent's 0.002 USD and 1000 ms).
	CandidateCostUSD, CandidateMs float64
}

// InsertLivePairs stores pairs as tapped production traffic of app "bot",
// one request every step from at on ("<candidate>-<i>"): the request, the
// incumbent's run ("incumbent:gpt-5", ok, 0.002 USD, 1000 ms) and the
// candidate's run (version) with its judgment, judged when the run started,
// by "judge-x". Runs go through InsertRuns, so the candidate version's live
// sequence starts at its first run.
func InsertLivePairs(t testing.TB, st interface {
	store.TraceWriter
	store.JudgmentWriter
}, candidate, version string, at time.Time, step time.Duration, pairs []LivePair) {
	t.Helper()
	var reqs []store.Request
	var runs []store.Run
	var js []store.Judgment
	for i, p := range pairs {
		id := fmt.Sprintf("%s-%s-%d", candidate, version, i)
		started := at.Add(time.Duration(i) * step)
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: started, Source: store.SourceTap, App: "bot", Input: "[]",
			Language: p.Language, LengthBucket: "0-127", NotShadowed: p.NotShadowed})
		if p.NotShadowed != "" {
			continue
		}
		status := p.CandidateStatus
		if status == "" {
			status = store.StatusOK
		}
		cost, ms := p.CandidateCostUSD, p.CandidateMs
		if cost == 0 {
			cost = 0.002
		}
		if ms == 0 {
			ms = 1000
		}
		runs = append(runs,
			store.Run{RunID: id + "-inc", RequestID: id, Pipeline: "incumbent:gpt-5", Mode: store.ModeIncumbent, StartedAt: started, Status: store.StatusOK,
				FinalOutput: "42", CostUSD: 0.002, LatencyMs: 1000},
			store.Run{RunID: id + "-cand", RequestID: id, Pipeline: candidate, PipelineVersion: version, Mode: store.ModeCandidate, StartedAt: started,
				Status: status, FinalOutput: "42", CostUSD: cost, LatencyMs: ms})
		if p.Outcome != "" {
			prob := p.InclusionProb
			if prob == 0 {
				prob = 0.25
			}
			js = append(js, store.Judgment{RequestID: id, Pipeline: candidate, PipelineVersion: version, CandidateRunID: id + "-cand",
				IncumbentPipeline: "incumbent:gpt-5", IncumbentRunID: id + "-inc", Judge: "judge-x", Outcome: p.Outcome, InclusionProb: prob, JudgedAt: started})
		}
	}
	ctx := context.Background()
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertJudgments(ctx, js); err != nil {
		t.Fatal(err)
	}
}
