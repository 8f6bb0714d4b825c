package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// pipelines are the incumbent of suite runs and the candidates, built from config.
type pipelines struct {
	pool       *shadow.Pool
	incumbent  shadow.Pipeline
	candidates []shadow.Pipeline
	spend      *shadow.SpendTracker // the daily shadow spending cap, shared by every candidate
}

// buildPipelines connects the worker pool and builds every configured pipeline.
func buildPipelines(cfg Config) (*pipelines, error) {
	return buildInstrumentedPipelines(cfg, shadow.Telemetry{})
}

// buildInstrumentedPipelines is buildPipelines reporting through tel: chat spans
// and GenAI client metrics from the pool, an invoke_workflow span and run
// metrics per pipeline run.
func buildInstrumentedPipelines(cfg Config, tel shadow.Telemetry) (*pipelines, error) {
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
	p := &pipelines{pool: pool, incumbent: inc, spend: shadow.NewSpendTracker(cfg.Shadow.Budget.DailyUSD, nil)}
	for _, name := range cfg.Pipelines.Candidates {
		var c shadow.Pipeline
		if worker, ok := strings.CutPrefix(name, "single:"); ok {
			c, err = shadow.NewSingle(pool, worker)
		} else {
			c, err = shadow.NewConductor(pool, cfg.Shadow.Conductor)
		}
		if err == nil {
			c, err = shadow.NewBudgetedFromConfig(pool, c, p.spend)
		}
		if err == nil {
			c, err = shadow.Instrument(c, tel)
		}
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("pipelines: candidate %q: %w", name, err)
		}
		p.candidates = append(p.candidates, c)
	}
	for _, cc := range cfg.Pipelines.CandidatePipelines {
		c, err := shadow.NewPipeline(pool, cc)
		if err == nil {
			c, err = shadow.NewBudgetedFromConfig(pool, c, p.spend)
		}
		if err == nil {
			c, err = shadow.Instrument(c, tel)
		}
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("pipelines: candidate %q: %w", cc.CandidateName(), err)
		}
		p.candidates = append(p.candidates, c)
	}
	return p, nil
}

func (p *pipelines) Close() { p.pool.Close() }

// workKeys names the candidate versions every tapped copy owes a run of.
func (p *pipelines) workKeys() []store.WorkKey {
	keys := make([]store.WorkKey, len(p.candidates))
	for i, c := range p.candidates {
		keys[i] = store.WorkKey{Pipeline: c.Name(), PipelineVersion: c.Version()}
	}
	return keys
}

// priceTable prices an incumbent's recorded usage: a configured worker whose model
// or name matches first, then the shipped default prices. Model ids are resolved
// by shadow.ResolvePrice (dated snapshots and Anthropic's dash spelling find
// their list price).
type priceTable struct {
	byModel map[string]shadow.Price
}

func newPriceTable(cfg shadow.Config) priceTable {
	t := priceTable{byModel: map[string]shadow.Price{}}
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
func (t priceTable) Cost(model string, promptTokens, completionTokens int64) (float64, bool) {
	return t.CostUsage(model, shadow.Usage{PromptTokens: promptTokens, CompletionTokens: completionTokens})
}

// CostUsage implements ingest.UsagePricer: cached prompt tokens at the model's
// cached rate (shadow.Price.Cost); USD.
func (t priceTable) CostUsage(model string, u shadow.Usage) (float64, bool) {
	p, _, ok := shadow.ResolvePrice(t.byModel, model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// openStore opens the configured store and says which transport it uses.
func openStore(ctx context.Context, cfg Config) (store.Store, string, error) {
	st, err := store.Open(ctx, cfg.Store)
	if err != nil {
		return nil, "", err
	}
	return st, storeWhere(cfg), nil
}

// storeWhere says which store cfg names, for the user: "embedded chDB in
// ./data" or "ClickHouse server clickhouse://user:***@host:9000".
func storeWhere(cfg Config) string {
	if cfg.Store.DSN != "" {
		return "ClickHouse server " + redactDSN(cfg.Store.DSN)
	}
	return "embedded chDB in " + cfg.Store.Path
}

// redactDSN hides a password in a DSN for logs.
func redactDSN(dsn string) string {
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
