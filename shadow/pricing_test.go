package shadow

import (
	"context"
	"errors"
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
		{"no cache-write price: writes at the input rate", p, Usage{PromptTokens: 1_000_000, CacheWritePromptTokens: 300_000}, 2},
		{"cache write at its own rate", Price{InputUSDPerMTok: 2, OutputUSDPerMTok: 8, CachedInputUSDPerMTok: 0.5, CacheWriteUSDPerMTok: 2.5},
			Usage{PromptTokens: 1_000_000, CachedPromptTokens: 400_000, CacheWritePromptTokens: 100_000}, 0.5*2 + 0.4*0.5 + 0.1*2.5},
		{"cached + written above prompt: written clamped to the rest", Price{InputUSDPerMTok: 2, CachedInputUSDPerMTok: 0.5, CacheWriteUSDPerMTok: 2.5},
			Usage{PromptTokens: 1000, CachedPromptTokens: 800, CacheWritePromptTokens: 500}, (800*0.5 + 200*2.5) / 1e6},
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

// The example: gpt-5, prompt 1,000 tokens of which 800 cached,
// completion 100 → 200×1.25 + 800×0.125 + 100×10 per 1M = 0.00135 USD.
func TestCachedPromptPricedAtCachedRate(t *testing.T) {
	got := DefaultPrices()["gpt-5"].Cost(Usage{PromptTokens: 1000, CachedPromptTokens: 800, CompletionTokens: 100})
	if math.Abs(got-0.00135) > 1e-12 {
		t.Errorf("gpt-5 cost %.8f USD, want 0.00135", got)
	}
}

// Anthropic prices from the list (anthropic.com/pricing): a cache read is 0.1×
// and a 5-minute cache write 1.25× the base input price. The example: a
// claude prompt of 1,000 tokens of which 800 are read from the cache and 100
// written to it, 50 completion tokens.
func TestAnthropicCacheWritesPricedAtListRate(t *testing.T) {
	u := Usage{PromptTokens: 1000, CachedPromptTokens: 800, CacheWritePromptTokens: 100, CompletionTokens: 50}
	tests := []struct {
		model       string
		in, out     float64 // list base input / output, USD per 1M tokens
		read, write float64 // list cache read / 5-minute cache write, USD per 1M tokens
	}{
		{"claude-sonnet-4", 3, 15, 0.30, 3.75},
		{"claude-sonnet-4.5", 3, 15, 0.30, 3.75},
		{"claude-opus-4.1", 15, 75, 1.50, 18.75},
		{"claude-haiku-4.5", 1, 5, 0.10, 1.25},
		{"claude-3.5-haiku", 0.80, 4, 0.08, 1},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			p, ok := DefaultPrices()[tt.model]
			if !ok {
				t.Fatalf("no default price for %s", tt.model)
			}
			if math.Abs(p.CacheWriteUSDPerMTok-tt.write) > 1e-12 || math.Abs(p.CachedInputUSDPerMTok-tt.read) > 1e-12 {
				t.Errorf("cache read %g write %g USD per 1M, want the list's %g and %g", p.CachedInputUSDPerMTok, p.CacheWriteUSDPerMTok, tt.read, tt.write)
			}
			want := (100*tt.in + 800*tt.read + 100*tt.write + 50*tt.out) / 1e6
			if got := p.Cost(u); math.Abs(got-want) > 1e-12 {
				t.Errorf("cost %.9f USD, want %.9f", got, want)
			}
			if flat := p.Cost(Usage{PromptTokens: 1000, CachedPromptTokens: 800, CompletionTokens: 50}); p.Cost(u) <= flat {
				t.Errorf("a cache write (%.9f USD) must cost more than a fresh input token (%.9f USD)", p.Cost(u), flat)
			}
		})
	}
	// claude-sonnet-4 worked out: 100×3 + 800×0.30 + 100×3.75 + 50×15 per 1M.
	if got := DefaultPrices()["claude-sonnet-4"].Cost(u); math.Abs(got-0.001665) > 1e-12 {
		t.Errorf("claude-sonnet-4 cost %.9f USD, want 0.001665", got)
	}
	for name, p := range DefaultPrices() {
		if p.CacheWriteUSDPerMTok != 0 && p.CacheWriteUSDPerMTok < p.InputUSDPerMTok {
			t.Errorf("%s: cache write %g below input %g", name, p.CacheWriteUSDPerMTok, p.InputUSDPerMTok)
		}
	}
}

