package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// benchOptions drive `loadtest bench`.
type benchOptions struct {
	Rates        []int
	Roles        []string
	Duration     time.Duration
	Slice        time.Duration
	Repeat       int
	Delay        time.Duration
	Outstanding  int
	Exchanges    int
	Intake       []string
	Senders      int
	BatchItems   int
	PageRequests int // requests generated for the pages (runs = 2×); 0 skips the pages
	Iterations   int
	PoolURL      string
	ServerBin    string
}

// benchCmd is `loadtest bench`: every figure of the load commands in one run,
// side by side as ratios, so that the next change can be compared with this one.
func benchCmd(flags *platform.Flags, log *slog.Logger) *cobra.Command {
	load := flags.Loader(log)
	o := benchOptions{Rates: []int{250, 1000}, Roles: []string{platform.RoleAll, platform.RoleTap}, Duration: 15 * time.Second, Slice: defaultSlice, Repeat: 3,
		Delay: 50 * time.Millisecond, Outstanding: 1000, Exchanges: 100000, Intake: intakePaths, Senders: 512, BatchItems: 1000,
		PageRequests: 500_000, Iterations: 20}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Print every load figure side by side: proxy vs bare by role and rate (latency and CPU), durable intake per path, pages at 1M runs",
		Long: `Runs, in order, on a fresh data folder (--data, default a temporary one):
 1. pages: generates --page-requests requests (runs = 2×, steps = 10×; 500000 give
    1M runs) and renders each measured page --iterations times: p50/p95 server time.
 2. durable intake into the same store (so with the generated rows in it), once per
    --intake path (queue, batch, single): copies made durable (202) per second,
    candidate runs stored per second, process CPU seconds per 1,000 copies.
 3. roles: for each --rates rate, the open-loop load to the incumbent directly,
    a bare reverse proxy and serve in each --roles role (processes of their own),
    one path at a time in --slice slices rotating through the paths, --repeat
    rounds in which each path is driven --duration: added p95/p99 over direct, their
    ratios to the bare proxy's, and each process's CPU seconds per 1,000
    forwarded exchanges with its ratio to the bare proxy's. The all-in-one role's
    candidates call --pool, or bin/simllm started for the run; before the rounds
    it is driven alone until its shadow side's queue is full (saturated, as the
    target asks) and its backlog stays across the other paths' slices.
Then prints one summary table. Figures only: nothing here passes or fails but the
role verdicts, which are printed as figures too. Not part of make test.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			fresh := !cmd.Flags().Changed("data")
			if !fresh {
				// Generated rows go into a new folder only, as for generate.
				if err := platform.CheckNewFolder(cfg, true, false, defaultDataFlag); err != nil {
					return fmt.Errorf("bench: %w", err)
				}
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), cfg, flags, fresh, o, log)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&o.Rates, "rates", o.Rates, "requests/s per path of the role runs")
	f.StringSliceVar(&o.Roles, "roles", o.Roles, "serve roles compared with the bare proxy: all, tap (empty: skip the role runs)")
	f.DurationVar(&o.Duration, "duration", o.Duration, "how long each path is driven per role round (the sum of its slices)")
	f.DurationVar(&o.Slice, "slice", o.Slice, "how long a role round drives one path before the next path's turn")
	f.IntVar(&o.Repeat, "repeat", o.Repeat, "rounds per rate (medians over the sound ones)")
	f.DurationVar(&o.Delay, "delay", o.Delay, "stand-in incumbent's answer time")
	f.IntVar(&o.Outstanding, "outstanding", o.Outstanding, "most requests in flight per path")
	f.IntVar(&o.Exchanges, "exchanges", o.Exchanges, "copies per intake path (0: skip the intake runs)")
	f.StringSliceVar(&o.Intake, "intake", o.Intake, "intake paths: queue, batch, single")
	f.IntVar(&o.Senders, "senders", o.Senders, "HTTP clients posting at once on the batch and single intake paths")
	f.IntVar(&o.BatchItems, "batch-items", o.BatchItems, "exchanges per POST /v1/tap/batch")
	f.IntVar(&o.PageRequests, "page-requests", o.PageRequests, "requests generated for the page figures (0: skip the pages)")
	f.IntVar(&o.Iterations, "iterations", o.Iterations, "renders per page")
	f.StringVar(&o.PoolURL, "pool", "", "worker pool of the all-in-one server (default: start bin/simllm for the run)")
	f.StringVar(&o.ServerBin, "server-bin", "", "conductor-shadow binary of the role runs (default: beside this binary, then $PATH)")
	return cmd
}

// runBench runs the bench; freshData puts the embedded store in a temporary
// folder removed at the end (the --data folder was not named).
func runBench(ctx context.Context, out io.Writer, cfg platform.Config, flags *platform.Flags, freshData bool, o benchOptions, log *slog.Logger) error {
	if cfg.Store.DSN == "" && freshData {
		dir, err := os.MkdirTemp("", "conductor-shadow-bench-")
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.Store.Path = filepath.Join(dir, "data")
	}
	fmt.Fprintf(out, "bench %s on %s (%d CPUs)\n\n", time.Now().UTC().Format(time.RFC3339), hostName(), runtime.NumCPU())
	var pages []pageFigure
	var intake []intakeResult
	if o.PageRequests > 0 || o.Exchanges > 0 {
		st, where, err := platform.OpenStore(ctx, cfg)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer st.Close()
		if o.PageRequests > 0 {
			to := time.Now().UTC().Truncate(time.Minute)
			res, err := store.Generate(ctx, st, store.GenerateSpec{Requests: o.PageRequests, From: to.Add(-7 * 24 * time.Hour), To: to})
			if err != nil {
				return fmt.Errorf("bench: generate: %w", err)
			}
			fmt.Fprintf(out, "pages: generated into %s: %d requests, %d runs, %d steps\n", where, res.Requests, res.Runs, res.Steps)
			if pages, err = measurePages(ctx, out, st, cfg.Web, o.Iterations, nil); err != nil {
				return err
			}
			fmt.Fprintln(out)
		}
		if o.Exchanges > 0 {
			if intake, err = runIntakePaths(ctx, out, st, where, cfg.Writer, o.Intake, intakeOptions{Exchanges: o.Exchanges, Senders: o.Senders, BatchSize: o.BatchItems}, log); err != nil {
				return err
			}
			fmt.Fprintln(out)
		}
	}
	var roles []roleFigures
	if len(o.Roles) > 0 && len(o.Rates) > 0 {
		server := o.ServerBin
		if server == "" {
			var err error
			if server, err = siblingBinary("conductor-shadow", "--server-bin"); err != nil {
				return fmt.Errorf("bench: %w", err)
			}
		}
		pool := o.PoolURL
		if pool == "" {
			stop, url, err := startPool(ctx)
			if err != nil {
				return err
			}
			defer stop()
			pool = url
		}
		for _, rate := range o.Rates {
			ro := roleLoadOptions{Roles: o.Roles, Rate: rate, Duration: o.Duration, Slice: o.Slice, Delay: o.Delay, PoolURL: pool, Repeat: o.Repeat,
				Outstanding: o.Outstanding, KafkaBrokers: flags.Kafka, ServerBin: server}
			figs, err := runRoleLoad(ctx, out, ro)
			if err != nil {
				return err
			}
			roles = append(roles, figs...)
		}
	}
	printBenchSummary(out, roles, intake, pages)
	return nil
}

// startPool starts bin/simllm (found as the server binary is) on a loopback
// port with a fifth of realistic latency; stop ends it.
func startPool(ctx context.Context) (stop func(), url string, err error) {
	exe, err := siblingBinary("simllm", "--pool")
	if err != nil {
		return nil, "", fmt.Errorf("bench: the all-in-one role needs a worker pool: %w", err)
	}
	addr, err := loopbackAddr()
	if err != nil {
		return nil, "", err
	}
	args := []string{"--addr", addr, "--latency-scale", "0.2"}
	if st, err := os.Stat("regression-sets"); err == nil && st.IsDir() {
		args = append(args, "--sets", "regression-sets")
	}
	c, err := startChild(ctx, "simllm", addr, exe, args, os.Environ())
	if err != nil {
		return nil, "", err
	}
	return c.stop, c.url + "/v1", nil
}

// printBenchSummary prints the figures of the run side by side.
func printBenchSummary(out io.Writer, roles []roleFigures, intake []intakeResult, pages []pageFigure) {
	fmt.Fprintln(out, "== summary ==")
	if len(roles) > 0 {
		fmt.Fprintln(out, "proxy vs bare (medians of sound rounds; added = over direct):")
		fmt.Fprintf(out, "  %-11s %6s %10s %10s %9s %9s %10s %9s  %s\n", "path", "req/s", "added p95", "added p99", "×bare p95", "×bare p99", "CPU s/1k", "×bare CPU", "rounds")
		for _, f := range roles {
			fmt.Fprintf(out, "  %-11s %6d %10.2f %10.2f %9s %9s %10.3f %9s  %d of %d sound %s\n", f.Path, f.Rate, f.AddedP95, f.AddedP99,
				ratioOf(f.RatioP95, f.Role), ratioOf(f.RatioP99, f.Role), f.CPUPer1000, ratioOf(f.CPURatio, f.Role), f.SoundRounds, f.TotalRounds, f.Verdict)
		}
	}
	if len(intake) > 0 {
		fmt.Fprintln(out, "durable intake into the store (targets: queue and batch ≥ 20,000/s, single ≥ 5,000/s):")
		fmt.Fprintf(out, "  %-7s %12s %14s %10s %8s %6s\n", "path", "durable/s", "runs stored/s", "CPU s/1k", "resent", "lost")
		for _, r := range intake {
			fmt.Fprintf(out, "  %-7s %12.0f %14.0f %10.3f %8d %6d\n", r.Path, r.AcceptedPerSecond(), r.StoredPerSecond(), r.CPUPer1000(), r.Retries, r.Lost)
		}
	}
	if len(pages) > 0 {
		fmt.Fprintln(out, "pages (server time in process):")
		fmt.Fprintf(out, "  %-48s %8s %8s %8s %8s\n", "page", "p50 ms", "p95 ms", "target", "×target")
		for _, p := range pages {
			x := "-"
			if b, err := strconv.ParseFloat(p.Budget, 64); err == nil && b > 0 {
				x = fmt.Sprintf("%.2f×", p.P95/b)
			}
			fmt.Fprintf(out, "  %-48s %8.1f %8.1f %8s %8s\n", p.Name, p.P50, p.P95, p.Budget, x)
		}
	}
}

// ratioOf renders a ratio to the bare proxy; the bare proxy's own row is 1×.
func ratioOf(r float64, role string) string {
	if role == "" {
		return "1.00×"
	}
	if r <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", r)
}

func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return "this machine"
	}
	return h
}
