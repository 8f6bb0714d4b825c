package store

import "time"

// Source of a request.
const (
	SourceTap    = "tap"    // copied from production traffic
	SourceReplay = "replay" // replayed from a recorded file through the tap
	SourceSuite  = "suite"  // a regression-set case sent by a suite run
	// SourceGenerated marks the synthetic rows of `loadtest generate`
	// (Generate): never production (LiveSources).
	SourceGenerated = "generated"
)

// Run modes.
const (
	ModeIncumbent = "incumbent" // the pipeline that serves production
	ModeCandidate = "candidate" // a pipeline evaluated in shadow
)

// Run and step statuses.
const (
	StatusOK             = "ok"
	StatusError          = "error"
	StatusPlanUnparsable = "plan_unparsable" // the conductor's output could not be parsed; the fallback answered
	StatusBudgetExceeded = "budget_exceeded"
	StatusSkipped        = "skipped"
	// StatusCancelledByClient: the production client hung up before the
	// incumbent's answer was complete; the run holds what arrived (Partial).
	StatusCancelledByClient = "cancelled_by_client"
	// StatusCancelled: the run was stopped before it finished (a shutdown, the
	// caller's deadline), not by a fault of the pipeline. It is never a failure:
	// tapped work with a cancelled run stays pending and is shadowed again.
	StatusCancelled = "cancelled"
)

// Shadow work states (Work.Status).
const (
	WorkPending = "pending" // the candidate run is owed
	WorkDone    = "done"    // the candidate run is stored
)

// Request is one user request: a tapped production exchange's input, or a suite case.
// Key: RequestID.
type Request struct {
	RequestID   string    `json:"request_id"`
	ReceivedAt  time.Time `json:"received_at"` // UTC, ms precision
	Source      string    `json:"source"`      // SourceTap, SourceReplay, SourceSuite or SourceGenerated
	App         string    `json:"app"`         // the production app or route that sent it
	Input       string    `json:"input"`       // the chat messages as JSON: [{"role":..,"content":..}]
	InputHash   string    `json:"input_hash"`  // hex sha256 of Input
	SubjectHash string    `json:"subject_hash"`
	Category    string    `json:"category"`
	// Segments computed at ingest (ingest/segment). Language is ISO 639-1, ""
	// when undetermined; LengthBucket names a range of estimated tokens
	// ("0-127", "128-511", ...); Novelty is the share (0..1) of the prompt's
	// words absent from the regression sets' vocabulary, -1 when unknown.
	Language     string            `json:"language"`
	HasTable     bool              `json:"has_table"`
	HasCode      bool              `json:"has_code"`
	LengthBucket string            `json:"length_bucket"`
	Novelty      float64           `json:"novelty"`
	Metadata     map[string]string `json:"metadata"`
	// Tools are the request's tool definitions as JSON (chat completions
	// function tools), "" when it had none; InputReduced says what production
	// sent that Input lacks (a conversation the tap could not rebuild), "" when
	// it is whole. Both are what candidates get besides Input.
	Tools        string `json:"tools"`
	InputReduced string `json:"input_reduced"`
	// NotShadowed says why a recorded production exchange was not sent to
	// the candidates ("" when it was): a proxy that records every exchange it
	// forwards writes the reason of one it sheds (e.g. "queue_full",
	// "admission", "sampled_out"). The live verdict's coverage check counts
	// such rows per segment (LiveCoverage).
	NotShadowed string `json:"not_shadowed"`
	// Route is the API path the exchange came through ("/v1/chat/completions";
	// "" when the copy did not say). ResponseID is the provider's id of the
	// answer ("chatcmpl-…"), kept as answered and never a key: distinct
	// exchanges may share one (a gateway's cache hits).
	Route      string `json:"route"`
	ResponseID string `json:"response_id"`
	// RequestBytes and ResponseBytes are the sizes of the request and answer
	// bodies as they travelled (bytes; 0 when not known).
	RequestBytes  int64 `json:"request_bytes"`
	ResponseBytes int64 `json:"response_bytes"`
	// BodyOmitted says why Input and the incumbent's answer text are not
	// stored ("" when they are): a metadata row of an exchange recorded
	// without its text ("too_large", "capture_busy", "record_budget", …).
	// Such a row has Input "[]" and no segments.
	BodyOmitted string `json:"body_omitted"`
}

