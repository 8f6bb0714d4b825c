package livejudge_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/judge/judgetest"
	"github.com/conductor-shadow/conductor-shadow/eval/livejudge"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// judgeWorker is the judge worker of the tests, at gpt-5's list price
// (1.25 / 10 USD per 1M tokens).
var judgeWorker = shadow.WorkerConfig{Name: "judge", Model: "fake-judge", InputUSDPerMTok: 1.25, OutputUSDPerMTok: 10}

var testKey = []byte("live-judging-test-key")

// livePipeline is a candidate whose answer to request i is answer(i): a
// quality-marked answer (judgetest.Answer), or none (a failed run). With
// block it waits for its context to end (a run cut by a stop).
type livePipeline struct {
	name   string
	answer func(id string) (string, bool)
	block  bool
	runs   sync.Map // request id -> times run
}

func (p *livePipeline) Name() string    { return p.name }
func (p *livePipeline) Version() string { return "v1" }
func (p *livePipeline) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	n, _ := p.runs.LoadOrStore(req.RequestID, new(int))
	*(n.(*int))++
	run := store.Run{RunID: shadow.RunID(req.RequestID, "", p.name), RequestID: req.RequestID, Pipeline: p.name, PipelineVersion: "v1",
		Mode: mode, StartedAt: time.Now().UTC(), LatencyMs: 10, Status: store.StatusOK, Calls: 1, CostUSD: 0.001}
	if p.block {
		<-ctx.Done()
		run.Status, run.Error = store.StatusError, ctx.Err().Error()
		return shadow.Result{Run: run}
	}
	out, ok := p.answer(req.RequestID)
	if !ok {
		run.Status, run.Error = store.StatusError, "worker w: 503 Service Unavailable after 3 attempt(s)"
		return shadow.Result{Run: run}
	}
	run.FinalOutput = out
	return shadow.Result{Run: run}
}

// clock is a settable clock for the budget.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// rig is the shadow workers (ingest.Processor on an in-memory queue, the
// batched store writer, the embedded engine) feeding a live judging stage.
type rig struct {
	t     *testing.T
	st    store.Store
	w     *store.Writer
	q     *ingest.MemoryQueue
	stats *ingest.Stats
	proc  *ingest.Processor
	stage *livejudge.Stage
	cands int
	sent  int
}

type rigOptions struct {
	cfg    livejudge.Config
	caller shadow.Caller // the judge's caller (a judgetest judge)
	now    func() time.Time
	events *livejudge.Events
	st     store.Store // reuse a store (a restart); nil: a new one
}

func newRig(t *testing.T, o rigOptions, cands ...shadow.Pipeline) *rig {
	t.Helper()
	st := o.st
	if st == nil {
		st = engine.Open(t)
	}
	wcfg := store.NewDefaultWriterConfig()
	wcfg.FlushInterval = 20 * time.Millisecond
	w, err := store.NewWriter(st, wcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Start(context.Background())
	pj, err := judge.New(livejudge.CappedCaller(o.caller, o.cfg.MaxOutputTokens), judge.Config{Worker: judgeWorker.Name, PassScore: 7, Canaries: 2})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := livejudge.New(o.cfg, livejudge.Deps{Judge: pj, Worker: judgeWorker, Key: testKey, Live: st.(store.LiveJudgmentReader),
		Traces: st.(store.TraceReader), Events: o.events, Now: o.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := stage.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	icfg := ingest.NewDefaultConfig()
	icfg.Workers = 8
	q := ingest.NewMemoryQueue(100_000)
	stats := ingest.NewStats()
	proc := ingest.NewProcessor(icfg, q, w, cands, nil, stats, nil)
	proc.UsePairSink(stage)
	if err := proc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, st: st, w: w, q: q, stats: stats, proc: proc, stage: stage, cands: len(cands)}
	t.Cleanup(func() { r.stop(10 * time.Second) })
	return r
}

// send taps one exchange whose incumbent answered incumbent.
func (r *rig) send(id, incumbent string) {
	r.t.Helper()
	ex := ingest.Exchange{SchemaVersion: ingest.SchemaVersion, RequestID: id, App: "support", ReceivedAt: time.Now().UTC(),
		Request:  ingest.ExchangeRequest{Model: "gpt-4o", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Question " + id + "?"}}},
		Response: &ingest.ExchangeResponse{Model: "gpt-4o", Content: incumbent, LatencyMs: 100, Usage: ingest.Usage{PromptTokens: 20, CompletionTokens: 10}}}
	if err := r.q.Publish(context.Background(), ex); err != nil {
		r.t.Fatal(err)
	}
	r.sent++
}

// wait returns once every exchange sent was shadowed and every pair offered
// has its decision, with the writer flushed.
func (r *rig) wait() livejudge.Stats {
	r.t.Helper()
	st := r.settle()
	if err := r.w.Flush(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	return st
}

// settle returns once every exchange sent was shadowed and every pair
// offered has its decision.
func (r *rig) settle() livejudge.Stats {
	r.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		st := r.stage.Stats()
		var decided int64
		for _, n := range st.Decisions {
			decided += n
		}
		for _, n := range st.Dropped {
			decided += n
		}
		if r.stats.Snapshot(0).Processed == int64(r.sent) && st.Offered == int64(r.sent*r.cands) && decided == st.Offered {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("not done: processed %d of %d, stage %+v", r.stats.Snapshot(0).Processed, r.sent, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// stop shuts the processor, the stage and the writer down in the server's
// order, within d.
func (r *rig) stop(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = r.proc.Shutdown(ctx)
	_ = r.stage.Shutdown(ctx)
	_ = r.w.Shutdown(context.Background())
}

// figures runs one aggregate over the live judgments and returns its
// columns as text.
func (r *rig) figures(sql string) []string {
	r.t.Helper()
	res, err := r.st.Query(context.Background(), sql)
	if err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
	if len(res.Rows) != 1 {
		r.t.Fatalf("%s: %d rows", sql, len(res.Rows))
	}
	return res.Rows[0]
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return f
}

// qualityAnswers is a candidate answer scheme: request "r-<i>" gets quality
// 4, 5 or 6 by i mod 3 against the incumbent's 5 (a loss, a tie, a win for
// an honest judge), and no answer when i mod 10 is 9.
func qualityAnswers(id string) (string, bool) {
	var i int
	_, _ = fmt.Sscanf(id, "r-%d", &i)
	if i%10 == 9 {
		return "", false
	}
	return judgetest.Answer(id, float64(4+i%3)), true
}
