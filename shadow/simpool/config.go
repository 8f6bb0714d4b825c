package simpool

import (
	"errors"
	"fmt"
	"time"
)

// Config configures the simulated pool. Start from NewDefaultConfig: the zero value
// is valid but has no workflow effect (PriorHelp 0) and no malformed plans.
type Config struct {
	// Seed makes every answer reproducible: the same seed and request give the same
	// response body.
	Seed int64 `yaml:"seed"`
	// LatencyScale multiplies every simulated delay: 1 = realistic, 0 = instant.
	LatencyScale float64 `yaml:"latency_scale"`
	// SetsDir is a folder of regression-set JSONL files to answer from (read by New
	// with LoadSets). Optional when Cases is given; both may be set.
	SetsDir string `yaml:"sets_dir"`
	// Cases are regression-set questions to answer from, in addition to SetsDir.
	Cases []Case `yaml:"-"`
	// MalformedPlanProb is the probability in [0,1] that the conductor models emit a
	// plan that cannot be used (to exercise the platform's fallback).
	MalformedPlanProb float64 `yaml:"malformed_plan_prob"`
	// PriorHelp is the workflow effect: how much a correct earlier answer visible in
	// the request closes the gap to a correct answer (0 = none, 1 = always right).
	PriorHelp float64 `yaml:"prior_help"`
	// RateLimitProb is the probability in [0,1] that a call is answered 429 with a
	// Retry-After header of RetryAfter (rounded up to whole seconds).
	RateLimitProb float64 `yaml:"rate_limit_prob"`
	// ServerErrorProb is the probability in [0,1] that a call is answered 500.
	ServerErrorProb float64 `yaml:"server_error_prob"`
	// RetryAfter is the delay advertised on a simulated 429.
	RetryAfter time.Duration `yaml:"retry_after"`
	// RateLimit is every model's own limit (each model has its own bucket and
	// slots, as providers limit per model); zero fields mean no limit. A call
	// over it is answered 429 with Retry-After, like a provider's.
	RateLimit RateLimit `yaml:"rate_limit"`
	// RateLimits override RateLimit for the models they name.
	RateLimits map[string]RateLimit `yaml:"rate_limits"`
}

// RateLimit is one model's request limits.
type RateLimit struct {
	// RequestsPerMinute is a token bucket refilled at this rate with a burst of
	// one second's worth (at least 1); 0 = unlimited.
	RequestsPerMinute int `yaml:"requests_per_minute"`
	// Concurrent caps the calls of the model in flight at once; 0 = unlimited.
	Concurrent int `yaml:"concurrent"`
}

// limitFor returns the limit of model.
func (c Config) limitFor(model string) RateLimit {
	if l, ok := c.RateLimits[model]; ok {
		return l
	}
	return c.RateLimit
}

// NewDefaultConfig returns realistic latency, seed 1, no sets, a 2% malformed-plan
// rate, PriorHelp 0.6 and no injected HTTP errors.
func NewDefaultConfig() Config {
	return Config{
		Seed:              1,
		LatencyScale:      1,
		MalformedPlanProb: 0.02,
		PriorHelp:         0.6,
		RetryAfter:        time.Second,
	}
}

// Validate reports every invalid field, joined in one error.
func (c Config) Validate() error {
	var errs []error
	if c.LatencyScale < 0 {
		errs = append(errs, fmt.Errorf("latency_scale %v must be >= 0", c.LatencyScale))
	}
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"malformed_plan_prob", c.MalformedPlanProb},
		{"prior_help", c.PriorHelp},
		{"rate_limit_prob", c.RateLimitProb},
		{"server_error_prob", c.ServerErrorProb},
	} {
		if p.v < 0 || p.v > 1 {
			errs = append(errs, fmt.Errorf("%s %v must be in [0,1]", p.name, p.v))
		}
	}
	if c.RateLimitProb+c.ServerErrorProb > 1 {
		errs = append(errs, fmt.Errorf("rate_limit_prob + server_error_prob = %v must be <= 1", c.RateLimitProb+c.ServerErrorProb))
	}
	for name, l := range c.RateLimits {
		if l.RequestsPerMinute < 0 || l.Concurrent < 0 {
			errs = append(errs, fmt.Errorf("rate_limits[%s]: requests_per_minute and concurrent must be >= 0", name))
		}
	}
	if c.RateLimit.RequestsPerMinute < 0 || c.RateLimit.Concurrent < 0 {
		errs = append(errs, errors.New("rate_limit: requests_per_minute and concurrent must be >= 0"))
	}
	if c.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("retry_after %v must be >= 0", c.RetryAfter))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("simpool: invalid config: %w", err)
	}
	return nil
}
