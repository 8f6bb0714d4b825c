package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// durabilityOptions drive `loadtest durability`.
type durabilityOptions struct {
	Copies       int           // distinct exchanges posted over the three lives
	Rate         int           // posts/s
	Server       string        // conductor-shadow binary to run (default: beside this binary, then $PATH)
	SimLLM       string        // simllm binary (default: next to Server, then $PATH)
	LatencyScale float64       // simllm --latency-scale
	Drain        time.Duration // server.shutdown_timeout of the lives stopped by SIGTERM
	Wait         time.Duration // how long the last life may take to shadow the backlog
	Dir          string        // data and logs (default: a temporary folder, removed unless Keep)
	Sets         string        // regression-set folder simllm answers from (default ./regression-sets)
	Keep         bool
}

// durabilityReport is what `loadtest durability` prints, and what the test asserts.
type durabilityReport struct {
	Posted           int // distinct copies posted at least once
	Accepted         int // distinct copies answered 202 at least once
	Refused          int // posts answered 503 (store, queue or shutting down)
	Failed           int // posts without an answer (the server was down)
	Duplicates       int // re-sent copies answered "duplicate"
	WithRuns         int // accepted copies with their incumbent run and a finished candidate run
	WithoutRuns      int // accepted copies missing either
	ErrorsFromStop   int // candidate runs stored as "error" with a cancelled context
	CancelledLeft    int // requests whose candidate runs are all "cancelled" at the end (never re-run)
	DuplicateRuns    int // candidate run rows stored more than once as finished, before merges
	Missing          []string
	Kill9At, TermAt  int // copies posted when kill -9 and SIGTERM were sent
	Lives            int
	Elapsed          time.Duration
	ShutdownDuration time.Duration // SIGTERM to exit
}

