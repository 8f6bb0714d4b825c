package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// NewStoreFunc returns an empty store for one contract case. The contract closes
// it; a factory that shares an engine may return a view that is cheap to close.
type NewStoreFunc func(t *testing.T) store.Store

// RunContract runs the behaviour every store.Store must keep (package store runs
// it against the embedded engine): round trips, idempotent keys, ordering, filters, keyset
// paging, summaries, ErrNotFound, read-only Query and Close. Each case gets a fresh
// store from newStore.
func RunContract(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, st store.Store)
	}{
		{"TraceRoundTrip", contractTraceRoundTrip},
		{"IdempotentWrites", contractIdempotent},
		{"TracesPagingAndFilters", contractTracesPaging},
		{"TraceSummaryFigures", contractSummary},
		{"SuiteRuns", contractSuiteRuns},
		{"NotFound", contractNotFound},
		{"QueryReadOnly", contractQueryReadOnly},
		{"HostileText", contractHostileText},
		{"SearchEscapedText", contractSearchEscaped},
		{"ShadowWorkBacklog", contractWorkBacklog},
		{"Close", contractClose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t)
			defer st.Close()
			c.fn(t, st)
		})
	}
}

// T0 returns the base instant of the contract's fixtures (UTC, ms precision).
func T0() time.Time { return time.Date(2026, 3, 14, 9, 26, 53, 589_000_000, time.UTC) }

// Fixture is one request with an incumbent run, two candidate runs, their steps
// and scores, as a tapped exchange would store them.
type Fixture struct {
	Request store.Request
	Runs    []store.Run
	Steps   []store.Step
	Scores  []store.Score
}

// NewFixture builds a Fixture for requestID received at at, with every field set.
func NewFixture(requestID string, at time.Time) Fixture {
	at = at.UTC().Truncate(time.Millisecond)
	req := store.Request{
		RequestID: requestID, ReceivedAt: at, Source: store.SourceTap, App: "support-bot",
		Input:     `[{"role":"system","content":"be brief"},{"role":"user","content":"What is 2+2?"}]`,
		InputHash: "ab12", SubjectHash: "cd34", Category: "math",
		Metadata: map[string]string{"route": "/v1/chat", "tenant": "acme"},
	}
	run := func(id, pipeline, mode, status string, ms, usd float64) store.Run {
		return store.Run{
			RunID: requestID + "/" + id, RequestID: requestID, Pipeline: pipeline, PipelineVersion: "v3",
			Mode: mode, StartedAt: at.Add(5 * time.Millisecond), LatencyMs: ms, Status: status,
			FinalOutput: "4", TokensIn: 120, TokensOut: 7, CostUSD: usd, Calls: 3,
			PlanRaw: "model_id = [0]\nsubtasks = [\"add\"]\naccess_list = [[]]",
			Plan:    `{"steps":[{"worker":"w0","subtask":"add","access":[]}]}`, Error: "", Simulated: true,
		}
	}
	runs := []store.Run{
		run("inc", "incumbent:gpt-5", store.ModeIncumbent, store.StatusOK, 812.5, 0.0021),
		run("c2", "single:qwen3-32b", store.ModeCandidate, store.StatusError, 301.25, 0.0003),
		run("c1", "conductor", store.ModeCandidate, store.StatusOK, 1520, 0.0042),
	}
	runs[1].Error = "upstream 503"
	runs[2].Truncated, runs[2].TruncatedSteps = true, 1 // the final answer was cut at max_tokens
	var steps []store.Step
	for _, r := range runs[1:] {
		for i := range 2 {
			steps = append(steps, store.Step{
				RunID: r.RunID, Index: int32(i), Parent: -1, Depth: 0, Role: "worker", Worker: fmt.Sprintf("w%d", i),
				Model: "qwen3-32b", Subtask: "step " + fmt.Sprint(i), Access: `"all"`,
				Messages: `[{"role":"user","content":"add"}]`, InputTokens: 60, OutputTokens: 4, CostUSD: 0.0001,
				StartedAt: at.Add(time.Duration(10+i) * time.Millisecond), LatencyMs: 150.5, TTFTMs: 42.25,
				Status: store.StatusOK, FinishReason: []string{store.FinishStop, store.FinishLength}[i], Output: "4", Attempt: 1,
			})
		}
	}
	scores := []store.Score{
		{SuiteRunID: "", RunID: runs[2].RunID, RequestID: requestID, CaseID: "", Pipeline: "conductor",
			Grader: "numeric", Value: 1, Passed: true, Explanation: "4 == 4", CreatedAt: at.Add(time.Second)},
		{SuiteRunID: "", RunID: runs[0].RunID, RequestID: requestID, Pipeline: "incumbent:gpt-5",
			Grader: "numeric", Value: 0, Passed: false, Explanation: "5 != 4", Error: "", CreatedAt: at.Add(time.Second)},
	}
	return Fixture{Request: req, Runs: runs, Steps: steps, Scores: scores}
}

