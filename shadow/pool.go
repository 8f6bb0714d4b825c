package shadow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
)

// ErrUnknownWorker: the worker name is not configured in the pool. Test with
// errors.Is; the error text names the worker.
var ErrUnknownWorker = errors.New("shadow: unknown worker")

// SimulatedFingerprintPrefix marks responses of the simulated worker pool: their
// system_fingerprint starts with it.
const SimulatedFingerprintPrefix = "simllm"

// SimulatedLatencyScaleHeader is the response header with which the simulated
// pool (shadow/simpool, LatencyScaleHeader) says by what factor it scaled its
// latencies; 1 = realistic.
const SimulatedLatencyScaleHeader = "X-Simulated-Latency-Scale"

// SimulatedLatencyScales returns the latency scales the simulated pool reported
// on this pool's answers so far (distinct, sorted, e.g. ["0.2"]); empty when no
// answer carried one.
func (p *Pool) SimulatedLatencyScales() []string {
	var out []string
	p.scales.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	slices.Sort(out)
	return out
}

// Caller makes one chat call to a named worker. *Pool implements it.
type Caller interface {
	Call(ctx context.Context, worker string, msgs []openai.ChatCompletionMessage) (Call, error)
}

// Call is the outcome of one model call. On error the fields measured so far are
// still set (StartedAt, LatencyMs, and whatever streamed before the failure).
type Call struct {
	Worker           string
	Model            string    // model name sent to the API
	Output           string    // the response text (content deltas concatenated)
	FinishReason     string    // the stream's finish_reason ("stop", "length", …); "" when none was sent
	Reasoning        string    // the reasoning text (delta.reasoning_content or delta.reasoning), apart from Output
	PromptTokens     int64     // as reported by the API's usage; 0 when not reported
	CompletionTokens int64     // as reported by the API's usage; 0 when not reported
	UsageReported    bool      // false when the stream carried no usage object (tokens and cost are then 0)
	CostUSD          float64   // tokens × the worker's configured price / 1e6
	StartedAt        time.Time // when the request was sent (UTC)
	LatencyMs        float64   // request sent → stream finished, ms
	TTFTMs           float64   // request sent → first content (or reasoning) token, ms; 0 if none arrived
	Simulated        bool      // the system_fingerprint starts with SimulatedFingerprintPrefix
	Fingerprint      string    // the response's system_fingerprint
	Attempts         int       // tries made, the first included (1 when no retry); 0 when refused before any
	// CachedPromptTokens and the Orchestration* counts are the usage's extra
	// fields when reported (see Usage); 0 otherwise.
	CachedPromptTokens             int64
	CacheWritePromptTokens         int64 // of PromptTokens, those written to the prompt cache (cache_creation_input_tokens)
	CacheWrite1hPromptTokens       int64 // of CacheWritePromptTokens, those written to a 1-hour cache
	OrchestrationInputTokens       int64
	OrchestrationInputCachedTokens int64
	OrchestrationOutputTokens      int64
	PriceVersion                   string // PriceTableVersion of the pool's prices that CostUSD used
	// ResponseModel and ResponseID are the response's model and id as the API
	// reported them ("" when not sent).
	ResponseModel string
	ResponseID    string
	// ToolCalls are the answer's tool calls (choice 0), merged from the stream's
	// fragments by index; nil when the model answered in text.
	ToolCalls []openai.ToolCall
	// MediaSent and MediaWithheld are the media parts of the messages that the
	// worker received and those it was not sent because it does not take their
	// modality (WorkerConfig.InputModalities) or they name a provider file id.
	MediaSent, MediaWithheld []Media
	// Sent is the messages as sent when they differ from those asked for (a
	// media part was withheld); nil otherwise.
	Sent []openai.ChatCompletionMessage
	// Host is the host[:port] of the worker's base URL the call went to
	// (WorkerConfig.Host at call time); "" when no attempt was made (refused
	// by the budget or an open breaker), so nothing was sent.
	Host string
	// SentBytes and ReceivedBytes are the HTTP request and response bodies
	// of every attempt, bytes (what left for the worker and what came back).
	SentBytes     int64
	ReceivedBytes int64
}

