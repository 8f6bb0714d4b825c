// Command conductor-shadow is the shadow-evaluation platform for learned LLM
// orchestrators: `serve` runs the tap, the shadow workers and the web UI; `replay`
// sends recorded exchanges to a tap; `suite run` runs a regression set through the
// incumbent and the candidates; `query` runs read-only SQL on the store; `review
// export` writes the human-reviewed pairs as a labelled set.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/cmd/internal/progress"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func main() {
	restrictUmask()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(withSelf(ctx, os.Args[1:]), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conductor-shadow:", err)
		os.Exit(1)
	}
}

// run executes one command line; only main exits.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := rootCmd(stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// rootCmd is the command tree, writing to stdout and stderr.
func rootCmd(stdout, stderr io.Writer) *cobra.Command {
	var flags platform.Flags
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	root := &cobra.Command{
		Use:           "conductor-shadow",
		Short:         "Shadow-evaluate a learned LLM orchestrator against the incumbent pipeline",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	flags.Register(root.PersistentFlags())
	load := flags.Loader(log)
	root.AddCommand(serveCmd(load, log), replayCmd(load, log), suiteCmd(load), queryCmd(load))
	root.AddCommand(setCmd(load), exportCmd(load), shiftCmd(load))
	root.AddCommand(forgetCmd(load), reviewCmd(load), dataFlowsCmd(load))
	root.AddCommand(gradeCmd(load), planCmd())
	root.AddCommand(powerCmd(), validityCmd())
	return root
}

func serveCmd(load platform.Loader, log *slog.Logger) *cobra.Command {
	var shadowSide string
	cmd := platform.WithStore(&cobra.Command{
		Use:   "serve",
		Short: "Run the tap, the shadow workers, the web UI and the API until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			srv := newServer(cfg, log)
			switch {
			case shadowSide != "": // started by a front (isolate.go): below it before anything heavy starts
				nice, err := lowerAllThreads(cfg.Server.ShadowNice, cfg.Server.ShadowIdle)
				if err != nil {
					return fmt.Errorf("serve: shadow side: %w", err)
				}
				log.Info("shadow side: every thread lowered", "niceness", nice, "idle_policy", cfg.Server.ShadowIdle)
				srv.side, srv.socket = sideShadow, shadowSide
			case isolates(cfg):
				self, ok := ctx.Value(selfKey{}).(selfExec)
				if !ok { // run in another program's process (tests): no binary to start again
					break
				}
				if srv.socket, err = shadowSocket(cfg); err != nil {
					return err
				}
				srv.side, srv.self = sideFront, self
			}
			tp, stop, err := newTracerProvider(ctx, cfg.Telemetry, srv.flows)
			if err != nil {
				return err
			}
			var once sync.Once
			var stopErr error
			stopTracing := func(ctx context.Context) error { once.Do(func() { stopErr = stop(ctx) }); return stopErr }
			srv.stopTracing = stopTracing
			if err := srv.Start(ctx, tp); err != nil {
				return errors.Join(err, stopTracing(context.Background()))
			}
			var serveErr error
			select {
			case <-ctx.Done():
			case serveErr = <-srv.Err():
			}
			log.Info("shutting down", "deadline", cfg.Server.ShutdownTimeout)
			// A fresh bounded context: the signal already cancelled ctx.
			shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
			defer cancel()
			return errors.Join(serveErr, srv.Shutdown(shutdownCtx), stopTracing(shutdownCtx))
		},
	}, platform.AccessOwn)
	cmd.Flags().StringVar(&shadowSide, shadowSideFlag, "", "run as the shadow side of an isolated server, on this unix socket (set by serve itself)")
	_ = cmd.Flags().MarkHidden(shadowSideFlag)
	return cmd
}

