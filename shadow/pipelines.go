package shadow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Step roles (store.Step.Role).
const (
	RoleConductor = "conductor" // the planning call
	RoleWorker    = "worker"    // a workflow step, or the single model's call
	RoleFallback  = "fallback"  // the fallback worker answering alone
)

// ConductorPipelineName is the conductor pipeline's Name.
const ConductorPipelineName = "conductor"

// RunID is the deterministic run id: the first 32 hex characters of
// sha256(requestID + "|" + suiteRunID + "|" + pipeline).
func RunID(requestID, suiteRunID, pipeline string) string {
	sum := sha256.Sum256([]byte(requestID + "|" + suiteRunID + "|" + pipeline))
	return hex.EncodeToString(sum[:])[:32]
}

// versionHash is the first 12 hex characters of sha256 of v's JSON.
func versionHash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// versionWorkers returns the named workers' configs minus what does not change
// behaviour (the API key's variable name), in name order.
func versionWorkers(p *Pool, names ...string) []WorkerConfig {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]WorkerConfig, 0, len(names))
	for _, n := range names {
		w, _ := p.Worker(n)
		w.APIKeyEnv = ""
		out = append(out, w)
	}
	return out
}

// runRecorder accumulates one run's row and steps.
type runRecorder struct {
	start time.Time
	run   store.Run
	steps []store.Step
	// media are the request's media parts; reached marks (by SHA256) those
	// some call of the run received.
	media   []Media
	reached map[string]bool
}

func newRunRecorder(name, version, mode string, req Request) *runRecorder {
	if mode == "" {
		mode = store.ModeCandidate
	}
	start := time.Now()
	return &runRecorder{start: start, media: RequestMedia(req.Messages), reached: map[string]bool{}, run: store.Run{
		RunID:           RunID(req.RequestID, req.SuiteRunID, name),
		RequestID:       req.RequestID,
		SuiteRunID:      req.SuiteRunID,
		Pipeline:        name,
		PipelineVersion: version,
		Mode:            mode,
		StartedAt:       start.UTC(),
		Status:          store.StatusOK,
		// A conversation the tap could not rebuild reaches no call of any run.
		InputReduced:       req.InputReduced != "",
		InputReducedReason: req.InputReduced,
	}}
}

// stepInput is what a recorded step was asked to do.
type stepInput struct {
	role, worker, model, subtask, access string
	msgs                                 []openai.ChatCompletionMessage
}

// add records one step (a call, or a skipped step when status is StatusSkipped)
// and adds its usage to the run totals.
//
// A step refused or stopped by the run's budget (errors.Is(err,
// ErrBudgetExceeded)) is recorded with status store.StatusBudgetExceeded. Attempt
// is the number of tries the call took (at least 1).
func (r *runRecorder) add(in stepInput, call Call, status string, err error) store.Step {
	if err != nil && status == store.StatusError && errors.Is(err, ErrBudgetExceeded) {
		status = store.StatusBudgetExceeded
	}
	msgs := []byte("[]")
	sent := in.msgs
	if call.Sent != nil {
		sent = call.Sent // media parts the worker does not take were left out
	}
	if sent != nil {
		if b, mErr := MarshalMessages(RedactMedia(sent)); mErr == nil {
			msgs = b
		}
	}
	for _, md := range call.MediaSent {
		r.reached[md.SHA256] = true
	}
	s := store.Step{
		RunID:        r.run.RunID,
		Index:        int32(len(r.steps)),
		Parent:       -1,
		Depth:        0,
		Role:         in.role,
		Worker:       in.worker,
		Model:        in.model,
		Subtask:      in.subtask,
		Access:       in.access,
		Messages:     string(msgs),
		InputTokens:  call.PromptTokens,
		OutputTokens: call.CompletionTokens,
		CostUSD:      call.CostUSD,
		StartedAt:    startedOrNow(call),
		LatencyMs:    call.LatencyMs,
		TTFTMs:       call.TTFTMs,
		Status:       status,
		FinishReason: call.FinishReason,
		Output:       call.Output,
		Reasoning:    call.Reasoning,
		Attempt:      int32(max(1, call.Attempts)),

		PriceVersion:                   call.PriceVersion,
		CachedInputTokens:              call.CachedPromptTokens,
		CacheWriteInputTokens:          call.CacheWritePromptTokens,
		CacheWrite1hInputTokens:        call.CacheWrite1hPromptTokens,
		ToolCalls:                      toolCallsJSON(call.ToolCalls),
		OrchestrationInputTokens:       call.OrchestrationInputTokens,
		OrchestrationInputCachedTokens: call.OrchestrationInputCachedTokens,
		OrchestrationOutputTokens:      call.OrchestrationOutputTokens,

		EndpointHost:  call.Host,
		SentBytes:     call.SentBytes,
		ReceivedBytes: call.ReceivedBytes,
	}
	switch {
	case err != nil:
		s.Error = err.Error()
	case status == store.StatusOK && !call.UsageReported:
		s.Error = "note: the API reported no token usage; tokens and cost are recorded as 0"
	}
	if len(call.MediaWithheld) > 0 {
		s.Error = joinNote(s.Error, withheldNote(in.worker, call.MediaWithheld))
	}
	refused := status != store.StatusOK && call.Attempts == 0 // refused before sending (budget, call cap, breaker)
	if status != store.StatusSkipped && !refused {
		r.run.Calls++
		r.run.TokensIn += call.PromptTokens
		r.run.TokensOut += call.CompletionTokens
		r.run.CostUSD += call.CostUSD
		r.run.Simulated = r.run.Simulated || call.Simulated
	}
	r.steps = append(r.steps, s)
	return s
}

