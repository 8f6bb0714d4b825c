package shadow

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestPriceCostCachedAndOrchestration(t *testing.T) {
	p := Price{InputUSDPerMTok: 2, OutputUSDPerMTok: 8, CachedInputUSDPerMTok: 0.5}
	tests := []struct {
		name string
		p    Price
		u    Usage
		want float64
	}{
		{"plain", p, Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000}, 2 + 4},
		{"cached share", p, Usage{PromptTokens: 1_000_000, CachedPromptTokens: 400_000, CompletionTokens: 0}, 0.6*2 + 0.4*0.5},
		{"no cached price: full input rate", Price{InputUSDPerMTok: 2, OutputUSDPerMTok: 8},
			Usage{PromptTokens: 1_000_000, CachedPromptTokens: 400_000}, 2},
		{"cached above prompt is clamped", p, Usage{PromptTokens: 100, CachedPromptTokens: 1000}, 100 * 0.5 / 1e6},
		{"orchestration fields", p, Usage{PromptTokens: 1000, CompletionTokens: 100,
			OrchestrationInputTokens: 3000, OrchestrationInputCachedTokens: 1000, OrchestrationOutputTokens: 200},
			(1000*2 + 2000*2 + 1000*0.5 + 300*8) / 1e6},
	}
	for _, tt := range tests {
		if got := tt.p.Cost(tt.u); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: cost %g, want %g", tt.name, got, tt.want)
		}
	}
}

func TestPriceTableVersion(t *testing.T) {
	a := DefaultPrices()
	if PriceTableVersion(a) != PriceTableVersion(DefaultPrices()) {
		t.Fatal("the version of the same table differs between calls")
	}
	b := DefaultPrices()
	p := b["gpt-5"]
	p.CachedInputUSDPerMTok = 0.2
	b["gpt-5"] = p
	if PriceTableVersion(a) == PriceTableVersion(b) {
		t.Error("changing a cached price did not change the version")
	}
	c := DefaultPrices()
	p = c["gpt-5"]
	p.Source = "elsewhere"
	c["gpt-5"] = p
	if PriceTableVersion(a) != PriceTableVersion(c) {
		t.Error("a source text change changed the version (only rates and dates count)")
	}
}

func TestDefaultPricesAreComplete(t *testing.T) {
	prices := DefaultPrices()
	for _, name := range []string{"gpt-5", "claude-sonnet-4", "gemini-2.5-pro", "gemma-3-27b", "qwen3-32b",
		"qwen3-32b-thinking", "deepseek-r1-distill-qwen-32b", "gpt-4o", "claude-opus-4", "gemini-2.5-flash", "llama-3.3-70b"} {
		if _, ok := prices[name]; !ok {
			t.Errorf("no default price for %s", name)
		}
	}
	for name, p := range prices {
		if _, err := time.Parse(time.DateOnly, p.AsOf); err != nil {
			t.Errorf("%s: as-of %q is not a date", name, p.AsOf)
		}
		if p.Source == "" || p.InputUSDPerMTok <= 0 || p.OutputUSDPerMTok <= 0 || p.CachedInputUSDPerMTok > p.InputUSDPerMTok {
			t.Errorf("%s: %+v: want a source, positive rates and a cached rate below the input rate", name, p)
		}
		if p.Estimate != (len(p.Source) >= 9 && p.Source[:9] == "estimate:") {
			t.Errorf("%s: Estimate %v but source %q", name, p.Estimate, p.Source)
		}
	}
}

func TestPoolRecordsCachedAndOrchestrationUsage(t *testing.T) {
	_, pool := newFake(t, scripted{override: func(r shadowtest.Request) (shadowtest.Reply, bool) {
		return shadowtest.Reply{Content: "answer", PromptTokens: 1000, CompletionTokens: 100, CachedTokens: 600,
			ExtraUsage: map[string]int{"orchestration_input_tokens": 5000, "orchestration_input_cached_tokens": 2000,
				"orchestration_output_tokens": 300}}, true
	}})
	single, err := NewSingle(pool, "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	res := single.Run(context.Background(), userRequest("q"), store.ModeCandidate)
	if res.Run.Status != store.StatusOK || len(res.Steps) != 1 {
		t.Fatalf("run %q (%s)", res.Run.Status, res.Run.Error)
	}
	s := res.Steps[0]
	if s.CachedInputTokens != 600 || s.OrchestrationInputTokens != 5000 || s.OrchestrationInputCachedTokens != 2000 || s.OrchestrationOutputTokens != 300 {
		t.Errorf("step usage %+v, want cached 600 and orchestration 5000/2000/300", s)
	}
	w, _ := pool.Worker("gpt-5")
	want := w.Price().Cost(Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 600,
		OrchestrationInputTokens: 5000, OrchestrationInputCachedTokens: 2000, OrchestrationOutputTokens: 300})
	if math.Abs(s.CostUSD-want) > 1e-12 || want <= w.Price().Cost(Usage{PromptTokens: 1000, CompletionTokens: 100}) {
		t.Errorf("step cost %g, want %g (orchestration usage priced)", s.CostUSD, want)
	}
	table := map[string]Price{}
	for _, wc := range pool.Config().Workers {
		table[wc.Name] = wc.Price()
	}
	if s.PriceVersion == "" || s.PriceVersion != PriceTableVersion(table) {
		t.Errorf("price version %q, want the pool's %q", s.PriceVersion, PriceTableVersion(table))
	}
}
