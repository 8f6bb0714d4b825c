// Command loadtest measures conductor-shadow under load, as a binary of its
// own so that the production binary carries none of its stand-ins (the fake
// incumbent, the counting store, the zero-latency candidate) nor the
// simulated pool: the mirroring proxy's added latency by role against a bare
// reverse proxy, the tap's throughput, behaviour with the store stopped
// (the root command), a candidate under concurrent users (--users), kill -9
// and SIGTERM of a real server under load (durability), and the web pages'
// server time on a generated store (generate). It runs conductor-shadow's
// `serve`, bin/simllm and bin/devkafka as processes, found beside this binary
// (make build) or on $PATH.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
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
	root := loadtestCmd(&flags, log)
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	flags.Register(pf)
	pf.Lookup("kafka-brokers").Usage = "Kafka brokers of the tap-only server of the role run (default: start bin/devkafka, the in-memory broker built beside this binary)"
	_ = pf.MarkHidden("role") // what serve runs: the role run sets it per server
	root.AddCommand(generateCmd(flags.Loader(log)))
	return root
}