func durabilityCmd() *cobra.Command {
	o := durabilityOptions{Copies: 350, Rate: 100, LatencyScale: 0.1, Drain: 4 * time.Second, Wait: 3 * time.Minute}
	cmd := &cobra.Command{
		Use:   "durability",
		Short: "Kill -9 and SIGTERM a real server under load; count accepted copies without their runs",
		Long: `Starts the simulated pool (simllm) and conductor-shadow's "serve" as OS processes on
loopback, with a fresh embedded store, and posts --copies distinct exchanges to
/v1/tap at --rate: the first server is killed with SIGKILL mid-stream, a second is
stopped with SIGTERM while its shadow workers are busy, a third takes the rest and
the copies of the first life are sent again. Once the third has shadowed its
backlog it prints: accepted copies, with and without their incumbent and candidate
runs, candidate runs stored as errors because of a stop, and candidate runs stored
twice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := runDurability(cmd.Context(), o, cmd.ErrOrStderr())
			printDurability(cmd.OutOrStdout(), rep)
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Copies, "copies", o.Copies, "distinct exchanges posted over the three lives")
	f.IntVar(&o.Rate, "rate", o.Rate, "posts per second")
	f.StringVar(&o.Server, "server-bin", "", "conductor-shadow binary to run (default: beside this binary, then $PATH)")
	f.StringVar(&o.SimLLM, "simllm-bin", "", "simllm binary (default: next to the server binary, then $PATH)")
	f.Float64Var(&o.LatencyScale, "latency-scale", o.LatencyScale, "simulated latency multiplier (1 = realistic)")
	f.DurationVar(&o.Drain, "drain", o.Drain, "shutdown deadline of the server stopped by SIGTERM")
	f.DurationVar(&o.Wait, "wait", o.Wait, "how long the last server may take to shadow what is owed")
	f.StringVar(&o.Dir, "dir", "", "folder for the store and logs (default: a temporary one)")
	f.StringVar(&o.Sets, "sets", "regression-sets", "regression-set folder the simulated pool answers from")
	f.BoolVar(&o.Keep, "keep", false, "keep the folder afterwards")
	return cmd
}

func printDurability(w io.Writer, r durabilityReport) {
	fmt.Fprintf(w, "durability: %d copies posted over %d server lives (kill -9 after %d posted, SIGTERM after %d) in %s\n",
		r.Posted, r.Lives, r.Kill9At, r.TermAt, r.Elapsed.Round(time.Second))
	fmt.Fprintf(w, "  accepted (202)                          %d\n", r.Accepted)
	fmt.Fprintf(w, "  refused (503) / no answer (server down) %d / %d posts\n", r.Refused, r.Failed)
	fmt.Fprintf(w, "  re-sent, answered duplicate             %d\n", r.Duplicates)
	fmt.Fprintf(w, "  accepted with runs                      %d\n", r.WithRuns)
	fmt.Fprintf(w, "  accepted without runs                   %d\n", r.WithoutRuns)
	fmt.Fprintf(w, "  runs stored as error because of a stop  %d\n", r.ErrorsFromStop)
	fmt.Fprintf(w, "  requests left cancelled (never re-run)  %d\n", r.CancelledLeft)
	fmt.Fprintf(w, "  duplicate candidate runs                %d\n", r.DuplicateRuns)
	fmt.Fprintf(w, "  SIGTERM to exit                         %s\n", r.ShutdownDuration.Round(time.Millisecond))
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "  without runs, first ones: %s\n", strings.Join(r.Missing[:min(len(r.Missing), 10)], ", "))
	}
}

// durabilityRun is one run of the scenario.
type durabilityRun struct {
	o       durabilityOptions
	log     io.Writer
	dir     string
	tag     string
	poolURL string
	addr    string
	client  *http.Client

	mu       sync.Mutex
	accepted map[string]bool
	rep      durabilityReport
}

func runDurability(ctx context.Context, o durabilityOptions, log io.Writer) (durabilityReport, error) {
	start := time.Now()
	if o.Copies < 20 {
		return durabilityReport{}, errors.New("loadtest durability: --copies must be at least 20")
	}
	if o.Server == "" {
		exe, err := siblingBinary("conductor-shadow", "--server-bin")
		if err != nil {
			return durabilityReport{}, fmt.Errorf("loadtest durability: %w", err)
		}
		o.Server = exe
	}
	if o.SimLLM == "" {
		o.SimLLM = filepath.Join(filepath.Dir(o.Server), "simllm")
		if _, err := os.Stat(o.SimLLM); err != nil {
			p, lerr := exec.LookPath("simllm")
			if lerr != nil {
				return durabilityReport{}, errors.New("loadtest durability: no simllm binary next to the server or in $PATH; run `make build` or pass --simllm-bin")
			}
			o.SimLLM = p
		}
	}
	dir := o.Dir
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return durabilityReport{}, fmt.Errorf("loadtest durability: %w", err)
		}
	} else {
		d, err := os.MkdirTemp("", "conductor-shadow-durability-")
		if err != nil {
			return durabilityReport{}, fmt.Errorf("loadtest durability: %w", err)
		}
		dir = d
		if !o.Keep {
			defer os.RemoveAll(d)
		}
	}
	d := &durabilityRun{o: o, log: log, dir: dir, tag: strconv.FormatInt(time.Now().UnixNano(), 36),
		client: &http.Client{Timeout: 10 * time.Second}, accepted: map[string]bool{}}
	err := d.run(ctx)
	d.rep.Elapsed = time.Since(start)
	return d.rep, err
}

// freeAddr returns a loopback address with a port free right now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (d *durabilityRun) run(ctx context.Context) error {
	poolAddr, err := freeLoopbackAddr()
	if err != nil {
		return fmt.Errorf("loadtest durability: %w", err)
	}
	d.poolURL = "http://" + poolAddr + "/v1"
	args := []string{"--addr", poolAddr, "--latency-scale", strconv.FormatFloat(d.o.LatencyScale, 'f', -1, 64)}
	if sets, err := filepath.Abs(cmp.Or(d.o.Sets, "regression-sets")); err == nil {
		args = append(args, "--sets", sets)
	}
	pool, err := d.start(ctx, "simllm", d.o.SimLLM, nil, args...)
	if err != nil {
		return err
	}
	defer func() { _ = pool.Process.Signal(syscall.SIGTERM); _, _ = pool.Process.Wait() }()
	if err := waitReady(ctx, d.poolURL+"/models", 20*time.Second); err != nil {
		return fmt.Errorf("loadtest durability: simllm (logs in %s): %w", d.dir, err)
	}
	if d.addr, err = freeLoopbackAddr(); err != nil {
		return fmt.Errorf("loadtest durability: %w", err)
	}
	cfgPath := filepath.Join(d.dir, "durability.yaml")
	// The CPU signal of the admission is off: the pool, the engine and this
	// command share the machine with no production, and a busy CPU would hold the
	// servers to one shadow run at a time, leaving copies owed at --wait that only
	// look lost. For the same reason the shadow side (a process of its own, as
	// by default) and its engine keep the front's priority: what this measures is
	// what is kept across kill -9 and SIGTERM, and a machine busy with other work
	// at normal priority would starve a lowered shadow side past the posts'
	// timeouts.
	cfg := fmt.Sprintf("server:\n  shutdown_timeout: %s\n  shadow_nice: 0\nstore:\n  embedded_nice: 0\ningest:\n  admission:\n    max_cpu: 0\n", d.o.Drain)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("loadtest durability: %w", err)
	}
	n := d.o.Copies
	kill9At, termAt := n*3/10, n*6/10
	d.rep.Kill9At, d.rep.TermAt = kill9At, termAt

	// Life 1: killed with SIGKILL mid-stream.
	srv, err := d.serve(ctx, cfgPath)
	if err != nil {
		return err
	}
	d.post(ctx, 0, n*4/10, kill9At, func() {
		_ = srv.Process.Kill()
		fmt.Fprintf(d.log, "durability: kill -9 after %d posted\n", kill9At)
	})
	_, _ = srv.Process.Wait()

	// Life 2: the posts that failed around the kill (8 are in flight at once) are
	// sent again, and the ones before them too (answered duplicate), then SIGTERM
	// while the shadow workers are busy.
	if srv, err = d.serve(ctx, cfgPath); err != nil {
		return err
	}
	exited := make(chan time.Duration, 1)
	d.post(ctx, kill9At-10, n*3/4, termAt, func() {
		t0 := time.Now()
		_ = srv.Process.Signal(syscall.SIGTERM)
		fmt.Fprintf(d.log, "durability: SIGTERM after %d posted\n", termAt)
		go func() { _, _ = srv.Process.Wait(); exited <- time.Since(t0) }()
	})
	select {
	case d.rep.ShutdownDuration = <-exited:
	case <-time.After(d.o.Drain + 30*time.Second):
		_ = srv.Process.Kill()
		return errors.New("loadtest durability: the server did not exit after SIGTERM")
	}

	// Life 3: the rest, and the first life's copies sent again (dedup from the store).
	if srv, err = d.serve(ctx, cfgPath); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _, _ = srv.Process.Wait() }()
	d.post(ctx, termAt-10, n, -1, nil)
	d.post(ctx, 0, n/10, -1, nil)
	d.rep.Lives = 3
	return d.settle(ctx)
}

// start runs a binary with its output in dir/<name>-N.log.
func (d *durabilityRun) start(ctx context.Context, name, bin string, env []string, args ...string) (*exec.Cmd, error) {
	logf, err := os.CreateTemp(d.dir, name+"-*.log")
	if err != nil {
		return nil, fmt.Errorf("loadtest durability: %w", err)
	}
	c := exec.CommandContext(ctx, bin, args...)
	c.Stdout, c.Stderr = logf, logf
	c.Env = append(os.Environ(), env...)
	if err := c.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("loadtest durability: start %s: %w", name, err)
	}
	go func() { _ = c.Wait(); logf.Close() }()
	return c, nil
}

func (d *durabilityRun) serve(ctx context.Context, cfgPath string) (*exec.Cmd, error) {
	d.rep.Lives++
	c, err := d.start(ctx, "serve", d.o.Server, []string{"CONDUCTOR_SHADOW_POOL_URL=" + d.poolURL, "CONDUCTOR_SHADOW_PII_SECRET=durability"},
		"serve", "--config", cfgPath, "--data", filepath.Join(d.dir, "data"), "--addr", d.addr)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, "http://"+d.addr+"/healthz", 60*time.Second); err != nil {
		_ = c.Process.Kill()
		return nil, fmt.Errorf("loadtest durability: serve (life %d, logs in %s): %w", d.rep.Lives, d.dir, err)
	}
	return c, nil
}

func waitReady(ctx context.Context, url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s", url, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *durabilityRun) id(i int) string { return fmt.Sprintf("dur-%s-%04d", d.tag, i) }

func (d *durabilityRun) exchange(i int) ingest.Exchange {
	q := fmt.Sprintf("Durability check %d: a shop sells %d apples a day for %d days. How many apples is that?", i, i%17+3, i%5+2)
	return ingest.Exchange{
		SchemaVersion: ingest.SchemaVersion, RequestID: d.id(i), App: "durability", ReceivedAt: time.Now().UTC(),
		Request:  ingest.ExchangeRequest{Model: "gpt-5", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: q}}},
		Response: &ingest.ExchangeResponse{Model: "gpt-5", Content: strconv.Itoa((i%17 + 3) * (i%5 + 2)), LatencyMs: 800, Usage: ingest.Usage{PromptTokens: 40, CompletionTokens: 3}},
		Metadata: map[string]string{"category": "math_word_problem"},
	}
}

// post sends copies [from, to) at the configured rate, 8 at a time; after the
// copy numbered at is sent, hook runs once (the kill), while posting goes on.
func (d *durabilityRun) post(ctx context.Context, from, to, at int, hook func()) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(max(d.o.Rate, 1)))
	defer tick.Stop()
	for i := from; i < to && ctx.Err() == nil; i++ {
		<-tick.C
		if i == at && hook != nil {
			hook()
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d.postOne(ctx, i)
		}()
	}
	wg.Wait()
}

func (d *durabilityRun) postOne(ctx context.Context, i int) {
	body, _ := json.Marshal(d.exchange(i))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.addr+"/v1/tap", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.id(i)
	if i >= d.rep.Posted {
		d.rep.Posted = i + 1
	}
	if err != nil {
		d.rep.Failed++
		return
	}
	defer resp.Body.Close()
	var tr ingest.TapResponse
	_ = json.NewDecoder(resp.Body).Decode(&tr)
	switch {
	case resp.StatusCode == http.StatusAccepted:
		d.accepted[id] = true
	case tr.Status == "duplicate":
		d.rep.Duplicates++
	case resp.StatusCode == http.StatusServiceUnavailable:
		d.rep.Refused++
	}
}

// query runs one read-only statement on the running server.
func (d *durabilityRun) query(ctx context.Context, sql string) (store.QueryResult, error) {
	body, _ := json.Marshal(struct {
		SQL string `json:"sql"`
	}{sql}) // the body of POST /api/query
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.addr+"/api/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return store.QueryResult{}, err
	}
	defer resp.Body.Close()
	var res store.QueryResult
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return res, fmt.Errorf("query: %s: %s", resp.Status, b)
	}
	return res, json.NewDecoder(resp.Body).Decode(&res)
}

// settle waits until every accepted copy has its runs (or --wait passes), then
// counts.
func (d *durabilityRun) settle(ctx context.Context) error {
	prefix := "dur-" + d.tag + "-"
	like := fmt.Sprintf("request_id LIKE '%s%%'", prefix)
	deadline := time.Now().Add(d.o.Wait)
	var done map[string]bool
	for {
		res, err := d.query(ctx, fmt.Sprintf(`SELECT request_id FROM runs FINAL WHERE %s
GROUP BY request_id
HAVING countIf(mode = 'incumbent') >= 1 AND countIf(mode = 'candidate' AND status != 'cancelled') >= 1`, like))
		if err != nil {
			return fmt.Errorf("loadtest durability: %w", err)
		}
		done = map[string]bool{}
		for _, r := range res.Rows {
			done[r[0]] = true
		}
		missing := 0
		for id := range d.accepted {
			if !done[id] {
				missing++
			}
		}
		// A copy the server took just before SIGTERM but whose 202 never
		// reached us is owed too: wait until no request is left with only
		// cancelled candidate runs.
		left, err := d.cancelledOnly(ctx, like)
		if err != nil {
			return fmt.Errorf("loadtest durability: %w", err)
		}
		if (missing == 0 && left == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	d.rep.Accepted = len(d.accepted)
	for id := range d.accepted {
		if done[id] {
			d.rep.WithRuns++
		} else {
			d.rep.WithoutRuns++
			d.rep.Missing = append(d.rep.Missing, id)
		}
	}
	slices.Sort(d.rep.Missing)
	count := func(sql string) (int, error) {
		res, err := d.query(ctx, sql)
		if err != nil || len(res.Rows) == 0 {
			return 0, err
		}
		return strconv.Atoi(res.Rows[0][0])
	}
	var err error
	if d.rep.ErrorsFromStop, err = count(fmt.Sprintf(`SELECT count() FROM runs FINAL WHERE %s AND mode = 'candidate'
AND status = 'error' AND (positionCaseInsensitive(error, 'context canceled') > 0)`, like)); err != nil {
		return fmt.Errorf("loadtest durability: %w", err)
	}
	if d.rep.CancelledLeft, err = d.cancelledOnly(ctx, like); err != nil {
		return fmt.Errorf("loadtest durability: %w", err)
	}
	// Without FINAL: a finished run written twice shows as two rows until a
	// background merge collapses them.
	if d.rep.DuplicateRuns, err = count(fmt.Sprintf(`SELECT count() - uniqExact(run_id) FROM runs WHERE %s AND mode = 'candidate' AND status != 'cancelled'`, like)); err != nil {
		return fmt.Errorf("loadtest durability: %w", err)
	}
	return nil
}

// cancelledOnly counts the requests matching like whose candidate runs are all
// "cancelled": stopped and not (yet) shadowed again. A cancelled run that was
// re-run keeps its row beside the new run, so it is not counted.
func (d *durabilityRun) cancelledOnly(ctx context.Context, like string) (int, error) {
	res, err := d.query(ctx, fmt.Sprintf(`SELECT count() FROM (SELECT request_id FROM runs FINAL
WHERE %s AND mode = 'candidate' GROUP BY request_id
HAVING countIf(status = 'cancelled') > 0 AND countIf(status != 'cancelled') = 0)`, like))
	if err != nil {
		return 0, err
	}
	if len(res.Rows) == 0 || len(res.Rows[0]) == 0 {
		return 0, errors.New("cancelled runs: no answer")
	}
	return strconv.Atoi(res.Rows[0][0])
}