// Run is one pipeline's execution on one request. Key: RunID.
type Run struct {
	RunID           string    `json:"run_id"`
	RequestID       string    `json:"request_id"`
	SuiteRunID      string    `json:"suite_run_id"` // empty for tapped traffic
	Pipeline        string    `json:"pipeline"`     // e.g. "incumbent:gpt-5", "conductor"
	PipelineVersion string    `json:"pipeline_version"`
	Mode            string    `json:"mode"` // ModeIncumbent or ModeCandidate
	StartedAt       time.Time `json:"started_at"`
	LatencyMs       float64   `json:"latency_ms"` // wall time of the whole run, ms
	Status          string    `json:"status"`
	FinalOutput     string    `json:"final_output"`
	// Reasoning is the model's reasoning text, kept apart from FinalOutput
	// (delta.reasoning / reasoning_content, the Responses API's reasoning summary).
	Reasoning string `json:"reasoning"`
	// Choices holds every choice as JSON, [{"index":0,"content":..,"reasoning":..,
	// "finish_reason":..,"tool_calls":[..]}], when the answer had more than one
	// choice or a tool call; "" otherwise (FinalOutput is then the whole answer).
	Choices string `json:"choices"`
	// ToolCalls holds every tool call of every choice as JSON, [{"choice":0,
	// "index":0,"id":..,"type":"function","name":..,"arguments":..}]; "" when none.
	ToolCalls string `json:"tool_calls"`
	// HTTPStatus is the status the incumbent answered with (0 when not known).
	HTTPStatus int32 `json:"http_status"`
	// ResponseHeaders are the incumbent's rate-limit and retry headers
	// (Retry-After, x-ratelimit-*, ...), lower-cased, when it answered non-2xx.
	ResponseHeaders map[string]string `json:"response_headers"`
	// Partial is true when the answer was cut off: the client hung up
	// (StatusCancelledByClient) or the incumbent broke off mid-answer.
	Partial   bool    `json:"partial"`
	TokensIn  int64   `json:"tokens_in"`  // prompt tokens over all calls
	TokensOut int64   `json:"tokens_out"` // completion tokens over all calls
	CostUSD   float64 `json:"cost_usd"`
	Calls     int32   `json:"calls"`    // model calls made, the conductor's own included
	PlanRaw   string  `json:"plan_raw"` // the conductor's raw text
	Plan      string  `json:"plan"`     // the parsed workflow as JSON ({"steps":[...]}), empty if none
	Error     string  `json:"error"`
	Simulated bool    `json:"simulated"` // the answers came from the simulated worker pool
	// Truncated: the final answer comes from a step that stopped at its token cap
	// (finish reason FinishLength), so it is cut short.
	Truncated bool `json:"truncated"`
	// TruncatedSteps counts the run's steps that stopped at their token cap.
	TruncatedSteps int32 `json:"truncated_steps"`
	// InputReduced: the run answered without part of the request's input — a
	// media part (image, audio, file) that reached none of its calls because no
	// worker it called takes that modality, or a conversation the tap could not
	// rebuild (a Responses API previous_response_id it never saw).
	// InputReducedReason says what was missing.
	InputReduced       bool   `json:"input_reduced"`
	InputReducedReason string `json:"input_reduced_reason"`
	// Generated: a run of a generated load-test request (SourceGenerated,
	// `loadtest generate`), never production's; what the overview, the
	// dashboards and every production figure tell runs apart by (liveRunSQL).
	Generated bool `json:"generated"`
}

