package shadow

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// sequence answers the i-th request with replies[i] (the last one repeats).
func sequence(replies ...shadowtest.Reply) shadowtest.Script {
	return func(r shadowtest.Request) shadowtest.Reply {
		return replies[min(r.Seq, len(replies)-1)]
	}
}

// recordingSleep replaces the pool's retry wait: it records each wait and returns
// at once, so the tests see the schedule without spending it.
type recordingSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *recordingSleep) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func newRetryPool(t *testing.T, script shadowtest.Script, edit func(*Config)) (*shadowtest.Server, *Pool, *recordingSleep) {
	t.Helper()
	srv := shadowtest.NewServer(script)
	cfg := testConfig(srv.BaseURL())
	cfg.Resilience = ResilienceConfig{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	pool, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rs := &recordingSleep{}
	pool.sleep = rs.sleep
	t.Cleanup(func() {
		pool.Close()
		srv.Close()
	})
	return srv, pool, rs
}

var hello = []openai.ChatCompletionMessage{{Role: "user", Content: "hello"}}

func TestPoolRetries429RetryAfterThen500ThenSucceeds(t *testing.T) {
	srv, pool, rs := newRetryPool(t, sequence(
		shadowtest.Reply{Status: http.StatusTooManyRequests, ErrorMessage: "slow down", Header: http.Header{"Retry-After": {"2"}}},
		shadowtest.Reply{Status: http.StatusInternalServerError, ErrorMessage: "boom"},
		shadowtest.Reply{Content: "finally", PromptTokens: 10, CompletionTokens: 3},
	), nil)
	single, err := NewSingle(pool, "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	res := single.Run(context.Background(), userRequest("hello"), store.ModeCandidate)
	if res.Run.Status != store.StatusOK || res.Run.FinalOutput != "finally" {
		t.Fatalf("run = %s %q (%s), want ok \"finally\"", res.Run.Status, res.Run.FinalOutput, res.Run.Error)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
	if len(res.Steps) != 1 || res.Steps[0].Attempt != 3 {
		t.Fatalf("steps = %+v, want one step with Attempt 3", res.Steps)
	}
	if res.Steps[0].InputTokens != 10 || res.Steps[0].OutputTokens != 3 {
		t.Errorf("step tokens %d/%d, want the successful attempt's 10/3", res.Steps[0].InputTokens, res.Steps[0].OutputTokens)
	}
	if len(rs.waits) != 2 {
		t.Fatalf("waits = %v, want 2", rs.waits)
	}
	if rs.waits[0] != 2*time.Second {
		t.Errorf("first wait %v, want the Retry-After of 2s", rs.waits[0])
	}
	// The second retry takes the schedule's second interval: 2ms ± 50% jitter.
	if rs.waits[1] <= 0 || rs.waits[1] > 4*time.Millisecond {
		t.Errorf("second wait %v, want an exponential backoff within (0, 4ms]", rs.waits[1])
	}
}

func TestPoolRetryPolicy(t *testing.T) {
	tests := []struct {
		name         string
		replies      []shadowtest.Reply
		edit         func(*Config)
		wantRequests int
		wantAttempts int
		wantErr      string // substring; empty: success
	}{
		{name: "400 is not retried", replies: []shadowtest.Reply{{Status: 400, ErrorMessage: "bad request"}},
			wantRequests: 1, wantAttempts: 1, wantErr: "bad request"},
		{name: "503 until attempts run out", replies: []shadowtest.Reply{{Status: 503, ErrorMessage: "overloaded"}},
			wantRequests: 4, wantAttempts: 4, wantErr: "overloaded"},
		{name: "Retry-After beyond the cap gives up", replies: []shadowtest.Reply{
			{Status: 429, ErrorMessage: "quota", Header: http.Header{"Retry-After": {"3600"}}}},
			wantRequests: 1, wantAttempts: 1, wantErr: "Retry-After 1h0m0s exceeds"},
		{name: "attempt timeout is retried", replies: []shadowtest.Reply{{Content: "late", Delay: 5 * time.Second}, {Content: "fast"}},
			edit: func(c *Config) { c.CallTimeout = 100 * time.Millisecond }, wantRequests: 2, wantAttempts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, pool, _ := newRetryPool(t, sequence(tt.replies...), tt.edit)
			call, err := pool.Call(context.Background(), "gpt-5", hello)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want success", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if n := len(srv.Requests()); n != tt.wantRequests {
				t.Errorf("server saw %d requests, want %d", n, tt.wantRequests)
			}
			if call.Attempts != tt.wantAttempts {
				t.Errorf("Attempts = %d, want %d", call.Attempts, tt.wantAttempts)
			}
		})
	}
}

func TestPoolCircuitBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	srv, pool, _ := newRetryPool(t, sequence(shadowtest.Reply{Status: 500, ErrorMessage: "down"}), func(c *Config) {
		c.Resilience.MaxAttempts = 1
		c.Resilience.BreakerFailures = 2
		c.Resilience.BreakerOpenFor = time.Hour
	})
	for i := range 2 {
		if _, err := pool.Call(context.Background(), "gpt-5", hello); err == nil || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("call %d: err = %v, want the API's 500", i, err)
		}
	}
	_, err := pool.Call(context.Background(), "gpt-5", hello)
	if !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("third call: err = %v, want ErrCircuitOpen", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2 (the open breaker sends none)", n)
	}
	// Breakers are per worker: another worker still calls out.
	if _, err := pool.Call(context.Background(), "claude-sonnet-4", hello); errors.Is(err, ErrCircuitOpen) {
		t.Errorf("claude-sonnet-4: err = %v, its breaker should be closed", err)
	}
}

