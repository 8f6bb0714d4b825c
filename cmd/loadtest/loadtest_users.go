package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// usersOptions drive `loadtest --users`: a candidate pipeline under concurrent
// users on real prompts.
type usersOptions struct {
	Replay    string        // replay file (JSONL of tapped exchanges) whose user prompts are sent
	Users     string        // comma-separated concurrency levels, e.g. "1,8,32,64"
	Level     time.Duration // how long each level issues requests
	Candidate string        // candidate pipeline name; "" = the first configured
	JSON      bool          // print JSON instead of the table
	// SimPool starts the simulated pool in process and points every worker at it.
	SimPool         bool
	SimSets         string
	SimLatencyScale float64
	SimRPM          int // each simulated model's requests per minute (0 = unlimited)
	SimConcurrent   int // each simulated model's concurrent calls (0 = unlimited)
}

// addUsersLoad adds the --users mode to the loadtest command: with --users set,
// loadtest runs it instead of the proxy and tap measurements.
func addUsersLoad(cmd *cobra.Command, load platform.Loader) {
	o := usersOptions{Level: 20 * time.Second, SimSets: "regression-sets", SimLatencyScale: 0.02, SimRPM: 600}
	f := cmd.Flags()
	f.StringVar(&o.Replay, "replay", "", "replay file (JSONL exchanges) whose prompts the users send, e.g. regression-sets/replay/production-350.jsonl")
	f.StringVar(&o.Users, "users", "", "concurrency levels of the candidate load, e.g. 1,8,32,64 (runs the users load instead of the proxy load)")
	f.DurationVar(&o.Level, "level-duration", o.Level, "how long each --users level sends requests")
	f.StringVar(&o.Candidate, "candidate", "", "candidate pipeline to load (default: the first configured)")
	f.BoolVar(&o.JSON, "json", false, "print the --users figures as JSON")
	f.BoolVar(&o.SimPool, "sim-pool", false, "run the simulated pool in process with per-model rate limits and point every worker at it")
	f.StringVar(&o.SimSets, "sim-sets", o.SimSets, "regression-set folder the simulated pool answers from")
	f.Float64Var(&o.SimLatencyScale, "sim-latency-scale", o.SimLatencyScale, "simulated latency multiplier (1 = realistic)")
	f.IntVar(&o.SimRPM, "sim-rpm", o.SimRPM, "requests per minute each simulated model accepts before answering 429 (0: unlimited)")
	f.IntVar(&o.SimConcurrent, "sim-concurrent", 0, "concurrent calls each simulated model accepts before answering 429 (0: unlimited)")
	inner := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if o.Users == "" {
			return inner(c, args)
		}
		cfg, err := load()
		if err != nil {
			return err
		}
		return runUsersLoad(c.Context(), c.OutOrStdout(), cfg, o)
	}
}

