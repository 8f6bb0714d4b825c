package shadow

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultPoolBaseURL is where the simulated worker pool (cmd/simllm) listens by
// default: an OpenAI-compatible API whose answers are simulated.
const DefaultPoolBaseURL = "http://127.0.0.1:9090/v1"

// DefaultMaxSteps is the conductor's step cap: at most 5 steps per workflow, as in
// the RL Conductor paper (arXiv 2512.04388).
const DefaultMaxSteps = 5

// Config configures the worker pool and the conductor pipeline.
type Config struct {
	// Workers are the model endpoints of the pool, the conductor model included.
	Workers []WorkerConfig `yaml:"workers"`
	// Conductor configures the conductor pipeline; an empty Conductor.Worker means
	// no conductor pipeline is configured (single-model pipelines still work).
	Conductor ConductorConfig `yaml:"conductor"`
	// CallTimeout bounds every single model call (the whole streamed response).
	CallTimeout time.Duration `yaml:"call_timeout"`
	// Resilience sets retries, per-worker limits and circuit breakers (zero
	// fields: NewDefaultResilienceConfig).
	Resilience ResilienceConfig `yaml:"resilience"`
	// Budget caps every candidate run and all shadow spending per day; the zero
	// value caps nothing.
	Budget BudgetConfig `yaml:"budget"`
}

// WorkerConfig is one model endpoint reached through an OpenAI-compatible chat API.
type WorkerConfig struct {
	Name        string `yaml:"name"`        // unique name in the pool, e.g. "gpt-5"
	Model       string `yaml:"model"`       // model name sent to the API
	Description string `yaml:"description"` // one line shown to the conductor next to the name
	BaseURL     string `yaml:"base_url"`    // e.g. "https://api.openai.com/v1"
	// APIKeyEnv names the environment variable holding the API key. Empty, or a
	// variable that is unset, sends no key (fine for local endpoints).
	APIKeyEnv string `yaml:"api_key_env"`
	// InputUSDPerMTok and OutputUSDPerMTok are list prices, USD per 1,000,000
	// prompt / completion tokens.
	InputUSDPerMTok  float64 `yaml:"input_usd_per_mtok"`
	OutputUSDPerMTok float64 `yaml:"output_usd_per_mtok"`
	// CachedInputUSDPerMTok is the price of prompt tokens served from the
	// provider's cache, USD per 1M; 0: charged at InputUSDPerMTok.
	CachedInputUSDPerMTok float64 `yaml:"cached_input_usd_per_mtok"`
	// CacheWriteUSDPerMTok is the price of prompt tokens written to the
	// provider's cache (Anthropic's cache_creation_input_tokens), USD per 1M;
	// 0: charged at InputUSDPerMTok. Anthropic: 1.25× input for a 5-minute write
	// (anthropic.com/pricing).
	CacheWriteUSDPerMTok float64 `yaml:"cache_write_usd_per_mtok"`
	// CacheWrite1hUSDPerMTok is the price of prompt tokens written to a 1-hour
	// prompt cache (Anthropic's usage.cache_creation.ephemeral_1h_input_tokens),
	// USD per 1M; 0: charged at CacheWriteUSDPerMTok. Anthropic: 2× input
	// (anthropic.com/pricing, "1h cache writes").
	CacheWrite1hUSDPerMTok float64 `yaml:"cache_write_1h_usd_per_mtok"`
	// PricesAsOf is the date (YYYY-MM-DD) the prices are valid from.
	PricesAsOf string `yaml:"prices_as_of"`
	// Temperature is the sampling temperature (0..2). Reasoning-family models
	// (names starting with o1, o3, o4, gpt-5) accept only their default; for them
	// a value other than 1 is not sent.
	Temperature float32 `yaml:"temperature"`
	// MaxOutputTokens caps completion tokens per call; 0 sends no cap.
	MaxOutputTokens int `yaml:"max_output_tokens"`
	// MaxConcurrent, RequestsPerMinute and TokensPerMinute override the pool-wide
	// values of Config.Resilience for this worker; 0 keeps them.
	MaxConcurrent     int     `yaml:"max_concurrent"`
	RequestsPerMinute float64 `yaml:"requests_per_minute"`
	TokensPerMinute   float64 `yaml:"tokens_per_minute"`
	// InputModalities are the kinds of input the worker takes besides text:
	// "image" (image_url parts), "audio" (input_audio parts), "file" (file
	// parts: PDFs and other documents); "text" may be listed and is always
	// implied. Empty: text only. A request's media parts of another kind are
	// replaced, for this worker, by a line saying what was left out (see
	// Pool.Call), and a run none of whose calls received a part is marked
	// input_reduced.
	InputModalities []string `yaml:"input_modalities"`
}

