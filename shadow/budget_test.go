package shadow

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// chainPlan is three steps one after another: gemma-3-27b, qwen3-32b,
// qwen3-32b-thinking.
const chainPlan = `model_id = [0, 1, 2]
subtasks = ["first", "second", "third"]
access_list = [[], [0], [1]]`

func TestBudgetStopsRunAndFallbackAnswers(t *testing.T) {
	planTokens := int64(len(chainPlan)) // the fake's completion tokens: one per byte
	tests := []struct {
		name     string
		budget   Budget
		override func(shadowtest.Request) (shadowtest.Reply, bool)
		// wantStatuses are the statuses of the conductor call and the three plan
		// steps, before the fallback's step.
		wantStatuses []string
		wantBudget   string
		wantOver     string // substring of the error: the overshoot
	}{
		{
			name:         "max steps",
			budget:       Budget{MaxSteps: 2},
			wantStatuses: []string{store.StatusOK, store.StatusOK, store.StatusBudgetExceeded, store.StatusSkipped},
			wantBudget:   BudgetMaxSteps, wantOver: "used 3 calls of 2 calls (over by 1 calls)",
		},
		{
			name:   "max output tokens",
			budget: Budget{MaxOutputTokens: planTokens + 10},
			override: func(r shadowtest.Request) (shadowtest.Reply, bool) {
				if r.Decoded.Model == "gemma-3-27b" {
					return shadowtest.Reply{Content: "short", PromptTokens: 5, CompletionTokens: 25}, true
				}
				return shadowtest.Reply{}, false
			},
			wantStatuses: []string{store.StatusOK, store.StatusOK, store.StatusBudgetExceeded, store.StatusSkipped},
			wantBudget:   BudgetMaxOutputTokens, wantOver: "(over by 15 tokens)",
		},
		{
			name:   "max cost",
			budget: Budget{MaxCostUSD: 0.10},
			override: func(r shadowtest.Request) (shadowtest.Reply, bool) {
				if r.Decoded.Model == "gemma-3-27b" { // 1M output tokens at 0.30 USD per 1M
					return shadowtest.Reply{Content: "long", PromptTokens: 0, CompletionTokens: 1_000_000}, true
				}
				return shadowtest.Reply{}, false
			},
			wantStatuses: []string{store.StatusOK, store.StatusOK, store.StatusBudgetExceeded, store.StatusSkipped},
			wantBudget:   BudgetMaxCostUSD, wantOver: "of 0.1 USD (over by 0.2",
		},
		{
			name:   "deadline",
			budget: Budget{Deadline: 300 * time.Millisecond},
			override: func(r shadowtest.Request) (shadowtest.Reply, bool) {
				if r.Decoded.Model == "qwen3-32b" {
					return shadowtest.Reply{Content: "too late", Delay: 5 * time.Second}, true
				}
				return shadowtest.Reply{}, false
			},
			wantStatuses: []string{store.StatusOK, store.StatusOK, store.StatusBudgetExceeded, store.StatusSkipped},
			wantBudget:   BudgetDeadline, wantOver: "of 300 ms",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, pool := newFake(t, scripted{plan: chainPlan, override: tt.override})
			fallback, err := NewSingle(pool, "gpt-5")
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewBudgeted(newConductor(t, pool), tt.budget, fallback, nil)
			if err != nil {
				t.Fatal(err)
			}
			res := p.Run(context.Background(), userRequest("question"), store.ModeCandidate)

			if res.Run.Status != store.StatusBudgetExceeded {
				t.Fatalf("status %q (%s), want budget_exceeded", res.Run.Status, res.Run.Error)
			}
			if !strings.Contains(res.Run.Error, "budget "+tt.wantBudget+" exceeded") || !strings.Contains(res.Run.Error, tt.wantOver) {
				t.Errorf("error %q, want budget %s and %q", res.Run.Error, tt.wantBudget, tt.wantOver)
			}
			if len(res.Steps) != len(tt.wantStatuses)+1 {
				t.Fatalf("%d steps, want %d + the fallback's", len(res.Steps), len(tt.wantStatuses))
			}
			for i, want := range tt.wantStatuses {
				if res.Steps[i].Status != want {
					t.Errorf("step %d (%s) status %q (%s), want %q", i, res.Steps[i].Worker, res.Steps[i].Status, res.Steps[i].Error, want)
				}
			}
			fb := res.Steps[len(res.Steps)-1]
			if fb.Role != RoleFallback || fb.Worker != "gpt-5" || fb.Status != store.StatusOK || fb.Index != int32(len(res.Steps)-1) || fb.RunID != res.Run.RunID {
				t.Errorf("last step %+v, want gpt-5's ok fallback at index %d of run %s", fb, len(res.Steps)-1, res.Run.RunID)
			}
			if want := answerFor("gpt-5", userRequest("question").Messages); res.Run.FinalOutput != want {
				t.Errorf("final output %q, want the fallback's %q", res.Run.FinalOutput, want)
			}
			if len(srv.RequestsFor("qwen3-32b-thinking")) != 0 {
				t.Error("the step after the breach was called")
			}
			var sum float64
			for _, s := range res.Steps {
				sum += s.CostUSD
			}
			if diff := sum - res.Run.CostUSD; diff > 1e-12 || diff < -1e-12 {
				t.Errorf("run cost %g, steps sum to %g", res.Run.CostUSD, sum)
			}
		})
	}
}