func replayCmd(load platform.Loader, log *slog.Logger) *cobra.Command {
	opts := replayOptions{Concurrency: 16}
	var forceBar bool
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Send recorded exchanges (JSONL) to a tap; lines without an answer get one from the incumbent",
		Long: `Send recorded exchanges (JSONL, one ingest exchange a line) to the tap of a running server;
lines without an answer get one from the incumbent worker first.

The server is asked first (GET /healthz): none answering is an error at once. A tap
answering 503 (its queue is full) or a dropped connection is retried a few times
with backoff (the retries are counted); a server that stops answering ends the
replay. The last line counts the lines sent, accepted (queued or duplicate),
refused (unreadable, or 4xx from the tap), failed and not sent; any line not
accepted makes the exit status non-zero.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			opts.File = args[0]
			if opts.TapURL == "" {
				opts.TapURL = platform.BaseURL(cfg.Server.Addr) + "/v1/tap"
			}
			// The server checked is the tap's.
			cfg.Server.Addr = strings.TrimSuffix(strings.TrimRight(opts.TapURL, "/"), "/v1/tap")
			if _, err := resolveStore(cmd, cfg); err != nil {
				return fmt.Errorf("%w; 0 lines sent", err)
			}
			opts.Token = os.Getenv(cfg.Server.APITokenEnv)
			opts.Incumbent = cfg.Pipelines.Incumbent
			opts.IsWorker = func(name string) bool { _, ok := cfg.Shadow.Worker(name); return ok }
			opts.Bar = progress.Wanted(cmd.ErrOrStderr(), forceBar)
			opts.BarTo = cmd.ErrOrStderr()
			pipes, err := platform.BuildPipelines(cfg)
			if err != nil {
				return err
			}
			defer pipes.Close()
			start := time.Now()
			counts, err := replay(cmd.Context(), opts, pipes.Pool, log)
			fmt.Fprintf(cmd.OutOrStdout(), "replay %s: %s in %s\n", opts.File, counts, time.Since(start).Round(time.Millisecond))
			if err == nil {
				err = counts.loss()
			}
			return err
		},
	}
	cmd.Flags().StringVar(&opts.TapURL, "tap", "", "tap URL (default http://<server.addr>/v1/tap)")
	cmd.Flags().IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "exchanges in flight at once")
	cmd.Flags().BoolVar(&forceBar, "progress", false, progress.FlagUsage)
	return platform.WithStore(cmd, platform.AccessServer)
}

func suiteCmd(load platform.Loader) *cobra.Command {
	suite := &cobra.Command{Use: "suite", Short: "Regression suites"}
	var (
		set             string
		limit           int
		local, forceBar bool
	)
	runCmd := &cobra.Command{
		Use:   "run",
		Short: "Run a regression set through the incumbent and the candidates and write the report",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(limit); err != nil {
				return fmt.Errorf("suite run: --%w", err)
			}
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			// The server resolves paths in its own folder: send an absolute one
			// (it runs only its own regression sets: those beside suite.set and
			// the scheduled suites' sets; --local runs any file).
			// A name that is no file here ("gsm8k-150") goes as it is.
			if _, statErr := os.Stat(set); set != "" && statErr == nil {
				set = platform.AbsPath(set)
			}
			// The embedded store has one owner: a running server that holds the
			// store runs the suite (platform.ResolveStore).
			t, err := resolveStore(cmd, cfg)
			if err != nil {
				return err
			}
			var bar *bool
			if forceBar {
				bar = &forceBar
			}
			printer := eval.NewProgressPrinter(cmd.ErrOrStderr(), bar)
			var res suiteResponse
			if t.Server {
				res, err = suiteThroughServer(ctx, serverAPI(cfg, t, 0), suiteRequest{Set: set, Limit: limit}, printer.Update)
				if err != nil {
					return err
				}
				printSuite(out, fromServer(cfg, res))
				return nil
			}
			st, where, err := platform.OpenExistingStore(ctx, cfg)
			if err != nil {
				return fmt.Errorf("suite run: %w", err)
			}
			defer st.Close()
			pipes, err := platform.BuildPipelines(cfg)
			if err != nil {
				return err
			}
			defer pipes.Close()
			roles := store.NewRoles(st)
			runner := &suiteRunner{cfg: cfg, stores: eval.SuiteStoresOf(roles), p: pipes, where: where,
				flows: &flowRecorder{reader: roles.FlowReader, settings: flowSettings(cfg, os.Getenv)}}
			res, err = runner.run(ctx, set, limit, printer.Update)
			if err != nil {
				return err
			}
			printSuite(out, res)
			return nil
		},
	}
	runCmd.Flags().StringVar(&set, "set", "", "regression-set JSONL file (default: suite.set of the config); through a running server only its sets (beside suite.set and the schedules' sets), by name or path")
	runCmd.Flags().IntVar(&limit, "limit", 0, "run only the first N cases (0: all)")
	runCmd.Flags().BoolVar(&local, "local", false, "open the store here instead of asking the running server (refused while a server holds it)")
	runCmd.Flags().BoolVar(&forceBar, "progress", false, progress.FlagUsage)
	suite.AddCommand(platform.WithStore(runCmd, platform.AccessEither))
	return suite
}

// suiteThroughServer runs a suite on the server (POST /api/suite-runs,
// answered as NDJSON: suiteStreamLine) and hands every progress line to
// progress.
func suiteThroughServer(ctx context.Context, c *apiClient, req suiteRequest, progress func(eval.SuiteProgress)) (suiteResponse, error) {
	var res *suiteResponse
	err := c.postStream(ctx, "/api/suite-runs", req, func(b []byte) error {
		var l suiteStreamLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("suite run: the server's answer: %w", err)
		}
		switch {
		case l.Error != "":
			return fmt.Errorf("server: %s", l.Error)
		case l.Result != nil:
			res = l.Result
		case l.Progress != nil:
			progress(*l.Progress)
		}
		return nil
	})
	if err != nil {
		return suiteResponse{}, err
	}
	if res == nil {
		return suiteResponse{}, errors.New("suite run: the server's answer ended before the suite run did (see the server's log)")
	}
	return *res, nil
}

func printSuite(w io.Writer, res suiteResponse) {
	verdict := res.Verdict
	if res.VerdictDetail != "" {
		verdict += " (" + res.VerdictDetail + ")"
	}
	fmt.Fprintf(w, "%s\nverdict: %s\nsuite run %s\nstore: %s\nreport: %s\n        %s\n        %s\n", res.Headline, verdict, res.SuiteRunID, res.Store, res.MarkdownPath, res.JSONPath, res.HTMLPath)
}

func queryCmd(load platform.Loader) *cobra.Command {
	var local bool
	cmd := &cobra.Command{
		Use:   `query "SQL"`,
		Short: "Run one read-only SQL statement on the store and print rows tab-separated",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			t, err := resolveStore(cmd, cfg)
			if err != nil {
				return err
			}
			var res store.QueryResult
			if t.Server {
				if err := serverAPI(cfg, t, 5*time.Minute).post(ctx, "/api/query", queryRequest{SQL: args[0]}, &res); err != nil {
					return err
				}
				return writeQueryResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), res)
			}
			st, _, err := platform.OpenExistingStore(ctx, cfg)
			if err != nil {
				return fmt.Errorf("query: %w", err)
			}
			defer st.Close()
			res, err = st.Query(store.WithConsoleCaller(ctx, "cli"), args[0])
			if err != nil {
				return err
			}
			return writeQueryResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), res)
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, "open the store here instead of asking the running server (refused while a server holds it)")
	return platform.WithStore(cmd, platform.AccessEither)
}
