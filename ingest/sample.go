package ingest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"golang.org/x/time/rate"
)

// Reasons a copy is not shadowed although it was valid, counted in Stats.Unsampled.
const (
	ReasonSampledOut = "sampled_out" // the request id hashed above the app/route's rate
	ReasonRateCap    = "rate_cap"    // the per-minute cap on shadow runs was reached
)

// SamplingConfig decides which valid copies are shadowed.
type SamplingConfig struct {
	// Rate is the share of requests shadowed, 0..1, where Rates has no entry.
	Rate float64 `yaml:"rate"`
	// Rates overrides Rate per app ("math-tutor") or per app and route
	// ("math-tutor /v1/chat/completions"); the app-and-route entry wins.
	Rates map[string]float64 `yaml:"rates"`
	// ShadowRunsPerMinute caps the exchanges handed to the shadow workers per
	// minute over all apps (a token bucket holding one minute's worth); 0: no cap.
	ShadowRunsPerMinute int `yaml:"shadow_runs_per_minute"`
}

// Validate checks every rate is within 0..1 and the cap is not negative.
func (c SamplingConfig) Validate() error {
	var errs []error
	if c.Rate < 0 || c.Rate > 1 || math.IsNaN(c.Rate) {
		errs = append(errs, fmt.Errorf("ingest: sampling.rate must be within 0..1, got %v", c.Rate))
	}
	for k, r := range c.Rates {
		if r < 0 || r > 1 || math.IsNaN(r) {
			errs = append(errs, fmt.Errorf("ingest: sampling.rates[%q] must be within 0..1, got %v", k, r))
		}
	}
	if c.ShadowRunsPerMinute < 0 {
		errs = append(errs, fmt.Errorf("ingest: sampling.shadow_runs_per_minute must not be negative, got %d", c.ShadowRunsPerMinute))
	}
	return errors.Join(errs...)
}

// Sampler applies a SamplingConfig. Safe for concurrent use.
type Sampler struct {
	cfg SamplingConfig
	cap *rate.Limiter // nil: no cap
}

// NewSampler returns a sampler for cfg (already validated).
func NewSampler(cfg SamplingConfig) *Sampler {
	s := &Sampler{cfg: cfg}
	if cfg.ShadowRunsPerMinute > 0 {
		s.cap = rate.NewLimiter(rate.Limit(float64(cfg.ShadowRunsPerMinute)/60), cfg.ShadowRunsPerMinute)
	}
	return s
}

// RateFor is the share shadowed for app and route.
func (s *Sampler) RateFor(app, route string) float64 {
	if r, ok := s.cfg.Rates[app+" "+route]; ok && route != "" {
		return r
	}
	if r, ok := s.cfg.Rates[app]; ok {
		return r
	}
	return s.cfg.Rate
}

// Sampled reports whether requestID falls within rate: the first 8 bytes of the
// id's SHA-256, scaled to [0,1), are below rate (SHA-256 because sequential ids
// must spread evenly). The same id always gets the same answer, so every
// copy of one request (and its trace) is kept or left whole.
func Sampled(requestID string, rate float64) bool {
	if rate >= 1 {
		return true
	}
	if rate <= 0 {
		return false
	}
	sum := sha256.Sum256([]byte(requestID))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11)/float64(1<<53) < rate
}

// Keep reports whether ex is sampled by its app/route rate (route from
// metadata["route"]); reason is ReasonSampledOut when it is not.
func (s *Sampler) Keep(ex Exchange) (bool, string) {
	if !Sampled(ex.RequestID, s.RateFor(ex.App, ex.Metadata["route"])) {
		return false, ReasonSampledOut
	}
	return true, ""
}

// Admit takes one shadow run from the per-minute cap; false (ReasonRateCap) when
// the cap is spent.
func (s *Sampler) Admit() (bool, string) {
	if s.cap != nil && !s.cap.Allow() {
		return false, ReasonRateCap
	}
	return true, ""
}
