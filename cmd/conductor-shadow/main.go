// Command conductor-shadow is the shadow-evaluation platform for learned LLM
// orchestrators: `serve` runs the tap, the shadow workers and the web UI; `replay`
// sends recorded exchanges to a tap; `suite run` runs a regression set through the
// incumbent and the candidates; `query` runs read-only SQL on the store; `review
// export` writes the human-reviewed pairs as a labelled set.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func main() {
	restrictUmask()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conductor-shadow:", err)
		os.Exit(1)
	}
}

// run executes one command line; only main exits.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var flags platform.Flags
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	root := &cobra.Command{
		Use:           "conductor-shadow",
		Short:         "Shadow-evaluate a learned LLM orchestrator against the incumbent pipeline",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	flags.Register(root.PersistentFlags())
	load := flags.Loader(log)
	root.AddCommand(serveCmd(load, log), replayCmd(load, log), suiteCmd(load, log), queryCmd(load))
	root.AddCommand(setCmd(load), exportCmd(load), shiftCmd(load))
	root.AddCommand(forgetCmd(load), reviewCmd(load), dataFlowsCmd(load))
	root.AddCommand(gradeCmd(load), planCmd())
	root.AddCommand(powerCmd(), validityCmd())
	return root.ExecuteContext(ctx)
}

func serveCmd(load platform.Loader, log *slog.Logger) *cobra.Command {
	return &cobra.Command{
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
	}
}

func replayCmd(load platform.Loader, log *slog.Logger) *cobra.Command {
	opts := replayOptions{Concurrency: 16}
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Send recorded exchanges (JSONL) to a tap; lines without an answer get one from the incumbent",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			opts.File = args[0]
			if opts.TapURL == "" {
				opts.TapURL = "http://" + cfg.Server.Addr + "/v1/tap"
			}
			opts.Token = os.Getenv(cfg.Server.APITokenEnv)
			opts.Incumbent = cfg.Pipelines.Incumbent
			opts.IsWorker = func(name string) bool { _, ok := cfg.Shadow.Worker(name); return ok }
			pipes, err := platform.BuildPipelines(cfg)
			if err != nil {
				return err
			}
			defer pipes.Close()
			start := time.Now()
			counts, err := replay(cmd.Context(), opts, pipes.Pool, log)
			fmt.Fprintf(cmd.OutOrStdout(), "replay %s: %s in %s\n", opts.File, counts, time.Since(start).Round(time.Millisecond))
			return err
		},
	}
	cmd.Flags().StringVar(&opts.TapURL, "tap", "", "tap URL (default http://<server.addr>/v1/tap)")
	cmd.Flags().IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "exchanges in flight at once")
	return cmd
}

func suiteCmd(load platform.Loader, log *slog.Logger) *cobra.Command {
	suite := &cobra.Command{Use: "suite", Short: "Regression suites"}
	var (
		set   string
		limit int
		local bool
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
				if abs, err := filepath.Abs(set); err == nil {
					set = abs
				}
			}
			// The embedded store has one owner: a running server that holds the
			// store asked for runs the suite; an explicit --data or --addr wins.
			useServer, note, err := suiteTarget(ctx, cfg, local, cmd.Flags().Changed("data"), cmd.Flags().Changed("addr"))
			if err != nil {
				return err
			}
			var res suiteResponse
			if useServer {
				if answered, err := askServer(ctx, cfg, false, "/api/suite-runs", 0, suiteRequest{Set: set, Limit: limit}, &res); answered {
					if err == nil {
						printSuite(out, fromServer(cfg, res))
					}
					return err
				}
				note = "no server answering at " + cfg.Server.Addr
			}
			st, where, err := platform.OpenStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			pipes, err := platform.BuildPipelines(cfg)
			if err != nil {
				return err
			}
			defer pipes.Close()
			if note != "" {
				log.Info(note+"; running the suite against the store directly", "store", where)
			}
			roles := store.NewRoles(st)
			runner := &suiteRunner{cfg: cfg, stores: eval.SuiteStoresOf(roles), p: pipes, where: where,
				flows: &flowRecorder{reader: roles.FlowReader, settings: flowSettings(cfg, os.Getenv)}}
			res, err = runner.run(ctx, set, limit, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			printSuite(out, res)
			return nil
		},
	}
	runCmd.Flags().StringVar(&set, "set", "", "regression-set JSONL file (default: suite.set of the config); through a running server only its sets (beside suite.set and the schedules' sets), by name or path")
	runCmd.Flags().IntVar(&limit, "limit", 0, "run only the first N cases (0: all)")
	runCmd.Flags().BoolVar(&local, "local", false, "open the store directly instead of asking a running server")
	suite.AddCommand(runCmd)
	return suite
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
			var res store.QueryResult
			if answered, err := askServer(ctx, cfg, local, "/api/query", 5*time.Minute, queryRequest{SQL: args[0]}, &res); answered {
				if err != nil {
					return err
				}
				return writeQueryResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), res)
			}
			st, _, err := platform.OpenStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			res, err = st.Query(store.WithConsoleCaller(ctx, "cli"), args[0])
			if err != nil {
				return err
			}
			return writeQueryResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), res)
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, "open the store directly instead of asking a running server")
	return cmd
}