func TestParseUsageSpellings(t *testing.T) {
	tests := []struct {
		name         string
		raw          string
		want         Usage
		wantReported bool
	}{
		{"openai chat", `{"prompt_tokens":1000,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":800}}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800}, true},
		{"openai responses", `{"input_tokens":1000,"output_tokens":100,"input_tokens_details":{"cached_tokens":800}}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800}, true},
		{"anthropic messages: input excludes the cache", `{"input_tokens":150,"output_tokens":100,"cache_read_input_tokens":800,"cache_creation_input_tokens":50}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800, CacheWritePromptTokens: 50}, true},
		{"anthropic messages: cache write only", `{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":2000}`,
			Usage{PromptTokens: 2010, CompletionTokens: 5, CacheWritePromptTokens: 2000}, true},
		{"anthropic write beside an openai prompt (gateway)", `{"prompt_tokens":1000,"completion_tokens":100,"cache_read_input_tokens":800,"cache_creation_input_tokens":100}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800, CacheWritePromptTokens: 100}, true},
		{"anthropic fields beside an openai prompt (gateway)", `{"prompt_tokens":1000,"completion_tokens":100,"cache_read_input_tokens":800,"cache_creation_input_tokens":0}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800}, true},
		{"deepseek", `{"prompt_tokens":1000,"completion_tokens":100,"prompt_cache_hit_tokens":800,"prompt_cache_miss_tokens":200}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800}, true},
		{"moonshot", `{"prompt_tokens":1000,"completion_tokens":100,"cached_tokens":800}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800}, true},
		{"gemini usageMetadata", `{"promptTokenCount":1000,"candidatesTokenCount":60,"thoughtsTokenCount":40,"cachedContentTokenCount":800}`,
			Usage{PromptTokens: 1000, CompletionTokens: 100, CachedPromptTokens: 800}, true},
		{"fugu orchestration", `{"prompt_tokens":10,"completion_tokens":5,"orchestration_input_tokens":7,"orchestration_input_cached_tokens":3,"orchestration_output_tokens":2}`,
			Usage{PromptTokens: 10, CompletionTokens: 5, OrchestrationInputTokens: 7, OrchestrationInputCachedTokens: 3, OrchestrationOutputTokens: 2}, true},
		{"no cache", `{"prompt_tokens":12,"completion_tokens":3}`, Usage{PromptTokens: 12, CompletionTokens: 3}, true},
		{"null", `null`, Usage{}, false},
		{"empty object", `{}`, Usage{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reported, err := ParseUsage([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || reported != tc.wantReported {
				t.Errorf("ParseUsage(%s) = %+v reported %v; want %+v reported %v", tc.raw, got, reported, tc.want, tc.wantReported)
			}
		})
	}
	if _, _, err := ParseUsage([]byte(`{"prompt_tokens":"many"}`)); err == nil {
		t.Error("a token count of the wrong type must be an error")
	}
}

// The pool reads cached tokens in either spelling and reasoning deltas in either
// key, and prices the cached tokens at the cached rate.
func TestPoolReadsCacheAndReasoningSpellings(t *testing.T) {
	tests := []struct {
		name    string
		worker  string
		reply   shadowtest.Reply
		wantUSD float64 // from the list prices
	}{
		{"openai cached_tokens, reasoning_content", "gpt-5", shadowtest.Reply{Content: "42", PromptTokens: 1000, CompletionTokens: 100,
			CachedTokens: 800, Reasoning: "6*7 is 42", ReasoningKey: "reasoning_content"},
			(200*1.25 + 800*0.125 + 100*10) / 1e6},
		{"anthropic cache_read_input_tokens, reasoning", "gpt-5", shadowtest.Reply{Content: "42", PromptTokens: 1000, CompletionTokens: 100,
			ExtraUsage: map[string]int{"cache_read_input_tokens": 800, "cache_creation_input_tokens": 0}, Reasoning: "6*7 is 42", ReasoningKey: "reasoning"},
			(200*1.25 + 800*0.125 + 100*10) / 1e6},
		{"anthropic cache write at the claude cache-write rate", "claude-sonnet-4", shadowtest.Reply{Content: "42", PromptTokens: 1000, CompletionTokens: 100,
			ExtraUsage: map[string]int{"cache_read_input_tokens": 800, "cache_creation_input_tokens": 100}, Reasoning: "6*7 is 42", ReasoningKey: "reasoning"},
			// claude-sonnet-4: 100 fresh × 3 + 800 read × 0.30 + 100 written × 3.75 + 100 out × 15.
			(100*3 + 800*0.30 + 100*3.75 + 100*15) / 1e6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, pool := newFake(t, scripted{override: func(shadowtest.Request) (shadowtest.Reply, bool) { return tc.reply, true }})
			single, err := NewSingle(pool, tc.worker)
			if err != nil {
				t.Fatal(err)
			}
			res := single.Run(context.Background(), userRequest("q"), store.ModeCandidate)
			if res.Run.Status != store.StatusOK || len(res.Steps) != 1 {
				t.Fatalf("run %q (%s)", res.Run.Status, res.Run.Error)
			}
			s := res.Steps[0]
			if s.CachedInputTokens != 800 {
				t.Errorf("cached input tokens %d, want 800", s.CachedInputTokens)
			}
			if want := int64(tc.reply.ExtraUsage["cache_creation_input_tokens"]); s.CacheWriteInputTokens != want {
				t.Errorf("cache write tokens %d, want %d", s.CacheWriteInputTokens, want)
			}
			if math.Abs(s.CostUSD-tc.wantUSD) > 1e-12 || math.Abs(res.Run.CostUSD-tc.wantUSD) > 1e-12 {
				t.Errorf("cost step %.9f run %.9f USD, want %.9f", s.CostUSD, res.Run.CostUSD, tc.wantUSD)
			}
			if s.Output != "42" || s.Reasoning != "6*7 is 42" || res.Run.Reasoning != "6*7 is 42" || res.Run.FinalOutput != "42" {
				t.Errorf("output %q reasoning %q (run %q / %q); want the answer and the reasoning apart", s.Output, s.Reasoning, res.Run.FinalOutput, res.Run.Reasoning)
			}
		})
	}
}

