package notify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// A suite run's states come from its analysed report: one per candidate,
// with the verdict the gate policy reached, the gates that did not pass
// (FAIL first) and the suite run's page.
func TestSuiteStatesFromAnAnalysedReport(t *testing.T) {
	finished := time.Date(2026, 3, 2, 6, 30, 0, 0, time.UTC)
	var outcomes []eval.Outcome
	for i := range 150 {
		id := fmt.Sprintf("c%03d", i)
		outcomes = append(outcomes,
			eval.Outcome{CaseID: id, Category: "math", Pipeline: "single:gpt-5", Mode: store.ModeIncumbent, Status: store.StatusOK,
				Passed: i%10 != 0, LatencyMs: 1000, CostUSD: 0.01},
			eval.Outcome{CaseID: id, Category: "math", Pipeline: "conductor", Mode: store.ModeCandidate, Status: store.StatusOK,
				Passed: i%10 != 0 && i%4 != 0, LatencyMs: 1000 + float64(i%7)*10, CostUSD: 0.009},
			eval.Outcome{CaseID: id, Category: "math", Pipeline: "single:qwen3-32b", Mode: store.ModeCandidate, Status: store.StatusOK,
				Passed: i%10 != 0, LatencyMs: 1000, CostUSD: 0.002})
	}
	rep := eval.BuildReport(eval.ReportMeta{SuiteRunID: "sr/42", SetName: "gsm8k-150", Incumbent: "single:gpt-5",
		Candidates: []string{"conductor", "single:qwen3-32b"}, FinishedAt: finished}, outcomes)
	if err := rep.Analyze(eval.AnalysisOptions{}); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{"conductor": "3f9a0b1c2d3e", "single:qwen3-32b": "0a1b2c3d4e5f"}
	states := SuiteStates(rep, func(c string) string { return versions[c] })
	if len(states) != 2 {
		t.Fatalf("%d states", len(states))
	}
	for i, st := range states {
		c := rep.Comparisons[i]
		if st.Kind != KindSuite || st.Candidate != c.Candidate || st.Version != versions[c.Candidate] || st.Set != "gsm8k-150" ||
			st.Verdict != c.Verdict.Verdict || st.Headline != rep.Headline || st.Page != "/suite-runs/sr%2F42" || !st.At.Equal(finished) {
			t.Errorf("state %d: %+v", i, st)
		}
		if err := st.check(); err != nil {
			t.Error(err)
		}
		var notPassed int
		for _, g := range c.Verdict.Gates {
			if g.Status != gate.Pass {
				notPassed++
			}
		}
		if len(st.Gates) != notPassed {
			t.Errorf("%s: %d gates listed, %d did not pass", st.Candidate, len(st.Gates), notPassed)
		}
		for j := 1; j < len(st.Gates); j++ {
			if st.Gates[j-1].Status == gate.Inconclusive && st.Gates[j].Status == gate.Fail {
				t.Errorf("%s: gate %s FAIL listed after an INCONCLUSIVE one", st.Candidate, st.Gates[j].Name)
			}
		}
	}
	// The conductor loses 30 of the incumbent's 135 right answers (−20 points): significantly worse.
	if states[0].Verdict != gate.Fail || len(states[0].Gates) == 0 || states[0].Gates[0].Name != "quality" {
		t.Errorf("conductor: %+v", states[0])
	}
	if states[1].Verdict == gate.Fail {
		t.Errorf("an equal, cheaper candidate FAILed: %+v", states[1])
	}
}

// The live verdicts the notifier reads are the ones the overview and the
// reports show: LiveVerdictsFunc over a store is LiveStates of
// eval.LiveVerdicts, one state per configured candidate at its configured
// version, the headline naming the sequence's start, its quality and the
// recommendation, the gates the rows that did not pass (FAIL first).
func TestLiveVerdictsFuncReadsTheLiveSequence(t *testing.T) {
	st := engine.Open(t)
	lw := st.(interface {
		store.TraceWriter
		store.JudgmentWriter
		store.LiveReader
	})
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Millisecond)
	pairs := make([]storetest.LivePair, 2000)
	for i := range pairs {
		// The candidate loses a pair in five and fails a run in ten: FAIL.
		pairs[i] = storetest.LivePair{Language: "en", Outcome: store.JudgmentTie, InclusionProb: 1}
		switch {
		case i%5 == 0:
			pairs[i].Outcome = store.JudgmentLoss
		case i%10 == 3:
			pairs[i].CandidateStatus, pairs[i].Outcome = store.StatusError, ""
		}
	}
	storetest.InsertLivePairs(t, lw, "conductor", "v7", start, time.Minute, pairs)
	storetest.InsertLivePairs(t, lw, "conductor", "v6", start.Add(-time.Hour), time.Minute, pairs[:10])
	if err := lw.InsertJudgments(context.Background(), []store.Judgment{{RequestID: "canary-1", Pipeline: "conductor", PipelineVersion: "v7",
		CandidateRunID: "canary-1", Judge: "judge-x", Canary: "identical", CanaryPassed: true, Outcome: store.JudgmentTie, JudgedAt: start, InclusionProb: 1}}); err != nil {
		t.Fatal(err)
	}
	pol := gate.NewDefaultPolicy()
	states, err := LiveVerdictsFunc(lw, pol, map[string]string{"conductor": "v7"})(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 {
		t.Fatalf("states %+v", states)
	}
	s := states[0]
	if s.Kind != KindLive || s.Candidate != "conductor" || s.Version != "v7" || s.Verdict != gate.Fail || s.Page != "/overview" ||
		!strings.Contains(s.Headline, "since "+start.Format(time.RFC3339)) || !strings.Contains(s.Headline, "Do not cut over") {
		t.Errorf("state %+v", s)
	}
	if len(s.Gates) == 0 || s.Gates[0].Status != gate.Fail || s.Gates[0].Name != "quality" {
		t.Errorf("gates %+v, want quality FAIL first", s.Gates)
	}
	sec, err := eval.LiveVerdicts(context.Background(), lw, eval.LiveQuery{Candidates: []string{"conductor"}, Versions: map[string]string{"conductor": "v7"}, AsOf: s.At}, pol)
	if err != nil {
		t.Fatal(err)
	}
	if want := LiveStates(sec); len(want) != 1 || want[0].Verdict != s.Verdict || want[0].Headline != s.Headline {
		t.Errorf("the notifier's state differs from the pages' computation:\n%+v\n%+v", s, want)
	}
	if LiveStates(nil) != nil || SuiteStates(nil, nil) != nil {
		t.Error("nil sections give states")
	}
}
