package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// FlowTotals counts what left the platform in the window, from the rows that
// say so: steps with an endpoint host (per worker and host), judgments and
// rubric scores with a judge host, the PII kinds of the calls' requests, and
// the exporters' hourly counts summed over processes (a flush written again
// counts once). Steps without a host, outside the window or of a tapped
// incumbent's copy are no calls.
func TestFlowTotals(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
	from, to := at.Add(-time.Hour), at.Add(time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.InsertRequests(ctx, []Request{
		{RequestID: "live-1", ReceivedAt: at.Add(-24 * time.Hour), Source: SourceTap, Metadata: map[string]string{"pii_rules": "email,person"}},
		{RequestID: "live-2", ReceivedAt: at, Source: SourceTap},
		{RequestID: "suite-1/c1", ReceivedAt: at, Source: SourceSuite},
	}))
	must(s.InsertRuns(ctx, []Run{
		{RunID: "inc-1", RequestID: "live-1", Pipeline: "incumbent:gpt-5", Mode: ModeIncumbent, StartedAt: at},
		{RunID: "cand-1", RequestID: "live-1", Pipeline: "conductor", Mode: ModeCandidate, StartedAt: at, Simulated: true},
		{RunID: "cand-2", RequestID: "live-2", Pipeline: "conductor", Mode: ModeCandidate, StartedAt: at, Simulated: true},
		{RunID: "suite-inc", RequestID: "suite-1/c1", SuiteRunID: "suite-1", Pipeline: "single:gpt-5", Mode: ModeIncumbent, StartedAt: at},
	}))
	step := func(run string, i int32, worker, host string, started time.Time) Step {
		return Step{RunID: run, Index: i, Parent: -1, Worker: worker, Model: worker + "-model", EndpointHost: host, Attempt: 1,
			InputTokens: 100, OutputTokens: 10, SentBytes: 1000, ReceivedBytes: 200, StartedAt: started, Status: StatusOK}
	}
	steps := []Step{
		step("inc-1", 0, "gpt-5", "", at), // the tapped incumbent's copy: no call of ours
		step("cand-1", 0, "conductor", "pool.local:9090", at),
		step("cand-1", 1, "gpt-5", "api.openai.com", at),
		step("cand-2", 0, "conductor", "pool.local:9090", at),
		step("cand-2", 1, "gpt-5", "", at),                                 // refused before it was sent
		step("cand-2", 2, "gpt-5", "api.openai.com", at.Add(-2*time.Hour)), // before the window
		step("suite-inc", 0, "gpt-5", "api.openai.com", at),
	}
	steps[2].Attempt = 3 // two retries: three HTTP requests
	must(s.InsertSteps(ctx, steps))
	must(s.InsertSteps(ctx, steps[1:2])) // re-delivered: counts once
	must(s.InsertJudgments(ctx, []Judgment{
		{RequestID: "live-1", Pipeline: "conductor", CandidateRunID: "cand-1", Judge: "claude-sonnet-4-20250514", JudgeWorker: "claude-sonnet-4",
			JudgeHost: "api.anthropic.com", JudgeCalls: 2, JudgeRequests: 2, TokensIn: 300, TokensOut: 20, SentBytes: 3000, ReceivedBytes: 400, JudgedAt: at},
		{RequestID: "suite-1/c1", SuiteRunID: "suite-1", Pipeline: "conductor", CandidateRunID: "x", Judge: "claude-sonnet-4", JudgeWorker: "claude-sonnet-4",
			JudgeHost: "api.anthropic.com", JudgeCalls: 2, JudgeRequests: 3, TokensIn: 300, TokensOut: 20, SentBytes: 3000, ReceivedBytes: 400, JudgedAt: at},
		{RequestID: "live-2", Pipeline: "conductor", CandidateRunID: "cand-2", Judge: "old", JudgedAt: at}, // stored before hosts were recorded
	}))
	must(s.InsertScores(ctx, []Score{
		{SuiteRunID: "suite-1", RunID: "suite-inc", RequestID: "suite-1/c1", Grader: "judge", JudgeWorker: "claude-sonnet-4", JudgeHost: "api.anthropic.com",
			JudgeCalls: 1, JudgeRequests: 1, JudgeTokensIn: 50, JudgeTokensOut: 5, JudgeSentBytes: 500, JudgeReceivedBytes: 60, CreatedAt: at},
		{SuiteRunID: "suite-1", RunID: "suite-inc", RequestID: "suite-1/c1", Grader: "exact", CreatedAt: at},
	}))
	hour := at.Truncate(time.Hour)
	exports := []FlowExport{
		{WindowStart: hour, ProcessID: "p1", Kind: "otlp", Recipient: "traces", Host: "collector:4318", Items: 10, ContentItems: 0, Requests: 2, SentBytes: 4000, UpdatedAt: at},
		{WindowStart: hour, ProcessID: "p2", Kind: "otlp", Recipient: "traces", Host: "collector:4318", Items: 5, Requests: 1, SentBytes: 1000, FailedItems: 1, UpdatedAt: at},
		{WindowStart: hour, ProcessID: "p1", Kind: "kafka", Recipient: "exchanges", Host: "b1:9092,b2:9092", Items: 3, ContentItems: 3, Requests: 1, SentBytes: 900, UpdatedAt: at},
		{WindowStart: hour, ProcessID: "p1", Kind: "kafka", Recipient: "exchanges", Host: "b1:9092,b2:9092", PIIKind: "email", Items: 2, UpdatedAt: at},
		{WindowStart: hour.Add(-5 * time.Hour), ProcessID: "p1", Kind: "otlp", Recipient: "traces", Host: "collector:4318", Items: 99, UpdatedAt: at}, // outside
	}
	must(s.InsertFlowExports(ctx, exports))
	// The same process's later flush of the hour replaces its earlier one.
	later := exports[0]
	later.Items, later.Requests, later.SentBytes = 12, 3, 5000
	must(s.InsertFlowExports(ctx, []FlowExport{later}))

	got, err := s.FlowTotals(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []FlowCalls{
		{Kind: FlowJudge, Name: "claude-sonnet-4", Host: "api.anthropic.com", Models: []string{"claude-sonnet-4", "claude-sonnet-4-20250514"},
			Calls: 5, Requests: 6, SuiteCalls: 3, InputTokens: 650, OutputTokens: 45, SentBytes: 6500, ReceivedBytes: 860},
		{Kind: FlowWorker, Name: "conductor", Host: "pool.local:9090", Models: []string{"conductor-model"},
			Calls: 2, Requests: 2, SimulatedCalls: 2, InputTokens: 200, OutputTokens: 20, SentBytes: 2000, ReceivedBytes: 400},
		{Kind: FlowWorker, Name: "gpt-5", Host: "api.openai.com", Models: []string{"gpt-5-model"},
			Calls: 2, Requests: 4, SuiteCalls: 1, SimulatedCalls: 1, InputTokens: 200, OutputTokens: 20, SentBytes: 2000, ReceivedBytes: 400},
	}
	if !reflect.DeepEqual(got.Calls, wantCalls) {
		t.Errorf("calls:\n got %+v\nwant %+v", got.Calls, wantCalls)
	}
	wantPII := []FlowPII{
		{Kind: FlowJudge, Name: "claude-sonnet-4", Host: "api.anthropic.com", PIIKind: "email", Items: 2},
		{Kind: FlowJudge, Name: "claude-sonnet-4", Host: "api.anthropic.com", PIIKind: "person", Items: 2},
		{Kind: FlowWorker, Name: "conductor", Host: "pool.local:9090", PIIKind: "email", Items: 1},
		{Kind: FlowWorker, Name: "conductor", Host: "pool.local:9090", PIIKind: "person", Items: 1},
		{Kind: FlowWorker, Name: "gpt-5", Host: "api.openai.com", PIIKind: "email", Items: 1},
		{Kind: FlowWorker, Name: "gpt-5", Host: "api.openai.com", PIIKind: "person", Items: 1},
		{Kind: "kafka", Name: "exchanges", Host: "b1:9092,b2:9092", PIIKind: "email", Items: 2},
	}
	if !reflect.DeepEqual(got.PII, wantPII) {
		t.Errorf("pii:\n got %+v\nwant %+v", got.PII, wantPII)
	}
	wantExports := []FlowExportTotal{
		{Kind: "kafka", Name: "exchanges", Host: "b1:9092,b2:9092", Items: 3, ContentItems: 3, Requests: 1, SentBytes: 900},
		{Kind: "otlp", Name: "traces", Host: "collector:4318", Items: 17, Requests: 4, SentBytes: 6000, FailedItems: 1},
	}
	if !reflect.DeepEqual(got.Exports, wantExports) {
		t.Errorf("exports:\n got %+v\nwant %+v", got.Exports, wantExports)
	}
	if got.UnrecordedCalls != 1 {
		t.Errorf("unrecorded calls = %d, want 1 (cand-2's refused step)", got.UnrecordedCalls)
	}
	if _, err := s.FlowTotals(ctx, to, from); err == nil {
		t.Error("an inverted window was accepted")
	}
}
