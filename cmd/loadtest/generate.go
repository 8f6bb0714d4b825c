package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/cmd/internal/progress"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// defaultDataFlag lets generate (and the tap throughput with --real-store)
// fill the configured data folder when no --data is given.
const defaultDataFlag = "load-test-into-default-data"

// generateCmd fills a new store with a synthetic data set and measures the
// web pages' server time on it.
func generateCmd(load platform.Loader) *cobra.Command {
	var (
		requests    int
		days        int
		skipInsert  bool
		iterations  int
		measureOnly bool
		defaultOK   bool
		forceBar    bool
	)
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Fill a new store with synthetic traces (INSERT … SELECT) and print the web pages' server-time p50/p95",
		Long: "Generates --requests requests over the last --days days, each with an incumbent run (1 step)\n" +
			"and a conductor run (9 steps): 500000 requests give 1,000,000 runs and 5,000,000 steps.\n" +
			"The rows have source 'generated': no page, verdict or dashboard counts them as production\n" +
			"(the overview shows them with ?source=generated). They go into a new folder only: --data\n" +
			"must name a folder that does not exist or is empty (the configured folder, default ./data,\n" +
			"only with --" + defaultDataFlag + "); a ClickHouse database must hold no requests.\n" +
			"Then renders the traces page, a trace page and the overview of the generated rows --iterations\n" +
			"times each in process (no network) and prints p50, p95 and max server time in ms.\n" +
			"--skip-insert measures a store generated before (it must exist).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			insert := !skipInsert && !measureOnly
			access := platform.AccessHere
			if insert {
				access = platform.AccessNew
				if err := platform.CheckNewFolder(cfg, cmd.Flags().Changed("data"), defaultOK, defaultDataFlag); err != nil {
					return fmt.Errorf("generate: %w", err)
				}
			}
			t, err := platform.ResolveStore(ctx, cfg, access, platform.Explicit{Data: cmd.Flags().Changed("data"), Addr: cmd.Flags().Changed("addr")})
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), t.Line)
			open := platform.OpenExistingStore
			if insert {
				open = platform.OpenStore
			}
			st, where, err := open(ctx, cfg)
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			defer st.Close()
			out, bars := cmd.OutOrStdout(), progress.Wanted(cmd.ErrOrStderr(), forceBar)
			to := time.Now().UTC().Truncate(time.Minute)
			from := to.Add(-time.Duration(days) * 24 * time.Hour)
			if insert {
				if cfg.Store.DSN != "" {
					if err := platform.CheckEmptyStore(ctx, st, where); err != nil {
						return fmt.Errorf("generate: %w", err)
					}
				}
				bar := progress.New(cmd.ErrOrStderr(), bars, int64(requests), "requests generated")
				var done int64
				res, err := store.Generate(ctx, st, store.GenerateSpec{Requests: requests, From: from, To: to,
					Progress: func(n int64) { bar.Add(int(n - done)); done = n }})
				bar.Finish()
				if err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				fmt.Fprintf(out, "generated into %s: %d requests, %d runs, %d steps, source 'generated' (requests %s, runs %s, steps %s)\n",
					where, res.Requests, res.Runs, res.Steps, res.Took["requests"].Round(time.Millisecond),
					res.Took["runs"].Round(time.Millisecond), res.Took["steps"].Round(time.Millisecond))
			}
			_, err = measurePages(ctx, out, st, cfg.Web, iterations, func(total int) *progress.Bar {
				return progress.New(cmd.ErrOrStderr(), bars, int64(total), "pages rendered")
			})
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&requests, "requests", 500_000, "requests to generate (runs = 2x, steps = 10x)")
	f.IntVar(&days, "days", 7, "spread the requests over this many days up to now")
	f.IntVar(&iterations, "iterations", 30, "renders per page for the server-time figures")
	f.BoolVar(&skipInsert, "skip-insert", false, "only measure the pages on a store generated before")
	f.BoolVar(&measureOnly, "measure-only", false, "alias of --skip-insert")
	f.BoolVar(&defaultOK, defaultDataFlag, false, "without --data, fill the configured data folder (default ./data) with load-test data; it must be new or empty")
	f.BoolVar(&forceBar, "progress", false, progress.FlagUsage)
	return platform.WithStore(cmd, platform.AccessNew)
}

// pageFigure is one measured page's server time, ms; Budget is its target
// ("-": none).
type pageFigure struct {
	Name, Budget  string
	P50, P95, Max float64
}

// measurePages renders each measured page iterations times against st, prints
// the server time (handler start to last byte, in process) percentiles in ms
// and returns them; newBar makes the progress bar over all renders (nil:
// none).
func measurePages(ctx context.Context, out io.Writer, st store.Store, cfg web.Config, iterations int, newBar func(total int) *progress.Bar) ([]pageFigure, error) {
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
			return "/overview?source=generated&to=" + newest.Add(time.Minute).Format("2006-01-02T15:04:05")
		}},
		{"workers (24 h)", "-", func() string {
			return "/workers?to=" + newest.Add(time.Minute).Format("2006-01-02T15:04:05")
		}},
	}
	// The table is printed once the bar is done, so the two do not mix.
	var table strings.Builder
	fmt.Fprintf(&table, "%-48s %8s %8s %8s %8s\n", "page", "p50 ms", "p95 ms", "max ms", "target")
	var figs []pageFigure
	var bar *progress.Bar
	if newBar != nil {
		bar = newBar(len(targets) * (iterations + 1))
	}
	defer bar.Finish()
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
			bar.Add(1)
		}
		slices.Sort(ms)
		f := pageFigure{Name: tg.name, Budget: tg.budget, P50: percentile.NearestRank(ms, 50), P95: percentile.NearestRank(ms, 95), Max: ms[len(ms)-1]}
		fmt.Fprintf(&table, "%-48s %8.1f %8.1f %8.1f %8s\n", f.Name, f.P50, f.P95, f.Max, f.Budget)
		figs = append(figs, f)
	}
	bar.Finish()
	if _, err := io.WriteString(out, table.String()); err != nil {
		return nil, err
	}
	return figs, nil
}