// Usage returns the call's token usage.
func (c Call) Usage() Usage {
	return Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, CachedPromptTokens: c.CachedPromptTokens,
		CacheWritePromptTokens: c.CacheWritePromptTokens, CacheWrite1hPromptTokens: c.CacheWrite1hPromptTokens,
		OrchestrationInputTokens: c.OrchestrationInputTokens, OrchestrationInputCachedTokens: c.OrchestrationInputCachedTokens,
		OrchestrationOutputTokens: c.OrchestrationOutputTokens}
}

// Pool holds one OpenAI-compatible client per configured worker. Safe for
// concurrent use. Close releases idle connections.
type Pool struct {
	cfg       Config
	unpriced  []string         // workers without any price (WithListPrices)
	res       ResilienceConfig // cfg.Resilience with defaults filled
	prices    string           // PriceTableVersion of the workers' prices
	workers   map[string]poolWorker
	transport *http.Transport
	// sleep waits between retries; tests replace it to record the waits.
	sleep func(ctx context.Context, d time.Duration) error
	// scales are the distinct SimulatedLatencyScaleHeader values seen (string → struct{}).
	scales sync.Map
	tel    *instruments // chat spans and GenAI client metrics
}

// PoolOption adjusts NewPool.
type PoolOption func(*poolOptions)

type poolOptions struct {
	tel Telemetry
}

// WithTelemetry makes the pool report every call as a "chat {model}" span with
// the GenAI semantic-convention attributes (and the GenAI client metrics), and
// instruments its HTTP client with otelhttp so each HTTP attempt is a child
// span and carries a W3C traceparent to the worker.
func WithTelemetry(t Telemetry) PoolOption {
	return func(o *poolOptions) { o.tel = t }
}

type poolWorker struct {
	cfg    WorkerConfig
	host   string // cfg.Host(): where its calls go
	client *openai.Client
	guard  *guard
}

// NewPool validates cfg and builds one client per worker: its base URL and the API
// key read from the environment variable it names (an empty or unset variable
// sends no key, fine for local endpoints). A worker that sets no price gets the
// list price of its model (Config.WithListPrices); Unpriced names those without.
func NewPool(cfg Config, opts ...PoolOption) (*Pool, error) {
	cfg, unpriced := cfg.WithListPrices()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shadow: new pool: %w", err)
	}
	var o poolOptions
	for _, opt := range opts {
		opt(&o)
	}
	tel, err := newInstruments(o.tel)
	if err != nil {
		return nil, fmt.Errorf("shadow: new pool: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	res := cfg.Resilience.withDefaults()
	p := &Pool{cfg: cfg, unpriced: unpriced, res: res, workers: make(map[string]poolWorker, len(cfg.Workers)), transport: tr, sleep: sleepCtx, tel: tel}
	var rt http.RoundTripper = partsTransport{base: hintTransport{base: tr}}
	if o.tel.Tracers != nil || o.tel.Meters != nil {
		rt = otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(tracerProviderOrNoop(o.tel.Tracers)),
			otelhttp.WithMeterProvider(meterProviderOrNoop(o.tel.Meters)),
			otelhttp.WithPropagators(propagation.TraceContext{}))
	}
	client := &http.Client{Transport: rt}
	table := make(map[string]Price, len(cfg.Workers))
	for _, w := range cfg.Workers {
		table[w.Name] = w.Price()
	}
	p.prices = PriceTableVersion(table)
	for _, w := range cfg.Workers {
		key := ""
		if w.APIKeyEnv != "" {
			key = os.Getenv(w.APIKeyEnv)
		}
		cc := openai.DefaultConfig(key)
		cc.BaseURL = strings.TrimRight(w.BaseURL, "/")
		cc.HTTPClient = client
		p.workers[w.Name] = poolWorker{cfg: w, host: w.Host(), client: openai.NewClientWithConfig(cc), guard: newGuard(w.Name, res, w)}
	}
	return p, nil
}

// Unpriced names the workers with no configured price and no list price for
// their model: their calls are recorded at 0 USD.
func (p *Pool) Unpriced() []string { return slices.Clone(p.unpriced) }

// Config returns the configuration the pool was built from (with list prices
// filled in, Config.WithListPrices).
func (p *Pool) Config() Config { return p.cfg }

// Worker returns the configuration of the named worker.
func (p *Pool) Worker(name string) (WorkerConfig, bool) {
	w, ok := p.workers[name]
	return w.cfg, ok
}

