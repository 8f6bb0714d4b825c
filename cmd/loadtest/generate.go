package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// generateCmd fills the store with a synthetic data set and measures the web
// pages' server time on it.
func generateCmd(load platform.Loader) *cobra.Command {
	var (
		requests    int
		days        int
		skipInsert  bool
		iterations  int
		measureOnly bool
	)
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Fill the store with synthetic traces (INSERT … SELECT) and print the web pages' server-time p50/p95",
		Long: "Generates --requests tapped requests over the last --days days, each with an incumbent run (1 step)\n" +
			"and a conductor run (9 steps): 500000 requests give 1,000,000 runs and 5,000,000 steps.\n" +
			"Then renders the traces page, a trace page and the overview --iterations times each in process\n" +
			"(no network) and prints p50, p95 and max server time in ms.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			st, where, err := platform.OpenStore(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			defer st.Close()
			out := cmd.OutOrStdout()
			to := time.Now().UTC().Truncate(time.Minute)
			from := to.Add(-time.Duration(days) * 24 * time.Hour)
			if !skipInsert && !measureOnly {
				res, err := store.Generate(cmd.Context(), st, store.GenerateSpec{Requests: requests, From: from, To: to})
				if err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				fmt.Fprintf(out, "generated into %s: %d requests, %d runs, %d steps (requests %s, runs %s, steps %s)\n",
					where, res.Requests, res.Runs, res.Steps, res.Took["requests"].Round(time.Millisecond),
					res.Took["runs"].Round(time.Millisecond), res.Took["steps"].Round(time.Millisecond))
			}
			_, err = measurePages(cmd.Context(), out, st, cfg.Web, iterations)
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&requests, "requests", 500_000, "requests to generate (runs = 2x, steps = 10x)")
	f.IntVar(&days, "days", 7, "spread the requests over this many days up to now")
	f.IntVar(&iterations, "iterations", 30, "renders per page for the server-time figures")
	f.BoolVar(&skipInsert, "skip-insert", false, "only measure the pages on the data already stored")
	f.BoolVar(&measureOnly, "measure-only", false, "alias of --skip-insert")
	return cmd
}

// pageFigure is one measured page's server time, ms; Budget is its target
// ("-": none).
type pageFigure struct {
	Name, Budget  string
	P50, P95, Max float64
}

// measurePages renders each measured page iterations times against st, prints
// the server time (handler start to last byte, in process) percentiles in ms
// and returns them.
func measurePages(ctx context.Context, out io.Writer, st store.Store, cfg web.Config, iterations int) ([]pageFigure, error) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	roles := store.NewRoles(st)
	if roles.TraceReader == nil {
		return nil, fmt.Errorf("generate: %w", store.NotSupported("store.TraceReader"))
	}
	if err := web.Register(r, web.ReadersOf(roles), cfg); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	page, err := roles.TraceReader.SearchTraces(ctx, store.TraceSearch{TraceFilter: store.TraceFilter{Limit: store.MaxListLimit}})
	if err != nil {
		return nil, fmt.Errorf("generate: pick traces: %w", err)
	}
	if len(page) == 0 {
		return nil, fmt.Errorf("generate: the store holds no traces to measure")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	newest := page[0].ReceivedAt
	mid := page[len(page)/2]
	targets := []struct {
		name, budget string
		url          func() string
	}{
		{"traces page (newest 50)", "150", func() string { return "/traces" }},
		{"traces page (app filter, keyset page 2)", "150", func() string {
			return "/traces?app=search&before=" + mid.ReceivedAt.Format(time.RFC3339Nano) + "&before_id=" + mid.RequestID
		}},
		{"traces page (text in input or output)", "150", func() string { return "/traces?q=refunds" }},
		{"traces page (candidate + status filters)", "150", func() string { return "/traces?candidate=conductor&status=error" }},
		{"traces page (worker + status + latency filters)", "150", func() string {
			return "/traces?worker=llama-4&status=error&min_ms=2000"
		}},
		{"trace page", "50", func() string { return "/traces/" + page[rng.IntN(len(page))].RequestID }},
		{"overview (24 h)", "300", func() string {
			return "/overview?to=" + newest.Add(time.Minute).Format("2006-01-02T15:04:05")
		}},
		{"workers (24 h)", "-", func() string {
			return "/workers?to=" + newest.Add(time.Minute).Format("2006-01-02T15:04:05")
		}},
	}
	fmt.Fprintf(out, "%-48s %8s %8s %8s %8s\n", "page", "p50 ms", "p95 ms", "max ms", "target")
	var figs []pageFigure
	for _, tg := range targets {
		var ms []float64
		for i := 0; i <= iterations; i++ {
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, tg.url(), nil)
			rec := httptest.NewRecorder()
			start := time.Now()
			r.ServeHTTP(rec, req)
			took := float64(time.Since(start).Microseconds()) / 1000
			if rec.Code != http.StatusOK {
				return nil, fmt.Errorf("generate: %s: status %d: %.300s", tg.url(), rec.Code, rec.Body.String())
			}
			if i > 0 { // the first render warms caches
				ms = append(ms, took)
			}
		}
		slices.Sort(ms)
		f := pageFigure{Name: tg.name, Budget: tg.budget, P50: percentile.NearestRank(ms, 50), P95: percentile.NearestRank(ms, 95), Max: ms[len(ms)-1]}
		fmt.Fprintf(out, "%-48s %8.1f %8.1f %8.1f %8s\n", f.Name, f.P50, f.P95, f.Max, f.Budget)
		figs = append(figs, f)
	}
	return figs, nil
}