// Insert writes the fixture with the synchronous Insert* calls.
func (f Fixture) Insert(ctx context.Context, st store.Store) error {
	if err := st.InsertRequests(ctx, []store.Request{f.Request}); err != nil {
		return err
	}
	if err := st.InsertRuns(ctx, f.Runs); err != nil {
		return err
	}
	if err := st.InsertSteps(ctx, f.Steps); err != nil {
		return err
	}
	return st.InsertScores(ctx, f.Scores)
}

func mustInsert(t *testing.T, st store.Store, f Fixture) {
	t.Helper()
	if err := f.Insert(context.Background(), st); err != nil {
		t.Fatalf("insert fixture %s: %v", f.Request.RequestID, err)
	}
}

func contractTraceRoundTrip(t *testing.T, st store.Store) {
	ctx := context.Background()
	f := NewFixture("req-roundtrip", T0())
	mustInsert(t, st, f)
	got, err := st.GetTrace(ctx, f.Request.RequestID)
	if err != nil {
		t.Fatalf("GetTrace: %v", err)
	}
	want := store.Trace{
		Request: f.Request,
		// incumbent first, then candidates by pipeline name
		Runs:   []store.Run{f.Runs[0], f.Runs[2], f.Runs[1]},
		Steps:  []store.Step{f.Steps[2], f.Steps[3], f.Steps[0], f.Steps[1]}, // by run id "c1" < "c2", then index
		Scores: []store.Score{f.Scores[0], f.Scores[1]},                      // by run id: ".../c1" < ".../inc"
	}
	assertEqual(t, "trace", got, want)
}

func contractIdempotent(t *testing.T, st store.Store) {
	ctx := context.Background()
	f := NewFixture("req-idem", T0())
	mustInsert(t, st, f)
	mustInsert(t, st, f) // re-delivered: the same keys again
	// A later write of the same run key replaces the earlier one.
	changed := f.Runs[1]
	changed.Status, changed.Error = store.StatusOK, ""
	if err := st.InsertRuns(ctx, []store.Run{changed, changed}); err != nil {
		t.Fatalf("InsertRuns: %v", err)
	}
	got, err := st.GetTrace(ctx, f.Request.RequestID)
	if err != nil {
		t.Fatalf("GetTrace: %v", err)
	}
	if len(got.Runs) != 3 || len(got.Steps) != 4 || len(got.Scores) != 2 {
		t.Fatalf("after re-delivery got %d runs, %d steps, %d scores; want 3, 4, 2",
			len(got.Runs), len(got.Steps), len(got.Scores))
	}
	assertEqual(t, "replaced run", got.Runs[2], changed)
	list, err := listTraces(t, st, store.TraceFilter{})
	if err != nil {
		t.Fatalf("SearchTraces: %v", err)
	}
	if len(list) != 1 || list[0].Runs != 3 {
		t.Fatalf("SearchTraces after re-delivery = %+v; want one trace with 3 runs", list)
	}
	if want := []string{store.StatusOK}; !reflect.DeepEqual(list[0].Statuses, want) {
		t.Fatalf("statuses = %v; want %v", list[0].Statuses, want)
	}
	if want := 0.0021 + 0.0003 + 0.0042; !near(list[0].IncumbentCostUSD+list[0].CandidateCostUSD, want) {
		t.Fatalf("total cost = %v; want %v (counted once)", list[0].IncumbentCostUSD+list[0].CandidateCostUSD, want)
	}
}

