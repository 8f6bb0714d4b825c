package platform

import (
	"math"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// TestPriceTablePricesCacheWrites: the tap's pricer (the incumbent's cost) reads
// the shipped list prices and the configured workers' own, cache reads and cache
// writes included.
func TestPriceTablePricesCacheWrites(t *testing.T) {
	cfg := shadow.NewDefaultConfig()
	cfg.Workers = append(cfg.Workers, shadow.WorkerConfig{Name: "house-claude", Model: "claude-sonnet-4-20250514",
		BaseURL: "https://api.anthropic.com/v1", InputUSDPerMTok: 3, OutputUSDPerMTok: 15,
		CachedInputUSDPerMTok: 0.30, CacheWriteUSDPerMTok: 6}) // a 1-hour cache write, 2× input
	table := NewPriceTable(cfg)
	u := shadow.Usage{PromptTokens: 1000, CachedPromptTokens: 800, CacheWritePromptTokens: 100, CompletionTokens: 50}
	tests := []struct {
		model     string
		wantUSD   float64
		wantKnown bool
	}{
		// List price (anthropic.com/pricing): 100 fresh × 3 + 800 read × 0.30 + 100 written × 3.75 + 50 × 15.
		{"claude-sonnet-4", (100*3 + 800*0.30 + 100*3.75 + 50*15) / 1e6, true},
		{"claude-haiku-4.5", (100*1 + 800*0.10 + 100*1.25 + 50*5) / 1e6, true},
		// The configured worker's own cache-write rate, found by model and by name.
		{"claude-sonnet-4-20250514", (100*3 + 800*0.30 + 100*6 + 50*15) / 1e6, true},
		{"house-claude", (100*3 + 800*0.30 + 100*6 + 50*15) / 1e6, true},
		// OpenAI bills no cache write apart: written tokens cost the input price.
		{"gpt-4o", (200*2.50 + 800*1.25 + 50*10) / 1e6, true},
		{"no-such-model", 0, false},
	}
	for _, tt := range tests {
		got, known := table.CostUsage(tt.model, u)
		if known != tt.wantKnown || math.Abs(got-tt.wantUSD) > 1e-12 {
			t.Errorf("%s: %.9f USD known %v, want %.9f known %v", tt.model, got, known, tt.wantUSD, tt.wantKnown)
		}
	}
}

// TestPriceTableResolvesProviderModelIDs: the ids providers answer with (dated
// snapshots, Anthropic's dash spelling) find the list price; a configured worker
// without prices does not shadow its model's list price with 0 USD.
func TestPriceTableResolvesProviderModelIDs(t *testing.T) {
	cfg := shadow.NewDefaultConfig()
	cfg.Workers = append(cfg.Workers, shadow.WorkerConfig{Name: "opus", Model: "claude-opus-4-1-20250805",
		BaseURL: "https://api.anthropic.com/v1"}) // no prices set
	table := NewPriceTable(cfg)
	u := shadow.Usage{PromptTokens: 1000, CompletionTokens: 100}
	tests := []struct {
		model     string
		wantUSD   float64
		wantKnown bool
	}{
		{"claude-sonnet-4-20250514", (1000*3 + 100*15) / 1e6, true},
		{"gpt-4o-2024-08-06", (1000*2.50 + 100*10) / 1e6, true},
		{"claude-opus-4-1-20250805", (1000*15 + 100*75) / 1e6, true},
		{"opus", (1000*15 + 100*75) / 1e6, true},
		{"claude-3-5-haiku-20241022", (1000*0.80 + 100*4) / 1e6, true},
		{"acme-router-7-20250101", 0, false},
	}
	for _, tt := range tests {
		got, known := table.CostUsage(tt.model, u)
		if known != tt.wantKnown || math.Abs(got-tt.wantUSD) > 1e-12 {
			t.Errorf("%s: %.9f USD known %v, want %.9f known %v", tt.model, got, known, tt.wantUSD, tt.wantKnown)
		}
	}
}