// Close releases the pool's idle HTTP connections. Safe to call twice.
func (p *Pool) Close() {
	p.transport.CloseIdleConnections()
}

// isReasoningFamily reports model names the OpenAI API (and go-openai's request
// validation) treat as reasoning models: no max_tokens, temperature fixed at 1.
func isReasoningFamily(model string) bool {
	for _, pre := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, pre) {
			return true
		}
	}
	return false
}

func (w WorkerConfig) request(msgs []openai.ChatCompletionMessage, tools []openai.Tool) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{
		Model:         w.Model,
		Messages:      msgs,
		Tools:         tools,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	if isReasoningFamily(w.Model) {
		req.MaxCompletionTokens = w.MaxOutputTokens
		if w.Temperature == 1 {
			req.Temperature = 1
		}
	} else {
		req.MaxTokens = w.MaxOutputTokens
		req.Temperature = w.Temperature
	}
	return req
}

// Call sends msgs to the named worker as one streamed chat completion (with
// stream_options.include_usage, so time to first token is measured and usage
// arrives in the last chunk). Each attempt waits for the worker's concurrency slot
// and rate limits, passes its circuit breaker and is bounded by the pool's
// CallTimeout. A 429, 5xx, attempt timeout or transport error is retried up to
// Resilience.MaxAttempts tries, waiting the response's Retry-After when it sent
// one (up to MaxRetryAfter), else an exponential backoff with jitter.
//
// The returned Call covers all attempts: StartedAt is the first send, LatencyMs
// runs to the end of the last attempt, TTFTMs is measured from the last attempt's
// send, Attempts counts the tries. Errors: ErrUnknownWorker for a name not in
// the pool; ErrBudgetExceeded when the run's budget (see WithBudget) refuses the
// call; ErrCircuitOpen when the worker's breaker stayed open to this call (a
// call the breaker refuses sends nothing and waits, without spending an
// attempt, until the open period or the half-open trial call ends, as long as
// the call's deadline and MaxRetryAfter in all allow); otherwise the last API or
// transport error, wrapped with the worker's name and the attempt count.
//
// Media parts (images, audio, files) of a modality the worker does not take
// (WorkerConfig.InputModalities) are not sent: each is replaced by a line
// saying what was left out, and Call.MediaWithheld names them (Call.Sent holds
// the messages as sent).
func (p *Pool) Call(ctx context.Context, worker string, msgs []openai.ChatCompletionMessage) (Call, error) {
	return p.CallTools(ctx, worker, msgs, nil)
}

// CallTools is Call with tool definitions sent along (the request's tools; nil
// sends none). The answer's tool calls are in Call.ToolCalls.
func (p *Pool) CallTools(ctx context.Context, worker string, msgs []openai.ChatCompletionMessage, tools []openai.Tool) (Call, error) {
	w, ok := p.workers[worker]
	if !ok {
		return Call{Worker: worker}, fmt.Errorf("shadow: call %q: %w", worker, ErrUnknownWorker)
	}
	fitted, sent, withheld := fitMessages(msgs, w.cfg)
	ctx, span := p.tel.startChat(ctx, w.cfg, fitted)
	c, err := p.call(ctx, w, worker, fitted, tools)
	c.MediaSent, c.MediaWithheld = sent, withheld
	if len(withheld) > 0 {
		c.Sent = fitted
	}
	p.tel.endChat(ctx, span, w.cfg, c, err)
	return c, err
}

// call is Call inside its span.
func (p *Pool) call(ctx context.Context, w poolWorker, worker string, msgs []openai.ChatCompletionMessage, tools []openai.Tool) (Call, error) {
	c := Call{Worker: worker, Model: w.cfg.Model, StartedAt: time.Now().UTC(), PriceVersion: p.prices}
	b := budgetFrom(ctx)
	if err := b.admit(); err != nil {
		return c, fmt.Errorf("shadow: call %q: %w", worker, err)
	}
	start := time.Now()
	err := p.callWithRetries(ctx, w, msgs, tools, &c)
	c.LatencyMs = msSince(start)
	c.CostUSD = w.cfg.Price().Cost(c.Usage())
	w.guard.charge(c.CompletionTokens)
	b.charge(c)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrBudgetExceeded) {
			err = fmt.Errorf("%w (stopped: %w)", cause, err)
		}
		return c, fmt.Errorf("shadow: call %q after %d attempt(s): %w", worker, c.Attempts, err)
	}
	return c, nil
}