func TestBudgetBreachWithoutFallbackKeepsWhatRan(t *testing.T) {
	_, pool := newFake(t, scripted{plan: chainPlan})
	p, err := NewBudgeted(newConductor(t, pool), Budget{MaxSteps: 3}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := p.Run(context.Background(), userRequest("question"), store.ModeCandidate)
	if res.Run.Status != store.StatusBudgetExceeded || res.Run.FinalOutput != "" {
		t.Fatalf("status %q, output %q; want budget_exceeded and no answer", res.Run.Status, res.Run.FinalOutput)
	}
	if len(res.Steps) != 4 || res.Steps[2].Status != store.StatusOK || res.Steps[3].Status != store.StatusBudgetExceeded {
		t.Fatalf("steps %+v, want conductor, 2 ok steps and the refused third", res.Steps)
	}
	if res.Run.Calls != 3 {
		t.Errorf("calls %d, want 3", res.Run.Calls)
	}
}

func TestBudgetWithinLimitsPassesThrough(t *testing.T) {
	_, pool := newFake(t, scripted{plan: chainPlan})
	inner := newConductor(t, pool)
	p, err := NewBudgeted(inner, Budget{MaxSteps: 4, MaxCostUSD: 1, MaxOutputTokens: 1e6, Deadline: time.Minute}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != inner.Name() || p.Version() == inner.Version() {
		t.Errorf("name %q version %q: want the inner name and a version that includes the budget", p.Name(), p.Version())
	}
	res := p.Run(context.Background(), userRequest("question"), store.ModeCandidate)
	if res.Run.Status != store.StatusOK || len(res.Steps) != 4 || res.Run.FinalOutput == "" {
		t.Fatalf("status %q (%s), %d steps; want ok with 4 steps", res.Run.Status, res.Run.Error, len(res.Steps))
	}
	// Incumbent runs are never capped.
	capped, _ := NewBudgeted(inner, Budget{MaxSteps: 1}, nil, nil)
	if res := capped.Run(context.Background(), userRequest("question"), store.ModeIncumbent); res.Run.Status != store.StatusOK {
		t.Errorf("incumbent run status %q, want ok (not capped)", res.Run.Status)
	}
}

func TestDailySpendCapSkipsRuns(t *testing.T) {
	srv, pool := newFake(t, scripted{plan: chainPlan})
	day := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	now := day
	spend := NewSpendTracker(1e-9, func() time.Time { return now })
	single, _ := NewSingle(pool, "gpt-5")
	p, err := NewBudgeted(single, Budget{}, nil, spend)
	if err != nil {
		t.Fatal(err)
	}
	first := p.Run(context.Background(), userRequest("one"), store.ModeCandidate)
	if first.Run.Status != store.StatusOK || first.Run.CostUSD <= 0 {
		t.Fatalf("first run %q cost %g, want ok with a cost", first.Run.Status, first.Run.CostUSD)
	}
	if got := spend.Spent(); got != first.Run.CostUSD {
		t.Errorf("spent %g, want the first run's %g", got, first.Run.CostUSD)
	}
	second := p.Run(context.Background(), userRequest("two"), store.ModeCandidate)
	if second.Run.Status != store.StatusSkipped || len(second.Steps) != 0 || !strings.Contains(second.Run.Error, "daily shadow spending cap") {
		t.Fatalf("second run %q (%s) with %d steps, want skipped with none", second.Run.Status, second.Run.Error, len(second.Steps))
	}
	if second.Run.RunID != RunID("req-1", "", "single:gpt-5") {
		t.Errorf("skipped run id %q, want the deterministic one", second.Run.RunID)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	if spend.Skipped() != 1 {
		t.Errorf("skipped %d, want 1", spend.Skipped())
	}
	now = day.Add(2 * time.Hour) // the next UTC day
	if third := p.Run(context.Background(), userRequest("three"), store.ModeCandidate); third.Run.Status != store.StatusOK {
		t.Errorf("next day's run %q, want ok", third.Run.Status)
	}
}

func TestBudgetBreachIsErrBudgetExceeded(t *testing.T) {
	var err error = &BudgetBreach{Budget: BudgetMaxCostUSD, Limit: 1, Used: 1.5, Unit: "USD"}
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatal("a breach does not match ErrBudgetExceeded")
	}
	if want := "budget max_cost_usd exceeded: used 1.5 USD of 1 USD (over by 0.5 USD)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestBudgetConfigValidate(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Budget = BudgetConfig{PerRun: Budget{MaxSteps: -1}, Fallback: "nobody", DailyUSD: -1}
	err := cfg.Validate()
	for _, want := range []string{"budget.per_run", "budget.fallback: \"nobody\"", "budget.daily_usd"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
}

func TestBudgetLowersMaxTokensToWhatIsLeft(t *testing.T) {
	srv, pool := newFake(t, scripted{plan: chainPlan})
	planTokens := int64(len(chainPlan))
	p, err := NewBudgeted(newConductor(t, pool), Budget{MaxOutputTokens: planTokens + 30}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Run(context.Background(), userRequest("question"), store.ModeCandidate)
	if got := srv.RequestsFor("conductor")[0].Decoded.MaxTokens; int64(got) != planTokens+30 {
		t.Errorf("conductor max_tokens %d, want the whole budget %d (below the worker's 4096)", got, planTokens+30)
	}
	if got := srv.RequestsFor("gemma-3-27b")[0].Decoded.MaxTokens; got != 30 {
		t.Errorf("first step max_tokens %d, want the 30 tokens the budget has left", got)
	}
}
