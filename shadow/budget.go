package shadow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBudgetExceeded: a run's budget refused or stopped a call. Test with
// errors.Is; the error is a *BudgetBreach naming the budget and the overshoot.
var ErrBudgetExceeded = errors.New("shadow: budget exceeded")

// Budget names (BudgetBreach.Budget).
const (
	BudgetDeadline        = "deadline"
	BudgetMaxCostUSD      = "max_cost_usd"
	BudgetMaxSteps        = "max_steps"
	BudgetMaxOutputTokens = "max_output_tokens"
)

// Budget caps one run. Zero fields cap nothing.
type Budget struct {
	// Deadline is the wall-clock time a run may take, from its start.
	Deadline time.Duration `yaml:"deadline"`
	// MaxCostUSD caps the summed CostUSD of the run's calls, USD.
	MaxCostUSD float64 `yaml:"max_cost_usd"`
	// MaxSteps caps the model calls of the run, planning calls included.
	MaxSteps int `yaml:"max_steps"`
	// MaxOutputTokens caps the summed completion tokens of the run's calls; each
	// call's max_tokens is also lowered to what is left of it.
	MaxOutputTokens int64 `yaml:"max_output_tokens"`
}

// IsZero reports a budget that caps nothing.
func (b Budget) IsZero() bool { return b == Budget{} }

// Validate rejects negative caps.
func (b Budget) Validate() error {
	if b.Deadline < 0 || b.MaxCostUSD < 0 || b.MaxSteps < 0 || b.MaxOutputTokens < 0 {
		return fmt.Errorf("budget: deadline, max_cost_usd, max_steps, max_output_tokens must be >= 0, got %v, %g, %d, %d",
			b.Deadline, b.MaxCostUSD, b.MaxSteps, b.MaxOutputTokens)
	}
	return nil
}

// BudgetConfig is the budget section of the shadow configuration.
type BudgetConfig struct {
	// PerRun caps every candidate run.
	PerRun Budget `yaml:"per_run"`
	// Fallback names the worker that answers alone when a run breaches PerRun
	// (its answer becomes the run's final output); empty: no fallback.
	Fallback string `yaml:"fallback"`
	// DailyUSD caps all shadow (candidate) spending per UTC day; once reached, new
	// candidate runs are skipped and counted. 0: no cap.
	DailyUSD float64 `yaml:"daily_usd"`
}

// Validate checks the caps and that the fallback is a configured worker.
func (c BudgetConfig) Validate(workers []WorkerConfig) error {
	var errs []error
	if err := c.PerRun.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("budget.per_run: %w", err))
	}
	if c.DailyUSD < 0 {
		errs = append(errs, fmt.Errorf("budget.daily_usd: must be >= 0, got %g", c.DailyUSD))
	}
	if c.Fallback != "" {
		found := false
		for _, w := range workers {
			found = found || w.Name == c.Fallback
		}
		if !found {
			errs = append(errs, fmt.Errorf("budget.fallback: %q is not a configured worker", c.Fallback))
		}
	}
	return errors.Join(errs...)
}

// BudgetBreach says which budget a run broke and by how much. It matches
// ErrBudgetExceeded under errors.Is.
type BudgetBreach struct {
	Budget string  // BudgetDeadline, BudgetMaxCostUSD, BudgetMaxSteps or BudgetMaxOutputTokens
	Limit  float64 // the cap: ms, USD, calls or tokens
	Used   float64 // what the run had used when it was stopped, same unit
	Unit   string  // "ms", "USD", "calls", "tokens"
}

func (b *BudgetBreach) Error() string {
	return fmt.Sprintf("shadow: budget %s exceeded: used %.6g %s of %.6g %s (over by %.6g %s)",
		b.Budget, b.Used, b.Unit, b.Limit, b.Unit, b.Used-b.Limit, b.Unit)
}

// Is makes errors.Is(breach, ErrBudgetExceeded) true.
func (b *BudgetBreach) Is(target error) bool { return target == ErrBudgetExceeded }

// runBudget tracks one run's use against its Budget. Pool.Call finds it in the
// context (see WithBudget). Methods are safe on a nil *runBudget (no budget).
type runBudget struct {
	mu     sync.Mutex
	b      Budget
	start  time.Time
	calls  int
	cost   float64
	out    int64
	breach *BudgetBreach
	cancel context.CancelCauseFunc
}

type budgetKey struct{}

