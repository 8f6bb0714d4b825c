package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func newTestAdmission(t *testing.T, mut func(*AdmissionConfig)) (*Admission, *Stats) {
	t.Helper()
	cfg := NewDefaultAdmissionConfig()
	cfg.MaxSchedLatency, cfg.MaxCPU = 0, 0 // only the signals a test feeds
	if mut != nil {
		mut(&cfg)
	}
	stats := NewStats()
	a, err := NewAdmission(cfg, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, stats
}

func TestAdmissionAIMD(t *testing.T) {
	tests := []struct {
		name     string
		limit    int
		inflight int
		reason   string
		want     int
	}{
		{"pressure halves the limit", 16, 16, ShedLatency, 8},
		{"pressure from the CPU halves it too", 16, 0, ShedCPU, 8},
		{"never below min_limit", 1, 1, ShedLatency, 1},
		{"healthy and used at least half: one more", 16, 8, "", 17},
		{"healthy but mostly idle: unchanged", 16, 7, "", 16},
		{"never above max_limit", 128, 128, "", 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTestAdmission(t, nil)
			a.limit, a.peak = tt.limit, tt.inflight
			a.adjust(Pressure{Reason: tt.reason})
			if got := a.Snapshot().Limit; got != tt.want {
				t.Fatalf("limit %d, want %d", got, tt.want)
			}
		})
	}
}

func TestAdmissionAcquireWaitsAtTheLimit(t *testing.T) {
	a, _ := newTestAdmission(t, func(c *AdmissionConfig) { c.InitialLimit = 2 })
	ctx := context.Background()
	r1, _ := a.Acquire(ctx)
	r2, _ := a.Acquire(ctx)
	got := make(chan struct{})
	go func() {
		r3, err := a.Acquire(ctx)
		if err == nil {
			r3()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a third run started with the limit at 2")
	case <-time.After(50 * time.Millisecond):
	}
	r1()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("a released slot did not let the waiting run start")
	}
	r2()
	if s := a.Snapshot(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("after every release: %+v", s)
	}

	// Backing off below what is in flight holds new runs until enough finish.
	a.limit = 1
	r1, _ = a.Acquire(ctx)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := a.Acquire(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the deadline: %v", err)
	}
	r1()
	if s := a.Snapshot(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("a cancelled wait left state behind: %+v", s)
	}
}

func TestAdmissionShedsOnlyUnderPressureWithABacklog(t *testing.T) {
	a, stats := newTestAdmission(t, func(c *AdmissionConfig) { c.MaxAddedLatency = time.Millisecond })
	backlog := 0
	next := offerFunc(func() (int, TapResponse) { return http.StatusAccepted, TapResponse{Status: "queued"} })
	off := a.Offerer(next, func() int { return backlog })

	// 100 requests, 4 slow: p95 within the bound, healthy.
	for i := range 100 {
		a.ObserveAdded(time.Duration(100+i/96*5000) * time.Microsecond)
	}
	a.adjust(a.read())
	if code, _ := off.Offer(context.Background(), Exchange{RequestID: "a"}); code != http.StatusAccepted {
		t.Fatalf("healthy: %d", code)
	}
	// 10 of 100 slow: p95 above 1 ms.
	for i := range 100 {
		a.ObserveAdded(time.Duration(100+i/90*5000) * time.Microsecond)
	}
	a.adjust(a.read())
	limit := a.Snapshot().Limit
	backlog = limit - 1
	if code, _ := off.Offer(context.Background(), Exchange{RequestID: "b"}); code != http.StatusAccepted {
		t.Fatalf("under pressure, backlog below the limit must still queue: %d", code)
	}
	backlog = limit
	code, resp := off.Offer(context.Background(), Exchange{RequestID: "c"})
	if code != http.StatusServiceUnavailable || resp.Reason != ShedLatency {
		t.Fatalf("under pressure with a backlog: %d %+v", code, resp)
	}
	if n := stats.Snapshot(0).Dropped[ShedLatency]; n != 1 {
		t.Fatalf("shed_latency counted %d, want 1", n)
	}
	// A healthy interval ends the shedding.
	a.adjust(a.read())
	if code, _ := off.Offer(context.Background(), Exchange{RequestID: "d"}); code != http.StatusAccepted {
		t.Fatalf("healthy again: %d", code)
	}
}

type offerFunc func() (int, TapResponse)

func (f offerFunc) Offer(context.Context, Exchange) (int, TapResponse) { return f() }

func TestAdmissionCPUSignal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stat")
	copyFile(t, "testdata/proc_stat_1", path)
	r := newCPUReader(path)
	copyFile(t, "testdata/proc_stat_2", path)
	// Busy grew by 150+50 = 200 ticks of 300 in all.
	busy, ok := r.busy()
	if !ok || busy < 0.666 || busy > 0.667 {
		t.Fatalf("busy %v %v, want 2/3", busy, ok)
	}
	if _, _, ok := readProcStat(filepath.Join(dir, "missing")); ok {
		t.Fatal("a missing /proc/stat must read as unknown")
	}
}

