package ingest

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// engine is the real embedded engine the package's tests store into, a
// database per test (engine.Open).
var engine *storetest.Engine

func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	engine.VerifyTestMain(m)
}

// syncWriter stores each batch at once in st.
type syncWriter struct {
	st store.Store
}

func (w syncWriter) Enqueue(b store.Batch) error {
	ctx := context.Background()
	if err := w.st.InsertRequests(ctx, b.Requests); err != nil {
		return err
	}
	if err := w.st.InsertRuns(ctx, b.Runs); err != nil {
		return err
	}
	if err := w.st.InsertSteps(ctx, b.Steps); err != nil {
		return err
	}
	return w.st.InsertWork(ctx, b.Work)
}

// echoPipeline answers with the last user message in one step; it can be made to
// wait for release so tests can hold runs in flight (running counts the runs
// begun).
type echoPipeline struct {
	release chan struct{}
	running atomic.Int64
	mu      sync.Mutex
	seen    []string
}

func (p *echoPipeline) Name() string    { return "echo" }
func (p *echoPipeline) Version() string { return "v1" }
func (p *echoPipeline) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	p.running.Add(1)
	if p.release != nil {
		select {
		case <-p.release:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	p.seen = append(p.seen, req.RequestID)
	p.mu.Unlock()
	id := shadow.RunID(req.RequestID, req.SuiteRunID, p.Name())
	out := req.Messages[len(req.Messages)-1].Content
	status := store.StatusOK
	if ctx.Err() != nil {
		status = store.StatusError
	}
	return shadow.Result{
		Run:   store.Run{RunID: id, RequestID: req.RequestID, Pipeline: p.Name(), PipelineVersion: p.Version(), Mode: mode, Status: status, FinalOutput: out, Calls: 1},
		Steps: []store.Step{{RunID: id, Index: 0, Parent: -1, Worker: "echo", Access: `"all"`, Output: out, Status: status}},
	}
}

type flatPricer float64

func (p flatPricer) Cost(model string, in, out int64) (float64, bool) {
	if model == "unknown-model" {
		return 0, false
	}
	return float64(in+out) * float64(p), true
}

func exchange(id, content string) Exchange {
	var ex Exchange
	ex.RequestID = id
	ex.App = "test-app"
	ex.ReceivedAt = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	ex.Request.Model = "gpt-4o"
	ex.Request.Messages = []openai.ChatCompletionMessage{{Role: "user", Content: content}}
	ex.Response = &ExchangeResponse{Model: "gpt-4o", Content: "incumbent says " + content, LatencyMs: 250, Usage: Usage{PromptTokens: 10, CompletionTokens: 5}}
	ex.Metadata = map[string]string{"category": "math"}
	return ex
}

func TestProcessorStoresIncumbentAndCandidate(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := NewDefaultConfig()
	cfg.Workers = 4
	q := NewMemoryQueue(100)
	stats := NewStats()
	cand := &echoPipeline{}
	p := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{cand}, flatPricer(0.001), stats, nil)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	for _, id := range ids {
		if err := q.Publish(ctx, exchange(id, "question "+id)); err != nil {
			t.Fatal(err)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Shutdown(shutdownCtx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := p.Shutdown(shutdownCtx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	for _, id := range ids {
		tr, err := st.GetTrace(ctx, id)
		if err != nil {
			t.Fatalf("trace %s: %v", id, err)
		}
		if len(tr.Runs) != 2 {
			t.Fatalf("trace %s has %d runs, want incumbent + candidate", id, len(tr.Runs))
		}
		var inc, can *store.Run
		for i := range tr.Runs {
			switch tr.Runs[i].Mode {
			case store.ModeIncumbent:
				inc = &tr.Runs[i]
			case store.ModeCandidate:
				can = &tr.Runs[i]
			}
		}
		if inc == nil || can == nil {
			t.Fatalf("trace %s: runs %+v", id, tr.Runs)
		}
		if inc.FinalOutput != "incumbent says question "+id || inc.LatencyMs != 250 || inc.CostUSD != 15*0.001 || inc.Pipeline != "incumbent:gpt-4o" {
			t.Errorf("incumbent run %+v", inc)
		}
		if can.FinalOutput != "question "+id {
			t.Errorf("candidate answered %q", can.FinalOutput)
		}
		if tr.Request.Category != "math" || tr.Request.App != "test-app" || tr.Request.InputHash == "" {
			t.Errorf("request %+v", tr.Request)
		}
	}
	if snap := stats.Snapshot(q.Len()); snap.Processed != int64(len(ids)) {
		t.Fatalf("processed = %d, want %d", snap.Processed, len(ids))
	}
}

func TestProcessorShutdownCountsWhatWasLeft(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig()
	cfg.Workers = 1
	q := NewMemoryQueue(10)
	stats := NewStats()
	cand := &echoPipeline{release: make(chan struct{})} // never released: runs only end when cancelled
	st := engine.Open(t)
	p := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{cand}, nil, stats, nil)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := q.Publish(ctx, exchange(id, id)); err != nil {
			t.Fatal(err)
		}
	}
	// The single worker stores "a" first, then holds its candidate run.
	waitForD(t, 30*time.Second, "the candidate run of a in flight", func() bool { return cand.running.Load() == 1 })
	shutdownCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(shutdownCtx); err == nil {
		t.Fatal("Shutdown past its deadline must say the drain was cut short")
	}
	snap := stats.Snapshot(q.Len())
	// One exchange was in flight (its candidate run cancelled, stored as such),
	// two waited; the in-memory queue keeps nothing, so all three are dropped.
	if snap.Dropped["shutdown"] != 3 || snap.Processed != 0 || snap.CancelledRuns != 1 {
		t.Fatalf("stats = %+v, want 3 dropped at shutdown, 0 processed, 1 cancelled run", snap)
	}
	tr, err := st.GetTrace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Runs {
		if r.Mode == store.ModeCandidate && r.Status != store.StatusCancelled {
			t.Errorf("candidate run stopped by shutdown stored as %q (%s); want %q", r.Status, r.Error, store.StatusCancelled)
		}
	}
}

func TestProcessorShutdownWithoutStart(t *testing.T) {
	p := NewProcessor(NewDefaultConfig(), NewMemoryQueue(1), syncWriter{}, nil, nil, NewStats(), nil) // never started: writes nothing
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestIncumbentRunUnknownModelIsNoted(t *testing.T) {
	ex := exchange("x", "hi")
	ex.Request.Model, ex.Response.Model = "unknown-model", "unknown-model" // neither id priced: no fallback
	run, step := IncumbentRun(ex, flatPricer(1))
	if run.CostUSD != 0 || step.Error == "" {
		t.Fatalf("run %+v step %+v: an unpriced model must cost 0 and say so", run, step)
	}
	if run.RunID != shadow.RunID("x", "", "incumbent:unknown-model") || step.RunID != run.RunID {
		t.Fatal("run ids must be deterministic and shared by the step")
	}
}

// TestProcessorStoresSegments: every stored request carries the segments of
// its user messages (the system prompt is the app's and does not count), and
// novelty is measured against the segmenter's vocabulary.
func TestProcessorStoresSegments(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	q := NewMemoryQueue(10)
	p := NewProcessor(NewDefaultConfig(), q, syncWriter{st}, nil, nil, NewStats(), nil)
	p.UseSegmenter(segment.New(segment.NewVocabulary("how many eggs does the duck lay")))
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		id, system, user string
		want             store.Request
	}{
		{"ru-table", "You are a helpful assistant that answers in English.", "Сравни, пожалуйста, эти два тарифа и скажи, какой выгоднее для семьи:\n| тариф | цена |\n|---|---|\n| A | 10 |\n| B | 12 |",
			store.Request{Language: "ru", HasTable: true, LengthBucket: "0-127", Novelty: 1}},
		{"en-code", "", "How many eggs does the duck lay?\n```python\nprint(1)\n```",
			store.Request{Language: "en", HasCode: true, LengthBucket: "0-127", Novelty: 3.0 / 10}},
	}
	for _, c := range cases {
		ex := exchange(c.id, c.user)
		if c.system != "" {
			ex.Request.Messages = append([]openai.ChatCompletionMessage{{Role: "system", Content: c.system}}, ex.Request.Messages...)
		}
		if err := q.Publish(ctx, ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		tr, err := st.GetTrace(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		r := tr.Request
		if r.Language != c.want.Language || r.HasTable != c.want.HasTable || r.HasCode != c.want.HasCode ||
			r.LengthBucket != c.want.LengthBucket || math.Abs(r.Novelty-c.want.Novelty) > 1e-9 {
			t.Errorf("%s: segments %q table %v code %v %q novelty %v, want %+v", c.id, r.Language, r.HasTable, r.HasCode, r.LengthBucket, r.Novelty, c.want)
		}
	}
}

// The incumbent's finish reason is kept on its step; "length" marks the run
// truncated.
func TestIncumbentRunFinishReason(t *testing.T) {
	for _, tt := range []struct {
		finish    string
		truncated bool
	}{{"stop", false}, {"", false}, {"length", true}} {
		ex := exchange("x", "hi")
		ex.Response.FinishReason = tt.finish
		run, step := IncumbentRun(ex, flatPricer(1))
		if step.FinishReason != tt.finish || run.Truncated != tt.truncated || (run.TruncatedSteps == 1) != tt.truncated {
			t.Errorf("finish %q: step %q, run truncated %v (%d steps)", tt.finish, step.FinishReason, run.Truncated, run.TruncatedSteps)
		}
	}
}

func TestChatFinishReason(t *testing.T) {
	for in, want := range map[string]string{"stop": "stop", "length": "length", "max_output_tokens": "length",
		"max_tokens": "length", "content_filter": "content_filter", "tool_calls": "tool_calls", "": ""} {
		if got := chatFinishReason(in); got != want {
			t.Errorf("chatFinishReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// With the run look-up, an exchange delivered again (a re-delivery, a re-sent
// file) runs its candidate once: a copy arriving while the first is still
// being shadowed waits for it, a later one finds the stored run; both are
// counted as skipped.
func TestProcessorRunsACandidateOncePerRequest(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := NewDefaultConfig()
	cfg.Workers = 4
	q := NewMemoryQueue(100)
	stats := NewStats()
	cand := &echoPipeline{release: make(chan struct{})}
	p := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{cand}, flatPricer(0), stats, nil)
	lookup := store.NewRoles(st).RunLookup
	if lookup == nil {
		t.Fatal("the store has no store.RunLookup")
	}
	p.UseRunLookup(lookup)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second copy arrives while the first is running
		if err := q.Publish(ctx, exchange("twice", "question")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the first run started", func() bool { return cand.running.Load() >= 1 })
	time.Sleep(100 * time.Millisecond) // the second copy reaches a worker meanwhile
	close(cand.release)
	waitFor(t, "both copies handled", func() bool { return stats.Snapshot(0).Processed == 2 })
	if err := q.Publish(ctx, exchange("twice", "question")); err != nil { // re-sent later
		t.Fatal(err)
	}
	waitFor(t, "the re-sent copy handled", func() bool { return stats.Snapshot(0).Processed == 3 })
	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Shutdown(shutdownCtx); err != nil {
		t.Fatal(err)
	}
	if n := cand.running.Load(); n != 1 {
		t.Errorf("the candidate ran %d times for one request; want once", n)
	}
	if s := stats.Snapshot(0).SkippedRuns; s != 2 {
		t.Errorf("skipped runs = %d; want 2", s)
	}
}
