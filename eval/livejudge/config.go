// Package livejudge judges a share of live shadow pairs — the incumbent's
// answer against a candidate's on the same production request — with the
// pairwise LLM judge (eval/judge), in both orders, in the shadow workers'
// own bounded stage after the candidate run is stored: never on the
// production path. Which pairs are judged is decided before the judge sees
// them, by a keyed hash draw against an inclusion probability that budget
// pacing lowers as the day's judge budget is spent; the probability is stored
// on every row (store.Judgment.InclusionProb), so estimates over the sample
// are unbiased (Horvitz–Thompson: weight each row by 1/p). The daily judge
// budget in USD is never passed: a judgment is started only when its
// upper-bound cost (prompt bytes and the capped output tokens at the judge
// worker's list price) still fits. Every sampled pair gets a row: a
// judgment, a loss (or win, tie) decided without the judge when a run has no
// answer, or "unjudged" with the reason. Each stored judgment is also a
// gen_ai.evaluation.result OpenTelemetry event parented to the candidate
// run's span.
package livejudge

import (
	"errors"
	"fmt"
	"strings"
)

// Config is the judge.live section of the configuration.
type Config struct {
	// Share is the share (0..1) of live pairs (each candidate run against
	// the incumbent's answer) to judge; 0 turns live judging off. Budget
	// pacing may lower the probability used below it, never raise it.
	Share float64 `yaml:"share"`
	// DailyBudgetUSD caps what live judging spends per UTC day, USD; required
	// (> 0) when Share > 0. Counted like shadow.budget.daily_usd, and read
	// back from the judgments table at start, so a restart does not reset it.
	DailyBudgetUSD float64 `yaml:"daily_budget_usd"`
	// Concurrency is how many pairs are judged at once (each judgment is two
	// calls, both orders at once). Default 4.
	Concurrency int `yaml:"concurrency"`
	// QueueSize is how many sampled pairs may wait for a judging slot; a
	// sampled pair that finds it full is stored "unjudged" (queue_full).
	// Default 256.
	QueueSize int `yaml:"queue_size"`
	// Worker is the pool worker that judges; "" uses suite.judge.worker.
	Worker string `yaml:"worker"`
	// MaxOutputTokens caps each judge call's completion tokens (max_tokens):
	// with the prompt's size it bounds a judgment's cost before it starts.
	// Default 1024.
	MaxOutputTokens int `yaml:"max_output_tokens"`
}

// NewDefaultConfig judges 10% of live pairs within 5 USD a day, 4 at once,
// with up to 256 waiting and 1,024 output tokens per call.
func NewDefaultConfig() Config {
	return Config{Share: 0.1, DailyBudgetUSD: 5, Concurrency: 4, QueueSize: 256, MaxOutputTokens: 1024}
}

// Enabled reports whether live pairs are judged at all.
func (c Config) Enabled() bool { return c.Share > 0 }

// Validate reports a share outside 0..1, a missing or negative budget, and
// non-positive sizes.
func (c Config) Validate() error {
	var errs []error
	if !(c.Share >= 0 && c.Share <= 1) {
		errs = append(errs, fmt.Errorf("judge.live.share must be in 0..1, got %g", c.Share))
	}
	if !(c.DailyBudgetUSD >= 0) {
		errs = append(errs, fmt.Errorf("judge.live.daily_budget_usd must be >= 0, got %g", c.DailyBudgetUSD))
	} else if c.Share > 0 && c.DailyBudgetUSD == 0 {
		errs = append(errs, errors.New("judge.live.daily_budget_usd must be > 0 when judge.live.share is set: live judging never runs without a budget"))
	}
	if c.Concurrency < 1 || c.Concurrency > 256 {
		errs = append(errs, fmt.Errorf("judge.live.concurrency must be in 1..256, got %d", c.Concurrency))
	}
	if c.QueueSize < 1 || c.QueueSize > 100_000 {
		errs = append(errs, fmt.Errorf("judge.live.queue_size must be in 1..100000, got %d", c.QueueSize))
	}
	if c.MaxOutputTokens < 1 || c.MaxOutputTokens > 1_000_000 {
		errs = append(errs, fmt.Errorf("judge.live.max_output_tokens must be in 1..1000000 (it bounds a judgment's cost), got %d", c.MaxOutputTokens))
	}
	if c.Worker != strings.TrimSpace(c.Worker) {
		errs = append(errs, fmt.Errorf("judge.live.worker %q has surrounding spaces", c.Worker))
	}
	return errors.Join(errs...)
}
