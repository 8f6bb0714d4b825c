package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// A suite whose runs failed at the worker pool gets no verdict: the report,
// its headline and the stored suite-run row say so, whatever the figures of
// the failed runs (0% accuracy, near-0 s p95) would have given.
func TestRunSuiteRunErrorsWithholdVerdict(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	const breakerErr = `shadow: call "gpt" after 0 attempt(s): shadow: circuit breaker open: circuit breaker is open`
	share := func(f float64) *float64 { return &f }
	for _, tt := range []struct {
		name        string
		incFailed   []string // incumbent cases whose run fails at the pool
		candFailed  []string
		maxShare    *float64 // policy max_run_error_share; nil: default 0.1
		verdict     gate.Status
		gateStatus  gate.Status // the run_errors gate; "" when absent (no failed run)
		headlineHas string
	}{
		{name: "incumbent all failed", incFailed: allCases, verdict: gate.Inconclusive, gateStatus: gate.Inconclusive,
			headlineHas: "incumbent single:gpt-5: 5 of 5 runs failed (" + breakerErr + "): no verdict"},
		// The same outage with the rule switched off shows what the gate
		// prevents: a FAIL drawn from the failed runs' near-zero latency.
		{name: "incumbent all failed, rule off", incFailed: allCases, maxShare: share(1), verdict: gate.Fail, gateStatus: gate.Pass,
			headlineHas: "conductor 100.0% vs single:gpt-5 0.0% accuracy"},
		{name: "candidate 1 of 5 failed", candFailed: []string{"gsm8k-test-1"}, verdict: gate.Inconclusive, gateStatus: gate.Inconclusive,
			headlineHas: "candidate conductor: 1 of 5 runs failed (" + breakerErr + "): no verdict"},
		{name: "candidate 1 of 5 failed, share 0.25", candFailed: []string{"gsm8k-test-1"}, maxShare: share(0.25), verdict: gate.Fail, gateStatus: gate.Pass,
			headlineHas: "conductor 80.0% vs single:gpt-5 80.0% accuracy"},
		{name: "no failed run", verdict: gate.Fail, headlineHas: "conductor 100.0% vs single:gpt-5 80.0% accuracy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inc, cand := runErrorPipelines(tt.incFailed, tt.candFailed, breakerErr)
			// Decisive at 5 cases: no min_n, and a cost ceiling the
			// candidate (3× the incumbent's cost on every case) breaks.
			pol := gate.Policy{Version: "run-errors-test", Confidence: 0.95,
				Cost: &gate.CostGate{MaxRatio: 1.2}, MaxRunErrorShare: tt.maxShare}
			rowSet := *set
			rowSet.Name += "-runerr-" + tt.name
			id := "suite-runerr-" + strings.ReplaceAll(tt.name, " ", "-")
			rep, err := RunSuite(context.Background(), SuiteStoresOf(store.NewRoles(st)), &rowSet, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: id, Policy: &pol})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != string(tt.verdict) {
				t.Errorf("verdict %s, want %s", rep.Verdict, tt.verdict)
			}
			if !strings.Contains(rep.Headline, tt.headlineHas) {
				t.Errorf("headline %q lacks %q", rep.Headline, tt.headlineHas)
			}
			withheld := tt.gateStatus == gate.Inconclusive
			if strings.Contains(rep.Headline, "no verdict") != withheld || strings.Contains(rep.Headline, "accuracy") == withheld {
				t.Errorf("headline %q: withheld %v", rep.Headline, withheld)
			}
			v := rep.Comparisons[0].Verdict
			var got gate.Status
			for _, g := range v.Gates {
				if g.Gate == gate.GateRunErrors {
					got = g.Status
				}
			}
			if got != tt.gateStatus {
				t.Errorf("run_errors gate %q, want %q (gates %+v)", got, tt.gateStatus, v.Gates)
			}
			if withheld && (v.Plan != nil || rep.Comparisons[0].Running != nil || v.Claim != gate.ClaimNone) {
				t.Errorf("withheld verdict keeps a plan, running verdict or claim: %+v", rep.Comparisons[0])
			}
			row, err := st.(store.SuiteReader).GetSuiteRun(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if row.Status != SuiteStatusDone || row.Verdict != string(tt.verdict) || row.Headline != rep.Headline {
				t.Errorf("stored row status %s verdict %s headline %q", row.Status, row.Verdict, row.Headline)
			}
		})
	}
	bad := gate.NewDefaultPolicy()
	bad.MaxRunErrorShare = share(1.5)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "max_run_error_share must be in [0, 1]") {
		t.Errorf("max_run_error_share 1.5 accepted: %v", err)
	}
}

var allCases = []string{"gsm8k-test-0", "gsm8k-test-1", "gsm8k-test-2", "mmlu-abstract_algebra-20", "mmlu-abstract_algebra-37"}

// runErrorPipelines: an incumbent answering "B" to every multiple-choice case
// (wrong on "mmlu-abstract_algebra-20") in 0.1 s for 0.001 USD and a
// candidate answering every case right in 1 s for 0.003 USD; the listed
// cases fail instead with errMsg in 5 ms, at no cost.
func runErrorPipelines(incFailed, candFailed []string, errMsg string) (*fakePipeline, *fakePipeline) {
	right := map[string]string{"gsm8k-test-0": "18", "gsm8k-test-1": "3", "gsm8k-test-2": "70000",
		"mmlu-abstract_algebra-20": "A", "mmlu-abstract_algebra-37": "B"}
	build := func(name string, ms, usd float64, failed []string, wrong string) *fakePipeline { // wrong: the case answered "B" (wrong)
		p := &fakePipeline{name: name, errMsg: errMsg, answers: map[string]answer{}}
		for id, out := range right {
			if id == wrong {
				out = "B"
			}
			p.answers[id] = answer{output: out, latencyMs: ms, costUSD: usd, tokensIn: 100, tokensOut: 10, calls: 1}
		}
		for _, id := range failed {
			p.answers[id] = answer{latencyMs: 5, calls: 0, status: store.StatusError}
		}
		return p
	}
	return build("single:gpt-5", 100, 0.001, incFailed, "mmlu-abstract_algebra-20"), build("conductor", 1000, 0.003, candFailed, "")
}
