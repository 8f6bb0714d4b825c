package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// loadtestOptions drive `loadtest`.
type loadtestOptions struct {
	Rate        int           // requests/s sent directly and, at the same time, through the proxy
	Duration    time.Duration // length of the proxy-overhead run
	Delay       time.Duration // fake incumbent's answer time
	StopStoreAt float64       // fraction of Duration after which the store fails every INSERT; 0: never
	Stream      bool          // stream every answer (SSE)
	Exchanges   int           // exchanges offered in the tap-throughput run; 0 skips it
	RealStore   bool          // tap throughput into the configured store instead of an in-memory one
	Intake      []string      // intake paths of the real-store run: queue, batch, single
	Senders     int           // HTTP clients posting at once on the batch and single paths
	BatchItems  int           // exchanges per POST /v1/tap/batch
	DefaultData bool          // with RealStore and no --data: the configured folder (it must be new or empty)
	CPUProfile  string        // write a CPU profile of the whole run here
	Sequential  bool          // run the direct load, then the proxied one, instead of both at once
	NoMirror    bool          // the proxy forwards but offers nothing to the tap (isolates the hop's cost)
	InProcess   bool          // run the in-process proxy-overhead run (1.)
	Roles       []string      // roles for the side-by-side run against a bare proxy; empty skips it
	Slice       time.Duration // how long the role run drives one path before the next
	PoolURL     string        // worker pool of the all-in-one server; "" = the configured workers' base URL
	Repeat      int           // rounds of the role run (medians printed when > 1)
	Outstanding int           // most requests in flight per path; one due beyond it is counted unsent
	ServerBin   string        // conductor-shadow binary of the role run; "": beside this binary, then $PATH
}

// nopOfferer takes nothing.
type nopOfferer struct{}

func (nopOfferer) Offer(context.Context, ingest.Exchange) (int, ingest.TapResponse) {
	return http.StatusOK, ingest.TapResponse{Status: "unsampled"}
}

