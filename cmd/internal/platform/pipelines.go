package platform

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Pipelines are the incumbent of suite runs and the candidates, built from config.
type Pipelines struct {
	Pool       *shadow.Pool
	Incumbent  shadow.Pipeline
	Candidates []shadow.Pipeline
	Spend      *shadow.SpendTracker // the daily shadow spending cap, shared by every candidate
}

// BuildPipelines connects the worker pool and builds every configured pipeline.
func BuildPipelines(cfg Config) (*Pipelines, error) {
	return BuildInstrumentedPipelines(cfg, shadow.Telemetry{})
}

// BuildInstrumentedPipelines is BuildPipelines reporting through tel: chat spans
// and GenAI client metrics from the pool, an invoke_workflow span and run
// metrics per pipeline run.
func BuildInstrumentedPipelines(cfg Config, tel shadow.Telemetry) (*Pipelines, error) {
	pool, err := shadow.NewPool(cfg.Shadow, shadow.WithTelemetry(tel))
	if err != nil {
		return nil, fmt.Errorf("pipelines: %w", err)
	}
	if u := pool.Unpriced(); len(u) > 0 {
		slog.Warn("pipelines: workers without a price: their calls are recorded at 0 USD (set input_usd_per_mtok / output_usd_per_mtok)",
			"workers", u)
	}
	inc, err := shadow.NewSingle(pool, cfg.Pipelines.Incumbent)
	if err == nil {
		inc, err = shadow.Instrument(inc, tel)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pipelines: incumbent: %w", err)
	}
	p := &Pipelines{Pool: pool, Incumbent: inc, Spend: shadow.NewSpendTracker(cfg.Shadow.Budget.DailyUSD, nil)}
	candidates, err := cfg.Pipelines.AllCandidates()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pipelines: %w", err)
	}
	for _, cc := range candidates {
		c, err := shadow.NewPipeline(pool, cc)
		if err == nil {
			c, err = shadow.NewBudgetedFromConfig(pool, c, p.Spend)
		}
		if err == nil {
			c, err = shadow.Instrument(c, tel)
		}
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("pipelines: candidate %q: %w", cc.CandidateName(), err)
		}
		p.Candidates = append(p.Candidates, c)
	}
	return p, nil
}

// Close closes the worker pool.
func (p *Pipelines) Close() { p.Pool.Close() }

// WorkKeys names the candidate versions every tapped copy owes a run of.
func (p *Pipelines) WorkKeys() []store.WorkKey {
	keys := make([]store.WorkKey, len(p.Candidates))
	for i, c := range p.Candidates {
		keys[i] = store.WorkKey{Pipeline: c.Name(), PipelineVersion: c.Version()}
	}
	return keys
}

// PriceTable prices an incumbent's recorded usage: a configured worker whose model
// or name matches first, then the shipped default prices. Model ids are resolved
// by shadow.ResolvePrice (dated snapshots and Anthropic's dash spelling find
// their list price).
type PriceTable struct {
	byModel map[string]shadow.Price
}

// NewPriceTable is the price table of cfg.
func NewPriceTable(cfg shadow.Config) PriceTable {
	t := PriceTable{byModel: map[string]shadow.Price{}}
	for name, p := range shadow.DefaultPrices() {
		t.byModel[name] = p
	}
	cfg, unpriced := cfg.WithListPrices()
	for _, w := range cfg.Workers {
		if slices.Contains(unpriced, w.Name) {
			continue // no price: leave the model to the default table or unpriced
		}
		t.byModel[w.Model] = w.Price()
		t.byModel[w.Name] = w.Price()
	}
	return t
}

// Cost implements ingest.Pricer; USD.
func (t PriceTable) Cost(model string, promptTokens, completionTokens int64) (float64, bool) {
	return t.CostUsage(model, shadow.Usage{PromptTokens: promptTokens, CompletionTokens: completionTokens})
}

// CostUsage implements ingest.UsagePricer: cached prompt tokens at the model's
// cached rate (shadow.Price.Cost); USD.
func (t PriceTable) CostUsage(model string, u shadow.Usage) (float64, bool) {
	p, _, ok := shadow.ResolvePrice(t.byModel, model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// OpenStore opens the configured store and says which transport it uses.
func OpenStore(ctx context.Context, cfg Config) (store.Store, string, error) {
	st, err := store.Open(ctx, cfg.Store)
	if err != nil {
		return nil, "", err
	}
	return st, StoreWhere(cfg), nil
}

// StoreWhere says which store cfg names, for the user: "embedded chDB in
// ./data" or "ClickHouse server clickhouse://user:***@host:9000".
func StoreWhere(cfg Config) string {
	if cfg.Store.DSN != "" {
		return "ClickHouse server " + RedactDSN(cfg.Store.DSN)
	}
	return "embedded chDB in " + cfg.Store.Path
}

// RedactDSN hides a password in a DSN for logs.
func RedactDSN(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return dsn
	}
	userinfo := dsn[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return dsn[:scheme+3] + user + ":***" + dsn[at:]
	}
	return dsn
}
