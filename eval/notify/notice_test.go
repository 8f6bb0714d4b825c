package notify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
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

// The live verdict's state names the pairs and the window, links to the
// overview, and lists the agreement test with its advice until it PASSes.
func TestLiveStates(t *testing.T) {
	from, to := at.Add(-24*time.Hour), at
	sec := &eval.LiveSection{From: from, To: to, Verdicts: []gate.LiveVerdict{
		{Candidate: "conductor", Pairs: 900, Disagree: 12, Verdict: gate.Pass, Text: "PASS at look 900", Advice: "decided"},
		{Candidate: "single:qwen3-32b", Pairs: 900, Disagree: 300, Verdict: gate.Inconclusive, Text: "INCONCLUSIVE",
			Advice: "agreement alone cannot PASS: answers differ on 33% of pairs"},
	}}
	states := LiveStates(sec, func(c string) string { return "v-" + c }, at)
	if len(states) != 2 {
		t.Fatalf("%d states", len(states))
	}
	if s := states[0]; s.Kind != KindLive || s.Version != "v-conductor" || s.Page != "/overview" || len(s.Gates) != 0 ||
		!strings.Contains(s.Headline, "900 pairs from 2026-03-01T06:00:00Z to 2026-03-02T06:00:00Z, answers differ on 12") {
		t.Errorf("conductor: %+v", s)
	}
	if s := states[1]; len(s.Gates) != 1 || s.Gates[0].Name != "live agreement" || s.Gates[0].Status != gate.Inconclusive ||
		!strings.Contains(s.Gates[0].Reason, "cannot PASS") {
		t.Errorf("qwen: %+v", s)
	}
	if LiveStates(nil, nil, at) != nil || SuiteStates(nil, nil) != nil {
		t.Error("nil sections give states")
	}
}
