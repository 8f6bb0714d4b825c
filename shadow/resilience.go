package shadow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	openai "github.com/sashabaranov/go-openai"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
)

// ErrCircuitOpen: the worker's circuit breaker is open (too many consecutive
// failures) or half-open (its one trial call in flight) and refused the call
// without reaching the API. The pool waits for the breaker within the call's
// deadline (Pool.Call); this error means it would not close in time.
var ErrCircuitOpen = errors.New("shadow: circuit breaker open")

// ResilienceConfig sets how worker calls survive real APIs: retries, per-worker
// limits and the circuit breaker. Zero fields take the defaults of
// NewDefaultResilienceConfig; a worker's own MaxConcurrent, RequestsPerMinute and
// TokensPerMinute override the pool-wide values.
type ResilienceConfig struct {
	// MaxAttempts is the number of tries per call, the first included (default 4).
	MaxAttempts int `yaml:"max_attempts"`
	// InitialBackoff is the first retry's base wait; each further retry doubles it
	// (±50% jitter), capped at MaxBackoff (defaults 500ms and 20s).
	InitialBackoff time.Duration `yaml:"initial_backoff"`
	MaxBackoff     time.Duration `yaml:"max_backoff"`
	// MaxRetryAfter is the longest Retry-After the pool honours; a longer one
	// ends the call with the API's error (default 60s).
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
	// MaxConcurrent caps in-flight calls per worker (default 16).
	MaxConcurrent int `yaml:"max_concurrent"`
	// RequestsPerMinute and TokensPerMinute rate-limit each worker; 0 = no limit.
	// Tokens are estimated before the call as prompt characters / 4 and the
	// completion tokens reported are charged after it.
	RequestsPerMinute float64 `yaml:"requests_per_minute"`
	TokensPerMinute   float64 `yaml:"tokens_per_minute"`
	// BreakerFailures consecutive failed attempts (5xx, timeouts, transport
	// errors; not 4xx) open a worker's breaker for BreakerOpenFor, after which one
	// trial call decides (defaults 5 and 30s).
	BreakerFailures int           `yaml:"breaker_failures"`
	BreakerOpenFor  time.Duration `yaml:"breaker_open_for"`
}

// NewDefaultResilienceConfig returns 4 attempts, 500ms→20s backoff, Retry-After up
// to 60s, 16 concurrent calls per worker, no rate limits, breaker 5 failures/30s.
func NewDefaultResilienceConfig() ResilienceConfig {
	return ResilienceConfig{
		MaxAttempts:     4,
		InitialBackoff:  500 * time.Millisecond,
		MaxBackoff:      20 * time.Second,
		MaxRetryAfter:   60 * time.Second,
		MaxConcurrent:   16,
		BreakerFailures: 5,
		BreakerOpenFor:  30 * time.Second,
	}
}

// withDefaults fills zero fields from NewDefaultResilienceConfig.
func (r ResilienceConfig) withDefaults() ResilienceConfig {
	d := NewDefaultResilienceConfig()
	if r.MaxAttempts == 0 {
		r.MaxAttempts = d.MaxAttempts
	}
	if r.InitialBackoff == 0 {
		r.InitialBackoff = d.InitialBackoff
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = d.MaxBackoff
	}
	if r.MaxRetryAfter == 0 {
		r.MaxRetryAfter = d.MaxRetryAfter
	}
	if r.MaxConcurrent == 0 {
		r.MaxConcurrent = d.MaxConcurrent
	}
	if r.BreakerFailures == 0 {
		r.BreakerFailures = d.BreakerFailures
	}
	if r.BreakerOpenFor == 0 {
		r.BreakerOpenFor = d.BreakerOpenFor
	}
	return r
}

// Validate rejects negative values (zero means the default).
func (r ResilienceConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"max_attempts", r.MaxAttempts < 0},
		{"initial_backoff", r.InitialBackoff < 0},
		{"max_backoff", r.MaxBackoff < 0},
		{"max_retry_after", r.MaxRetryAfter < 0},
		{"max_concurrent", r.MaxConcurrent < 0},
		{"requests_per_minute", r.RequestsPerMinute < 0},
		{"tokens_per_minute", r.TokensPerMinute < 0},
		{"breaker_failures", r.BreakerFailures < 0},
		{"breaker_open_for", r.BreakerOpenFor < 0},
	} {
		if f.bad {
			errs = append(errs, fmt.Errorf("resilience.%s: must be >= 0", f.name))
		}
	}
	return errors.Join(errs...)
}

// guard is one worker's limits and breaker.
type guard struct {
	sem      *semaphore.Weighted
	requests *rate.Limiter // nil: unlimited
	tokens   *rate.Limiter // nil: unlimited
	breaker  *gobreaker.CircuitBreaker[struct{}]
	// openUntil is when the breaker's current open period ends (Unix ns; 0
	// before it first opened): the earliest a half-open trial can start.
	openUntil atomic.Int64
}

func newGuard(name string, r ResilienceConfig, w WorkerConfig) *guard {
	conc, rpm, tpm := r.MaxConcurrent, r.RequestsPerMinute, r.TokensPerMinute
	if w.MaxConcurrent > 0 {
		conc = w.MaxConcurrent
	}
	if w.RequestsPerMinute > 0 {
		rpm = w.RequestsPerMinute
	}
	if w.TokensPerMinute > 0 {
		tpm = w.TokensPerMinute
	}
	g := &guard{sem: semaphore.NewWeighted(int64(conc))}
	if rpm > 0 {
		g.requests = rate.NewLimiter(rate.Limit(rpm/60), max(1, int(rpm/60)))
	}
	if tpm > 0 {
		g.tokens = rate.NewLimiter(rate.Limit(tpm/60), max(1, int(tpm)))
	}
	failures := uint32(r.BreakerFailures)
	g.breaker = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     r.BreakerOpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		// A 4xx (429 included) or the caller giving up says nothing about the
		// worker's health.
		IsExcluded: func(err error) bool { return !countsAgainstHealth(err) },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				g.openUntil.Store(time.Now().Add(r.BreakerOpenFor).UnixNano())
			}
		},
	})
	return g
}