func (r *runRecorder) fail(status string, err error) {
	r.run.Status = status
	if r.run.Error == "" {
		r.run.Error = err.Error()
	} else {
		r.run.Error += "; " + err.Error()
	}
}

func (r *runRecorder) result() Result {
	r.run.LatencyMs = msSince(r.start)
	var missing []string
	for _, md := range r.media {
		if !r.reached[md.SHA256] {
			missing = append(missing, md.Label())
		}
	}
	if len(missing) > 0 && len(r.steps) > 0 {
		r.run.InputReduced = true
		r.run.InputReducedReason = joinNote(r.run.InputReducedReason, fmt.Sprintf("%d of %d media parts reached no call of the run (its workers do not take them): %s",
			len(missing), len(r.media), strings.Join(missing, "; ")))
	}
	res := Result{Run: r.run, Steps: r.steps}
	markTruncation(&res)
	return res
}

// markTruncation sets the run's TruncatedSteps (steps whose finish reason is
// store.FinishLength) and Truncated: the final answer is the output of such a
// step, i.e. the answer itself was cut at the token cap.
func markTruncation(res *Result) {
	res.Run.TruncatedSteps, res.Run.Truncated = 0, false
	for _, s := range res.Steps {
		if s.FinishReason != store.FinishLength {
			continue
		}
		res.Run.TruncatedSteps++
		if s.Status == store.StatusOK && s.Output == res.Run.FinalOutput {
			res.Run.Truncated = true
		}
	}
}

// withheldNote is a step's note naming the media parts its worker was not sent.
func withheldNote(worker string, withheld []Media) string {
	labels := make([]string, len(withheld))
	for i, md := range withheld {
		labels[i] = md.Label()
	}
	return fmt.Sprintf("note: input reduced: worker %q was not sent %d media part(s) it does not take: %s", worker, len(withheld), strings.Join(labels, "; "))
}

// joinNote joins two texts with "; ", either may be empty.
func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// answerDetail encodes an answer that made tool calls as the incumbent's is
// stored (store.Run.Choices: [{"index":0,"content":..,"finish_reason":..,
// "tool_calls":[..]}]; store.Run.ToolCalls: [{"choice":0,"index":0,..}]); both
// "" for a text answer.
func answerDetail(c Call) (choices, toolCalls string) {
	if len(c.ToolCalls) == 0 {
		return "", ""
	}
	var calls []json.RawMessage
	_ = json.Unmarshal([]byte(toolCallsJSON(c.ToolCalls)), &calls)
	ch, _ := json.Marshal([]struct {
		Index        int               `json:"index"`
		Content      string            `json:"content"`
		Reasoning    string            `json:"reasoning,omitempty"`
		FinishReason string            `json:"finish_reason,omitempty"`
		ToolCalls    []json.RawMessage `json:"tool_calls"`
	}{{0, c.Output, c.Reasoning, c.FinishReason, calls}})
	flat := make([]json.RawMessage, len(calls))
	for i, raw := range calls {
		flat[i] = append([]byte(`{"choice":0,`), raw[1:]...)
	}
	tc, _ := json.Marshal(flat)
	return string(ch), string(tc)
}