// TestAdmissionIgnoresAMachineMerelyShared: the machine's CPU at 2/3 over
// max_cpu 0.5 sheds only while this process uses min_own_cpu of it. Using 1%
// of the machine (one request at a time) the reading says "shared" and
// nothing is shed; using half of it, the CPU signal sheds.
func TestAdmissionIgnoresAMachineMerelyShared(t *testing.T) {
	dir := t.TempDir()
	stat, self := filepath.Join(dir, "stat"), filepath.Join(dir, "self")
	selfStat := func(utime, stime int) string {
		// pid (comm with a space and a parenthesis) state, then fields 4..13, utime, stime, ...
		return fmt.Sprintf("42 (conductor (x) shadow) S 1 1 1 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 8 0 1 1 1\n", utime, stime)
	}
	for _, tc := range []struct {
		name       string
		own        int // ticks of this process over the 300 the machine counted
		wantReason string
		wantShared bool
	}{
		{"one request at a time", 3, "", true},
		{"this process is the load", 150, ShedCPU, false},
	} {
		cfg := NewDefaultAdmissionConfig()
		cfg.MaxSchedLatency, cfg.MaxCPU, cfg.MinOwnCPU = 0, 0.5, 0.2
		a, err := NewAdmission(cfg, NewStats(), nil)
		if err != nil {
			t.Fatal(err)
		}
		copyFile(t, "testdata/proc_stat_1", stat)
		if err := os.WriteFile(self, []byte(selfStat(10, 5)), 0o600); err != nil {
			t.Fatal(err)
		}
		a.cpu, a.own = newCPUReader(stat), newOwnCPUReader(self, stat)
		copyFile(t, "testdata/proc_stat_2", stat) // 200 of 300 ticks busy
		if err := os.WriteFile(self, []byte(selfStat(10+tc.own, 5)), 0o600); err != nil {
			t.Fatal(err)
		}
		p := a.read()
		if p.Reason != tc.wantReason || p.Shared != tc.wantShared {
			t.Errorf("%s: reading %+v; want reason %q, shared %v", tc.name, p, tc.wantReason, tc.wantShared)
		}
		if want := float64(tc.own) / 300; p.OwnCPU < want-1e-9 || p.OwnCPU > want+1e-9 {
			t.Errorf("%s: own CPU %v; want %v", tc.name, p.OwnCPU, want)
		}
		a.adjust(p)
		if _, shed := a.Shedding(1 << 20); shed != (tc.wantReason != "") {
			t.Errorf("%s: shedding %v", tc.name, shed)
		}
	}
	if _, ok := readProcSelfTicks(filepath.Join(dir, "missing")); ok {
		t.Error("a missing /proc/self/stat must read as unknown")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBucketQuantile(t *testing.T) {
	bounds := []float64{0, 0.001, 0.002, 0.004}
	tests := []struct {
		counts []uint64
		want   time.Duration
	}{
		{[]uint64{100, 0, 0}, time.Millisecond},
		{[]uint64{98, 1, 1}, 2 * time.Millisecond},
		{[]uint64{97, 1, 2}, 4 * time.Millisecond},
		{[]uint64{99, 1, 0}, time.Millisecond},
		{[]uint64{0, 50, 50}, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		var total uint64
		for _, c := range tt.counts {
			total += c
		}
		if got := bucketQuantile(tt.counts, bounds, total, 0.99); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.counts, got, tt.want)
		}
	}
}

func TestAdmissionConfigValidate(t *testing.T) {
	bad := []func(*AdmissionConfig){
		func(c *AdmissionConfig) { c.MinLimit = 0 },
		func(c *AdmissionConfig) { c.MaxLimit = 0 },
		func(c *AdmissionConfig) { c.InitialLimit = 1000 },
		func(c *AdmissionConfig) { c.BackoffRatio = 1 },
		func(c *AdmissionConfig) { c.Interval = 0 },
		func(c *AdmissionConfig) { c.MaxCPU = 2 },
		func(c *AdmissionConfig) { c.MinOwnCPU = -0.1 },
	}
	for i, mut := range bad {
		c := NewDefaultAdmissionConfig()
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: want an error", i)
		}
	}
	if err := NewDefaultAdmissionConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestAdmissionStartShutdown(t *testing.T) {
	a, _ := newTestAdmission(t, nil)
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := newTestAdmission(t, func(c *AdmissionConfig) { c.MaxSchedLatency = time.Millisecond; c.Interval = 5 * time.Millisecond })
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	_ = b.Shutdown(context.Background())
	_ = b.Shutdown(context.Background())
}

// countingObserver counts ObserveAdded calls.
type countingObserver struct{ n atomic.Int64 }

func (c *countingObserver) ObserveAdded(d time.Duration) {
	if d > 0 {
		c.n.Add(1)
	}
}

func TestProxyReportsAddedLatencyOfMirroredRequests(t *testing.T) {
	f := newProxyFixture(t, &incumbenttest.Handler{}, &recordingTap{})
	obs := &countingObserver{}
	f.proxy.ObserveAddedLatency(obs)
	for _, path := range []string{"/v1/chat/completions", "/v1/chat/completions", "/v1/models"} {
		method := http.MethodPost
		if path == "/v1/models" {
			method = http.MethodGet
		}
		req, _ := http.NewRequest(method, f.front.URL+path, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if got := obs.n.Load(); got != 2 {
		t.Fatalf("observed %d mirrored requests, want 2 (pass-through requests are not measured)", got)
	}
}

// gatePipeline records how many runs execute at once.
type gatePipeline struct {
	now, peak atomic.Int64
	release   chan struct{}
}

func (p *gatePipeline) Name() string    { return "gate" }
func (p *gatePipeline) Version() string { return "v1" }
func (p *gatePipeline) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	n := p.now.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	p.now.Add(-1)
	return shadow.Result{Run: store.Run{RequestID: req.RequestID, Status: store.StatusOK}}
}

func TestAdmittedPipelineRunsAtMostTheLimit(t *testing.T) {
	a, _ := newTestAdmission(t, func(c *AdmissionConfig) { c.InitialLimit = 3 })
	inner := &gatePipeline{release: make(chan struct{})}
	p := a.Pipeline(inner)
	if p.Name() != "gate" || p.Version() != "v1" {
		t.Fatalf("the wrapper must keep the candidate's name and version, got %s %s", p.Name(), p.Version())
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Run(context.Background(), shadow.Request{RequestID: fmt.Sprint(i)}, store.ModeCandidate)
		}()
	}
	waitFor(t, "3 runs in flight", func() bool { return inner.now.Load() == 3 })
	time.Sleep(20 * time.Millisecond)
	if s := a.Snapshot(); s.InFlight != 3 || s.Waiting != 7 {
		t.Fatalf("snapshot %+v, want 3 in flight and 7 waiting", s)
	}
	close(inner.release)
	wg.Wait()
	if peak := inner.peak.Load(); peak != 3 {
		t.Fatalf("%d runs executed at once, limit 3", peak)
	}

	// A run whose context ends while waiting still returns the pipeline's own
	// (cancelled) result, without taking a slot.
	b, _ := newTestAdmission(t, func(c *AdmissionConfig) { c.InitialLimit = 1 })
	release, _ := b.Acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	blocked := &gatePipeline{release: make(chan struct{})}
	res := b.Pipeline(blocked).Run(ctx, shadow.Request{RequestID: "late"}, store.ModeCandidate)
	if res.Run.RequestID != "late" || b.Snapshot().InFlight != 1 {
		t.Fatalf("cancelled wait: %+v, %+v", res.Run, b.Snapshot())
	}
	release()
}

// offerMirror records which hand-over the admission wrapper used.
type offerMirror struct{ offers, mirrors int }

func (o *offerMirror) Offer(context.Context, Exchange) (int, TapResponse) {
	o.offers++
	return http.StatusAccepted, TapResponse{Status: "queued"}
}

func (o *offerMirror) Mirror(Exchange) (int, TapResponse) {
	o.mirrors++
	return http.StatusAccepted, TapResponse{Status: "queued"}
}

// The mirroring proxy's copies go through Mirror (no wait for a durable write)
// behind admission too, and are still shed under pressure.
func TestAdmissionKeepsTheNonWaitingMirror(t *testing.T) {
	a, stats := newTestAdmission(t, func(c *AdmissionConfig) { c.MaxAddedLatency = time.Millisecond })
	next := &offerMirror{}
	backlog := 0
	off := a.Offerer(next, func() int { return backlog })
	m, ok := off.(mirrorer)
	if !ok {
		t.Fatal("the admission wrapper of a Mirror-capable tap has no Mirror: the proxy would wait for every durable write")
	}
	if code, _ := m.Mirror(Exchange{RequestID: "a"}); code != http.StatusAccepted || next.mirrors != 1 || next.offers != 0 {
		t.Fatalf("healthy: code %d, mirrors %d, offers %d; want 202 through Mirror", code, next.mirrors, next.offers)
	}
	for i := range 100 {
		a.ObserveAdded(time.Duration(100+i/90*5000) * time.Microsecond)
	}
	a.adjust(a.read())
	backlog = a.Snapshot().Limit
	code, resp := m.Mirror(Exchange{RequestID: "b"})
	if code != http.StatusServiceUnavailable || resp.Reason != ShedLatency || next.mirrors != 1 {
		t.Fatalf("under pressure with a backlog: %d %+v, mirrors %d", code, resp, next.mirrors)
	}
	if n := stats.Snapshot(0).Dropped[ShedLatency]; n != 1 {
		t.Fatalf("shed_latency counted %d, want 1", n)
	}
	if _, ok := a.Offerer(offerFunc(nil), func() int { return 0 }).(mirrorer); ok {
		t.Fatal("a wrapper over an Offer-only tap claims Mirror")
	}
}
