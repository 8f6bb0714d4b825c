package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// commandBinary returns the command to start as OS processes: this test
// binary, which runs as the command when asCommandEnv is set (TestMain).
func commandBinary(t *testing.T) string {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// osProcess is one `serve` running as its own OS process.
type osProcess struct {
	name, addr string
	cmd        *exec.Cmd
	exited     chan error    // the exit, once (waitHTTP reads it while starting)
	done       chan struct{} // closed at exit
	log        *syncBuffer
}

func startServe(t *testing.T, bin string, env []string, name string, args ...string) *osProcess {
	t.Helper()
	addr := freeAddr(t)
	p := &osProcess{name: name, addr: addr, exited: make(chan error, 1), done: make(chan struct{}), log: &syncBuffer{}}
	p.cmd = exec.Command(bin, append(append([]string{}, args...), "--addr", addr, "serve")...)
	p.cmd.Env = append(append([]string{}, env...), asCommandEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill() // no-op once it exited
		<-p.done
		if t.Failed() {
			t.Logf("--- %s log:\n%s", p.name, tail(p.log.String(), 3000))
		}
	})
	waitHTTP(t, "http://"+addr+"/healthz", p.exited)
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// stats reads GET /api/stats.
func (p *osProcess) stats(t *testing.T) ingest.StatsSnapshot {
	t.Helper()
	var body struct {
		Tap ingest.StatsSnapshot `json:"tap"`
	}
	if err := json.Unmarshal([]byte(get(t, "http://"+p.addr+"/api/stats")), &body); err != nil {
		t.Fatal(err)
	}
	return body.Tap
}

// query runs SQL through the process's API.
func (p *osProcess) query(t *testing.T, sql string) [][]string {
	t.Helper()
	b, _ := json.Marshal(queryRequest{SQL: sql})
	resp, err := http.Post("http://"+p.addr+"/api/query", "application/json", bytes.NewReader(b))
	for try := 0; err == nil && resp.StatusCode == http.StatusTooManyRequests && try < 30; try++ {
		resp.Body.Close() // the console runs one query at a time: wait for the last one
		time.Sleep(time.Second)
		resp, err = http.Post("http://"+p.addr+"/api/query", "application/json", bytes.NewReader(b))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res store.QueryResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: query %q: %d %v", p.name, sql, resp.StatusCode, err)
	}
	return res.Rows
}

// postQuestions posts n exchanges "What is i * 7?" (request ids roles-000…)
// to the tap in batches of 50 and returns their ids; each must be queued.
func postQuestions(t *testing.T, tap *osProcess, n int) map[string]bool {
	t.Helper()
	ids := make(map[string]bool, n)
	for b := 0; b*50 < n; b++ {
		var req ingest.BatchRequest
		for i := b * 50; i < min((b+1)*50, n); i++ {
			id := fmt.Sprintf("roles-%03d", i)
			ids[id] = true
			ex := ingest.Exchange{SchemaVersion: 1, RequestID: id, App: "roles-test", ReceivedAt: time.Now().UTC(),
				Request:  ingest.ExchangeRequest{Model: "gpt-5"},
				Response: &ingest.ExchangeResponse{Model: "gpt-5", Content: fmt.Sprint(i * 7), LatencyMs: 50, Usage: ingest.Usage{PromptTokens: 20, CompletionTokens: 3}},
			}
			ex.Request.Messages = []openai.ChatCompletionMessage{{Role: "user", Content: fmt.Sprintf("What is %d * 7? Answer with the number.", i)}}
			raw, _ := json.Marshal(ex)
			req.Exchanges = append(req.Exchanges, raw)
		}
		body, _ := json.Marshal(req)
		resp, err := http.Post("http://"+tap.addr+"/v1/tap/batch", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var br ingest.BatchResponse
		err = json.NewDecoder(resp.Body).Decode(&br)
		resp.Body.Close()
		if err != nil || br.Counts["queued"] != len(req.Exchanges) {
			t.Fatalf("batch %d: %v %v", b, br.Counts, err)
		}
	}
	return ids
}

func waitForCond(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// planCounter serves the simulated pool under one path prefix per store
// ("/data1/v1/...") and counts, per prefix and question number, the plans the
// conductor model answered (status 200): one per candidate run.
type planCounter struct {
	mu     sync.Mutex
	counts map[string]map[int]int
	first  map[string]map[int]time.Time // when each folder first planned each question
}

var questionNumber = regexp.MustCompile(`What is (\d+) \* 7\?`)

func (p *planCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		folder, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		r.URL.Path = "/" + rest
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req openai.ChatCompletionRequest
		_ = json.Unmarshal(body, &req)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if req.Model != simpool.ConductorModel && req.Model != simpool.ConductorJSONModel || rec.status != http.StatusOK || len(req.Messages) == 0 {
			return
		}
		m := questionNumber.FindStringSubmatch(req.Messages[len(req.Messages)-1].Content)
		if m == nil {
			return
		}
		i, _ := strconv.Atoi(m[1])
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.counts[folder] == nil {
			p.counts[folder] = map[int]int{}
		}
		if p.first == nil {
			p.first = map[string]map[int]time.Time{}
		}
		if p.first[folder] == nil {
			p.first[folder] = map[int]time.Time{}
		}
		if p.counts[folder][i] == 0 {
			p.first[folder][i] = time.Now()
		}
		p.counts[folder][i]++
	})
}

func (p *planCounter) count(folder string, i int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[folder][i]
}

// allPlanned says whether each of questions 0…n−1 was planned by some folder:
// a candidate run is stored only after its plan, so the stores are read for
// the runs once this holds (reading them is work for their engines).
func (p *planCounter) allPlanned(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range n {
		planned := false
		for _, m := range p.counts {
			if m[i] > 0 {
				planned = true
				break
			}
		}
		if !planned {
			return false
		}
	}
	return true
}

// firstPlanner is the folder that planned question i first ("" when none did).
func (p *planCounter) firstPlanner(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var who string
	var at time.Time
	for folder, m := range p.first {
		if t, ok := m[i]; ok && (who == "" || t.Before(at)) {
			who, at = folder, t
		}
	}
	return who
}

// statusRecorder keeps the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestRolesRebalanceShadowsEachExchangeOnce is the rebalance case with one
// embedded store per shadow worker (no store sees another's runs): 1 tap and
// 2 shadow workers as OS processes over a Kafka peer keeping the broker's
// default message limit; 150 exchanges are posted at once; worker 1 is killed
// with SIGKILL mid-stream, a third worker is started and, once it stored some,
// stopped with SIGTERM (two more rebalances), then worker 1 comes back on its
// folder. Candidate runs are counted per exchange across every process (the
// conductor's plans at the simulated pool, one per run, and the runs of every
// store). Nothing may be lost; an exchange may be shadowed twice only when the
// killed worker was the first to shadow it (in flight at the kill, at most
// ingest.kafka.max_in_flight), and every such second run must show as a
// re-delivery (StatsSnapshot.Kafka.Redelivered). Exchanges first shadowed by a
// worker that was never killed are shadowed once, whatever the rebalances. Over
// the union of the stores every exchange has one request, one incumbent run and
// one candidate run, each with steps (run ids are derived from request id and
// pipeline, so a re-delivered exchange rewrites the same keys; a shared
// ClickHouse server collapses them with FINAL), and no process plans a
// candidate run twice. The tap role has no store and no web UI.
func TestRolesRebalanceShadowsEachExchangeOnce(t *testing.T) {
	t.Parallel() // its serve processes are its own: runs beside the other parallel tests
	storetest.RequireEngine(t)
	if testing.Short() {
		t.Skip("runs the command as six processes")
	}
	bin := commandBinary(t)

	const topic = "exchanges"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, topic), kfake.GroupMinSessionTimeout(500*time.Millisecond),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": kafkaDefaultMessageMaxBytes}))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()

	sim := newSimulator(t, 0.01) // a conductor run takes one or two hundred ms: the stream outlasts the kill and the third worker
	plans := &planCounter{counts: map[string]map[int]int{}}
	pool := httptest.NewServer(plans.wrap(sim))
	defer pool.Close()

	dir := t.TempDir()
	config := func(topic, group string) string {
		path := filepath.Join(dir, group+".yaml")
		// ingest.workers keeps its default (128): far more exchanges are
		// fetched than the 4 admitted runs can take at once.
		writeFile(t, path, fmt.Sprintf(`ingest:
  admission: # 4 runs at once per worker, whatever else the machine runs
    initial_limit: 4
    max_limit: 4
    max_added_latency: 0s
    max_sched_latency: 0s
    max_cpu: 0
  kafka:
    brokers: [%q]
    topic: %s
    group: %s
    session_timeout: 2s
    commit_timeout: 2s
writer:
  flush_interval: 50ms
`, kc.ListenAddrs()[0], topic, group))
		return path
	}
	cfgPath := config(topic, "shadow-workers")
	base := append(os.Environ(), "CHDB_LIB_PATH="+os.Getenv("CHDB_LIB_PATH"))
	envOf := func(incarnation string) []string {
		return append(append([]string{}, base...), "CONDUCTOR_SHADOW_POOL_URL="+pool.URL+"/"+incarnation+"/v1")
	}
	folder := func(name string) string { return filepath.Join(dir, name) }
	shadowWorker := func(incarnation, data string) *osProcess {
		return startServe(t, bin, envOf(incarnation), incarnation, "--config", cfgPath, "--role", "shadow", "--data", folder(data))
	}

	tap := startServe(t, bin, envOf("tap"), "tap", "--config", cfgPath, "--role", "tap", "--data", folder("tap"))
	w1 := shadowWorker("worker-1", "data1")
	w2 := shadowWorker("worker-2", "data2")

	// The tap role has no store and no web UI.
	if h := get(t, "http://"+tap.addr+"/healthz"); !strings.Contains(h, `"role":"tap"`) || !strings.Contains(h, "none") {
		t.Fatalf("tap healthz: %s", h)
	}
	resp, err := http.Get("http://" + tap.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the tap role serves no web UI: GET / = %s", resp.Status)
	}

	const n = 150
	began := time.Now()
	ids := postQuestions(t, tap, n)

	waitForCond(t, 90*time.Second, "worker 1 stores a first share", func() bool { return w1.stats(t).Processed >= 20 })
	t.Logf("%.1fs: worker 1 killed with SIGKILL after storing %d", time.Since(began).Seconds(), w1.stats(t).Processed)
	if err := w1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w1.done
	killedAt := time.Now()
	w3 := shadowWorker("worker-3", "data3")
	t.Logf("%.1fs: worker 3 started", time.Since(began).Seconds())
	waitForCond(t, 90*time.Second, "worker 3 stores a share", func() bool { return w3.stats(t).Processed >= 15 })
	w3stats := w3.stats(t)
	if err := w3.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w3.exited:
		if err != nil {
			t.Errorf("worker 3 after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("worker 3 did not stop within 60s of SIGTERM")
	}
	planned := 0
	for i := range n {
		if plans.firstPlanner(i) != "" {
			planned++
		}
	}
	if planned >= n {
		t.Fatalf("every exchange was shadowed before worker 3 stopped: the rebalances came too late to test anything")
	}
	t.Logf("%.1fs: worker 3 stopped (%.1fs after the SIGKILL): %d of %d exchanges shadowed", time.Since(began).Seconds(), time.Since(killedAt).Seconds(), planned, n)
	// Worker 1 comes back on its folder; worker 3's folder is read by a
	// process on another topic and group, which shadows nothing.
	w1 = shadowWorker("worker-1-restarted", "data1")
	r3 := startServe(t, bin, envOf("reader-3"), "reader-3", "--config", config("nothing", "readers"), "--role", "shadow", "--data", folder("data3"))

	stores := []*osProcess{w1, w2, r3}
	type runRow struct{ requestID, mode string }
	union := func() (requests map[string]bool, candidates map[string]int, runs map[string]runRow, stepsOf map[string]bool) {
		requests, candidates, runs, stepsOf = map[string]bool{}, map[string]int{}, map[string]runRow{}, map[string]bool{}
		for _, w := range stores {
			for _, r := range w.query(t, "SELECT request_id FROM requests FINAL") {
				requests[r[0]] = true
			}
			for _, r := range w.query(t, "SELECT run_id, request_id, mode FROM runs FINAL") {
				runs[r[0]] = runRow{r[1], r[2]}
				if r[2] == store.ModeCandidate {
					candidates[r[1]]++ // one per store holding a candidate run of the request
				}
			}
			for _, r := range w.query(t, "SELECT DISTINCT run_id FROM steps FINAL") {
				stepsOf[r[0]] = true
			}
		}
		return
	}
	waitForCond(t, 180*time.Second, "every exchange planned", func() bool { return plans.allPlanned(n) })
	waitForCond(t, 180*time.Second, "every exchange stored with its runs", func() bool {
		requests, _, runs, _ := union()
		return len(requests) == n && len(runs) == 2*n
	})
	t.Logf("%.1fs: every exchange stored", time.Since(began).Seconds())
	requests, candidates, runs, stepsOf := union()
	for id := range ids {
		if !requests[id] {
			t.Errorf("exchange %s was accepted (202) but never stored", id)
		}
	}
	perRequest := map[string]map[string]int{}
	for runID, r := range runs {
		if !ids[r.requestID] {
			t.Errorf("run %s belongs to unknown request %q", runID, r.requestID)
		}
		if perRequest[r.requestID] == nil {
			perRequest[r.requestID] = map[string]int{}
		}
		perRequest[r.requestID][r.mode]++
		if !stepsOf[runID] {
			t.Errorf("run %s (%s, %s) has no steps", runID, r.requestID, r.mode)
		}
	}
	for id := range ids {
		if m := perRequest[id]; m[store.ModeIncumbent] != 1 || m[store.ModeCandidate] != 1 {
			t.Errorf("exchange %s has runs %v, want one incumbent and one candidate", id, m)
		}
	}
	inTwoStores := 0
	for _, c := range candidates {
		if c > 1 {
			inTwoStores++
		}
	}

	// Candidate runs per exchange over every process, by who ran it first.
	incarnations := []string{"worker-1", "worker-2", "worker-3", "worker-1-restarted", "reader-3"}
	twice := map[string]int{} // by first runner
	var again []string
	for i := range n {
		total := 0
		for _, inc := range incarnations {
			// No second spend within a process: a worker never plans a
			// request's candidate run again once that run is stored in its
			// folder (a re-delivery is skipped, counted in skipped_runs).
			c := plans.count(inc, i)
			if c > 1 {
				t.Errorf("exchange roles-%03d: the candidate ran %d times in %s; want once", i, c, inc)
			}
			total += c
		}
		if total == 0 {
			t.Errorf("exchange roles-%03d: no candidate run was planned", i)
		}
		if total > 1 {
			first := plans.firstPlanner(i)
			twice[first]++
			again = append(again, fmt.Sprintf("roles-%03d (%d runs, first by %s)", i, total, first))
		}
	}
	redelivered := w1.stats(t).Kafka.Redelivered + w2.stats(t).Kafka.Redelivered + w3stats.Kafka.Redelivered
	doubles := len(again)
	t.Logf("candidate runs twice: %d of %d exchanges (first by worker 1, killed: %d; worker 2: %d; worker 3: %d); in two stores: %d; re-deliveries counted: %d (worker 1 restarted %d, worker 2 %d, worker 3 %d); skipped as done by the previous owner: %d",
		doubles, n, twice["worker-1"], twice["worker-2"], twice["worker-3"], inTwoStores, redelivered,
		w1.stats(t).Kafka.Redelivered, w2.stats(t).Kafka.Redelivered, w3stats.Kafka.Redelivered,
		w1.stats(t).Kafka.SkippedDone+w2.stats(t).Kafka.SkippedDone+w3stats.Kafka.SkippedDone)
	if len(again) > 0 {
		t.Logf("shadowed twice: %s", strings.Join(again, ", "))
	}
	if c := twice["worker-2"] + twice["worker-3"] + twice["worker-1-restarted"]; c > 0 {
		t.Errorf("%d exchanges first shadowed by a worker that was never killed were shadowed again: a rebalance handed over work in flight", c)
	}
	if maxInFlight := ingest.NewDefaultKafkaConfig().MaxInFlight; twice["worker-1"] > maxInFlight {
		t.Errorf("%d exchanges of the killed worker were shadowed again; at most ingest.kafka.max_in_flight (%d) can be in flight at a kill", twice["worker-1"], maxInFlight)
	}
	if int64(doubles) > redelivered {
		t.Errorf("%d exchanges were shadowed twice but only %d re-deliveries were counted", doubles, redelivered)
	}
	if want := fmt.Sprintf("conductor_shadow_kafka_redelivered_total %d\n", w2.stats(t).Kafka.Redelivered); !strings.Contains(get(t, "http://"+w2.addr+"/metrics"), want) {
		t.Errorf("worker 2's /metrics lacks %q", want)
	}

	for _, p := range []*osProcess{tap, w1, w2, r3} {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range []*osProcess{tap, w1, w2, r3} {
		select {
		case err := <-p.exited:
			if err != nil {
				t.Errorf("%s after SIGTERM: %v", p.name, err)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("%s did not stop within 60s of SIGTERM", p.name)
		}
	}
}