// toolCallsJSON encodes a call's tool calls for store.Step.ToolCalls:
// [{"index":0,"id":..,"type":"function","name":..,"arguments":..}]; "" for none.
func toolCallsJSON(calls []openai.ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	type flat struct {
		Index     int    `json:"index"`
		ID        string `json:"id,omitempty"`
		Type      string `json:"type,omitempty"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	out := make([]flat, len(calls))
	for i, c := range calls {
		out[i] = flat{Index: i, ID: c.ID, Type: string(c.Type), Name: c.Function.Name, Arguments: c.Function.Arguments}
		if c.Index != nil {
			out[i].Index = *c.Index
		}
	}
	b, _ := json.Marshal(out) // plain structs: cannot fail
	return string(b)
}

func lastUserText(msgs []openai.ChatCompletionMessage) string {
	if i := lastUserIndex(msgs); i >= 0 {
		return MessageText(msgs[i])
	}
	return ""
}

// --- single ---

type singlePipeline struct {
	pool    *Pool
	worker  WorkerConfig
	name    string
	version string
	role    string // the step's role: RoleWorker, or RoleOrchestrator for a black box
}

// NewSingle returns the pipeline "single:<worker>": one call of the worker with the
// request's messages as they are. ErrUnknownWorker when the pool lacks the worker.
func NewSingle(pool *Pool, worker string) (Pipeline, error) {
	w, ok := pool.Worker(worker)
	if !ok {
		return nil, fmt.Errorf("shadow: new single pipeline %q: %w", worker, ErrUnknownWorker)
	}
	return &singlePipeline{
		pool:    pool,
		worker:  w,
		name:    "single:" + worker,
		version: versionHash(struct{ Kind, Worker any }{"single", versionWorkers(pool, worker)}),
		role:    RoleWorker,
	}, nil
}

func (s *singlePipeline) Name() string    { return s.name }
func (s *singlePipeline) Version() string { return s.version }

// Run calls the worker once with the request's messages and tools (media parts
// the worker does not take are left out, see Pool.Call); an answer with tool
// calls is stored in Run.Choices and Run.ToolCalls as the incumbent's is. The
// run's status is error when the call fails or the request has no messages.
func (s *singlePipeline) Run(ctx context.Context, req Request, mode string) Result {
	r := newRunRecorder(s.name, s.version, mode, req)
	if len(req.Messages) == 0 {
		r.fail(store.StatusError, errors.New("shadow: the request has no messages"))
		return r.result()
	}
	call, err := s.pool.CallTools(ctx, s.worker.Name, req.Messages, req.Tools)
	in := stepInput{role: s.role, worker: s.worker.Name, model: s.worker.Model,
		subtask: lastUserText(req.Messages), access: "[]", msgs: req.Messages}
	if err != nil {
		r.add(in, call, store.StatusError, err)
		r.fail(store.StatusError, err)
		return r.result()
	}
	r.add(in, call, store.StatusOK, nil)
	r.run.FinalOutput, r.run.Reasoning = call.Output, call.Reasoning
	r.run.Choices, r.run.ToolCalls = answerDetail(call)
	return r.result()
}

// --- conductor ---

type conductorPipeline struct {
	pool    *Pool
	cfg     ConductorConfig
	entries []PoolEntry
	version string
}

// NewConductor returns the conductor pipeline (Name "conductor"). cfg.MaxSteps 0
// means DefaultMaxSteps. Errors: cfg invalid against the pool's workers.
func NewConductor(pool *Pool, cfg ConductorConfig) (Pipeline, error) {
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.MaxCalls == 0 {
		cfg.MaxCalls = DefaultMaxCalls
	}
	cfg.Pool = slices.Clone(cfg.Pool)
	if err := cfg.Validate(pool.Config().Workers); err != nil {
		return nil, fmt.Errorf("shadow: new conductor: %w", err)
	}
	entries := make([]PoolEntry, len(cfg.Pool))
	for i, n := range cfg.Pool {
		w, _ := pool.Worker(n)
		entries[i] = PoolEntry{Name: n, Description: w.Description, Takes: w.InputModalities}
	}
	names := append([]string{cfg.Worker, cfg.Fallback}, cfg.Pool...)
	version := versionHash(struct {
		Kind, Prompt, Conductor, Workers any
	}{"conductor", ConductorPromptVersion, cfg, versionWorkers(pool, names...)})
	return &conductorPipeline{pool: pool, cfg: cfg, entries: entries, version: version}, nil
}

func (c *conductorPipeline) Name() string    { return ConductorPipelineName }
func (c *conductorPipeline) Version() string { return c.version }

// Run asks the conductor for a workflow (step 0, role "conductor"), parses and
// resolves it, and executes it (plan step k is recorded at Index k+1, role
// "worker"; its Access is in plan step indices). When the conductor call fails
// (status error) or its plan is unparsable or invalid (status plan_unparsable), the
// fallback worker answers the request alone (role "fallback") and Run.Error says
// why. A failed workflow step makes the run's status error; the final output is
// then still the last step's response when that step succeeded.
//
// Recursion: when cfg.Pool lists the conductor worker, a step may pick it. That
// step (role "worker", worker the conductor's) calls the conductor with the parent workflow and the
// last response it sees; its reply is a corrective workflow, run one level deeper
// (its steps are recorded after all top-level steps, with Depth and Parent = the
// recursive step's Index), whose answer becomes the step's response, or three
// empty lists, keeping the previous response. cfg.MaxDepth caps the nesting and
// cfg.MaxCalls the model calls of the request (ErrCallCapReached).
func (c *conductorPipeline) Run(ctx context.Context, req Request, mode string) Result {
	r := newRunRecorder(ConductorPipelineName, c.version, mode, req)
	prompt, err := BuildConductorPrompt(c.menu(0), req.Messages, c.cfg.MaxSteps)
	if err != nil {
		r.fail(store.StatusError, err)
		return r.result()
	}
	cw, _ := c.pool.Worker(c.cfg.Worker)
	wr := &workflowRun{c: c, req: req}
	call, err := wr.call(ctx, cw.Name, prompt)
	in := stepInput{role: RoleConductor, worker: cw.Name, model: cw.Model,
		subtask: lastUserText(req.Messages), access: "[]", msgs: prompt}
	if err != nil {
		r.add(in, call, store.StatusError, err)
		c.fallback(ctx, r, req, store.StatusError, fmt.Errorf("shadow: conductor call failed: %w", err))
		return r.result()
	}
	r.add(in, call, store.StatusOK, nil)
	r.run.PlanRaw = call.Output

	plan, err := ParsePlan(call.Output)
	if err == nil {
		plan, err = c.resolveAt(plan, 0)
	}
	if err != nil {
		c.fallback(ctx, r, req, store.StatusPlanUnparsable, err)
		return r.result()
	}
	r.run.Plan = plan.JSON()

	results := wr.execute(ctx, plan, call.Output, 0)
	failed := wr.record(r, results, -1, 0)
	last := results[len(results)-1]
	if last.Status == store.StatusOK {
		r.run.FinalOutput = last.Response
	} else if len(failed) == 0 { // cannot happen: a skip needs a failure
		failed = append(failed, last.Err.Error())
	}
	if len(failed) > 0 {
		r.fail(store.StatusError, joinErrors(failed))
	}
	return r.result()
}

// selfAllowed reports whether a workflow planned at depth (0: top level) may
// pick the conductor itself: only below the depth cap, depth < MaxDepth. It is
// the one rule behind both the menu (menu) and the validator (resolveAt).
func (c *conductorPipeline) selfAllowed(depth int) bool { return depth < c.cfg.MaxDepth }

// menu returns the pool as shown to the conductor planning at depth: every
// worker, with the conductor itself hidden where selfAllowed says no (its
// number is then unused; the other workers keep theirs).
func (c *conductorPipeline) menu(depth int) []PoolEntry {
	out := slices.Clone(c.entries)
	if !c.selfAllowed(depth) {
		for i := range out {
			if out[i].Name == c.cfg.Worker {
				out[i].Hidden = true
			}
		}
	}
	return out
}

// resolveAt checks a plan made at depth against the pool: the same rule as
// menu, so a plan picks only models the menu offered.
func (c *conductorPipeline) resolveAt(p Plan, depth int) (Plan, error) {
	return p.resolve(c.cfg.Pool, c.cfg.Worker, c.cfg.MaxSteps, c.selfAllowed(depth))
}

// fallback records why the workflow was abandoned and lets the fallback worker
// answer the request alone.
func (c *conductorPipeline) fallback(ctx context.Context, r *runRecorder, req Request, status string, why error) {
	r.fail(status, why)
	fw, _ := c.pool.Worker(c.cfg.Fallback)
	in := stepInput{role: RoleFallback, worker: fw.Name, model: fw.Model,
		subtask: lastUserText(req.Messages), access: "[]", msgs: req.Messages}
	call, err := c.pool.Call(ctx, fw.Name, req.Messages)
	if err != nil {
		r.add(in, call, store.StatusError, err)
		r.fail(store.StatusError, fmt.Errorf("shadow: fallback %q failed: %w", fw.Name, err))
		return
	}
	r.add(in, call, store.StatusOK, nil)
	r.run.FinalOutput = call.Output
}

var (
	_ Pipeline = (*singlePipeline)(nil)
	_ Pipeline = (*conductorPipeline)(nil)
	_ Caller   = (*Pool)(nil)
)