// loadtestCmd is the root command: the proxy, role and tap-throughput runs,
// with its subcommands. flags are the shared ones (--config, --data, ...);
// their --kafka-brokers names the tap-only server's brokers here.
func loadtestCmd(flags *platform.Flags, log *slog.Logger) *cobra.Command {
	load := flags.Loader(log)
	opts := loadtestOptions{Rate: 1000, Duration: 30 * time.Second, Delay: 50 * time.Millisecond, StopStoreAt: 0.5, Exchanges: 100000,
		Intake: []string{intakeQueue}, Senders: 512, BatchItems: 1000, InProcess: true, Roles: []string{platform.RoleAll, platform.RoleTap}, Outstanding: 1000}
	cmd := &cobra.Command{
		Use:   "loadtest",
		Short: "Measure the mirroring proxy's added latency by role against a bare reverse proxy, the tap's throughput, and behaviour with the store stopped",
		Long: `Runs on loopback, in one process:
 1. a fake incumbent answering in --delay; the same open-loop load (--rate requests/s
    for --duration) is sent directly to it and, at the same time, through the
    mirroring proxy with the real tap, PII pseudonymizer, queue and shadow workers
    behind it. Only the candidate and the store are stand-ins: the workers run a
    zero-latency candidate ("instant") into a store that counts rows and keeps none,
    so the figure is the proxy's own cost with the shadow side busy; run 2 measures
    real candidates and the real store.
    After --stop-store-at of the run the store fails every INSERT. Prints p50/p95/p99
    of each path and the difference, production errors, and the tap's accounting.
    (--inprocess=false skips it.)
 2. roles (--roles all,tap): the same open-loop load to the fake incumbent
    directly, to a bare httputil.ReverseProxy and to ` + "`serve`" + ` in each role, every
    one its own process, one path at a time: --slice of --rate on one path, then
    the next, rotating until each path was driven --duration (so the generator
    sends --rate, not --rate per path at once, and a server's background work,
    the all-in-one server's shadow backlog, goes on across the slices; the
    all-in-one server is first driven alone until its shadow side's queue is
    full): the all-in-one server (embedded store, candidates calling the
    worker pool at --pool, which must be running) and the tap-only server
    (copies to a Kafka peer). Prints p50/p95/p99, the added
    latency over direct, its ratio to the bare proxy's and the target (all-in-one
    ≤ 2× bare + 0.5 ms at p95 and + 1 ms at p99; tap-only ≤ 1.5× with the same
    allowances), and each server's shadow-side accounting.
 3. tap throughput: --exchanges copies offered to the tap with zero-latency shadow
    workers writing through the store writer; prints exchanges/s stored. With
    --real-store, into the configured store behind the store-first queue, once per
    --intake path (queue: handed over as the mirroring proxy does; batch: POST
    /v1/tap/batch of --batch-items; single: POST /v1/tap, --senders at once), each
    with the copies made durable (202) per second, candidate runs stored per
    second and process CPU seconds per 1,000 copies.
The load is open-loop: latency runs from each request's intended send time; at
most --outstanding requests are in flight per path, and requests due beyond that
(unsent), sent over 1 ms late (late) and failed (errors) are counted per path.
A role round whose direct path shows a saturated machine gets no verdict.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if opts.Rate < 1 || opts.Outstanding < 1 {
				return fmt.Errorf("loadtest: --rate %d and --outstanding %d must be at least 1", opts.Rate, opts.Outstanding)
			}
			nofile, err := raiseOpenFileLimit()
			if err != nil {
				fmt.Fprintf(out, "warning: %v (open-file limit stays %d)\n", err, nofile)
			} else if need := uint64(opts.Outstanding)*8 + 256; nofile < need {
				fmt.Fprintf(out, "warning: open-file limit %d is below the ~%d this run may need\n", nofile, need)
			}
			if opts.CPUProfile != "" {
				f, err := os.Create(opts.CPUProfile)
				if err != nil {
					return fmt.Errorf("loadtest: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("loadtest: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			if opts.InProcess {
				if err := runProxyLoad(cmd.Context(), out, opts); err != nil {
					return err
				}
			}
			if len(opts.Roles) > 0 {
				pool := opts.PoolURL
				if pool == "" && len(cfg.Shadow.Workers) > 0 {
					pool = cfg.Shadow.Workers[0].BaseURL
				}
				server := opts.ServerBin
				if server == "" {
					if server, err = siblingBinary("conductor-shadow", "--server-bin"); err != nil {
						return fmt.Errorf("loadtest: --roles: %w", err)
					}
				}
				ro := roleLoadOptions{Roles: opts.Roles, Rate: opts.Rate, Duration: opts.Duration, Slice: opts.Slice, Delay: opts.Delay, PoolURL: pool, Repeat: opts.Repeat,
					Outstanding: opts.Outstanding, KafkaBrokers: flags.Kafka, ServerBin: server}
				if _, err := runRoleLoad(cmd.Context(), out, ro); err != nil {
					return err
				}
			}
			if opts.Exchanges > 0 {
				if opts.RealStore {
					// The copies are load-test data: a new folder only.
					if err := platform.CheckNewFolder(cfg, cmd.Flags().Changed("data"), opts.DefaultData, defaultDataFlag); err != nil {
						return fmt.Errorf("loadtest: --real-store: %w", err)
					}
					t, err := platform.ResolveStore(cmd.Context(), cfg, platform.AccessNew, platform.Explicit{Data: cmd.Flags().Changed("data")})
					if err != nil {
						return fmt.Errorf("loadtest: --real-store: %w", err)
					}
					fmt.Fprintln(cmd.ErrOrStderr(), t.Line)
				}
				return runTapThroughput(cmd.Context(), out, cfg, opts, log)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Rate, "rate", opts.Rate, "requests/s on each path (direct and proxied)")
	f.DurationVar(&opts.Duration, "duration", opts.Duration, "length of the proxy run")
	f.DurationVar(&opts.Delay, "delay", opts.Delay, "fake incumbent answer time")
	f.Float64Var(&opts.StopStoreAt, "stop-store-at", opts.StopStoreAt, "fraction of the run after which the store fails (0: never)")
	f.BoolVar(&opts.Stream, "stream", false, "stream every answer (SSE)")
	f.IntVar(&opts.Exchanges, "exchanges", opts.Exchanges, "exchanges for the tap-throughput run (0: skip)")
	f.BoolVar(&opts.Sequential, "sequential", false, "send the direct load first, then the proxied one (halves the peak load)")
	f.BoolVar(&opts.NoMirror, "no-mirror", false, "forward without offering copies to the tap (the bare proxy hop)")
	f.BoolVar(&opts.InProcess, "inprocess", opts.InProcess, "run the in-process proxy-overhead run")
	f.StringSliceVar(&opts.Roles, "roles", opts.Roles, "serve roles compared side by side with a bare reverse proxy: all, tap (empty: skip)")
	f.IntVar(&opts.Repeat, "repeat", 1, "rounds of the role run, each driving every path --duration; medians are printed when > 1")
	f.DurationVar(&opts.Slice, "slice", defaultSlice, "role run: how long one path is driven before the next path's turn")
	f.IntVar(&opts.Outstanding, "outstanding", opts.Outstanding, "most requests in flight per path (keep-alive connections per target); a request due beyond it is counted unsent")
	f.StringVar(&opts.ServerBin, "server-bin", "", "conductor-shadow binary whose serve the role run starts (default: beside this binary, then $PATH)")
	f.StringVar(&opts.PoolURL, "pool", "", "worker pool base URL of the all-in-one server (default: the configured workers')")
	f.StringVar(&opts.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.BoolVar(&opts.RealStore, "real-store", false, "tap throughput into a new store (--data NEW_FOLDER, or an empty ClickHouse database) instead of memory")
	f.BoolVar(&opts.DefaultData, defaultDataFlag, false, "with --real-store and no --data, fill the configured data folder (default ./data); it must be new or empty")
	f.StringSliceVar(&opts.Intake, "intake", opts.Intake, "intake paths of the --real-store run: queue, batch, single")
	f.IntVar(&opts.Senders, "senders", opts.Senders, "HTTP clients posting at once on the batch and single intake paths")
	f.IntVar(&opts.BatchItems, "batch-items", opts.BatchItems, "exchanges per POST /v1/tap/batch")
	// The servers of the role run and of durability keep their stores in
	// folders of their own; --real-store fills a new folder only.
	cmd.AddCommand(platform.WithStore(bareProxyCmd(), platform.AccessNone))
	cmd.AddCommand(platform.WithStore(loadIncumbentCmd(), platform.AccessNone))
	cmd.AddCommand(platform.WithStore(durabilityCmd(), platform.AccessNone))
	cmd.AddCommand(platform.WithStore(benchCmd(flags, log), platform.AccessNew))
	addUsersLoad(cmd, load) // --users: a candidate under concurrent users (loadtest_users.go)
	return platform.WithStore(cmd, platform.AccessNone)
}

// instantPipeline is a zero-latency candidate: it answers at once with one step.
type instantPipeline struct{}

func (instantPipeline) Name() string    { return "instant" }
func (instantPipeline) Version() string { return "v1" }
func (instantPipeline) Run(_ context.Context, req shadow.Request, mode string) shadow.Result {
	id := shadow.RunID(req.RequestID, req.SuiteRunID, "instant")
	return shadow.Result{
		Run:   store.Run{RunID: id, RequestID: req.RequestID, Pipeline: "instant", PipelineVersion: "v1", Mode: mode, Status: store.StatusOK, FinalOutput: "ok", Calls: 1, StartedAt: time.Now().UTC()},
		Steps: []store.Step{{RunID: id, Parent: -1, Worker: "instant", Access: `"all"`, Status: store.StatusOK, Output: "ok", Attempt: 1, StartedAt: time.Now().UTC()}},
	}
}

// listen serves h on a fresh loopback port.
func listen(h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("loadtest: listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func runProxyLoad(ctx context.Context, out io.Writer, o loadtestOptions) error {
	fake := &loadIncumbent{Delay: o.Delay, Chunks: 5}
	incSrv, incURL, err := listen(fake)
	if err != nil {
		return err
	}
	defer incSrv.Close()

	cfg := ingest.NewDefaultConfig()
	stats := ingest.NewStats()
	q := ingest.NewMemoryQueue(cfg.QueueSize)
	tap, err := ingest.NewTap(cfg, q, stats, ingest.WithPIISecret([]byte("loadtest-secret")))
	if err != nil {
		return err
	}
	st := &sinkStore{}
	proc := ingest.NewProcessor(cfg, q, ingest.StoreWriter{Store: st}, []shadow.Pipeline{instantPipeline{}}, nil, stats, nil)
	if err := proc.Start(ctx); err != nil {
		return err
	}
	pcfg := ingest.NewDefaultProxyConfig()
	pcfg.IncumbentURL = incURL
	var offerer ingest.Offerer = tap
	if o.NoMirror {
		offerer = nopOfferer{}
	}
	proxy, err := ingest.NewProxy(pcfg, offerer, stats, nil, nil)
	if err != nil {
		return err
	}
	if err := proxy.Start(ctx); err != nil {
		return err
	}
	pxSrv, pxURL, err := listen(proxy.Front(http.NotFoundHandler()))
	if err != nil {
		return err
	}

	client := newLoadClient(o.Outstanding)
	direct, proxied := &pathResult{}, &pathResult{}
	streamField := ""
	if o.Stream {
		streamField = `"stream":true,"stream_options":{"include_usage":true},`
	}
	target := func(base string, r *pathResult) loadTarget {
		return loadTarget{result: r, request: func(ctx context.Context, i int) (*http.Request, error) {
			body := fmt.Sprintf(`{"model":"gpt-4o",%s"messages":[{"role":"user","content":"Customer %d (user%d@example.com, +1 415 555 %04d) asks: what is %d * 7?"}]}`, streamField, i, i, i%10000, i)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
			}
			return req, err
		}}
	}

	mode := "at the same time"
	if o.Sequential {
		mode = "one after the other"
	}
	fmt.Fprintf(out, "proxy overhead: %d req/s for %s directly and through the proxy (%s), incumbent answers in %s, stream=%v, at most %d outstanding per path\n", o.Rate, o.Duration, mode, o.Delay, o.Stream, o.Outstanding)
	var processedAtStop int64
	// drive runs the open-loop load on the targets, stopping the store at the
	// configured fraction.
	drive := func(targets []loadTarget, stopFraction float64) (int, time.Duration) {
		start := time.Now()
		total := int(o.Duration / (time.Second / time.Duration(o.Rate)))
		stopAt := -1
		if stopFraction > 0 {
			stopAt = int(float64(total) * stopFraction)
		}
		loop := openLoop{Rate: o.Rate, Duration: o.Duration, Outstanding: o.Outstanding, Client: client, OnTick: func(i int) {
			if i == stopAt && !st.stopped.Load() {
				st.stopped.Store(true)
				processedAtStop = stats.Snapshot(0).Processed
				fmt.Fprintf(out, "store stopped after %s\n", time.Since(start).Round(time.Millisecond))
			}
		}}
		return loop.run(ctx, targets)
	}
	var elapsed time.Duration
	var total int
	if o.Sequential {
		var e time.Duration
		total, elapsed = drive([]loadTarget{target(incURL, direct)}, 0) // the store only matters to the proxied run
		total, e = drive([]loadTarget{target(pxURL, proxied)}, o.StopStoreAt)
		elapsed += e
	} else {
		total, elapsed = drive([]loadTarget{target(incURL, direct), target(pxURL, proxied)}, o.StopStoreAt)
	}
	client.CloseIdleConnections()

	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = pxSrv.Shutdown(shutCtx)
	_ = proxy.Shutdown(shutCtx)
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelDrain()
	_ = proc.Shutdown(drainCtx) // with the store stopped, the drain ends at its deadline

	slices.Sort(direct.latencies)
	slices.Sort(proxied.latencies)
	fmt.Fprintf(out, "sent %d requests per path in %s\n", total, elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "%-8s %10s %10s %10s %8s %8s %8s\n", "path", "p50", "p95", "p99", "errors", "unsent", "late")
	for _, row := range []struct {
		name string
		r    *pathResult
	}{{"direct", direct}, {"proxied", proxied}} {
		d := row.r.latencies
		fmt.Fprintf(out, "%-8s %10s %10s %10s %8d %8d %8d\n", row.name, ms(percentile.Durations(d, 50)), ms(percentile.Durations(d, 95)), ms(percentile.Durations(d, 99)), row.r.errors.Load(), row.r.unsent.Load(), row.r.late.Load())
		if e := row.r.firstError(); e != "" {
			fmt.Fprintf(out, "  first error on %s: %s\n", row.name, e)
		}
	}
	fmt.Fprintf(out, "%-8s %10s %10s %10s\n", "added",
		ms(percentile.Durations(proxied.latencies, 50)-percentile.Durations(direct.latencies, 50)),
		ms(percentile.Durations(proxied.latencies, 95)-percentile.Durations(direct.latencies, 95)),
		ms(percentile.Durations(proxied.latencies, 99)-percentile.Durations(direct.latencies, 99)))

	snap := stats.Snapshot(q.Len())
	var dropped int64
	for _, n := range snap.Dropped {
		dropped += n
	}
	// Every answered request yields a copy: offered to the tap, or dropped before it
	// when every capture slot was busy.
	offered := snap.Mirrored[ingest.ProxyOutcomeOffered] + snap.Mirrored[ingest.ProxyOutcomeCaptureBusy]
	fmt.Fprintf(out, "production errors through the proxy: %d\n", proxied.errors.Load())
	fmt.Fprintf(out, "tap: mirrored %v; accepted %d, processed %d (%d before the store stopped), dropped %d %v, unsampled %v, pii %v\n",
		snap.Mirrored, snap.Accepted, snap.Processed, processedAtStop, dropped, snap.Dropped, snap.Unsampled, snap.PII)
	fmt.Fprintf(out, "accounting: copies %d - processed %d = %d not stored; tap reports %d dropped: %s\n",
		offered, snap.Processed, offered-snap.Processed, dropped, map[bool]string{true: "match", false: "MISMATCH"}[offered-snap.Processed == dropped])
	fmt.Fprintf(out, "store took %d requests\n\n", st.requests.Load())
	return nil
}

func runTapThroughput(ctx context.Context, out io.Writer, cfg platform.Config, o loadtestOptions, log *slog.Logger) error {
	if o.RealStore {
		st, where, err := platform.OpenStore(ctx, cfg)
		if err != nil {
			return fmt.Errorf("loadtest: %w", err)
		}
		defer st.Close()
		if cfg.Store.DSN != "" {
			if err := platform.CheckEmptyStore(ctx, st, where); err != nil {
				return fmt.Errorf("loadtest: --real-store: %w", err)
			}
		}
		_, err = runIntakePaths(ctx, out, st, where, cfg.Writer, o.Intake, intakeOptions{Exchanges: o.Exchanges, Senders: o.Senders, BatchSize: o.BatchItems}, log)
		return err
	}
	st := &sinkStore{}
	icfg := ingest.NewDefaultConfig()
	stats := ingest.NewStats()
	q := ingest.NewMemoryQueue(icfg.QueueSize)
	tap, err := ingest.NewTap(icfg, q, stats, ingest.WithPIISecret([]byte("loadtest-secret")))
	if err != nil {
		return err
	}
	w, err := store.NewWriter(st, cfg.Writer, nil)
	if err != nil {
		return err
	}
	w.Start(ctx)
	proc := ingest.NewProcessor(icfg, q, w, []shadow.Pipeline{instantPipeline{}}, nil, stats, nil)
	if err := proc.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "tap throughput: %d exchanges, zero-latency shadow workers, counting store (keeps nothing)\n", o.Exchanges)
	start := time.Now()
	retries := 0
	run := fmt.Sprint(start.UnixNano())
	for i := 0; i < o.Exchanges && ctx.Err() == nil; i++ {
		ex := loadExchange(run, i)
		for {
			code, _ := tap.Offer(ctx, ex)
			if code != http.StatusServiceUnavailable {
				break
			}
			retries++ // queue full: measure what is sustained, so wait for room
			time.Sleep(100 * time.Microsecond)
		}
	}
	offerDone := time.Since(start)
	drainCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := proc.Shutdown(drainCtx); err != nil {
		return err
	}
	if err := w.Shutdown(drainCtx); err != nil {
		return err
	}
	elapsed := time.Since(start)
	snap := stats.Snapshot(0)
	ws := w.Stats()
	fmt.Fprintf(out, "offered in %s (%d waits for a full queue); all stored in %s\n", offerDone.Round(time.Millisecond), retries, elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "processed %d (refused offers, all retried: %v); writer wrote %d rows in %d flushes, dropped %d\n", snap.Processed, snap.Dropped, ws.Written, ws.Flushes, ws.Dropped)
	fmt.Fprintf(out, "throughput: %.0f exchanges/s stored (%.0f rows/s)\n", float64(snap.Processed)/elapsed.Seconds(), float64(ws.Written)/elapsed.Seconds())
	return nil
}