// WithBudget returns a context that enforces b on every Pool.Call made with it (or
// a context derived from it), and a function reporting the breach, if any, once
// the run is over. A breach cancels the context with the *BudgetBreach as cause,
// so calls in flight stop and later ones are refused. Call stop when the run is
// over to release the context.
func WithBudget(ctx context.Context, b Budget) (bctx context.Context, breach func() *BudgetBreach, stop func()) {
	rb := &runBudget{b: b, start: time.Now()}
	ctx, cancel := context.WithCancelCause(ctx)
	rb.cancel = cancel
	stopDeadline := func() bool { return false }
	if b.Deadline > 0 {
		t := time.AfterFunc(b.Deadline, func() {
			rb.mu.Lock()
			defer rb.mu.Unlock()
			rb.breachLocked(&BudgetBreach{Budget: BudgetDeadline, Limit: ms(b.Deadline), Used: ms(time.Since(rb.start)), Unit: "ms"})
		})
		stopDeadline = t.Stop
	}
	breach = func() *BudgetBreach {
		rb.mu.Lock()
		defer rb.mu.Unlock()
		return rb.breach
	}
	stop = func() {
		stopDeadline()
		cancel(nil)
	}
	return context.WithValue(ctx, budgetKey{}, rb), breach, stop
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func budgetFrom(ctx context.Context) *runBudget {
	rb, _ := ctx.Value(budgetKey{}).(*runBudget)
	return rb
}

// breachLocked records the first breach and cancels the run.
func (rb *runBudget) breachLocked(b *BudgetBreach) {
	if rb.breach == nil {
		rb.breach = b
		rb.cancel(b)
	}
}

// admit counts a call about to be made, refusing it when the run is over budget
// or it would exceed MaxSteps.
func (rb *runBudget) admit() error {
	if rb == nil {
		return nil
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if rb.breach != nil {
		return rb.breach
	}
	if rb.b.MaxSteps > 0 && rb.calls >= rb.b.MaxSteps {
		rb.breachLocked(&BudgetBreach{Budget: BudgetMaxSteps, Limit: float64(rb.b.MaxSteps), Used: float64(rb.calls + 1), Unit: "calls"})
		return rb.breach
	}
	rb.calls++
	return nil
}

// charge adds a finished call's cost and output tokens, breaching when a cap is
// passed.
func (rb *runBudget) charge(c Call) {
	if rb == nil {
		return
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.cost += c.CostUSD
	rb.out += c.CompletionTokens
	switch {
	case rb.b.MaxCostUSD > 0 && rb.cost > rb.b.MaxCostUSD:
		rb.breachLocked(&BudgetBreach{Budget: BudgetMaxCostUSD, Limit: rb.b.MaxCostUSD, Used: rb.cost, Unit: "USD"})
	case rb.b.MaxOutputTokens > 0 && rb.out > rb.b.MaxOutputTokens:
		rb.breachLocked(&BudgetBreach{Budget: BudgetMaxOutputTokens, Limit: float64(rb.b.MaxOutputTokens), Used: float64(rb.out), Unit: "tokens"})
	}
}

// remainingOutput returns the output tokens the run may still produce under
// MaxOutputTokens; 0 when there is no such cap (or none left).
func (rb *runBudget) remainingOutput() int64 {
	if rb == nil || rb.b.MaxOutputTokens == 0 {
		return 0
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return max(0, rb.b.MaxOutputTokens-rb.out)
}

// SpendTracker caps the USD all shadow runs spend per UTC day. Share one tracker
// between every budgeted pipeline of a process. Safe for concurrent use.
type SpendTracker struct {
	mu      sync.Mutex
	ceiling float64          // USD per UTC day; 0: no cap
	now     func() time.Time // the clock
	day     string           // YYYY-MM-DD (UTC) that spent belongs to
	spent   float64          // USD spent on day
	skipped int64            // runs skipped since the tracker was made
}

// NewSpendTracker returns a tracker capping spending at dailyUSD per UTC day (0:
// no cap). now is the clock (nil: time.Now).
func NewSpendTracker(dailyUSD float64, now func() time.Time) *SpendTracker {
	if now == nil {
		now = time.Now
	}
	return &SpendTracker{ceiling: dailyUSD, now: now}
}

func (s *SpendTracker) rollLocked() {
	if d := s.now().UTC().Format(time.DateOnly); d != s.day {
		s.day, s.spent = d, 0
	}
}

// Allow reports whether a new run may start: today's spend is below the ceiling.
// A refusal is counted in Skipped and returned as an error saying why.
func (s *SpendTracker) Allow() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollLocked()
	if s.ceiling > 0 && s.spent >= s.ceiling {
		s.skipped++
		return fmt.Errorf("shadow: daily shadow spending cap reached: %.6g USD spent on %s of %.6g USD; run skipped", s.spent, s.day, s.ceiling)
	}
	return nil
}

// Add records usd spent now.
func (s *SpendTracker) Add(usd float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollLocked()
	s.spent += usd
}

// Spent returns the USD spent so far today (UTC).
func (s *SpendTracker) Spent() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollLocked()
	return s.spent
}

// Skipped returns how many runs Allow refused since the tracker was made.
func (s *SpendTracker) Skipped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skipped
}
