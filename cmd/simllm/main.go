// Command simllm serves the simulated worker pool (package shadow/simpool) as an
// OpenAI-compatible API: the Conductor paper's seven workers, a stand-in incumbent
// and the conductor models. Every answer is SIMULATED.
//
//	simllm --addr 127.0.0.1:9090 --seed 1 --latency-scale 1 --sets ./regression-sets [--rpm-per-model 600 --concurrent-per-model 16]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatalf("simllm: %v", err)
	}
}

// shutdownTimeout bounds the wait for in-flight (possibly slow, simulated) calls.
const shutdownTimeout = 10 * time.Second

func run(ctx context.Context) error {
	return runArgs(ctx, os.Args[1:], nil)
}

// runArgs parses args, serves until ctx ends, then shuts down gracefully. When
// ready is not nil it receives the listening address once the server accepts.
func runArgs(ctx context.Context, args []string, ready chan<- string) error {
	def := simpool.NewDefaultConfig()
	fs := flag.NewFlagSet("simllm", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9090", "listen address")
	seed := fs.Int64("seed", def.Seed, "seed of every simulated draw")
	scale := fs.Float64("latency-scale", def.LatencyScale, "multiplier of simulated latency: 1 = realistic, 0 = instant")
	sets := fs.String("sets", "./regression-sets", "folder of regression-set JSONL files to answer from")
	malformed := fs.Float64("malformed-plan-prob", def.MalformedPlanProb, "probability that a conductor plan is malformed")
	rateLimit := fs.Float64("rate-limit-prob", 0, "probability of a simulated 429")
	serverErr := fs.Float64("server-error-prob", 0, "probability of a simulated 500")
	rpm := fs.Int("rpm-per-model", 0, "requests per minute each model accepts before answering 429 with Retry-After (0: unlimited)")
	concurrent := fs.Int("concurrent-per-model", 0, "calls each model serves at once before answering 429 (0: unlimited)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := def
	cfg.Seed, cfg.LatencyScale, cfg.SetsDir = *seed, *scale, *sets
	cfg.MalformedPlanProb, cfg.RateLimitProb, cfg.ServerErrorProb = *malformed, *rateLimit, *serverErr
	cfg.RateLimit = simpool.RateLimit{RequestsPerMinute: *rpm, Concurrent: *concurrent}
	pool, err := simpool.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	srv := &http.Server{Handler: pool, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("simllm: simulated worker pool on http://%s (SIMULATED answers, seed %d)", ln.Addr(), cfg.Seed)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