// breakerWait is how long a call refused by the worker's breaker waits before
// it tries again (see Pool.Call): while the breaker is open, until its open
// period ends plus a jittered backoff (so waiting calls do not all arrive at
// the trial together); while it is half-open (one trial call in flight),
// the backoff, by when the trial has closed or reopened the breaker.
func (g *guard) breakerWait(err error, bo backoff.BackOff) time.Duration {
	wait := bo.NextBackOff()
	if errors.Is(err, gobreaker.ErrOpenState) {
		wait += time.Until(time.Unix(0, g.openUntil.Load()))
	}
	return max(wait, 0)
}

// errLimitWait: the caller could not wait for a worker's limits (its context
// ended or its deadline comes before the rate limiter would admit it). Not retried.
var errLimitWait = errors.New("gave up waiting for the worker's limits")

// admit waits for the worker's concurrency slot and rate limits. The returned
// release must be called when the attempt ends.
func (g *guard) admit(ctx context.Context, promptTokens int) (release func(), err error) {
	if g.requests != nil {
		if err := g.requests.Wait(ctx); err != nil {
			return nil, fmt.Errorf("%w: request rate limit: %w", errLimitWait, err)
		}
	}
	if g.tokens != nil {
		n := min(max(1, promptTokens), g.tokens.Burst())
		if err := g.tokens.WaitN(ctx, n); err != nil {
			return nil, fmt.Errorf("%w: token rate limit: %w", errLimitWait, err)
		}
	}
	if err := g.sem.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("%w: concurrency limit: %w", errLimitWait, err)
	}
	return func() { g.sem.Release(1) }, nil
}

// charge debits completion tokens from the token limiter after a call (later
// callers wait for them).
func (g *guard) charge(completionTokens int64) {
	if g.tokens != nil && completionTokens > 0 {
		g.tokens.ReserveN(time.Now(), min(int(completionTokens), g.tokens.Burst()))
	}
}

// estimateTokens is prompt characters / 4, the usual rule of thumb for English
// text with BPE tokenizers.
func estimateTokens(msgs []openai.ChatCompletionMessage) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, p := range m.MultiContent {
			n += len(p.Text)
		}
	}
	return n / 4
}

// attemptHint is filled by hintTransport with what the HTTP response said
// and how many body bytes went each way.
type attemptHint struct {
	status     int
	retryAfter time.Duration
	sent       atomic.Int64 // request body bytes written
	received   atomic.Int64 // response body bytes read
}

type hintKey struct{}

// hintTransport records the status and Retry-After of each response into the
// *attemptHint found in the request's context.
type hintTransport struct{ base http.RoundTripper }

func (t hintTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h, ok := r.Context().Value(hintKey{}).(*attemptHint)
	if ok && r.Body != nil && r.Body != http.NoBody {
		r = r.Clone(r.Context())
		r.Body = &countingBody{ReadCloser: r.Body, n: &h.sent}
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && ok {
		h.status = resp.StatusCode
		h.retryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &h.received}
	}
	return resp, err
}

// countingBody adds the bytes read through it to n.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// ParseRetryAfter reads a Retry-After header (RFC 9110 §10.2.3): delay-seconds or
// an HTTP date. Missing or unparsable: 0.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// httpStatus returns the HTTP status an API error carries, or the hint's.
func httpStatus(err error, h *attemptHint) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0 {
		return reqErr.HTTPStatusCode
	}
	if h != nil && h.status >= 400 {
		return h.status
	}
	return 0
}

// errAttemptTimeout marks an attempt that ran out its CallTimeout; it matches
// context.DeadlineExceeded too.
var errAttemptTimeout = fmt.Errorf("attempt timed out: %w", context.DeadlineExceeded)

// retryable reports whether a failed attempt is worth another try: HTTP 429 and
// 5xx, an attempt timeout, or a transport error without an HTTP status. Never when
// the caller's context is done or the breaker is open.
func retryable(err error, h *attemptHint) bool {
	if errors.Is(err, ErrCircuitOpen) || errors.Is(err, errLimitWait) || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, errAttemptTimeout) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) { // the caller's own deadline
		return false
	}
	switch st := httpStatus(err, h); {
	case st == http.StatusTooManyRequests || st >= 500:
		return true
	case st != 0:
		return false
	}
	return !errors.Is(err, ErrUnknownWorker) // a transport error: no response at all
}

// countsAgainstHealth reports failures that say the worker is unwell: 5xx,
// attempt timeouts and transport errors; not 4xx or the caller giving up.
func countsAgainstHealth(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, errAttemptTimeout) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	st := httpStatus(err, nil)
	return st == 0 || st >= 500
}

// newBackOff is the retry schedule: exponential from InitialBackoff, ×2 per retry,
// ±50% jitter, capped at MaxBackoff, no overall limit (MaxAttempts bounds it).
func newBackOff(r ResilienceConfig) backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = r.InitialBackoff
	b.Multiplier = 2
	b.RandomizationFactor = 0.5
	b.MaxInterval = r.MaxBackoff
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