func contractTracesPaging(t *testing.T, st store.Store) {
	ctx := context.Background()
	// 7 requests; r3 and r4 share an instant so the id breaks the tie.
	type in struct {
		id, app, source, text string
		at                    time.Duration
	}
	ins := []in{
		{"r1", "a", store.SourceTap, "alpha", 1 * time.Second},
		{"r2", "b", store.SourceTap, "Beta", 2 * time.Second},
		{"r3", "a", store.SourceSuite, "gamma beta", 3 * time.Second},
		{"r4", "a", store.SourceTap, "delta", 3 * time.Second},
		{"r5", "b", store.SourceReplay, "epsilon", 4 * time.Second},
		{"r6", "a", store.SourceTap, "zeta BETA", 5 * time.Second},
		{"r7", "a", store.SourceTap, "eta", 6 * time.Second},
	}
	var reqs []store.Request
	for _, r := range ins {
		reqs = append(reqs, store.Request{
			RequestID: r.id, ReceivedAt: T0().Add(r.at), App: r.app, Source: r.source,
			Input: `[{"role":"user","content":"` + r.text + `"}]`,
		})
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatalf("InsertRequests: %v", err)
	}
	ids := func(s []store.TraceSummary) string {
		var out []string
		for _, x := range s {
			out = append(out, x.RequestID)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name string
		f    store.TraceFilter
		want string
	}{
		{"all newest first", store.TraceFilter{}, "r7,r6,r5,r4,r3,r2,r1"},
		{"limit", store.TraceFilter{Limit: 2}, "r7,r6"},
		{"app", store.TraceFilter{App: "b"}, "r5,r2"},
		{"source", store.TraceFilter{Source: store.SourceTap}, "r7,r6,r4,r2,r1"},
		{"text case-insensitive", store.TraceFilter{Text: "beta"}, "r6,r3,r2"},
		{"app and text", store.TraceFilter{App: "a", Text: "beta"}, "r6,r3"},
		{"before instant", store.TraceFilter{Before: T0().Add(3 * time.Second)}, "r2,r1"},
		{"before tie by id", store.TraceFilter{Before: T0().Add(3 * time.Second), BeforeID: "r4"}, "r3,r2,r1"},
		{"before with filter", store.TraceFilter{Before: T0().Add(5 * time.Second), BeforeID: "r6", App: "a", Limit: 2}, "r4,r3"},
		{"no match", store.TraceFilter{App: "nope"}, ""},
	}
	for _, tc := range tests {
		got, err := listTraces(t, st, tc.f)
		if err != nil {
			t.Fatalf("%s: SearchTraces: %v", tc.name, err)
		}
		if ids(got) != tc.want {
			t.Errorf("%s: got [%s]; want [%s]", tc.name, ids(got), tc.want)
		}
	}
	// Walk every page of 3 by keyset and get each request exactly once, in order.
	var all []string
	f := store.TraceFilter{Limit: 3}
	for range 10 {
		page, err := listTraces(t, st, f)
		if err != nil {
			t.Fatalf("page: %v", err)
		}
		if len(page) == 0 {
			break
		}
		for _, p := range page {
			all = append(all, p.RequestID)
		}
		last := page[len(page)-1]
		f.Before, f.BeforeID = last.ReceivedAt, last.RequestID
	}
	if got := strings.Join(all, ","); got != "r7,r6,r5,r4,r3,r2,r1" {
		t.Errorf("keyset walk = %s", got)
	}
}

func contractSummary(t *testing.T, st store.Store) {
	ctx := context.Background()
	f := NewFixture("req-summary", T0())
	long := strings.Repeat("é", 150) + strings.Repeat("x", 100)
	f.Request.Input = `[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"` + long + `"}]`
	mustInsert(t, st, f)
	bare := store.Request{RequestID: "req-bare", ReceivedAt: T0().Add(-time.Hour), Input: "plain text, not JSON", App: "x"}
	if err := st.InsertRequests(ctx, []store.Request{bare}); err != nil {
		t.Fatal(err)
	}
	got, err := listTraces(t, st, store.TraceFilter{})
	if err != nil {
		t.Fatalf("SearchTraces: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d summaries; want 2", len(got))
	}
	want := store.TraceSummary{
		RequestID: "req-summary", ReceivedAt: T0(), Source: store.SourceTap, App: "support-bot", Category: "math",
		InputPreview: strings.Repeat("é", 150) + strings.Repeat("x", 50), Runs: 3,
		IncumbentMs: 812.5, CandidateMs: 1520, IncumbentCostUSD: 0.0021, CandidateCostUSD: 0.0003 + 0.0042,
		Statuses: []string{store.StatusError, store.StatusOK},
		// The pair: conductor (the first candidate by name) against the incumbent.
		PairCandidate: "conductor", PairCandidates: 2, PairIncumbent: "incumbent:gpt-5", Paired: true,
		PairCostDeltaUSD: 0.0042 - 0.0021, PairLatencyKnown: true, PairLatencyDeltaMs: 1520 - 812.5, PairAgreement: 1,
	}
	if !near(got[0].CandidateCostUSD, want.CandidateCostUSD) {
		t.Errorf("candidate cost = %v; want %v", got[0].CandidateCostUSD, want.CandidateCostUSD)
	}
	if !near(got[0].PairCostDeltaUSD, want.PairCostDeltaUSD) {
		t.Errorf("pair cost delta = %v; want %v", got[0].PairCostDeltaUSD, want.PairCostDeltaUSD)
	}
	got[0].CandidateCostUSD, got[0].PairCostDeltaUSD = want.CandidateCostUSD, want.PairCostDeltaUSD
	assertEqual(t, "summary", got[0], want)
	wantBare := store.TraceSummary{RequestID: "req-bare", ReceivedAt: T0().Add(-time.Hour), App: "x",
		InputPreview: "plain text, not JSON", PairAgreement: -1}
	assertEqual(t, "summary without runs", got[1], wantBare)
	if p := store.InputPreview(f.Request.Input); p != want.InputPreview {
		t.Errorf("InputPreview = %q; want %q", p, want.InputPreview)
	}
}

func contractSuiteRuns(t *testing.T, st store.Store) {
	ctx := context.Background()
	var srs []store.SuiteRun
	for i := range 4 {
		srs = append(srs, store.SuiteRun{
			SuiteRunID: fmt.Sprintf("sr-%d", i), SetName: "gsm8k", SetVersion: "deadbeef", Incumbent: "incumbent:gpt-5",
			Candidates: []string{"conductor", "moa"}, StartedAt: T0().Add(time.Duration(i) * time.Minute),
			Status: "running", Cases: 150,
		})
	}
	srs[0].Candidates = nil
	if err := st.InsertSuiteRuns(ctx, srs); err != nil {
		t.Fatalf("InsertSuiteRuns: %v", err)
	}
	done := srs[2]
	done.Status, done.FinishedAt, done.Headline = "done", T0().Add(time.Hour), "conductor +9.5 pts at -40% cost"
	done.ReportMarkdown, done.ReportJSON = "# Report\n\n| a | b |\n", `{"gates":[{"name":"quality","passed":true}]}`
	if err := st.InsertSuiteRuns(ctx, []store.SuiteRun{done}); err != nil {
		t.Fatalf("InsertSuiteRuns update: %v", err)
	}
	cases := []store.Case{
		{SuiteRunID: "sr-2", SetName: "gsm8k", SetVersion: "deadbeef", CaseID: "c1", Category: "math",
			Input: "2+2?", Reference: "4", Choices: []string{"3", "4"}, Grader: "choice"},
	}
	if err := st.InsertCases(ctx, append(cases, cases...)); err != nil {
		t.Fatalf("InsertCases: %v", err)
	}
	got, err := st.GetSuiteRun(ctx, "sr-2")
	if err != nil {
		t.Fatalf("GetSuiteRun: %v", err)
	}
	assertEqual(t, "updated suite run", got, done)
	list, err := st.ListSuiteRuns(ctx, 0)
	if err != nil {
		t.Fatalf("ListSuiteRuns: %v", err)
	}
	want := []store.SuiteRun{srs[3], done, srs[1], srs[0]}
	assertEqual(t, "suite runs newest first", list, want)
	list, err = st.ListSuiteRuns(ctx, 2)
	if err != nil {
		t.Fatalf("ListSuiteRuns(2): %v", err)
	}
	assertEqual(t, "suite runs limit 2", list, want[:2])
}

func contractNotFound(t *testing.T, st store.Store) {
	ctx := context.Background()
	if _, err := st.GetTrace(ctx, "no-such-request"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTrace missing: err = %v; want ErrNotFound", err)
	}
	if _, err := st.GetSuiteRun(ctx, "no-such-suite-run"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSuiteRun missing: err = %v; want ErrNotFound", err)
	}
	// Runs without their request do not make a trace.
	f := NewFixture("req-orphan", T0())
	if err := st.InsertRuns(ctx, f.Runs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetTrace(ctx, "req-orphan"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTrace with runs but no request: err = %v; want ErrNotFound", err)
	}
}

// ReadOnlyRejections returns statements Query must refuse with store.ErrReadOnly.
func ReadOnlyRejections() []string { return slices.Clone(readOnlyRejections) }

var readOnlyRejections = []string{
	"INSERT INTO runs (run_id) VALUES ('x')",
	"DROP TABLE runs",
	"SELECT 1; DROP TABLE runs",
	"select 1 ;; select 2",
	"  /* c */ ALTER TABLE runs DELETE WHERE 1",
	"TRUNCATE TABLE requests",
	"CREATE TABLE t (x UInt8) ENGINE = Memory",
	"SET readonly = 0",
	"SELECT 1 INTO OUTFILE '/tmp/x'",
	"SELECT 1 FORMAT JSON",
	"OPTIMIZE TABLE runs FINAL",
	"SYSTEM DROP DNS CACHE",
}

func contractQueryReadOnly(t *testing.T, st store.Store) {
	ctx := context.Background()
	for _, q := range ReadOnlyRejections() {
		if _, err := st.Query(ctx, q); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Query(%q): err = %v; want ErrReadOnly", q, err)
		}
	}
}

// HostileStrings returns texts that must round-trip byte for byte through every
// store: quotes, control characters, NUL, code, SQL, a dozen scripts, emoji.
func HostileStrings() []string { return slices.Clone(hostileStrings) }

var hostileStrings = []string{
	"",
	"plain",
	`quotes ' " ` + "`" + ` and backslashes \ \\ \n \t \u0000`,
	"real control chars:\n\t\r\b\f\x01\x1f\x7f",
	"NUL inside: a\x00b",
	"func main() {\n\tfmt.Println(\"héllo\") // comment\n}\n",
	"SELECT * FROM runs; DROP TABLE runs; -- ",
	"{\"json\": [1, 2, {\"k\": \"v\"}]}",
	"Ελληνικά · русский · العربية · עברית · हिन्दी · 中文 · 日本語 · 한국어 · ไทย · Tiếng Việt · Türkçe · Polski",
	"emoji 🧪🚀👩‍💻 and combining e\u0301",
	"\u2028line sep\u2029para sep\ufeffBOM",
	strings.Repeat("long ", 2000),
}

func contractHostileText(t *testing.T, st store.Store) {
	ctx := context.Background()
	for i, s := range hostileStrings {
		id := fmt.Sprintf("req-hostile-%02d", i)
		f := NewFixture(id, T0().Add(time.Duration(i)*time.Second))
		f.Request.Input = s
		f.Request.Metadata = map[string]string{s: s, "k": s}
		f.Runs[0].FinalOutput, f.Runs[0].PlanRaw, f.Runs[0].Error = s, s, s
		f.Steps[0].Output, f.Steps[0].Subtask, f.Steps[0].Messages = s, s, s
		f.Scores[0].Explanation = s
		mustInsert(t, st, f)
		got, err := st.GetTrace(ctx, id)
		if err != nil {
			t.Fatalf("GetTrace %d: %v", i, err)
		}
		assertEqual(t, fmt.Sprintf("request with string %d", i), got.Request, f.Request)
		if got.Runs[0].FinalOutput != s || got.Runs[0].PlanRaw != s || got.Runs[0].Error != s {
			t.Errorf("run text %d did not round-trip: %q", i, got.Runs[0].FinalOutput)
		}
		if got.Steps[2].Output != s || got.Steps[2].Subtask != s || got.Steps[2].Messages != s {
			t.Errorf("step text %d did not round-trip: %q", i, got.Steps[2].Output)
		}
		if got.Scores[0].Explanation != s {
			t.Errorf("score text %d did not round-trip: %q", i, got.Scores[0].Explanation)
		}
	}
	// Text search must treat the needle as text, not SQL or a pattern.
	for _, needle := range []string{"DROP TABLE runs;", `\\`, "%", "_", "'"} {
		got, err := listTraces(t, st, store.TraceFilter{Text: needle, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("SearchTraces(Text=%q): %v", needle, err)
		}
		want := 0
		for _, s := range hostileStrings {
			if strings.Contains(strings.ToLower(s), strings.ToLower(needle)) {
				want++
			}
		}
		if len(got) != want {
			t.Errorf("SearchTraces(Text=%q) = %d rows; want %d", needle, len(got), want)
		}
	}
}

func contractClose(t *testing.T, st store.Store) {
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := listTraces(t, st, store.TraceFilter{}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("SearchTraces after Close: err = %v; want ErrClosed", err)
	}
	if err := st.InsertRuns(context.Background(), NewFixture("x", T0()).Runs); !errors.Is(err, store.ErrClosed) {
		t.Errorf("InsertRuns after Close: err = %v; want ErrClosed", err)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-12 && d > -1e-12
}

func assertEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// contractSearchEscaped: the input is stored as JSON, where a typed quote, tab,
// backslash or newline is escaped; a search for the typed text still finds it.
func contractSearchEscaped(t *testing.T, st store.Store) {
	ctx := context.Background()
	texts := map[string]string{
		"q-quote":     `she said "hello there" twice`,
		"q-tab":       "col1\tcol2\tcol3",
		"q-backslash": `C:\Users\ada\notes.txt`,
		"q-newline":   "first line\nsecond line",
		"q-plain":     "nothing special here",
	}
	var reqs []store.Request
	i := 0
	for id, text := range texts {
		i++
		in, err := json.Marshal([]map[string]string{{"role": "user", "content": text}})
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: T0().Add(time.Duration(i) * time.Second),
			App: "a", Source: store.SourceTap, Input: string(in)})
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatalf("InsertRequests: %v", err)
	}
	tests := []struct{ needle, want string }{
		{`"hello there"`, "q-quote"},
		{`said "HELLO`, "q-quote"},
		{"col2\tcol3", "q-tab"},
		{`\Users\ada`, "q-backslash"},
		{"line\nsecond", "q-newline"},
		{"special", "q-plain"},
	}
	for _, tc := range tests {
		got, err := listTraces(t, st, store.TraceFilter{Text: tc.needle})
		if err != nil {
			t.Fatalf("SearchTraces(%q): %v", tc.needle, err)
		}
		if len(got) != 1 || got[0].RequestID != tc.want {
			t.Errorf("SearchTraces(Text=%q) = %v; want [%s]", tc.needle, summaryIDs(got), tc.want)
		}
	}
}

// listTraces is st's SearchTraces with only the filters of f.
func listTraces(t *testing.T, st store.Store, f store.TraceFilter) ([]store.TraceSummary, error) {
	t.Helper()
	tr, ok := st.(store.TraceReader)
	if !ok {
		t.Fatalf("%T does not implement store.TraceReader", st)
	}
	return tr.SearchTraces(context.Background(), store.TraceSearch{TraceFilter: f})
}

func summaryIDs(rows []store.TraceSummary) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.RequestID)
	}
	return out
}