func TestBaseModelID(t *testing.T) {
	tests := []struct{ id, want string }{
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-opus-4-1-20250805", "claude-opus-4.1"},
		{"claude-opus-4-1", "claude-opus-4.1"},
		{"claude-opus-4.1", "claude-opus-4.1"},
		{"claude-3-5-haiku-20241022", "claude-3.5-haiku"},
		{"claude-3-5-haiku-latest", "claude-3.5-haiku"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4.5"},
		{"claude-haiku-4-5", "claude-haiku-4.5"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"o3-2025-04-16", "o3"},
		{"gpt-4-1106-preview", "gpt-4-1106-preview"}, // no date snapshot, not a claude id
		{"qwen3-32b", "qwen3-32b"},
		{" gpt-5 ", "gpt-5"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := BaseModelID(tt.id); got != tt.want {
			t.Errorf("BaseModelID(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func TestResolvePrice(t *testing.T) {
	list := DefaultPrices()
	list["house-claude-3-7"] = Price{InputUSDPerMTok: 7, AsOf: "2025-02-24"} // a configured key in dash spelling
	tests := []struct {
		name    string
		ids     []string
		wantKey string // "" = no price
	}{
		{"exact", []string{"gpt-5"}, "gpt-5"},
		{"anthropic dated", []string{"claude-sonnet-4-20250514"}, "claude-sonnet-4"},
		{"anthropic dash minor, dated", []string{"claude-opus-4-1-20250805"}, "claude-opus-4.1"},
		{"anthropic 3-5 haiku", []string{"claude-3-5-haiku-20241022"}, "claude-3.5-haiku"},
		{"openai dated", []string{"gpt-4o-2024-08-06"}, "gpt-4o"},
		{"a dated id before a priced one", []string{"gpt-4o-mini-2024-07-18", "gpt-5"}, "gpt-4o-mini"},
		{"falls back to the second id", []string{"acme-router-7", "claude-sonnet-4"}, "claude-sonnet-4"},
		{"empty ids skipped", []string{"", "o3"}, "o3"},
		{"table key compared by its base id", []string{"house-claude-3-7-20250224"}, "house-claude-3-7"},
		{"no price", []string{"acme-router-7-20250101", "acme-base"}, ""},
		{"nothing asked", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, key, ok := ResolvePrice(list, tt.ids...)
			if ok != (tt.wantKey != "") || key != tt.wantKey {
				t.Fatalf("ResolvePrice(%q) = key %q ok %v, want %q", tt.ids, key, ok, tt.wantKey)
			}
			if ok && p != list[tt.wantKey] {
				t.Errorf("price %+v, want the price listed under %q", p, tt.wantKey)
			}
		})
	}
}

// TestWithListPrices: a worker that sets no price gets its model's list price
// (resolved like the tap's); a configured price, or an explicit prices_as_of
// with zero rates (a free model), is kept; one without any is named.
func TestWithListPrices(t *testing.T) {
	cfg := NewDefaultConfig()
	base := cfg.Workers[0]
	mk := func(name, model string, in float64, asOf string) WorkerConfig {
		w := base
		w.Name, w.Model, w.InputUSDPerMTok, w.OutputUSDPerMTok, w.CachedInputUSDPerMTok, w.CacheWriteUSDPerMTok, w.PricesAsOf =
			name, model, in, 0, 0, 0, asOf
		return w
	}
	cfg.Workers = append(cfg.Workers,
		mk("sonnet", "claude-sonnet-4-20250514", 0, ""),
		mk("house", "gpt-4o-2024-08-06", 9, ""),
		mk("local", "llama-3.1-8b", 0, "2025-01-01"),
		mk("gpt-4.1", "my-deployment-17", 0, ""),
		mk("mystery", "acme-router-7", 0, ""),
	)
	got, unpriced := cfg.WithListPrices()
	pool, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	want := map[string]float64{"sonnet": 3, "house": 9, "local": 0, "gpt-4.1": 2, "mystery": 0}
	for name, in := range want {
		w, _ := got.Worker(name)
		pw, _ := pool.Worker(name)
		if w.Price().InputUSDPerMTok != in || pw.Price().InputUSDPerMTok != in {
			t.Errorf("worker %s: input %g USD/MTok (pool %g), want %g", name, w.Price().InputUSDPerMTok, pw.Price().InputUSDPerMTok, in)
		}
	}
	if s, _ := got.Worker("sonnet"); s.Price().OutputUSDPerMTok != 15 || s.Price().CachedInputUSDPerMTok != 0.30 ||
		s.Price().CacheWriteUSDPerMTok != 3.75 || s.PricesAsOf != "2025-05-22" {
		t.Errorf("sonnet price %+v, want the claude-sonnet-4 list price", s.Price())
	}
	if u := pool.Unpriced(); len(u) != 1 || u[0] != "mystery" {
		t.Errorf("pool unpriced %v, want [mystery]", u)
	}
	if len(unpriced) != 1 || unpriced[0] != "mystery" {
		t.Errorf("unpriced %v, want [mystery]", unpriced)
	}
	if w, _ := cfg.Worker("sonnet"); w.InputUSDPerMTok != 0 {
		t.Error("WithListPrices changed the caller's workers")
	}
}

// TestParseUsageRefusesOutOfRange: every token count of every spelling must be
// 0..MaxUsageTokens; a negative Anthropic cache count would otherwise shrink the
// prompt it is added to.
func TestParseUsageRefusesOutOfRange(t *testing.T) {
	fields := []struct{ raw, field string }{
		{`{"prompt_tokens":-5}`, "prompt_tokens"},
		{`{"completion_tokens":-5}`, "completion_tokens"},
		{`{"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":-1}}`, "prompt_tokens_details.cached_tokens"},
		{`{"input_tokens":-1}`, "input_tokens"},
		{`{"output_tokens":-1}`, "output_tokens"},
		{`{"input_tokens":5,"input_tokens_details":{"cached_tokens":-1}}`, "input_tokens_details.cached_tokens"},
		{`{"input_tokens":1000,"output_tokens":50,"cache_read_input_tokens":-900,"cache_creation_input_tokens":-50}`, "cache_read_input_tokens"},
		{`{"input_tokens":1000,"output_tokens":50,"cache_creation_input_tokens":-50}`, "cache_creation_input_tokens"},
		{`{"prompt_tokens":5,"prompt_cache_hit_tokens":-1}`, "prompt_cache_hit_tokens"},
		{`{"prompt_tokens":5,"cached_tokens":-1}`, "cached_tokens"},
		{`{"promptTokenCount":-1}`, "promptTokenCount"},
		{`{"candidatesTokenCount":-1}`, "candidatesTokenCount"},
		{`{"promptTokenCount":1,"thoughtsTokenCount":-1}`, "thoughtsTokenCount"},
		{`{"promptTokenCount":1,"cachedContentTokenCount":-1}`, "cachedContentTokenCount"},
		{`{"orchestration_input_tokens":-1}`, "orchestration_input_tokens"},
		{`{"orchestration_input_cached_tokens":-1}`, "orchestration_input_cached_tokens"},
		{`{"orchestration_output_tokens":-1}`, "orchestration_output_tokens"},
		{`{"prompt_tokens":100000001}`, "prompt_tokens"},
		{`{"input_tokens":1,"cache_read_input_tokens":100000001}`, "cache_read_input_tokens"},
	}
	for _, tt := range fields {
		_, _, err := ParseUsage([]byte(tt.raw))
		var re *UsageRangeError
		if !errors.As(err, &re) || re.Field != tt.field {
			t.Errorf("ParseUsage(%s) = %v; want a UsageRangeError for %s", tt.raw, err, tt.field)
		}
	}
	u, _, err := ParseUsage([]byte(`{"input_tokens":0,"output_tokens":100000000,"cache_read_input_tokens":100000000}`))
	if err != nil || u.CompletionTokens != MaxUsageTokens || u.CachedPromptTokens != MaxUsageTokens {
		t.Errorf("the bounds themselves: %+v, %v; want accepted", u, err)
	}
}