// callWithRetries runs the attempts of one call; see Call.
func (p *Pool) callWithRetries(ctx context.Context, w poolWorker, msgs []openai.ChatCompletionMessage, tools []openai.Tool, c *Call) error {
	bo := newBackOff(p.res)
	prompt := estimateTokens(msgs)
	var breakerWaited time.Duration
	for {
		hint := &attemptHint{}
		err := p.attempt(ctx, w, msgs, tools, prompt, hint, c)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if errors.Is(err, ErrCircuitOpen) {
			// Refused by the breaker, nothing sent: wait for the open period
			// or the half-open trial to end, within the call's deadline and
			// at most MaxRetryAfter in all.
			wait := w.guard.breakerWait(err, bo)
			if breakerWaited+wait > p.res.MaxRetryAfter {
				return fmt.Errorf("%w (it would stay closed to this call beyond the %v the pool waits)", err, p.res.MaxRetryAfter)
			}
			if dl, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(dl) {
				return fmt.Errorf("%w (it would stay closed to this call past the call's deadline)", err)
			}
			breakerWaited += wait
			if serr := p.sleep(ctx, wait); serr != nil {
				return fmt.Errorf("%w (gave up waiting for the breaker: %w)", err, serr)
			}
			continue
		}
		if c.Attempts >= p.res.MaxAttempts || !retryable(err, hint) {
			return err
		}
		wait := bo.NextBackOff()
		if hint.retryAfter > 0 {
			if hint.retryAfter > p.res.MaxRetryAfter {
				return fmt.Errorf("%w (Retry-After %v exceeds the %v the pool waits)", err, hint.retryAfter, p.res.MaxRetryAfter)
			}
			wait = hint.retryAfter
		}
		if serr := p.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w (gave up waiting to retry: %w)", err, serr)
		}
	}
}

// attempt is one try: limits, breaker, then the stream bounded by CallTimeout.
func (p *Pool) attempt(ctx context.Context, w poolWorker, msgs []openai.ChatCompletionMessage, tools []openai.Tool, prompt int, hint *attemptHint, c *Call) error {
	release, err := w.guard.admit(ctx, prompt)
	if err != nil {
		return err
	}
	defer release()
	_, err = w.guard.breaker.Execute(func() (struct{}, error) {
		*c = Call{Worker: c.Worker, Model: c.Model, StartedAt: c.StartedAt, Attempts: c.Attempts + 1, PriceVersion: c.PriceVersion,
			Host: w.host, SentBytes: c.SentBytes, ReceivedBytes: c.ReceivedBytes}
		actx, cancel := context.WithTimeoutCause(context.WithValue(ctx, hintKey{}, hint), p.cfg.CallTimeout, errAttemptTimeout)
		defer cancel()
		err := p.stream(actx, w, msgs, tools, time.Now(), c)
		c.SentBytes += hint.sent.Load()
		c.ReceivedBytes += hint.received.Load()
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout) && !errors.Is(err, errAttemptTimeout) {
			err = fmt.Errorf("%w after %v: %w", errAttemptTimeout, p.cfg.CallTimeout, err)
		}
		return struct{}{}, err
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return fmt.Errorf("%w: %w", ErrCircuitOpen, err)
	}
	return err
}

