package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// Targets of the role load run: a role's added latency may be at most
// factor × the bare reverse proxy's added latency + the allowance, at p95 and p99.
const (
	allInOneFactor = 2.0
	tapOnlyFactor  = 1.5
	p95AllowanceMs = 0.5
	p99AllowanceMs = 1.0
	// maxMissingShare: a round where a path has more unsent or failed requests than
	// this share of those due is not sound (its percentiles would omit them). Late
	// requests do not count: their latency runs from the intended send time.
	maxMissingShare = 0.001
	// maxDirectExcessMs: a round whose direct path (no proxy at all) answers its p99
	// more than this over the incumbent's delay measured a saturated machine, whose
	// noise is far above the sub-millisecond figures the targets compare.
	maxDirectExcessMs = 50.0
)

// roleLoadOptions drive the side-by-side run of `loadtest --roles`.
type roleLoadOptions struct {
	Roles    []string      // platform.RoleAll and/or platform.RoleTap
	Rate     int           // requests/s on the path being driven
	Duration time.Duration // how long each path is driven per round (the sum of its slices); ≤ 30 s is plenty
	// Slice is how long one path is driven before the next one's turn
	// (0: defaultSlice); a round rotates through the paths in slices until
	// each was driven for Duration.
	Slice   time.Duration
	Delay   time.Duration // the fake incumbent's answer time
	PoolURL string        // the worker pool the all-in-one server's candidates call
	Repeat  int           // rounds; with more than one, medians are printed too
	// Outstanding is the most requests in flight per path.
	Outstanding int
	// KafkaBrokers of the tap-only server; empty: start bin/devkafka (found beside
	// this binary or on PATH) as its own process.
	KafkaBrokers []string
	// ServerBin is the conductor-shadow binary whose `serve` each role runs.
	ServerBin string
}

// defaultSlice is how long one path is driven at a time in a role round.
const defaultSlice = time.Second

// bareProxyCmd is the hidden `loadtest bare-proxy`: a plain httputil.ReverseProxy
// in its own process, the baseline every role is compared with.
func bareProxyCmd() *cobra.Command {
	var target, addr string
	cmd := &cobra.Command{
		Use:    "bare-proxy",
		Short:  "Serve a bare httputil.ReverseProxy to --target (the loadtest baseline)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(target)
			if err != nil || u.Host == "" {
				return fmt.Errorf("bare-proxy: --target %q: want http://host:port", target)
			}
			// The same connection pool and flushing as the mirroring proxy, so the
			// comparison measures what the mirroring adds, not a different pool.
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConns, t.MaxIdleConnsPerHost = 4096, 1024
			rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: t, FlushInterval: -1}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("bare-proxy: %w", err)
			}
			srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
			go func() { <-cmd.Context().Done(); _ = srv.Close() }()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("bare-proxy: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "incumbent base URL")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	return cmd
}