func TestPoolBreakerIgnores4xx(t *testing.T) {
	_, pool, _ := newRetryPool(t, sequence(shadowtest.Reply{Status: 429, ErrorMessage: "quota"}), func(c *Config) {
		c.Resilience.MaxAttempts = 1
		c.Resilience.BreakerFailures = 1
	})
	for i := range 3 {
		if _, err := pool.Call(context.Background(), "gpt-5", hello); errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("call %d: breaker opened on 429s", i)
		}
	}
}

func TestPoolConcurrencyLimitPerWorker(t *testing.T) {
	var mu sync.Mutex
	arrived := 0
	release := make(chan struct{})
	hold := func(shadowtest.Request) shadowtest.Reply {
		mu.Lock()
		arrived++
		mu.Unlock()
		<-release // every request waits until the test lets them all go
		return shadowtest.Reply{Content: "ok"}
	}
	srv, pool, _ := newRetryPool(t, hold, func(c *Config) {
		for i := range c.Workers {
			if c.Workers[i].Name == "gpt-5" {
				c.Workers[i].MaxConcurrent = 2
			}
		}
	})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, err := pool.Call(context.Background(), "gpt-5", hello); err != nil {
				t.Error(err)
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return arrived
	}
	for deadline := time.Now().Add(3 * time.Second); count() < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for a third request, were the limit broken
	if n := count(); n != 2 {
		t.Errorf("%d requests in flight with all held, want the limit 2", n)
	}
	close(release)
	wg.Wait()
	if n := len(srv.Requests()); n != 6 {
		t.Errorf("server saw %d requests, want 6", n)
	}
}

func TestGuardRateLimits(t *testing.T) {
	tests := []struct {
		name    string
		w       WorkerConfig
		prompt  int
		wantErr string
	}{
		{name: "requests", w: WorkerConfig{RequestsPerMinute: 60}, prompt: 1, wantErr: "request rate limit"},
		{name: "tokens", w: WorkerConfig{TokensPerMinute: 600}, prompt: 600, wantErr: "token rate limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard("w", NewDefaultResilienceConfig(), tt.w)
			release, err := g.admit(context.Background(), tt.prompt)
			if err != nil {
				t.Fatalf("first admit: %v", err)
			}
			release()
			// The bucket is empty and refills in about a second: a caller that
			// cannot wait that long is refused at once.
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := g.admit(ctx, tt.prompt); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("second admit: err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"7", 7 * time.Second},
		{"-1", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestResilienceConfigValidate(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Resilience.MaxAttempts = -1
	cfg.Resilience.TokensPerMinute = -5
	err := cfg.Validate()
	for _, want := range []string{"resilience.max_attempts", "resilience.tokens_per_minute"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
}

func TestGuardChargesCompletionTokens(t *testing.T) {
	g := newGuard("w", NewDefaultResilienceConfig(), WorkerConfig{TokensPerMinute: 600})
	release, err := g.admit(context.Background(), 4) // 4 of the 600-token bucket
	if err != nil {
		t.Fatal(err)
	}
	release()
	g.charge(596) // the completion empties the bucket
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.admit(ctx, 4); err == nil || !strings.Contains(err.Error(), "token rate limit") {
		t.Fatalf("admit after the charge: err = %v, want the token rate limit", err)
	}
}

// A worker that recovers while its breaker is open: a burst of concurrent
// calls waits for the open period and the half-open trial call instead of
// failing at once ("after 0 attempt(s)"); a call whose deadline comes before
// the breaker could close fails fast without reaching the worker.
func TestPoolBurstAfterRecoveryWaitsForBreaker(t *testing.T) {
	for _, tt := range []struct {
		name      string
		timeout   time.Duration // each call's deadline
		wantOK    bool
		wantSends int // requests the worker sees from the burst
	}{
		{"deadline past the open period", 5 * time.Second, true, 20},
		{"deadline before the breaker closes", 50 * time.Millisecond, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var recovered atomic.Bool
			srv, pool, _ := newRetryPool(t, func(shadowtest.Request) shadowtest.Reply {
				if !recovered.Load() {
					return shadowtest.Reply{Status: 500, ErrorMessage: "down"}
				}
				// The trial call is still in flight when the burst arrives.
				return shadowtest.Reply{Content: "ok", Delay: 100 * time.Millisecond}
			}, func(c *Config) {
				c.Resilience.MaxAttempts = 1
				c.Resilience.InitialBackoff = 10 * time.Millisecond
				c.Resilience.MaxBackoff = 50 * time.Millisecond
				c.Resilience.BreakerFailures = 2
				c.Resilience.BreakerOpenFor = 300 * time.Millisecond
			})
			pool.sleep = sleepCtx // really wait: the breaker runs on the clock
			for range 2 {
				if _, err := pool.Call(context.Background(), "gpt-5", hello); err == nil {
					t.Fatal("the failing worker answered")
				}
			}
			recovered.Store(true)
			before := len(srv.Requests())
			var wg sync.WaitGroup
			errs := make([]error, 20)
			for i := range errs {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
					defer cancel()
					_, errs[i] = pool.Call(ctx, "gpt-5", hello)
				})
			}
			wg.Wait()
			for i, err := range errs {
				switch {
				case tt.wantOK && err != nil:
					t.Errorf("call %d: %v", i, err)
				case !tt.wantOK && !errors.Is(err, ErrCircuitOpen):
					t.Errorf("call %d: err = %v, want ErrCircuitOpen", i, err)
				case !tt.wantOK && !strings.Contains(err.Error(), "past the call's deadline"):
					t.Errorf("call %d: %v does not say why it gave up", i, err)
				}
			}
			if n := len(srv.Requests()) - before; n != tt.wantSends {
				t.Errorf("worker saw %d requests from the burst, want %d", n, tt.wantSends)
			}
		})
	}
}