// Finish reasons of a step, as OpenAI-compatible APIs report them in
// choices[].finish_reason. FinishLength means the answer hit max_tokens (or
// max_completion_tokens) and is cut short.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// Step is one worker call inside a run (a span). Key: (RunID, Index).
type Step struct {
	RunID        string    `json:"run_id"`
	Index        int32     `json:"index"`  // 0-based position in the run's recorded steps
	Parent       int32     `json:"parent"` // index of the parent step for nested workflows, -1 at top level
	Depth        int32     `json:"depth"`  // recursion depth, 0 at top level
	Role         string    `json:"role"`   // "conductor" for planning calls, "worker" for workflow steps, "fallback"
	Worker       string    `json:"worker"` // worker name in the pool
	Model        string    `json:"model"`  // model name sent to the API
	Subtask      string    `json:"subtask"`
	Access       string    `json:"access"`   // the access list as JSON: "all", [] or [0,2]
	Messages     string    `json:"messages"` // the exact chat messages sent, as JSON; media parts as media:<mime>;bytes=<n>;sha256=<hex> (the request's Input holds their bytes)
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	CostUSD      float64   `json:"cost_usd"`
	StartedAt    time.Time `json:"started_at"`
	LatencyMs    float64   `json:"latency_ms"`
	TTFTMs       float64   `json:"ttft_ms"` // time to first token, 0 when not streamed
	Status       string    `json:"status"`
	// FinishReason is the API's finish_reason for the call: FinishStop,
	// FinishLength (cut at the token cap), FinishContentFilter, …; "" when the
	// API sent none or no call was made.
	FinishReason string `json:"finish_reason"`
	Output       string `json:"output"`
	Reasoning    string `json:"reasoning"` // the model's reasoning text, apart from Output
	Error        string `json:"error"`
	Attempt      int32  `json:"attempt"` // 1 for the first try
	// PriceVersion identifies the price table CostUSD was computed with
	// (shadow.PriceTableVersion); empty when not priced by the shadow pool.
	PriceVersion string `json:"price_version"`
	// CachedInputTokens are the InputTokens served from the provider's prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// CacheWriteInputTokens are the InputTokens written to the provider's prompt
	// cache (Anthropic's cache_creation_input_tokens), priced at the cache-write
	// rate; 0 when not reported.
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	// CacheWrite1hInputTokens are, of CacheWriteInputTokens, those written to a
	// 1-hour cache (Anthropic's cache_creation.ephemeral_1h_input_tokens), priced
	// at the 1-hour cache-write rate (2× input); 0 when not reported.
	CacheWrite1hInputTokens int64 `json:"cache_write_1h_input_tokens"`
	// ToolCalls are the call's tool calls as JSON, [{"index":0,"id":..,
	// "type":"function","name":..,"arguments":..}]; "" when it answered in text.
	ToolCalls string `json:"tool_calls"`
	// Orchestration* are a black-box orchestrator API's own planning usage (Fugu's
	// usage.orchestration_input_tokens, _input_cached_tokens, _output_tokens),
	// in addition to InputTokens/OutputTokens; 0 when not reported.
	OrchestrationInputTokens       int64 `json:"orchestration_input_tokens"`
	OrchestrationInputCachedTokens int64 `json:"orchestration_input_cached_tokens"`
	OrchestrationOutputTokens      int64 `json:"orchestration_output_tokens"`
	// EndpointHost is the host[:port] of the worker's base URL when the call
	// was made (no credentials, path or query): where the step's messages
	// went. "" when no request was sent (refused before any attempt, a
	// tapped incumbent's copy, or stored before hosts were recorded).
	EndpointHost string `json:"endpoint_host"`
	// SentBytes and ReceivedBytes are the HTTP request and response bodies of
	// every attempt of the call, bytes.
	SentBytes     int64 `json:"sent_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
}

// Score is one grader's verdict on one run. Key: (SuiteRunID, RunID, Grader).
type Score struct {
	SuiteRunID  string    `json:"suite_run_id"`
	RunID       string    `json:"run_id"`
	RequestID   string    `json:"request_id"`
	CaseID      string    `json:"case_id"`
	Pipeline    string    `json:"pipeline"`
	Grader      string    `json:"grader"`
	Value       float64   `json:"value"` // 0..1
	Passed      bool      `json:"passed"`
	Explanation string    `json:"explanation"`
	Error       string    `json:"error"` // the grader itself failed; Value is then meaningless
	CreatedAt   time.Time `json:"created_at"`
	// Judge* are the calls the grade made to an LLM judge itself (the rubric
	// judge): the judge worker, the host[:port] of its base URL at call
	// time, calls, HTTP requests (attempts), tokens and HTTP body bytes.
	// Zero for graders that call no model, and for pairwise scores, whose
	// calls are on their Judgment.
	JudgeWorker        string `json:"judge_worker"`
	JudgeHost          string `json:"judge_host"`
	JudgeCalls         int32  `json:"judge_calls"`
	JudgeRequests      int32  `json:"judge_requests"`
	JudgeTokensIn      int64  `json:"judge_tokens_in"`
	JudgeTokensOut     int64  `json:"judge_tokens_out"`
	JudgeSentBytes     int64  `json:"judge_sent_bytes"`
	JudgeReceivedBytes int64  `json:"judge_received_bytes"`
}

// SuiteRun is one execution of a regression set through incumbent and candidate(s).
// Key: SuiteRunID.
type SuiteRun struct {
	SuiteRunID     string    `json:"suite_run_id"`
	SetName        string    `json:"set_name"`
	SetVersion     string    `json:"set_version"` // hex sha256 of the set file's content
	Incumbent      string    `json:"incumbent"`   // pipeline name
	Candidates     []string  `json:"candidates"`  // pipeline names
	StartedAt      time.Time `json:"started_at"`
	FinishedAt     time.Time `json:"finished_at"`
	Status         string    `json:"status"` // "running", "done", "error", "cancelled" (stopped: not a failure)
	Cases          int32     `json:"cases"`
	Headline       string    `json:"headline"`
	ReportMarkdown string    `json:"report_markdown"`
	ReportJSON     string    `json:"report_json"`
	// Verdict is the gate verdict ("PASS", "FAIL", "INCONCLUSIVE"; the worst
	// over candidates), empty while running or without candidates.
	Verdict           string `json:"verdict"`
	GatePolicyVersion string `json:"gate_policy_version"` // version of the gate policy that gave Verdict
	ReportHTML        string `json:"report_html"`         // self-contained HTML report page
}

// Case is one regression-set case as it was when a suite run used it.
// Key: (SuiteRunID, CaseID).
type Case struct {
	SuiteRunID string   `json:"suite_run_id"`
	SetName    string   `json:"set_name"`
	SetVersion string   `json:"set_version"`
	CaseID     string   `json:"case_id"`
	Category   string   `json:"category"`
	Input      string   `json:"input"`
	Reference  string   `json:"reference"`
	Choices    []string `json:"choices"`
	Grader     string   `json:"grader"`
	Extra      string   `json:"extra"` // the case's other keys as a JSON object ("" when none)
}

// TraceFilter selects and pages trace summaries. Zero values mean "any".
type TraceFilter struct {
	App    string
	Source string
	Text   string // substring of the input
	// Before pages by keyset: only requests received strictly before this instant
	// (with BeforeID breaking ties), as returned in the last row of the previous page.
	Before   time.Time
	BeforeID string
	Limit    int // default 50, max 500
}

// TraceSummary is one row of the traces list.
type TraceSummary struct {
	RequestID        string    `json:"request_id"`
	ReceivedAt       time.Time `json:"received_at"`
	Source           string    `json:"source"`
	App              string    `json:"app"`
	Category         string    `json:"category"`
	InputPreview     string    `json:"input_preview"` // first 200 characters of the last user message
	Language         string    `json:"language"`      // the request's segments (see Request)
	HasTable         bool      `json:"has_table"`
	HasCode          bool      `json:"has_code"`
	LengthBucket     string    `json:"length_bucket"`
	Runs             int       `json:"runs"`
	IncumbentMs      float64   `json:"incumbent_ms"`
	CandidateMs      float64   `json:"candidate_ms"` // slowest candidate run, ms
	IncumbentCostUSD float64   `json:"incumbent_cost_usd"`
	CandidateCostUSD float64   `json:"candidate_cost_usd"` // sum over candidate runs
	Statuses         []string  `json:"statuses"`           // distinct run statuses
	// InputReducedRuns counts the runs that answered without part of the
	// request's input (Run.InputReduced).
	InputReducedRuns int `json:"input_reduced_runs"`
	// The pair: the trace's candidate (TraceSearch.Candidate, else the first
	// candidate pipeline by name; its newest run, by start then run id) against the
	// incumbent's run (PairIncumbent). PairCandidates counts the trace's
	// candidate pipelines.
	// Paired: both runs exist; the deltas are candidate minus incumbent, cost
	// in USD, latency in ms (PairLatencyKnown: both latencies known).
	// PairAgreement is 1 when both answered ok with equal answers after
	// NormalizeAnswer (the overview's agreement), 0 when they differ, -1 when
	// not both answered ok. PairJudgment is the pair's judged outcome
	// (JudgmentWin, JudgmentTie, JudgmentLoss, JudgmentInconsistent; a live
	// judgment before a suite run's), "" when it was not judged.
	PairCandidate      string  `json:"pair_candidate"`
	PairCandidates     int     `json:"pair_candidates"`
	PairIncumbent      string  `json:"pair_incumbent"` // the incumbent run's pipeline
	Paired             bool    `json:"paired"`
	PairCostDeltaUSD   float64 `json:"pair_cost_delta_usd"`
	PairLatencyKnown   bool    `json:"pair_latency_known"`
	PairLatencyDeltaMs float64 `json:"pair_latency_delta_ms"`
	PairAgreement      int8    `json:"pair_agreement"`
	PairJudgment       string  `json:"pair_judgment"`
	// SortValue is the row's value of TraceSearch.Sort (the keyset cursor of
	// the next page); 0 when not sorted.
	SortValue float64 `json:"sort_value"`
}

// Trace is everything recorded for one request.
type Trace struct {
	Request Request `json:"request"`
	Runs    []Run   `json:"runs"`  // incumbent first, then candidates by pipeline name
	Steps   []Step  `json:"steps"` // ordered by RunID, Index
	Scores  []Score `json:"scores"`
}

// Work is one candidate run owed to a tapped request, the unit of the store-first
// work queue: the tap writes it WorkPending with the request before answering 202,
// and the shadow worker rewrites it WorkDone with the candidate's run.
// Key: (RequestID, Pipeline, PipelineVersion).
type Work struct {
	RequestID       string    `json:"request_id"`
	Pipeline        string    `json:"pipeline"`
	PipelineVersion string    `json:"pipeline_version"`
	Status          string    `json:"status"`      // WorkPending or WorkDone
	ReceivedAt      time.Time `json:"received_at"` // the request's, UTC ms: the backlog is read oldest first
}

// WorkKey names one candidate version.
type WorkKey struct {
	Pipeline        string `json:"pipeline"`
	PipelineVersion string `json:"pipeline_version"`
}

// PendingRequest is a stored request with the candidate runs it is still owed.
type PendingRequest struct {
	Request Request
	Owed    []WorkKey
}

// WorkCursor pages the backlog oldest first: only requests received strictly
// after (ReceivedAt, RequestID). The zero cursor starts at the beginning.
type WorkCursor struct {
	ReceivedAt time.Time
	RequestID  string
}