// loadIncumbentCmd is the hidden `loadtest incumbent`: the stand-in incumbent
// (answers after --delay) in its own process, so the load generator's process only
// sends.
func loadIncumbentCmd() *cobra.Command {
	var addr string
	var delay time.Duration
	cmd := &cobra.Command{
		Use:    "incumbent",
		Short:  "Serve the stand-in incumbent (answers POST /v1/chat/completions after --delay)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("incumbent: %w", err)
			}
			srv := &http.Server{Handler: &loadIncumbent{Delay: delay, Chunks: 5}, ReadHeaderTimeout: 10 * time.Second}
			go func() { <-cmd.Context().Done(); _ = srv.Close() }()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("incumbent: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	cmd.Flags().DurationVar(&delay, "delay", 50*time.Millisecond, "answer time")
	return cmd
}

// siblingBinary finds the binary name (built by `make build` into bin/):
// beside this binary, else on PATH; flag is the flag that names it instead.
func siblingBinary(name, flag string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no %s binary beside this one or on $PATH: run `make build` (bin/%s) or pass %s", name, name, flag)
}

// child is one process of the role run.
type child struct {
	name string
	url  string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// startChild starts exe (this binary when "") with args and waits until addr accepts connections.
func startChild(ctx context.Context, name, addr, exe string, args []string, env []string) (*child, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("loadtest: %w", err)
		}
	}
	c := &child{name: name, url: "http://" + addr, log: &bytes.Buffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(exe, args...)
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: start %s: %w", name, err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.done:
			return nil, fmt.Errorf("loadtest: %s exited at start:\n%s", name, tailString(c.log.String(), 2000))
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.stop()
			return nil, fmt.Errorf("loadtest: %s did not listen on %s:\n%s", name, addr, tailString(c.log.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits up to 30 s, then kills.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func loopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("loadtest: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// roleRow is one path of the role run.
type roleRow struct {
	name   string
	url    string
	result *pathResult
	role   string // "" for direct and bare
	proc   *child // the process answering the path (the incumbent for direct)
}

// roleFigures are one path's figures over the sound rounds of a role run:
// medians of the added p95/p99 over direct (ms), their ratios to the bare
// proxy's, and process CPU seconds per 1,000 forwarded exchanges with its
// ratio to the bare proxy's.
type roleFigures struct {
	Path, Role               string
	Rate                     int
	AddedP95, AddedP99       float64
	RatioP95, RatioP99       float64 // 0: no bare figure to compare with
	CPUPer1000, CPURatio     float64
	Verdict                  string
	SoundRounds, TotalRounds int
}

// procTreeCPU is the user+system CPU time pid and every process below it
// (its children, theirs, …: found by their parent in /proc/*/stat) used so
// far; a child that exited is not counted.
func procTreeCPU(pid int) time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return procCPU(pid)
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var total time.Duration
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[len(todo)-1]
		todo = append(todo[:len(todo)-1], children[p]...)
		total += procCPU(p)
	}
	return total
}

// procCPU is the user+system CPU time pid used so far (/proc/<pid>/stat,
// fields 14 and 15, in clock ticks of 1/100 s), or 0 when unreadable.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	if _, err := fmt.Sscan(f[11], &ut); err != nil {
		return 0
	}
	if _, err := fmt.Sscan(f[12], &st); err != nil {
		return 0
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticksPerSecond
}

// runRoleLoad sends the same open-loop load to the fake incumbent directly,
// to a bare reverse proxy and to `serve` in each requested role, all separate
// processes on loopback, one path at a time in interleaved slices
// (driveSlices), and prints p50/p95/p99 per path, the added
// latency over direct, its ratio to the bare proxy's and the target, and each
// process's CPU seconds per 1,000 forwarded exchanges. It returns the figures
// of every role's path (medians over the sound rounds).
func runRoleLoad(ctx context.Context, out io.Writer, o roleLoadOptions) ([]roleFigures, error) {
	dir, err := os.MkdirTemp("", "conductor-shadow-loadtest-")
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	defer os.RemoveAll(dir)

	env := append(os.Environ(), "CONDUCTOR_SHADOW_POOL_URL="+o.PoolURL, "CONDUCTOR_SHADOW_PII_SECRET=loadtest-secret")
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	inc, err := startChild(ctx, "incumbent", addr, "", []string{"incumbent", "--addr", addr, "--delay", o.Delay.String()}, env)
	if err != nil {
		return nil, err
	}
	children = append(children, inc)
	incURL := inc.url
	rows := []*roleRow{{name: "direct", url: incURL, result: &pathResult{}, proc: inc}}

	if addr, err = loopbackAddr(); err != nil {
		return nil, err
	}
	bare, err := startChild(ctx, "bare proxy", addr, "", []string{"bare-proxy", "--target", incURL, "--addr", addr}, env)
	if err != nil {
		return nil, err
	}
	children = append(children, bare)
	rows = append(rows, &roleRow{name: "bare proxy", url: bare.url, result: &pathResult{}, proc: bare})

	for _, role := range o.Roles {
		addr, err := loopbackAddr()
		if err != nil {
			return nil, err
		}
		// The all-in-one server's shadow side under the idle scheduling
		// policy (server.shadow_idle): a box that serves production alone.
		cfg := fmt.Sprintf("server:\n  addr: %s\n  role: %s\n  shutdown_timeout: 10s\n  shadow_idle: true\nstore:\n  path: %s\ningest:\n  proxy:\n    incumbent_url: %s\n",
			addr, role, filepath.Join(dir, "data-"+role), incURL)
		name := "all-in-one"
		switch role {
		case platform.RoleTap:
			name = "tap-only"
			brokers := o.KafkaBrokers
			if len(brokers) == 0 {
				exe, err := siblingBinary("devkafka", "--kafka-brokers")
				if err != nil {
					return nil, fmt.Errorf("loadtest: the tap-only row needs a Kafka: %w", err)
				}
				kaddr, err := loopbackAddr()
				if err != nil {
					return nil, err
				}
				_, port, _ := net.SplitHostPort(kaddr)
				k, err := startChild(ctx, "devkafka", kaddr, exe, []string{"--port", port, "--topics", "conductor-shadow.exchanges", "--partitions", "6"}, env)
				if err != nil {
					return nil, err
				}
				children = append(children, k)
				brokers = []string{kaddr}
			}
			cfg += "  kafka:\n    brokers: ["
			for i, b := range brokers {
				if i > 0 {
					cfg += ", "
				}
				cfg += fmt.Sprintf("%q", b)
			}
			cfg += "]\n"
		case platform.RoleAll:
			if err := poolAnswers(o.PoolURL); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("loadtest: --roles: %q is not all or tap", role)
		}
		path := filepath.Join(dir, "config-"+role+".yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			return nil, fmt.Errorf("loadtest: %w", err)
		}
		c, err := startChild(ctx, name, addr, o.ServerBin, []string{"--config", path, "serve"}, env)
		if err != nil {
			return nil, err
		}
		children = append(children, c)
		rows = append(rows, &roleRow{name: name, url: c.url, result: &pathResult{}, role: role, proc: c})
	}

	slice := o.Slice
	if slice <= 0 {
		slice = defaultSlice
	}
	fmt.Fprintf(out, "roles: %d req/s on one path at a time, in slices of %s rotating through %d paths until each was driven %s per round; incumbent answers in %s, every exchange unique\n",
		o.Rate, min(slice, o.Duration), len(rows), o.Duration, o.Delay)
	fmt.Fprintf(out, "every path is its own process on loopback; the all-in-one server's candidates call the pool at %s\n", o.PoolURL)

	for _, r := range rows[2:] {
		if r.role == platform.RoleAll {
			saturate(ctx, out, r, o)
		}
	}
	var rounds []map[string][3]float64 // per round: path -> added p95, p99 (ms), CPU s per 1,000
	for round := 1; round <= max(1, o.Repeat) && ctx.Err() == nil; round++ {
		for _, r := range rows {
			r.result = &pathResult{}
		}
		if o.Repeat > 1 {
			fmt.Fprintf(out, "round %d of %d\n", round, o.Repeat)
		}
		added, sound := measureRoles(ctx, out, rows, o)
		if sound {
			rounds = append(rounds, added)
		}
	}
	for _, r := range rows[2:] {
		settle(r.url, 20*time.Second)
		fmt.Fprintf(out, "%s: %s\n", r.name, serverStats(r.url))
	}
	if n := max(1, o.Repeat); len(rounds) < n {
		fmt.Fprintf(out, "%d of %d rounds were sound\n", len(rounds), n)
	}
	// Medians over the sound rounds (nearest rank), then the same target check.
	med := func(name string, i int) float64 {
		v := make([]float64, 0, len(rounds))
		for _, m := range rounds {
			v = append(v, m[name][i])
		}
		slices.Sort(v)
		return percentile.NearestRank(v, 50)
	}
	if len(rounds) > 1 {
		fmt.Fprintf(out, "medians over %d rounds (ms added over direct):\n", len(rounds))
		b95, b99 := med("bare proxy", 0), med("bare proxy", 1)
		fmt.Fprintf(out, "%-11s %11s %11s %9s %9s\n", "path", "added p95", "added p99", "×bare p95", "×bare p99")
		fmt.Fprintf(out, "%-11s %11.2f %11.2f\n", "bare proxy", b95, b99)
		for _, r := range rows[2:] {
			a95, a99 := med(r.name, 0), med(r.name, 1)
			fmt.Fprintf(out, "%-11s %11.2f %11.2f %9s %9s  %s\n", r.name, a95, a99, ratio(a95, b95), ratio(a99, b99), verdict(r.role, a95, a99, b95, b99))
		}
	}
	var figs []roleFigures
	if len(rounds) > 0 {
		b95, b99, bcpu := med("bare proxy", 0), med("bare proxy", 1), med("bare proxy", 2)
		for _, r := range rows[1:] {
			f := roleFigures{Path: r.name, Role: r.role, Rate: o.Rate, AddedP95: med(r.name, 0), AddedP99: med(r.name, 1), CPUPer1000: med(r.name, 2),
				SoundRounds: len(rounds), TotalRounds: max(1, o.Repeat)}
			if b95 > 0 {
				f.RatioP95 = f.AddedP95 / b95
			}
			if b99 > 0 {
				f.RatioP99 = f.AddedP99 / b99
			}
			if bcpu > 0 {
				f.CPURatio = f.CPUPer1000 / bcpu
			}
			if r.role != "" {
				f.Verdict = verdict(r.role, f.AddedP95, f.AddedP99, b95, b99)
			}
			figs = append(figs, f)
		}
	}
	fmt.Fprintln(out)
	return figs, nil
}

func ratio(a, b float64) string {
	if b <= 0 || a < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// poolAnswers checks the worker pool is up before the all-in-one server needs it.
func poolAnswers(base string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(strings.TrimSuffix(base, "/") + "/models")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return fmt.Errorf("loadtest: the worker pool at %s does not answer (%v): start it first, e.g. `bin/simllm --latency-scale 0.2`, or pass --pool", base, err)
}

// settle waits, at most d, until a server's copies are handed over: its
// accepted, dropped and recorded counts unchanged over two reads 500 ms apart.
func settle(base string, d time.Duration) {
	c := &http.Client{Timeout: 5 * time.Second}
	read := func() string {
		resp, err := c.Get(base + "/api/stats")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var body struct {
			Tap ingest.StatsSnapshot `json:"tap"`
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil {
			return ""
		}
		return fmt.Sprint(body.Tap.Accepted, body.Tap.Dropped, body.Tap.Recorded, body.Tap.RecordDropped)
	}
	prev := read()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		cur := read()
		if cur == prev && cur != "" {
			return
		}
		prev = cur
	}
}

// serverStats summarises GET /api/stats of a role's server: shadowed, dropped by
// reason, and the adaptive limit.
func serverStats(base string) string {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/api/stats")
	if err != nil {
		return "stats unavailable: " + err.Error()
	}
	defer resp.Body.Close()
	var body struct {
		Tap       ingest.StatsSnapshot      `json:"tap"`
		Admission *ingest.AdmissionSnapshot `json:"admission"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "stats unreadable: " + err.Error()
	}
	s := fmt.Sprintf("mirrored %v; accepted %d, shadowed %d, queued %d, dropped %v", body.Tap.Mirrored, body.Tap.Accepted, body.Tap.Processed, body.Tap.Queued, body.Tap.Dropped)
	var recorded, lost int64
	for _, n := range body.Tap.Recorded {
		recorded += n
	}
	for _, n := range body.Tap.RecordDropped {
		lost += n
	}
	// Every forwarded exchange leaves a row: accepted (stored by the queue) or recorded.
	s += fmt.Sprintf("; recorded (not shadowed) %d %v, record lost %d %v; rows = accepted + recorded = %d",
		recorded, body.Tap.Recorded, lost, body.Tap.RecordDropped, body.Tap.Accepted+recorded)
	if a := body.Admission; a != nil {
		s += fmt.Sprintf("; shadow-run limit %d (in flight %d, waiting %d; last interval: %.0f%% of requests above max_added_latency, sched p99 %.2f ms, cpu %.0f%%, pressure %q)",
			a.Limit, a.InFlight, a.Waiting, a.Pressure.SlowShare*100, a.Pressure.SchedP99Ms, a.Pressure.CPU*100, a.Pressure.Reason)
	}
	return s
}

// measureRoles runs one round of the open-loop load on every row, prints its
// table and returns each path's added p95 and p99 over direct, ms.
// The round is sound (its figures are the servers', not a starved machine's) when
// no path has more than maxMissingShare of its requests unsent or failed and the
// direct path's p99 is within maxDirectExcessMs of the incumbent's delay; only
// sound rounds enter the medians and get a verdict.
func measureRoles(ctx context.Context, out io.Writer, rows []*roleRow, o roleLoadOptions) (added map[string][3]float64, sound bool) {
	client := newLoadClient(o.Outstanding)
	runID := time.Now().UnixNano()
	// target is row k's load in one slice; seq numbers the slice, so every
	// exchange of the round is unique.
	target := func(r *roleRow, seq int) loadTarget {
		return chatTarget(r.result, r.url, func(i int) (string, string) {
			return fmt.Sprintf("Customer %d (user%d@example.com) asks: what is %d * 7? Run %d, slice %d.", i, i, i, runID, seq),
				fmt.Sprintf("lt-%d-%d-%d", runID, seq, i)
		})
	}
	cpu0, own0 := make([]time.Duration, len(rows)), make([]time.Duration, len(rows))
	for k, r := range rows {
		cpu0[k], own0[k] = procTreeCPU(r.proc.cmd.Process.Pid), procCPU(r.proc.cmd.Process.Pid)
	}
	total, elapsed := driveSlices(ctx, rows, target, o, client)
	client.CloseIdleConnections()
	// CPU seconds per 1,000 answered exchanges of each path's process over the
	// round (the all-in-one server's includes its shadow side and engine).
	// An isolated all-in-one server is two processes: the column counts
	// both, the line below splits them.
	cpuPer1000 := make([]float64, len(rows))
	for k, r := range rows {
		answered := max(float64(len(r.result.latencies)), 1)
		cpuPer1000[k] = (procTreeCPU(r.proc.cmd.Process.Pid) - cpu0[k]).Seconds() / answered * 1000
		own := (procCPU(r.proc.cmd.Process.Pid) - own0[k]).Seconds() / answered * 1000
		if cpuPer1000[k]-own > 0.0005 {
			fmt.Fprintf(out, "%s: CPU s/1k %.3f = its own process %.3f + its children (the shadow side) %.3f\n", r.name, cpuPer1000[k], own, cpuPer1000[k]-own)
		}
	}

	// One percentile definition for the whole product: nearest rank.
	pct := func(r *pathResult, p float64) float64 {
		v := make([]float64, len(r.latencies))
		for i, d := range r.latencies {
			v[i] = float64(d.Microseconds()) / 1000
		}
		slices.Sort(v)
		return percentile.NearestRank(v, p)
	}
	direct95, direct99 := pct(rows[0].result, 95), pct(rows[0].result, 99)
	bare95, bare99 := pct(rows[1].result, 95)-direct95, pct(rows[1].result, 99)-direct99
	added = map[string][3]float64{}
	sound = true
	for _, r := range rows {
		if float64(r.result.unsent.Load()+r.result.errors.Load()) > maxMissingShare*float64(total) {
			sound = false
		}
	}
	directExcess := direct99 - float64(o.Delay.Microseconds())/1000
	if directExcess > maxDirectExcessMs {
		sound = false
	}
	fmt.Fprintf(out, "%d requests due per path in %s of slices (latency from each one's intended send time; unsent: due while %d were outstanding; late: sent > %s after due)\n", total, elapsed.Round(time.Millisecond), o.Outstanding, lateAfter)
	fmt.Fprintf(out, "%-11s %9s %9s %9s %7s %7s %7s %9s %11s %11s %9s %9s %9s  %s\n", "path", "p50 ms", "p95 ms", "p99 ms", "errors", "unsent", "late", "CPU s/1k", "added p95", "added p99", "×bare p95", "×bare p99", "×bare CPU", "target")
	for k, r := range rows {
		p50, p95, p99 := pct(r.result, 50), pct(r.result, 95), pct(r.result, 99)
		line := fmt.Sprintf("%-11s %9.2f %9.2f %9.2f %7d %7d %7d %9.3f", r.name, p50, p95, p99, r.result.errors.Load(), r.result.unsent.Load(), r.result.late.Load(), cpuPer1000[k])
		if k > 0 {
			a95, a99 := p95-direct95, p99-direct99
			added[r.name] = [3]float64{a95, a99, cpuPer1000[k]}
			line += fmt.Sprintf(" %11.2f %11.2f", a95, a99)
			if k > 1 {
				line += fmt.Sprintf(" %9s %9s %9s", ratio(a95, bare95), ratio(a99, bare99), ratio(cpuPer1000[k], cpuPer1000[1]))
				if sound {
					line += "  " + verdict(r.role, a95, a99, bare95, bare99)
				}
			}
		}
		fmt.Fprintln(out, line)
	}
	for _, r := range rows {
		if e := r.result.firstError(); e != "" {
			fmt.Fprintf(out, "  first error on %s: %s\n", r.name, e)
		}
	}
	if !sound {
		fmt.Fprintf(out, "  NO VERDICT: the machine or the generator was saturated (more than %.1f%% of a path's requests unsent or failed, or the direct path's p99 %.2f ms over the incumbent's %s, allowed %.0f ms): this round is left out of the medians\n",
			maxMissingShare*100, directExcess, o.Delay, maxDirectExcessMs)
	}
	return added, sound
}

// driveSlices drives one path at a time: slices of o.Slice at o.Rate,
// rotating through rows (each rotation starting one path further on, so no
// path always follows the same one), until every path was driven for
// o.Duration. A slice ends when its last request is answered, so slices never
// overlap and the generator drives o.Rate, not o.Rate per path at once; a
// server's own background work (the all-in-one server's shadow side working
// through its backlog) goes on across the other paths' slices. It returns the
// requests due per path and the time spent driving.
func driveSlices(ctx context.Context, rows []*roleRow, target func(*roleRow, int) loadTarget, o roleLoadOptions, client *http.Client) (int, time.Duration) {
	slice := o.Slice
	if slice <= 0 {
		slice = defaultSlice
	}
	slice = min(slice, o.Duration)
	rotations := max(1, int(o.Duration/slice))
	var total int
	var elapsed time.Duration
	seq := 0
	for rot := 0; rot < rotations && ctx.Err() == nil; rot++ {
		for j := range rows {
			r := rows[(rot+j)%len(rows)]
			n, d := openLoop{Rate: o.Rate, Duration: slice, Outstanding: o.Outstanding, Client: client}.run(ctx, []loadTarget{target(r, seq)})
			seq++
			elapsed += d
			if j == 0 {
				total += n
			}
		}
	}
	return total, elapsed
}

// saturateWithin bounds the warm-up of an all-in-one server (saturate).
const saturateWithin = 120 * time.Second

// saturate drives r alone at o.Rate in 2 s slices until its shadow side's
// queue is full (GET /api/stats: at least 95% of ingest.queue_size copies
// queued; a hand-off buffer full in front of a queue still filling is not
// saturation yet), at most saturateWithin, so that every round measures the server with its
// shadow side saturated (its store-first queue full), as the target asks;
// the warm-up's figures are not kept.
func saturate(ctx context.Context, out io.Writer, r *roleRow, o roleLoadOptions) {
	client := newLoadClient(o.Outstanding)
	defer client.CloseIdleConnections()
	runID := time.Now().UnixNano()
	start := time.Now()
	sent := 0
	full := ingest.NewDefaultConfig().QueueSize // the role run's servers keep the default
	for seq := 0; ctx.Err() == nil; seq++ {
		if time.Since(start) > saturateWithin {
			fmt.Fprintf(out, "warm-up: %s's shadow side's queue is still not full after %s (%d exchanges): the rounds may measure it unsaturated\n", r.name, saturateWithin, sent)
			return
		}
		refused0, _ := refusals(r.url)
		t := chatTarget(&pathResult{}, r.url, func(i int) (string, string) {
			return fmt.Sprintf("Warm-up %d, %d.", i, seq), fmt.Sprintf("warm-%d-%d-%d", runID, seq, i)
		})
		n, _ := openLoop{Rate: o.Rate, Duration: 2 * time.Second, Outstanding: o.Outstanding, Client: client}.run(ctx, []loadTarget{t})
		sent += n
		refused1, queued1 := refusals(r.url)
		if queued1*100 >= int64(full)*95 {
			fmt.Fprintf(out, "warm-up: %s's shadow side holds %d copies (of ingest.queue_size %d) and refused %d of the last %d, after %d exchanges in %s: saturated\n",
				r.name, queued1, full, refused1-refused0, n, sent, time.Since(start).Round(time.Second))
			return
		}
	}
}

// refusals is how many copies a server's shadow side did not take so far
// (GET /api/stats: dropped as queue_full or accept_timeout, recorded as
// shadow_saturated; each copy is counted under one of them) and how many
// wait in its queues now; 0, 0 when unreadable.
func refusals(base string) (refused, queued int64) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/api/stats")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	var body struct {
		Tap ingest.StatsSnapshot `json:"tap"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return 0, 0
	}
	t := body.Tap
	return t.Dropped[ingest.ReasonQueueFull] + t.Dropped[ingest.ReasonAcceptTimeout] + t.Recorded[ingest.ReasonShadowSaturated], int64(t.Queued)
}

// chatTarget POSTs chat completions to base into res: request i asks
// exchange(i)'s question (a JSON string's text) under its request id.
func chatTarget(res *pathResult, base string, exchange func(i int) (question, id string)) loadTarget {
	return loadTarget{result: res, request: func(ctx context.Context, i int) (*http.Request, error) {
		q, id := exchange(i)
		body := fmt.Sprintf(`{"model":"gpt-5","messages":[{"role":"user","content":%q}]}`, q)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		return req, nil
	}}
}

// verdict checks a role's added latency against its target.
func verdict(role string, a95, a99, bare95, bare99 float64) string {
	factor := allInOneFactor
	if role == platform.RoleTap {
		factor = tapOnlyFactor
	}
	ok := a95 <= factor*bare95+p95AllowanceMs && a99 <= factor*bare99+p99AllowanceMs
	return fmt.Sprintf("≤ %.1f× bare + %.1f ms (p95), + %.1f ms (p99): %s", factor, p95AllowanceMs, p99AllowanceMs, map[bool]string{true: "PASS", false: "FAIL"}[ok])
}
