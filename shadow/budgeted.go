package shadow

import (
	"context"
	"fmt"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// budgetedPipeline enforces a Budget and the daily spending cap around another
// pipeline; see NewBudgeted.
type budgetedPipeline struct {
	inner    Pipeline
	budget   Budget
	fallback Pipeline      // nil: none
	spend    *SpendTracker // nil: no daily cap
	version  string
}

// NewBudgeted wraps inner (same Name) so that each candidate run:
//
//   - is skipped (status store.StatusSkipped, no call made, Run.Error says why)
//     when spend's daily cap is already reached; spend counts the skip;
//   - runs under budget (see WithBudget): a breach stops the run cleanly — calls in
//     flight are cancelled, later ones refused — and the run is recorded with
//     status store.StatusBudgetExceeded and Run.Error naming the budget and the
//     overshoot (a *BudgetBreach's text); the steps that ran keep their results;
//   - after a breach, when fallback is not nil, runs fallback on the request
//     without the budget; its steps are appended with role "fallback" and its
//     answer becomes the run's final output;
//   - adds its cost (fallback included) to spend.
//
// Incumbent runs (mode store.ModeIncumbent) are neither capped nor counted.
// budget zero, fallback nil and spend nil make a pass-through. The version hashes
// inner's version, the budget and the fallback's name and version.
func NewBudgeted(inner Pipeline, budget Budget, fallback Pipeline, spend *SpendTracker) (Pipeline, error) {
	if inner == nil {
		return nil, fmt.Errorf("shadow: new budgeted pipeline: inner pipeline is nil")
	}
	if err := budget.Validate(); err != nil {
		return nil, fmt.Errorf("shadow: new budgeted pipeline %q: %w", inner.Name(), err)
	}
	fb := struct{ Name, Version string }{}
	if fallback != nil {
		fb.Name, fb.Version = fallback.Name(), fallback.Version()
	}
	version := versionHash(struct {
		Inner    string
		Budget   Budget
		Fallback any
	}{inner.Version(), budget, fb})
	return &budgetedPipeline{inner: inner, budget: budget, fallback: fallback, spend: spend, version: version}, nil
}

func (p *budgetedPipeline) Name() string    { return p.inner.Name() }
func (p *budgetedPipeline) Version() string { return p.version }

// Run runs the inner pipeline under the budget; see NewBudgeted.
func (p *budgetedPipeline) Run(ctx context.Context, req Request, mode string) Result {
	if mode == store.ModeIncumbent {
		return p.inner.Run(ctx, req, mode)
	}
	start := time.Now()
	if p.spend != nil {
		if err := p.spend.Allow(); err != nil {
			r := newRunRecorder(p.Name(), p.version, mode, req)
			r.fail(store.StatusSkipped, err)
			return r.result()
		}
	}
	bctx, breach, stop := WithBudget(ctx, p.budget)
	res := p.inner.Run(bctx, req, mode)
	stop()
	res.Run.PipelineVersion = p.version
	if b := breach(); b != nil && ctx.Err() == nil {
		res.Run.Status = store.StatusBudgetExceeded
		why := b.Error()
		if res.Run.Error != "" {
			why += "; " + res.Run.Error
		}
		res.Run.Error = why
		if p.fallback != nil {
			p.appendFallback(ctx, req, mode, &res)
		}
	}
	res.Run.LatencyMs = msSince(start)
	markTruncation(&res)
	if p.spend != nil {
		p.spend.Add(res.Run.CostUSD)
	}
	return res
}

// appendFallback runs the fallback pipeline and appends its steps and totals to res.
func (p *budgetedPipeline) appendFallback(ctx context.Context, req Request, mode string, res *Result) {
	fr := p.fallback.Run(ctx, req, mode)
	offset := int32(len(res.Steps))
	for _, s := range fr.Steps {
		s.RunID = res.Run.RunID
		s.Index += offset
		if s.Parent >= 0 {
			s.Parent += offset
		}
		s.Role = RoleFallback
		res.Steps = append(res.Steps, s)
	}
	res.Run.Calls += fr.Run.Calls
	res.Run.TokensIn += fr.Run.TokensIn
	res.Run.TokensOut += fr.Run.TokensOut
	res.Run.CostUSD += fr.Run.CostUSD
	res.Run.Simulated = res.Run.Simulated || fr.Run.Simulated
	if fr.Run.Status == store.StatusOK {
		res.Run.FinalOutput = fr.Run.FinalOutput
		res.Run.Error += fmt.Sprintf("; fallback %q answered", p.fallback.Name())
		return
	}
	res.Run.Error += fmt.Sprintf("; fallback %q failed: %s", p.fallback.Name(), fr.Run.Error)
}

var _ Pipeline = (*budgetedPipeline)(nil)

// NewBudgetedFromConfig wraps inner with the pool configuration's budget section
// (Config.Budget): its PerRun budget, its Fallback worker as a single-model
// fallback pipeline, and spend as the daily cap's tracker (share one between all
// candidates; NewSpendTracker(cfg.Budget.DailyUSD, nil)). With no per-run budget,
// no fallback and no daily cap, inner is returned as it is. Errors: the fallback
// worker is not in the pool.
func NewBudgetedFromConfig(pool *Pool, inner Pipeline, spend *SpendTracker) (Pipeline, error) {
	bc := pool.Config().Budget
	if bc.PerRun.IsZero() && bc.Fallback == "" && bc.DailyUSD == 0 {
		return inner, nil
	}
	var fallback Pipeline
	if bc.Fallback != "" {
		fb, err := NewSingle(pool, bc.Fallback)
		if err != nil {
			return nil, fmt.Errorf("shadow: budget fallback: %w", err)
		}
		fallback = fb
	}
	if bc.DailyUSD == 0 {
		spend = nil
	}
	return NewBudgeted(inner, bc.PerRun, fallback, spend)
}
