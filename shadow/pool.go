package shadow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ErrUnknownWorker: the worker name is not configured in the pool. Test with
// errors.Is; the error text names the worker.
var ErrUnknownWorker = errors.New("shadow: unknown worker")

// SimulatedFingerprintPrefix marks responses of the simulated worker pool: their
// system_fingerprint starts with it.
const SimulatedFingerprintPrefix = "simllm"

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
	PromptTokens     int64     // as reported by the API's usage; 0 when not reported
	CompletionTokens int64     // as reported by the API's usage; 0 when not reported
	UsageReported    bool      // false when the stream carried no usage object (tokens and cost are then 0)
	CostUSD          float64   // tokens × the worker's configured price / 1e6
	StartedAt        time.Time // when the request was sent (UTC)
	LatencyMs        float64   // request sent → stream finished, ms
	TTFTMs           float64   // request sent → first content (or reasoning) token, ms; 0 if none arrived
	Simulated        bool      // the system_fingerprint starts with SimulatedFingerprintPrefix
	Fingerprint      string    // the response's system_fingerprint
}

// Usage returns the call's token usage.
func (c Call) Usage() Usage {
	return Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens}
}

// Pool holds one OpenAI-compatible client per configured worker. Safe for
// concurrent use. Close releases idle connections.
type Pool struct {
	cfg       Config
	workers   map[string]poolWorker
	transport *http.Transport
}

type poolWorker struct {
	cfg    WorkerConfig
	client *openai.Client
}

// NewPool validates cfg and builds one client per worker: its base URL and the API
// key read from the environment variable it names (an empty or unset variable
// sends no key, fine for local endpoints).
func NewPool(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shadow: new pool: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	p := &Pool{cfg: cfg, workers: make(map[string]poolWorker, len(cfg.Workers)), transport: tr}
	for _, w := range cfg.Workers {
		key := ""
		if w.APIKeyEnv != "" {
			key = os.Getenv(w.APIKeyEnv)
		}
		cc := openai.DefaultConfig(key)
		cc.BaseURL = strings.TrimRight(w.BaseURL, "/")
		cc.HTTPClient = &http.Client{Transport: tr}
		p.workers[w.Name] = poolWorker{cfg: w, client: openai.NewClientWithConfig(cc)}
	}
	return p, nil
}

// Config returns the configuration the pool was built from.
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

func (w WorkerConfig) request(msgs []openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{
		Model:         w.Model,
		Messages:      msgs,
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
// arrives in the last chunk), bounded by the pool's CallTimeout. Errors:
// ErrUnknownWorker for a name not in the pool; otherwise the API or transport
// error, wrapped with the worker's name.
func (p *Pool) Call(ctx context.Context, worker string, msgs []openai.ChatCompletionMessage) (Call, error) {
	w, ok := p.workers[worker]
	if !ok {
		return Call{Worker: worker}, fmt.Errorf("shadow: call %q: %w", worker, ErrUnknownWorker)
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	defer cancel()

	c := Call{Worker: worker, Model: w.cfg.Model, StartedAt: time.Now().UTC()}
	start := time.Now()

	err := p.stream(ctx, w, msgs, start, &c)
	c.LatencyMs = msSince(start)
	c.CostUSD = w.cfg.Price().Cost(c.Usage())
	if err != nil {
		return c, fmt.Errorf("shadow: call %q: %w", worker, err)
	}
	return c, nil
}

func (p *Pool) stream(ctx context.Context, w poolWorker, msgs []openai.ChatCompletionMessage, start time.Time, c *Call) error {
	st, err := w.client.CreateChatCompletionStream(ctx, w.cfg.request(msgs))
	if err != nil {
		return err
	}
	defer st.Close()
	var out strings.Builder
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			c.Output = out.String()
			return err
		}
		if chunk.SystemFingerprint != "" {
			c.Fingerprint = chunk.SystemFingerprint
			if strings.HasPrefix(chunk.SystemFingerprint, SimulatedFingerprintPrefix) {
				c.Simulated = true
			}
		}
		for _, ch := range chunk.Choices {
			if c.TTFTMs == 0 && (ch.Delta.Content != "" || ch.Delta.ReasoningContent != "") {
				c.TTFTMs = msSince(start)
			}
			out.WriteString(ch.Delta.Content)
		}
		if chunk.Usage != nil {
			c.UsageReported = true
			c.PromptTokens = int64(chunk.Usage.PromptTokens)
			c.CompletionTokens = int64(chunk.Usage.CompletionTokens)
		}
	}
	c.Output = out.String()
	return nil
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}
