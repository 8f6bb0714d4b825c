package shadow

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestDefaultConfigValid(t *testing.T) {
	cfg := NewDefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	if len(cfg.Conductor.Pool) != 7 {
		t.Errorf("pool has %d workers, want the paper's 7", len(cfg.Conductor.Pool))
	}
	prices := DefaultPrices()
	for _, w := range cfg.Workers {
		p, ok := prices[w.Name]
		if !ok {
			t.Errorf("worker %q has no default price", w.Name)
			continue
		}
		if p.AsOf == "" || p.Source == "" {
			t.Errorf("price of %q lacks a date or source", w.Name)
		}
		if w.BaseURL != DefaultPoolBaseURL {
			t.Errorf("worker %q base URL %q", w.Name, w.BaseURL)
		}
	}
}

func TestConfigYAMLRoundTrip(t *testing.T) {
	src := `
call_timeout: 30s
workers:
  - name: gpt-5
    model: gpt-5-2025-08-07
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_API_KEY
    input_usd_per_mtok: 1.25
    output_usd_per_mtok: 10
    prices_as_of: "2025-08-07"
    temperature: 1
    max_output_tokens: 4096
conductor:
  worker: gpt-5
  pool: [gpt-5]
  fallback: gpt-5
  max_steps: 3
`
	var cfg Config
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.CallTimeout != 30*time.Second || cfg.Workers[0].OutputUSDPerMTok != 10 || cfg.Conductor.MaxSteps != 3 ||
		cfg.Workers[0].APIKeyEnv != "OPENAI_API_KEY" || cfg.Workers[0].Model != "gpt-5-2025-08-07" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidateErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no workers", func(c *Config) { c.Workers = nil; c.Conductor = ConductorConfig{} }, "at least one worker"},
		{"duplicate", func(c *Config) { c.Workers = append(c.Workers, c.Workers[0]) }, "duplicate name"},
		{"no model", func(c *Config) { c.Workers[0].Model = "" }, "model: required"},
		{"bad url", func(c *Config) { c.Workers[0].BaseURL = "127.0.0.1:9090" }, "base_url"},
		{"negative price", func(c *Config) { c.Workers[0].InputUSDPerMTok = -1 }, "prices"},
		{"bad date", func(c *Config) { c.Workers[0].PricesAsOf = "Aug 2025" }, "prices_as_of"},
		{"temperature", func(c *Config) { c.Workers[0].Temperature = 3 }, "temperature"},
		{"max tokens", func(c *Config) { c.Workers[0].MaxOutputTokens = -1 }, "max_output_tokens"},
		{"timeout", func(c *Config) { c.CallTimeout = 0 }, "call_timeout"},
		{"conductor unknown", func(c *Config) { c.Conductor.Worker = "nope" }, `conductor.worker: "nope"`},
		{"pool unknown", func(c *Config) { c.Conductor.Pool = append(c.Conductor.Pool, "nope") }, "conductor.pool[7]"},
		{"pool twice", func(c *Config) { c.Conductor.Pool = append(c.Conductor.Pool, "gpt-5") }, "listed twice"},
		{"empty pool", func(c *Config) { c.Conductor.Pool = nil }, "conductor.pool: at least one"},
		{"fallback", func(c *Config) { c.Conductor.Fallback = "" }, "conductor.fallback: required"},
		{"max steps", func(c *Config) { c.Conductor.MaxSteps = 0 }, "max_steps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestPriceCost(t *testing.T) {
	tests := []struct {
		price Price
		usage Usage
		want  float64
	}{
		{Price{InputUSDPerMTok: 1.25, OutputUSDPerMTok: 10}, Usage{PromptTokens: 1000, CompletionTokens: 500}, 0.00625},
		{Price{InputUSDPerMTok: 3, OutputUSDPerMTok: 15}, Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}, 18},
		{Price{InputUSDPerMTok: 3, OutputUSDPerMTok: 15}, Usage{}, 0},
		{Price{InputUSDPerMTok: 0.1, OutputUSDPerMTok: 0.3}, Usage{PromptTokens: 1820}, 0.000182},
	}
	for _, tt := range tests {
		if got := tt.price.Cost(tt.usage); !approx(got, tt.want) {
			t.Errorf("%+v.Cost(%+v) = %g, want %g", tt.price, tt.usage, got, tt.want)
		}
	}
}

func approx(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-12*(1+max(a, b, -a, -b))
}