// UsersLevel is the figures of one concurrency level. Requests counts the runs
// that finished; Completed those that produced an answer (the candidate's or a
// fallback's), and RequestsPerSecond is Completed / ElapsedS. Latency is the
// wall time of one answered run (ms, figure.Latency: nearest rank over known
// latencies). Cost per request is figure.CostPerRequest: the runs' total cost
// (USD) / the requests sent (one run each), as in suite reports and the overview.
// Error share: runs whose status is error or budget_exceeded; fallback share:
// runs a fallback answered (status plan_unparsable or a "fallback" step).
// Retries are worker-call attempts beyond the first; RateLimited are 429s the
// simulated pool answered (-1 when the pool is not the in-process simulation).
type UsersLevel struct {
	Users             int     `json:"users"`
	Requests          int     `json:"requests"`
	Completed         int     `json:"completed"`
	ElapsedS          float64 `json:"elapsed_s"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	P50LatencyMs      float64 `json:"p50_latency_ms"`
	P95LatencyMs      float64 `json:"p95_latency_ms"`
	CostPerRequestUSD float64 `json:"cost_per_request_usd"`
	ErrorShare        float64 `json:"error_share"`
	FallbackShare     float64 `json:"fallback_share"`
	Calls             int     `json:"calls"`
	Retries           int     `json:"retries"`
	RateLimited       int64   `json:"rate_limited_429"`
}

// UsersReport is the output of `loadtest --users`.
type UsersReport struct {
	Candidate string       `json:"candidate"`
	Replay    string       `json:"replay"`
	Prompts   int          `json:"prompts"`
	Simulated bool         `json:"simulated"`
	SimRPM    int          `json:"sim_rpm_per_model,omitempty"`
	Levels    []UsersLevel `json:"levels"`
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("loadtest: --users %q: each level must be a whole number from 1 to 4096", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// replayPrompts reads the user conversations of a replay file (one tapped
// exchange per line). A line that does not decode is an error naming it.
func replayPrompts(path string) ([]shadow.Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loadtest: --replay: %w", err)
	}
	defer f.Close()
	var out []shadow.Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		ex, err := ingest.DecodeExchange(sc.Bytes(), 1<<16, false)
		if err != nil {
			return nil, fmt.Errorf("loadtest: --replay %s line %d: %w", path, n, err)
		}
		out = append(out, ex.ShadowRequest())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("loadtest: --replay %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loadtest: --replay %s holds no exchange", path)
	}
	return out, nil
}

func runUsersLoad(ctx context.Context, out io.Writer, cfg platform.Config, o usersOptions) error {
	levels, err := parseLevels(o.Users)
	if err != nil {
		return err
	}
	if o.Replay == "" {
		return errors.New("loadtest: --users needs --replay FILE (the prompts the users send)")
	}
	if o.Level <= 0 {
		return fmt.Errorf("loadtest: --level-duration must be positive, got %v", o.Level)
	}
	prompts, err := replayPrompts(o.Replay)
	if err != nil {
		return err
	}
	rep := UsersReport{Replay: o.Replay, Prompts: len(prompts), Simulated: o.SimPool}
	var sim *simpool.Server
	if o.SimPool {
		scfg := simpool.NewDefaultConfig()
		scfg.SetsDir, scfg.LatencyScale = o.SimSets, o.SimLatencyScale
		scfg.RateLimit = simpool.RateLimit{RequestsPerMinute: o.SimRPM, Concurrent: o.SimConcurrent}
		if sim, err = simpool.New(scfg); err != nil {
			return fmt.Errorf("loadtest: simulated pool: %w", err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("loadtest: simulated pool: %w", err)
		}
		srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		for i := range cfg.Shadow.Workers {
			cfg.Shadow.Workers[i].BaseURL = "http://" + ln.Addr().String() + "/v1"
		}
		rep.SimRPM = o.SimRPM
	}
	pipes, err := platform.BuildPipelines(cfg)
	if err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	defer pipes.Close()
	var cand shadow.Pipeline
	for _, c := range pipes.Candidates {
		if o.Candidate == "" || c.Name() == o.Candidate {
			cand = c
			break
		}
	}
	if cand == nil {
		return fmt.Errorf("loadtest: no candidate pipeline %q configured", o.Candidate)
	}
	rep.Candidate = cand.Name()
	next := 0
	for _, u := range levels {
		var before int64
		if sim != nil {
			before = sim.RateLimited()
		}
		lvl, n, err := runUsersLevel(ctx, cand, prompts, next, u, o.Level)
		if err != nil {
			return err
		}
		next += n
		lvl.RateLimited = -1
		if sim != nil {
			lvl.RateLimited = sim.RateLimited() - before
		}
		rep.Levels = append(rep.Levels, lvl)
		if !o.JSON {
			if len(rep.Levels) == 1 {
				printUsersHeader(out, rep)
			}
			printUsersLevel(out, lvl)
		}
	}
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return nil
}

// runUsersLevel runs users closed-loop users, each sending the next prompt as
// soon as its previous run finished, for d; runs in flight at the end finish
// and count. It returns the level's figures and how many prompts it used.
func runUsersLevel(ctx context.Context, cand shadow.Pipeline, prompts []shadow.Request, first, users int, d time.Duration) (UsersLevel, int, error) {
	type result struct {
		ms       float64
		answered bool
		cost     float64
		status   string
		fallback bool
		calls    int
		retries  int
	}
	var (
		mu      sync.Mutex
		results []result
		taken   int
		wg      sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				mu.Lock()
				i := first + taken
				taken++
				mu.Unlock()
				req := prompts[i%len(prompts)]
				req.RequestID = fmt.Sprintf("loadtest-%d-%d-%s", users, u, req.RequestID)
				t0 := time.Now()
				res := cand.Run(ctx, req, store.ModeCandidate)
				r := result{ms: float64(time.Since(t0).Microseconds()) / 1000, answered: res.Run.FinalOutput != "", cost: res.Run.CostUSD, status: res.Run.Status,
					fallback: res.Run.Status == store.StatusPlanUnparsable}
				for _, s := range res.Steps {
					r.fallback = r.fallback || s.Role == shadow.RoleFallback
					if s.Attempt > 0 {
						r.calls++
						r.retries += int(s.Attempt) - 1
					}
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return UsersLevel{}, 0, fmt.Errorf("loadtest: stopped: %w", err)
	}
	elapsed := time.Since(start).Seconds()
	lvl := UsersLevel{Users: users, Requests: len(results), ElapsedS: elapsed}
	if len(results) == 0 {
		return lvl, taken, nil
	}
	var lat []float64
	var cost float64
	var errs, fallbacks int
	for _, r := range results {
		if r.answered {
			lat = append(lat, r.ms)
		}
		cost += r.cost
		if r.status == store.StatusError || r.status == store.StatusBudgetExceeded {
			errs++
		}
		if r.fallback {
			fallbacks++
		}
		lvl.Calls += r.calls
		lvl.Retries += r.retries
	}
	n := float64(len(results))
	lvl.Completed = len(lat)
	lvl.RequestsPerSecond = float64(lvl.Completed) / elapsed
	lvl.P50LatencyMs = figure.Latency(lat, 50)
	lvl.P95LatencyMs = figure.Latency(lat, 95)
	lvl.CostPerRequestUSD = figure.CostPerRequest(cost, len(results)) // each result is one request
	lvl.ErrorShare = float64(errs) / n
	lvl.FallbackShare = float64(fallbacks) / n
	return lvl, taken, nil
}

func printUsersHeader(out io.Writer, rep UsersReport) {
	sim := "the configured pool"
	if rep.Simulated {
		sim = fmt.Sprintf("the SIMULATED pool (in process, %d requests/min per model)", rep.SimRPM)
	}
	fmt.Fprintf(out, "candidate %s on %d prompts of %s against %s\n", rep.Candidate, rep.Prompts, rep.Replay, sim)
	fmt.Fprintf(out, "%6s %6s %9s %9s %10s %10s %14s %7s %9s %7s %8s %6s\n",
		"users", "runs", "answered", "req/s", "p50 ms", "p95 ms", "USD/request", "errors", "fallback", "calls", "retries", "429s")
}

func printUsersLevel(out io.Writer, l UsersLevel) {
	r429 := "-"
	if l.RateLimited >= 0 {
		r429 = strconv.FormatInt(l.RateLimited, 10)
	}
	fmt.Fprintf(out, "%6d %6d %9d %9.2f %10.0f %10.0f %14.6f %6.1f%% %8.1f%% %7d %8d %6s\n",
		l.Users, l.Requests, l.Completed, l.RequestsPerSecond, l.P50LatencyMs, l.P95LatencyMs, l.CostPerRequestUSD,
		100*l.ErrorShare, 100*l.FallbackShare, l.Calls, l.Retries, r429)
}