// streamExtras are the parts of a chunk go-openai does not decode: the usage in
// every provider's spelling (read by ParseUsage) and the reasoning delta some
// servers send as delta.reasoning rather than delta.reasoning_content.
type streamExtras struct {
	Usage   json.RawMessage `json:"usage"`
	Choices []struct {
		Delta struct {
			Reasoning string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
}

var (
	usageKey     = []byte(`"usage"`)
	reasoningKey = []byte(`"reasoning"`)
)

func (p *Pool) stream(ctx context.Context, w poolWorker, msgs []openai.ChatCompletionMessage, tools []openai.Tool, start time.Time, c *Call) error {
	cfg := w.cfg
	if rem := budgetFrom(ctx).remainingOutput(); rem > 0 && (cfg.MaxOutputTokens == 0 || rem < int64(cfg.MaxOutputTokens)) {
		cfg.MaxOutputTokens = int(rem) // never ask for more than the run's budget has left
	}
	st, err := w.client.CreateChatCompletionStream(ctx, cfg.request(msgs, tools))
	if err != nil {
		return err
	}
	defer st.Close()
	if v := st.Header().Get(SimulatedLatencyScaleHeader); v != "" {
		p.scales.Store(v, struct{}{})
	}
	var out, reasoning strings.Builder
	var calls toolCallMerger
	defer func() { c.Output, c.Reasoning, c.ToolCalls = out.String(), reasoning.String(), calls.list() }()
	for {
		raw, err := st.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		var chunk openai.ChatCompletionStreamResponse
		if err := json.Unmarshal(raw, &chunk); err != nil {
			return fmt.Errorf("decode stream chunk: %w", err)
		}
		if chunk.Model != "" {
			c.ResponseModel = chunk.Model
		}
		if chunk.ID != "" {
			c.ResponseID = chunk.ID
		}
		var extra streamExtras
		if bytes.Contains(raw, usageKey) || bytes.Contains(raw, reasoningKey) {
			if err := json.Unmarshal(raw, &extra); err != nil {
				return fmt.Errorf("decode stream chunk: %w", err)
			}
		}
		if chunk.SystemFingerprint != "" {
			c.Fingerprint = chunk.SystemFingerprint
			if strings.HasPrefix(chunk.SystemFingerprint, SimulatedFingerprintPrefix) {
				c.Simulated = true
			}
		}
		for i, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // the pool asks for one choice; a server sending more is not mixed in
			}
			r := ch.Delta.ReasoningContent
			if r == "" && i < len(extra.Choices) {
				r = extra.Choices[i].Delta.Reasoning
			}
			if c.TTFTMs == 0 && (ch.Delta.Content != "" || r != "" || len(ch.Delta.ToolCalls) > 0) {
				c.TTFTMs = msSince(start)
			}
			out.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				calls.add(tc)
			}
			if ch.FinishReason != "" {
				c.FinishReason = string(ch.FinishReason)
			}
			reasoning.WriteString(r)
		}
		if u, ok, err := ParseUsage(extra.Usage); err == nil && ok {
			c.UsageReported = true
			c.PromptTokens, c.CompletionTokens, c.CachedPromptTokens = u.PromptTokens, u.CompletionTokens, u.CachedPromptTokens
			c.CacheWritePromptTokens, c.CacheWrite1hPromptTokens = u.CacheWritePromptTokens, u.CacheWrite1hPromptTokens
			c.OrchestrationInputTokens = u.OrchestrationInputTokens
			c.OrchestrationInputCachedTokens = u.OrchestrationInputCachedTokens
			c.OrchestrationOutputTokens = u.OrchestrationOutputTokens
		}
	}
	return nil
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}

// toolCallMerger merges streamed tool-call fragments of one choice: by index
// when the fragment has one, else by id, else continuing the last call.
type toolCallMerger struct{ calls []openai.ToolCall }

func (m *toolCallMerger) add(f openai.ToolCall) {
	at := -1
	for i, c := range m.calls {
		if (f.Index != nil && c.Index != nil && *c.Index == *f.Index) || (f.Index == nil && f.ID != "" && c.ID == f.ID) {
			at = i
		}
	}
	if at < 0 && f.Index == nil && f.ID == "" && len(m.calls) > 0 {
		at = len(m.calls) - 1
	}
	if at < 0 {
		idx := len(m.calls)
		if f.Index != nil {
			idx = *f.Index
		}
		m.calls = append(m.calls, openai.ToolCall{Index: &idx, Type: openai.ToolTypeFunction})
		at = len(m.calls) - 1
	}
	c := &m.calls[at]
	if f.ID != "" {
		c.ID = f.ID
	}
	if f.Type != "" {
		c.Type = f.Type
	}
	if f.Function.Name != "" {
		c.Function.Name = f.Function.Name
	}
	c.Function.Arguments += f.Function.Arguments
}

func (m *toolCallMerger) list() []openai.ToolCall {
	slices.SortStableFunc(m.calls, func(a, b openai.ToolCall) int { return *a.Index - *b.Index })
	return m.calls
}
