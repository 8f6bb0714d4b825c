//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
	"github.com/gin-gonic/gin"
)

// threadNice is every thread of pid: its name and niceness
// (/proc/<pid>/task/*/stat, field 19).
func threadNice(t *testing.T, pid int) map[int][2]string {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][2]string{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
		if err != nil {
			continue // ended
		}
		s := string(stat)
		name := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		out[tid] = [2]string{name, fields[16]} // field 19 of stat; the 17th after the name
	}
	return out
}

// frontStatus reads the isolated server's /api/stats: the tap counts, the
// hand-off's and the shadow side's process.
type frontStatus struct {
	Tap        ingest.StatsSnapshot `json:"tap"`
	Handoff    ingest.HandoffStats  `json:"handoff"`
	ShadowSide shadowStatus         `json:"shadow_side"`
}

func readFrontStatus(t *testing.T, addr string) frontStatus {
	t.Helper()
	var st frontStatus
	if err := json.Unmarshal([]byte(get(t, "http://"+addr+"/api/stats")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestIsolatedServe runs `serve` (role all, server.isolate on by default) as
// an OS process: the front supervises its shadow side as a child process.
// It checks that every thread of the shadow side runs at least
// server.shadow_nice steps below the front and every thread of the front at
// the base priority; that a copy POSTed to /v1/tap is stored and shadowed
// through the hand-off; that a kill -9 of the shadow side under load leaves
// production answering 200, the copies it could not hand over counted, the
// shadow side restarted, and every copy answered 202 stored; and that
// SIGTERM stops both.
func TestIsolatedServe(t *testing.T) {
	t.Parallel() // its serve process is its own: runs beside the other parallel tests
	bin := commandBinary(t)
	pool := simulatedPool(t, 0.01)
	incumbent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`)
	}))
	defer incumbent.Close()

	const by = 7
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`server:
  shadow_nice: %d
  shutdown_timeout: 20s
ingest:
  workers: 4
  proxy:
    incumbent_url: %s
writer:
  flush_interval: 50ms
`, by, incumbent.URL))
	env := append(os.Environ(), "CONDUCTOR_SHADOW_POOL_URL="+pool.URL+"/v1")
	p := startServe(t, bin, env, "isolated", "--config", cfgPath, "--data", filepath.Join(dir, "data"))
	front := p.cmd.Process.Pid

	st := readFrontStatus(t, p.addr)
	child := int(st.ShadowSide.PID)
	if child == 0 || !st.ShadowSide.Up {
		t.Fatalf("no shadow side: %+v", st.ShadowSide)
	}

	// Niceness: the front at the base (this test's), the shadow side lower.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := 20 - raw
	want := min(base+by, 19)
	for tid, th := range threadNice(t, front) {
		if th[1] != strconv.Itoa(base) {
			t.Errorf("front thread %d (%s) at nice %s, want %d", tid, th[0], th[1], base)
		}
	}
	childThreads := threadNice(t, child)
	if len(childThreads) < 4 {
		t.Fatalf("shadow side has %d threads: %v", len(childThreads), childThreads)
	}
	for tid, th := range childThreads {
		n, _ := strconv.Atoi(th[1])
		switch {
		case th[0] == "MemoryWorker": // the engine's memory sampler raises its own priority (store/internal/chdb)
		case n < want: // the embedded engine's threads (and any thread that called into it, the main one included) go lower still (store.embedded_nice)
			t.Errorf("shadow side thread %d (%s) at nice %d, want ≥ %d", tid, th[0], n, want)
		}
	}

	// A copy POSTed to the tap is stored and shadowed by the shadow side.
	ex := `{"schema_version":1,"request_id":"iso-first","app":"iso","received_at":"2026-12-01T10:00:00Z",` +
		`"request":{"model":"gpt-5","messages":[{"role":"user","content":"What is 6 * 7? Answer with the number."}]},` +
		`"response":{"model":"gpt-5","content":"42","latency_ms":50,"usage":{"prompt_tokens":20,"completion_tokens":2}}}`
	// A busy machine may keep the lowered shadow side from committing within
	// ingest.accept_timeout: the tap answers 503 and the sender sends again.
	waitForCond(t, 60*time.Second, "POST /v1/tap answered 202 (or 200 duplicate)", func() bool {
		resp, err := http.Post("http://"+p.addr+"/v1/tap", "application/json", strings.NewReader(ex))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusAccepted, http.StatusOK: // 200: a copy answered 503 was committed after all (duplicate)
			return true
		case http.StatusServiceUnavailable:
			return false
		}
		t.Fatalf("POST /v1/tap: %s", resp.Status)
		return false
	})
	waitForCond(t, 60*time.Second, "the copy shadowed (an incumbent and a candidate run)", func() bool {
		rows := p.query(t, "SELECT count() FROM runs FINAL WHERE request_id = 'iso-first' AND status = 'ok'")
		n, _ := strconv.Atoi(rows[0][0])
		return n >= 2
	})

	// Load: production through the proxy and copies to the tap, while the
	// shadow side is killed with SIGKILL.
	var prodOK, prodFailed atomic.Int64
	var firstFailure atomic.Value
	var mu sync.Mutex
	accepted := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"model":"gpt-5","messages":[{"role":"user","content":"load %d-%d"}]}`, w, i)
				r, err := c.Post("http://"+p.addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}
				if err != nil || r.StatusCode != http.StatusOK {
					prodFailed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprint(err, r))
					continue
				}
				prodOK.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := &http.Client{Timeout: 20 * time.Second}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("iso-tap-%04d", i)
			body := strings.Replace(ex, "iso-first", id, 1)
			r, err := c.Post("http://"+p.addr+"/v1/tap", "application/json", strings.NewReader(body))
			if err != nil {
				continue
			}
			r.Body.Close()
			if r.StatusCode == http.StatusAccepted {
				mu.Lock()
				accepted[id] = true
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	// The kill comes once the shadow side has taken copies (it may take
	// seconds to open its store on a loaded machine), so copies accepted
	// before the kill are checked too.
	waitForCond(t, 60*time.Second, "load through the proxy and a tapped copy accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return prodOK.Load() >= 200 && len(accepted) > 0
	})
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	okAtKill := prodOK.Load()
	// While it is down, /readyz says so (the restart takes the store's open).
	waitForCond(t, 30*time.Second, "/readyz says shadow_unavailable", func() bool {
		r, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		return r.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "shadow_unavailable")
	})
	waitForCond(t, 60*time.Second, "the shadow side restarted", func() bool {
		s := readFrontStatus(t, p.addr)
		return s.ShadowSide.Restarts >= 1 && s.ShadowSide.Up && s.ShadowSide.PID != int64(child)
	})
	var lastReady string
	defer func() {
		if t.Failed() {
			t.Logf("last /readyz: %s", lastReady)
		}
	}()
	waitForCond(t, 60*time.Second, "the restarted shadow side takes copies", func() bool {
		r, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		lastReady = string(b)
		return r.StatusCode == http.StatusOK && readFrontStatus(t, p.addr).Handoff.HandedOver > 0
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if n := prodFailed.Load(); n != 0 {
		t.Errorf("production: %d requests failed across the kill (first: %v); %d answered 200", n, firstFailure.Load(), prodOK.Load())
	}
	if prodOK.Load() <= okAtKill {
		t.Errorf("production answered nothing after the kill: %d before, %d in all", okAtKill, prodOK.Load())
	}
	st = readFrontStatus(t, p.addr)
	notHanded := st.Handoff.Unavailable + st.Tap.Dropped[ingest.ReasonShadowUnavailable]
	if notHanded == 0 {
		t.Errorf("nothing counted as not handed over across the kill: %+v, dropped %v", st.Handoff, st.Tap.Dropped)
	}
	t.Logf("production %d answered 200, 0 failed; hand-off %+v; dropped %v; recorded %v; record lost %v",
		prodOK.Load(), st.Handoff, st.Tap.Dropped, st.Tap.Recorded, st.Tap.RecordDropped)

	// /metrics of the one address: the front's figures and the shadow side's.
	m := get(t, "http://"+p.addr+"/metrics")
	for _, want := range []string{"conductor_shadow_shadow_side_restarts_total 1", `conductor_shadow_handoff_copies_total{outcome="unavailable"}`,
		"conductor_shadow_shadow_side_up 1", `process="shadow_side"`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Every copy answered 202 is stored, before and after the kill.
	mu.Lock()
	ids := make([]string, 0, len(accepted))
	for id := range accepted {
		ids = append(ids, "'"+id+"'")
	}
	mu.Unlock()
	if len(ids) == 0 {
		t.Fatal("no copy was accepted under load")
	}
	rows := p.query(t, "SELECT count(DISTINCT request_id) FROM requests FINAL WHERE request_id IN ("+strings.Join(ids, ",")+")")
	if len(rows) != 1 || rows[0][0] != strconv.Itoa(len(ids)) {
		t.Errorf("of %d copies answered 202, %v are stored", len(ids), rows)
	}
	// Every exchange the proxy forwarded leaves a row, or is counted lost.
	waitForCond(t, 60*time.Second, "every forwarded exchange recorded or counted", func() bool {
		s := readFrontStatus(t, p.addr)
		var lost int64
		for _, n := range s.Tap.RecordDropped {
			lost += n
		}
		rows := p.query(t, "SELECT count() FROM requests FINAL WHERE source = 'tap' AND app != 'iso'")
		stored, _ := strconv.ParseInt(rows[0][0], 10, 64)
		return stored+lost >= prodOK.Load()
	})

	// SIGTERM stops the front, which stops the shadow side.
	newChild := int(readFrontStatus(t, p.addr).ShadowSide.PID)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("front exited with %v after SIGTERM", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the front did not stop within 45 s of SIGTERM")
	}
	waitForCond(t, 10*time.Second, "the shadow side stopped", func() bool { return !alive(newChild) })
	if log := p.log.String(); !strings.Contains(log, "shadow side ready") || strings.Count(log, `msg=stopped`) < 1 {
		t.Errorf("log lacks the shadow side's start or stop:\n%s", tail(log, 3000))
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

// TestShadowChildLifecycle: Shutdown is safe without Start and twice; a
// shadow side that exits before it is ready fails Start (and is not
// restarted), and Shutdown after that returns at once.
func TestShadowChildLifecycle(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	c := newShadowChild(selfExec{bin: "/nonexistent"}, sock, slog.Default())
	for range 2 {
		if err := c.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c = newShadowChild(selfExec{bin: "/bin/false"}, sock, slog.Default())
	if err := c.Start(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("Start of a shadow side that exits: %v", err)
	}
	if c.status().Restarts != 0 {
		t.Errorf("restarted a shadow side that never was ready: %+v", c.status())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 2 {
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFrontForwardsAStreamWhileItForwardsTheBody: a suite run's NDJSON
// progress, which the shadow side starts streaming once it has decoded the
// request, reaches the caller through the front whole, every time. Without
// full duplex on the forwarded route the front's server closed the request
// body at the first flush and some streams broke off after their headers
// ("ReverseProxy read error during body copy: use of closed network
// connection").
func TestFrontForwardsAStreamWhileItForwardsTheBody(t *testing.T) {
	const lines, tries = 5, 200
	sock := filepath.Join(t.TempDir(), "shadow.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	side := &http.Server{Handler: incumbenttest.StreamAfterDecode(lines)}
	go func() { _ = side.Serve(ln) }()
	t.Cleanup(func() { _ = side.Close() })

	s := &server{socket: sock, log: slog.New(slog.DiscardHandler)}
	h := &host{router: gin.New()}
	s.forwardShadowRoutes(h, gin.RoutesInfo{{Method: http.MethodPost, Path: "/api/suite-runs"}})
	front := httptest.NewServer(h.router)
	t.Cleanup(front.Close)
	body := `{"set":"` + strings.Repeat("x", 3000) + `"}`
	broken, err := incumbenttest.BrokenStreams(http.DefaultClient, front.URL+"/api/suite-runs", body, lines, tries)
	if err != nil {
		t.Fatal(err)
	}
	if broken > 0 {
		t.Errorf("%d of %d streamed answers broke off at the front", broken, tries)
	}
}