// Host returns the host[:port] of the worker's base URL: where its calls go,
// without credentials, path or query ("" when the URL does not parse).
func (w WorkerConfig) Host() string {
	u, err := url.Parse(w.BaseURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// Price returns the worker's configured price.
func (w WorkerConfig) Price() Price {
	return Price{InputUSDPerMTok: w.InputUSDPerMTok, OutputUSDPerMTok: w.OutputUSDPerMTok,
		CachedInputUSDPerMTok: w.CachedInputUSDPerMTok, CacheWriteUSDPerMTok: w.CacheWriteUSDPerMTok,
		CacheWrite1hUSDPerMTok: w.CacheWrite1hUSDPerMTok, AsOf: w.PricesAsOf}
}

// PricesSet reports whether the worker configures any price: a rate other than
// 0 or a prices_as_of date. A worker that is free on purpose (a local model)
// says so with prices_as_of and zero rates.
func (w WorkerConfig) PricesSet() bool {
	return w.InputUSDPerMTok != 0 || w.OutputUSDPerMTok != 0 || w.CachedInputUSDPerMTok != 0 ||
		w.CacheWriteUSDPerMTok != 0 || w.CacheWrite1hUSDPerMTok != 0 || w.PricesAsOf != ""
}

// WithListPrices returns c (its Workers copied) with every worker that sets no
// price (PricesSet false) given the list price of its model from DefaultPrices,
// resolved by ResolvePrice (the model id, then the worker name; dated snapshots
// such as "claude-sonnet-4-20250514" and Anthropic's dash spelling find their
// price). unpriced names the workers still without a price: their calls cost
// 0 USD, which biases cost comparisons, so callers log them.
func (c Config) WithListPrices() (out Config, unpriced []string) {
	out = c
	out.Workers = slices.Clone(c.Workers)
	var list map[string]Price
	for i, w := range out.Workers {
		if w.PricesSet() {
			continue
		}
		if list == nil {
			list = DefaultPrices()
		}
		p, _, ok := ResolvePrice(list, w.Model, w.Name)
		if !ok {
			unpriced = append(unpriced, w.Name)
			continue
		}
		out.Workers[i].InputUSDPerMTok, out.Workers[i].OutputUSDPerMTok = p.InputUSDPerMTok, p.OutputUSDPerMTok
		out.Workers[i].CachedInputUSDPerMTok, out.Workers[i].CacheWriteUSDPerMTok = p.CachedInputUSDPerMTok, p.CacheWriteUSDPerMTok
		out.Workers[i].CacheWrite1hUSDPerMTok = p.CacheWrite1hUSDPerMTok
		out.Workers[i].PricesAsOf = p.AsOf
	}
	return out, unpriced
}

// ConductorConfig configures the conductor pipeline.
type ConductorConfig struct {
	// Worker is the pool worker that plays the conductor model.
	Worker string `yaml:"worker"`
	// Pool lists the worker names shown to the conductor as Model 0..k, in order.
	// A plan's model_id indexes this list.
	Pool []string `yaml:"pool"`
	// Fallback is the worker that answers alone when the conductor call fails or its
	// plan is unparsable.
	Fallback string `yaml:"fallback"`
	// MaxSteps caps the steps of one workflow (default 5, the paper's cap).
	MaxSteps int `yaml:"max_steps"`
	// MaxDepth caps recursion: a step may pick the conductor itself (when Pool
	// lists it) only in workflows shallower than MaxDepth; the top level is depth
	// 0 (default DefaultMaxDepth).
	MaxDepth int `yaml:"max_depth"`
	// MaxCalls caps the model calls of one request over all depths, planning
	// calls included (default DefaultMaxCalls).
	MaxCalls int `yaml:"max_calls"`
}

// DefaultMaxDepth and DefaultMaxCalls are the recursion caps: nested workflows
// at most 2 levels deep, at most 10 model calls per request.
const (
	DefaultMaxDepth = 2
	DefaultMaxCalls = 10
)

// NewDefaultConfig returns the paper's seven workers, the conductor model and
// gpt-4-1106-preview (the incumbent of the shipped replay file, not in the
// conductor's pool), all served by the simulated pool at DefaultPoolBaseURL, with the default list prices
// of DefaultPrices (see pricing.go for sources and dates), temperature 0.2 and at
// most 4,096 output tokens per call (the paper's training settings).
func NewDefaultConfig() Config {
	names := []string{
		"gemma-3-27b",
		"qwen3-32b",
		"qwen3-32b-thinking",
		"deepseek-r1-distill-qwen-32b",
		"claude-sonnet-4",
		"gemini-2.5-pro",
		"gpt-5",
	}
	descriptions := map[string]string{
		"gemma-3-27b":                  "open 27B model; fast and cheap, weak on hard math and code",
		"qwen3-32b":                    "open 32B model; good general knowledge, moderate math",
		"qwen3-32b-thinking":           "open 32B reasoning model; strong on competition math, slower",
		"deepseek-r1-distill-qwen-32b": "open 32B reasoning model; strong on math, moderate code",
		"claude-sonnet-4":              "frontier model; strong general knowledge and writing, good code",
		"gemini-2.5-pro":               "frontier reasoning model; strong math, science and code",
		"gpt-5":                        "frontier reasoning model; strongest on competition math and code, most expensive output",
		"conductor":                    "7B conductor model that writes workflows over the pool",
		"gpt-4-1106-preview":           "GPT-4 Turbo (Nov 2023), the model behind the shipped replay file's incumbent answers",
	}
	prices := DefaultPrices()
	modalities := DefaultInputModalities()
	workers := make([]WorkerConfig, 0, len(names)+2)
	for _, n := range append(append([]string{}, names...), "conductor", "gpt-4-1106-preview") {
		p := prices[n]
		workers = append(workers, WorkerConfig{
			Name:                   n,
			Model:                  n,
			Description:            descriptions[n],
			BaseURL:                DefaultPoolBaseURL,
			InputUSDPerMTok:        p.InputUSDPerMTok,
			OutputUSDPerMTok:       p.OutputUSDPerMTok,
			PricesAsOf:             p.AsOf,
			CachedInputUSDPerMTok:  p.CachedInputUSDPerMTok,
			CacheWriteUSDPerMTok:   p.CacheWriteUSDPerMTok,
			CacheWrite1hUSDPerMTok: p.CacheWrite1hUSDPerMTok,
			Temperature:            0.2,
			MaxOutputTokens:        4096,
			InputModalities:        modalities[n],
		})
	}
	return Config{
		Workers: workers,
		Conductor: ConductorConfig{
			Worker:   "conductor",
			Pool:     names,
			Fallback: "gpt-5",
			MaxSteps: DefaultMaxSteps,
			MaxDepth: DefaultMaxDepth,
			MaxCalls: DefaultMaxCalls,
		},
		CallTimeout: 2 * time.Minute,
		Resilience:  NewDefaultResilienceConfig(),
	}
}

// DefaultInputModalities is what the default pool's models take besides
// text, by worker name, from the providers' model cards: gpt-5 images and
// files (PDF); claude-sonnet-4 images and files (PDF documents); gemini-2.5-pro
// images, audio and files; gemma-3-27b images (Gemma 3 is multimodal from 4B
// up). qwen3-32b, qwen3-32b-thinking, deepseek-r1-distill-qwen-32b, the 7B
// conductor and gpt-4-1106-preview take text only. The simulated pool's
// profiles say the same (shadow/simpool) and refuse other parts with 400, as
// text-only servers do.
func DefaultInputModalities() map[string][]string {
	return map[string][]string{
		"gpt-5":           {ModalityText, ModalityImage, ModalityFile},
		"claude-sonnet-4": {ModalityText, ModalityImage, ModalityFile},
		"gemini-2.5-pro":  {ModalityText, ModalityImage, ModalityAudio, ModalityFile},
		"gemma-3-27b":     {ModalityText, ModalityImage},
	}
}

// Worker returns the configured worker with that name.
func (c Config) Worker(name string) (WorkerConfig, bool) {
	for _, w := range c.Workers {
		if w.Name == name {
			return w, true
		}
	}
	return WorkerConfig{}, false
}

// Validate reports every problem of the configuration at once (errors.Join), each
// naming the offending field.
func (c Config) Validate() error {
	var errs []error
	if len(c.Workers) == 0 {
		errs = append(errs, errors.New("shadow config: workers: at least one worker is required"))
	}
	seen := map[string]bool{}
	for i, w := range c.Workers {
		if err := w.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("shadow config: workers[%d]: %w", i, err))
		}
		if w.Name != "" && seen[w.Name] {
			errs = append(errs, fmt.Errorf("shadow config: workers[%d]: duplicate name %q", i, w.Name))
		}
		seen[w.Name] = true
	}
	if c.CallTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shadow config: call_timeout: must be > 0, got %v", c.CallTimeout))
	}
	if err := c.Resilience.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("shadow config: %w", err))
	}
	if err := c.Budget.Validate(c.Workers); err != nil {
		errs = append(errs, fmt.Errorf("shadow config: %w", err))
	}
	if c.Conductor.Worker != "" {
		if err := c.Conductor.Validate(c.Workers); err != nil {
			errs = append(errs, fmt.Errorf("shadow config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Validate checks one worker's fields.
func (w WorkerConfig) Validate() error {
	var errs []error
	if w.Name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	if w.Model == "" {
		errs = append(errs, fmt.Errorf("worker %q: model: required", w.Name))
	}
	if u, err := url.Parse(w.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("worker %q: base_url: want an http(s) URL, got %q", w.Name, w.BaseURL))
	}
	if w.InputUSDPerMTok < 0 || w.OutputUSDPerMTok < 0 || w.CachedInputUSDPerMTok < 0 || w.CacheWriteUSDPerMTok < 0 || w.CacheWrite1hUSDPerMTok < 0 {
		errs = append(errs, fmt.Errorf("worker %q: prices: must be >= 0 USD per 1M tokens, got input %g / output %g / cached input %g / cache write %g / 1h cache write %g",
			w.Name, w.InputUSDPerMTok, w.OutputUSDPerMTok, w.CachedInputUSDPerMTok, w.CacheWriteUSDPerMTok, w.CacheWrite1hUSDPerMTok))
	}
	for i, m := range w.InputModalities {
		if !slices.Contains(Modalities(), m) {
			errs = append(errs, fmt.Errorf("worker %q: input_modalities[%d]: %q is not one of %s", w.Name, i, m, strings.Join(Modalities(), ", ")))
		}
	}
	if w.PricesAsOf != "" {
		if _, err := time.Parse(time.DateOnly, w.PricesAsOf); err != nil {
			errs = append(errs, fmt.Errorf("worker %q: prices_as_of: want YYYY-MM-DD, got %q", w.Name, w.PricesAsOf))
		}
	}
	if w.Temperature < 0 || w.Temperature > 2 {
		errs = append(errs, fmt.Errorf("worker %q: temperature: must be in [0, 2], got %g", w.Name, w.Temperature))
	}
	if w.MaxConcurrent < 0 || w.RequestsPerMinute < 0 || w.TokensPerMinute < 0 {
		errs = append(errs, fmt.Errorf("worker %q: max_concurrent, requests_per_minute, tokens_per_minute: must be >= 0", w.Name))
	}
	if w.MaxOutputTokens < 0 {
		errs = append(errs, fmt.Errorf("worker %q: max_output_tokens: must be >= 0, got %d", w.Name, w.MaxOutputTokens))
	}
	return errors.Join(errs...)
}

// Validate checks the conductor section against the configured workers.
func (c ConductorConfig) Validate(workers []WorkerConfig) error {
	known := map[string]bool{}
	for _, w := range workers {
		known[w.Name] = true
	}
	var errs []error
	if c.Worker == "" {
		errs = append(errs, errors.New("conductor.worker: required"))
	} else if !known[c.Worker] {
		errs = append(errs, fmt.Errorf("conductor.worker: %q is not a configured worker", c.Worker))
	}
	if len(c.Pool) == 0 {
		errs = append(errs, errors.New("conductor.pool: at least one worker is required"))
	}
	inPool := map[string]bool{}
	for i, n := range c.Pool {
		if !known[n] {
			errs = append(errs, fmt.Errorf("conductor.pool[%d]: %q is not a configured worker", i, n))
		}
		if inPool[n] {
			errs = append(errs, fmt.Errorf("conductor.pool[%d]: %q is listed twice", i, n))
		}
		inPool[n] = true
	}
	if c.Fallback == "" {
		errs = append(errs, errors.New("conductor.fallback: required"))
	} else if !known[c.Fallback] {
		errs = append(errs, fmt.Errorf("conductor.fallback: %q is not a configured worker", c.Fallback))
	}
	if c.MaxSteps < 1 {
		errs = append(errs, fmt.Errorf("conductor.max_steps: must be >= 1, got %d", c.MaxSteps))
	}
	if c.MaxDepth < 0 || c.MaxCalls < 0 {
		errs = append(errs, fmt.Errorf("conductor.max_depth, conductor.max_calls: must be >= 0 (0: default), got %d, %d", c.MaxDepth, c.MaxCalls))
	}
	return errors.Join(errs...)
}
