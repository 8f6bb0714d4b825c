package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// The sides of an isolated all-in-one server (server.isolate): the front
// (the mirroring proxy, the tap, the recorder, on server.addr, at the
// process's priority) supervises the shadow side (everything that needs the
// store) as a child process server.shadow_nice steps lower, over a unix
// socket. "" is one process doing everything.
const (
	sideFront  = "front"
	sideShadow = "shadow"
)

// shadowSideFlag is serve's hidden flag that makes the process the shadow
// side, listening on the socket it names.
const shadowSideFlag = "shadow-side"

// selfKey is the context key of the binary's own command line (selfExec):
// set by main only, so a front starts its shadow side from the binary, never
// from a program that runs serve in its own process.
type selfKey struct{}

// selfExec is this binary and the arguments it was started with.
type selfExec struct {
	bin  string
	args []string
}

// withSelf returns ctx carrying this executable and args (selfKey); ctx
// itself when the executable cannot be named.
func withSelf(ctx context.Context, args []string) context.Context {
	bin, err := os.Executable()
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, selfKey{}, selfExec{bin: bin, args: args})
}

// isolates reports whether serve runs as a front supervising a shadow side:
// the all-in-one role without Kafka (with Kafka, the tap and shadow roles
// already run apart), server.isolate on, on Linux.
func isolates(cfg platform.Config) bool {
	return isolationSupported && cfg.Server.Isolate && cfg.Server.Role == platform.RoleAll && !cfg.Ingest.Kafka.Enabled()
}

// shadowSocket is the hand-off's unix socket: shadow.sock in the data
// folder, or, when that path is too long for a socket address (108 bytes on
// Linux), in a new private temporary folder.
func shadowSocket(cfg platform.Config) (string, error) {
	dir, err := filepath.Abs(cfg.Store.Path)
	if err != nil {
		return "", fmt.Errorf("serve: shadow side socket: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("serve: shadow side socket: %w", err)
	}
	if p := filepath.Join(dir, "shadow.sock"); len(p) < 100 {
		return p, nil
	}
	tmp, err := os.MkdirTemp("", "conductor-shadow-")
	if err != nil {
		return "", fmt.Errorf("serve: shadow side socket: %w", err)
	}
	return filepath.Join(tmp, "shadow.sock"), nil
}

// listenShadowSocket is the shadow side's listener: the socket, mode 0600
// (the front is the only caller; the process's umask is 077 already).
func listenShadowSocket(path string) (net.Listener, error) {
	_ = os.Remove(path) // a socket left by a killed shadow side
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// buildFront makes the front's parts, in start order (Shutdown stops them in
// reverse: the listener drains first, the proxy's capture workers, the
// hand-off of the copies buffered, the recorder's last records, and only
// then the shadow side is told to stop):
//
//	data flows, tracing, metrics   as in the tap role (counts on /metrics)
//	shadow side                    the child process, restarted with backoff when it dies
//	recorder, tap                  records and copies go through the hand-off
//	handoff                        copies to the shadow side's store-first queue
//	api                            /api/stats and /metrics: the front's and the shadow side's figures
//	proxy                          the mirroring proxy
//	shadow routes                  every route of the web UI and the API, forwarded to the shadow side
//	listener
func (s *server) buildFront() error {
	s.addFlows()
	if err := s.addMetrics(); err != nil {
		return err
	}
	ho, err := ingest.NewHandoff(ingest.HandoffConfig{Socket: s.socket, Buffer: s.cfg.Server.HandoffBuffer}, s.log)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.handoff, s.queue = ho, ho
	s.where = platform.StoreKind(s.cfg) + " (in the shadow side, at niceness +" + fmt.Sprint(s.cfg.Server.ShadowNice) + ")"
	child := newShadowChild(s.self, s.socket, s.log)
	s.child = child
	s.add("shadow side", funcs(child.Start, child.Shutdown))
	pii, err := ingest.LoadPIISecret(s.cfg.Ingest.PII.SecretEnv, s.cfg.Store.Path)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := s.addTap(pii.Key); err != nil {
		return err
	}
	s.add("handoff", hostless{ho})
	s.add("api", routes(s.mountFrontAPI))
	if s.cfg.Ingest.Proxy.Enabled() {
		if err := s.addProxy(); err != nil {
			return err
		}
	}
	shadowRoutes, err := shadowSideRoutes(s.cfg)
	if err != nil {
		return err
	}
	s.add("shadow routes", routes(func(h *host) error { s.forwardShadowRoutes(h, shadowRoutes); return nil }))
	s.add("listener", funcs(s.listen, s.stopListening))
	return nil
}

// addHandoffReceiver mounts, on the shadow side's socket only, the routes the
// front hands its copies, records and offered counts to.
func (s *server) addHandoffReceiver() {
	recv := &ingest.HandoffReceiver{Queue: s.sq, Log: s.log, Offered: s.roles.CoverageWriter,
		Records: ingest.StoreRecords{Store: s.roles.TraceWriter, Segmenter: s.segmenter, Pricer: platform.NewPriceTable(s.cfg.Shadow), Stats: s.stats}}
	gin.SetMode(gin.ReleaseMode)
	s.internal = gin.New()
	s.internal.Use(gin.Recovery())
	recv.Register(s.internal)
}

// withInternal serves the hand-off's routes (ingest.HandoffPrefix) from
// internal and everything else from next: on the shadow side's socket only.
//
// Only the front can connect to the socket (mode 0600), and it forwards a
// caller with the caller's address in X-Forwarded-For (its own requests name
// the caller they answer): that address is the request's remote address
// here, so loopback callers and trusted networks are told apart as on the
// front.
func withInternal(internal, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, ingest.HandoffPrefix) {
			internal.ServeHTTP(w, r)
			return
		}
		r.RemoteAddr = "" // unknown: not loopback
		if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
			ip := strings.TrimSpace(xff[strings.LastIndex(xff, ",")+1:])
			if net.ParseIP(ip) != nil {
				r.RemoteAddr = net.JoinHostPort(ip, "0")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// shadowSideRoutes are the routes the shadow side serves to callers (the API
// and the web UI), listed by mounting them on a router of their own: the
// same registration as the shadow side's, so the two never differ.
func shadowSideRoutes(cfg platform.Config) (gin.RoutesInfo, error) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	(&api{}).register(r)
	// Only the routes are wanted: the pages are never served from here.
	rd := web.Readers{Suites: struct{ store.SuiteReader }{}}
	if err := web.Register(r.Group("/"), rd, cfg.Web); err != nil {
		return nil, fmt.Errorf("serve: the web UI's routes: %w", err)
	}
	return r.Routes(), nil
}

// forwardShadowRoutes mounts every route of the shadow side the front does
// not serve itself, forwarded to the shadow side with the caller's host,
// headers and body (its guards, token and credentials apply there).
func (s *server) forwardShadowRoutes(h *host, rs gin.RoutesInfo) {
	own := map[string]bool{}
	for _, r := range h.router.Routes() {
		own[r.Method+" "+r.Path] = true
	}
	proxy := s.shadowProxy()
	fwd := func(c *gin.Context) {
		// The shadow side's answer carries its own headers (security
		// headers, each page's content policy): none of the front's is added.
		h := c.Writer.Header()
		for k := range h {
			delete(h, k)
		}
		ingest.ForwardFullDuplex(c.Writer) // a suite run streams its progress while its body is still read
		proxy.ServeHTTP(c.Writer, c.Request)
	}
	for _, r := range rs {
		if !own[r.Method+" "+r.Path] {
			h.router.Handle(r.Method, r.Path, fwd)
		}
	}
}

// shadowProxy forwards a caller to the shadow side; 503 shadow_unavailable
// while it does not answer (restarting).
func (s *server) shadowProxy() http.Handler {
	return &httputil.ReverseProxy{
		Transport: ingest.UnixClient(s.socket, 0).Transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "shadow"
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		FlushInterval: -1, // suite runs stream their progress
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Warn("serve: the shadow side did not answer a forwarded request", "path", r.URL.Path, "err", err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":"shadow_unavailable: the shadow side is restarting; try again"}`)
		},
	}
}

// shadowGet GETs path from the shadow side with the caller's credentials,
// under the server's own name.
func (s *server) shadowGet(c *gin.Context, path string, timeout time.Duration) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://shadow"+path, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Host = s.cfg.Server.Addr
	if ip, _, err := net.SplitHostPort(c.Request.RemoteAddr); err == nil {
		req.Header.Set("X-Forwarded-For", ip)
	}
	for _, k := range []string{"Authorization", "Cookie"} {
		if v := c.GetHeader(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := s.shadowClient().Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

func (s *server) shadowClient() *http.Client {
	s.shadowOnce.Do(func() { s.shadowHTTP = ingest.UnixClient(s.socket, 0) })
	return s.shadowHTTP
}

// mountFrontAPI serves /api/stats and /metrics on the front: its own figures
// (the proxy, the tap, the recorder, the hand-off) with the shadow side's.
func (s *server) mountFrontAPI(h *host) error {
	stats := func() ingest.StatsSnapshot { return s.stats.Snapshot(s.queue.Len()) }
	if err := s.metrics.watch(stats, func() store.WriterStats { return store.WriterStats{} }, ingestParts{recorder: s.recorder}); err != nil {
		return err
	}
	if err := s.metrics.reg.Register(flowsCollector{s.flows}); err != nil {
		return fmt.Errorf("metrics: data flows: %w", err)
	}
	if err := s.metrics.reg.Register(handoffCollector{s.handoff, s.child}); err != nil {
		return fmt.Errorf("metrics: handoff: %w", err)
	}
	h.guarded.GET("/api/stats", s.frontStats)
	h.guarded.GET("/metrics", gin.WrapH(promhttp.HandlerFor(prometheus.Gatherers{s.metrics.reg, shadowGatherer{s}},
		promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})))
	return nil
}

// frontStats is GET /api/stats of an isolated server: the shadow side's
// answer with the front's counts added (each count of the tap snapshot is
// kept by one side: the front counts what the proxy and the tap took, the
// shadow side what it queued and shadowed), and "handoff" (what went over the
// socket) and "shadow_side" (its process: pid, restarts, up).
func (s *server) frontStats(c *gin.Context) {
	front := map[string]any{"tap": s.stats.Snapshot(s.queue.Len()), "handoff": s.handoff.Stats(), "shadow_side": s.child.status()}
	merged := toJSONMap(front)
	if resp, err := s.shadowGet(c, "/api/stats", 2*time.Second); err == nil {
		defer resp.Body.Close()
		var shadow map[string]any
		if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&shadow) == nil {
			merged = addJSON(shadow, merged).(map[string]any)
		}
	}
	c.JSON(http.StatusOK, merged)
}

// toJSONMap is v as a generic JSON object.
func toJSONMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// addJSON adds b to a: numbers are summed, objects merged key by key, any
// other value of b replaces a's unless it is null.
func addJSON(a, b any) any {
	switch bv := b.(type) {
	case map[string]any:
		am, ok := a.(map[string]any)
		if !ok {
			return b
		}
		for k, v := range bv {
			am[k] = addJSON(am[k], v)
		}
		return am
	case float64:
		if av, ok := a.(float64); ok {
			return av + bv
		}
		return b
	case nil:
		return a
	}
	return b
}

// shadowGatherer reads the shadow side's /metrics, every sample labelled
// process="shadow_side" (the front's carry no such label), so /metrics of
// the one address shows both processes.
type shadowGatherer struct{ s *server }

func (g shadowGatherer) Gather() ([]*dto.MetricFamily, error) {
	req, err := http.NewRequest(http.MethodGet, "http://shadow/metrics", nil)
	if err != nil {
		return nil, err
	}
	// Asked by the front itself for a caller its token guard admitted.
	req.Host = g.s.cfg.Server.Addr
	req.Header.Set("X-Forwarded-For", "127.0.0.1")
	if tok := g.s.token; tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := g.s.shadowClient().Do(req.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("metrics: the shadow side: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: the shadow side answered %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("metrics: the shadow side's: %w", err)
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, f := range fams {
		for _, m := range f.Metric {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("process"), Value: proto.String("shadow_side")})
		}
		out = append(out, f)
	}
	return out, nil
}

var (
	descHandoff = prometheus.NewDesc("conductor_shadow_handoff_copies_total",
		"Copies the front of an isolated server handed to its shadow side, by outcome: handed_over (stored by the store-first queue), "+
			"unavailable (the shadow side did not answer; recorded instead), or the shadow side's reason (queue_full, duplicate, …).", []string{"outcome"}, nil)
	descHandoffRecords = prometheus.NewDesc("conductor_shadow_handoff_records_total",
		"Records of exchanges not shadowed the front handed to its shadow side's store.", nil, nil)
	descHandoffBuffered = prometheus.NewDesc("conductor_shadow_handoff_buffered_copies",
		"Copies waiting in the front for the shadow side (server.handoff_buffer at most).", nil, nil)
	descShadowRestarts = prometheus.NewDesc("conductor_shadow_shadow_side_restarts_total",
		"Times the front restarted its shadow side after it died.", nil, nil)
	descShadowUp = prometheus.NewDesc("conductor_shadow_shadow_side_up",
		"1 while the shadow side's process runs.", nil, nil)
)

// handoffCollector exposes the hand-off and the shadow side's process.
type handoffCollector struct {
	h *ingest.Handoff
	c *shadowChild
}

func (handoffCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHandoff, descHandoffRecords, descHandoffBuffered, descShadowRestarts, descShadowUp} {
		ch <- d
	}
}

func (hc handoffCollector) Collect(ch chan<- prometheus.Metric) {
	st := hc.h.Stats()
	ch <- prometheus.MustNewConstMetric(descHandoff, prometheus.CounterValue, float64(st.HandedOver), "handed_over")
	ch <- prometheus.MustNewConstMetric(descHandoff, prometheus.CounterValue, float64(st.Unavailable), "unavailable")
	for reason, n := range st.Refused {
		ch <- prometheus.MustNewConstMetric(descHandoff, prometheus.CounterValue, float64(n), reason)
	}
	ch <- prometheus.MustNewConstMetric(descHandoffRecords, prometheus.CounterValue, float64(st.Records))
	ch <- prometheus.MustNewConstMetric(descHandoffBuffered, prometheus.GaugeValue, float64(st.Buffered))
	cs := hc.c.status()
	ch <- prometheus.MustNewConstMetric(descShadowRestarts, prometheus.CounterValue, float64(cs.Restarts))
	up := 0.0
	if cs.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descShadowUp, prometheus.GaugeValue, up)
}

// frontReadiness adds to /readyz what the front knows of the shadow side:
// not answering (or copies not handed over), its own reasons when it
// answers, and a hand-off buffer close to full.
func (s *server) frontReadiness(c *gin.Context, r *readiness, note func(part, public string, err error)) {
	if err := s.handoff.Ready(); err != nil {
		if errors.Is(err, ingest.ErrQueueFull) { // mirrored copies are recorded instead; the tap's still go through
			if r.Detail == nil {
				r.Detail = map[string]string{}
			}
			r.Detail["handoff"] = "handoff_buffer_full: the mirrored copies waiting for the shadow side fill server.handoff_buffer; more are recorded, not shadowed"
		} else {
			note("shadow", "shadow_unavailable: the shadow side does not take copies (see server log)", err)
		}
	}
	resp, err := s.shadowGet(c, "/readyz", time.Second)
	if err != nil {
		note("shadow", "shadow_unavailable: the shadow side does not answer (see server log)", err)
		return
	}
	defer resp.Body.Close()
	var sr readiness
	if err := json.NewDecoder(resp.Body).Decode(&sr); err != nil {
		note("shadow", "shadow_unavailable: the shadow side does not answer (see server log)", err)
		return
	}
	for k, v := range sr.Reasons {
		note(k, v, fmt.Errorf("shadow side: %s", v))
	}
	for k, v := range sr.Detail {
		if r.Detail == nil {
			r.Detail = map[string]string{}
		}
		r.Detail[k] = v
	}
}

// shadowChild runs the shadow side: this binary again (os.Executable) with
// serve's arguments and --shadow-side <socket>, in its own process group,
// killed by the kernel if the front dies (Pdeathsig). It lowers its own
// threads' priority by shadow_nice before anything else (lowerAllThreads). A
// shadow side that dies is started again after a backoff (200 ms doubling to
// 10 s; back to 200 ms after a minute up); one that exits before its first
// readiness fails the front's Start (its error is in the log above).
type shadowChild struct {
	bin    string
	args   []string
	env    []string // serve's environment before the secrets were scrubbed: the shadow side reads them
	socket string
	log    *slog.Logger
	// readyWithin bounds Start's wait for the first readiness; past it the
	// front serves production anyway and keeps waiting in the background.
	readyWithin time.Duration

	mu       sync.Mutex
	started  bool
	stopping bool
	cmd      *exec.Cmd
	stop     chan struct{} // closed by Shutdown
	ended    chan struct{} // closed when the loop has ended
	firstErr chan error    // the first life's exit before its readiness

	// pastStart: Start has returned (ready, or given up waiting); from then
	// on every death is restarted.
	pastStart atomic.Bool
	restarts  atomic.Int64
	pid       atomic.Int64
}

// shadowStatus is the shadow side's process on /api/stats.
type shadowStatus struct {
	PID      int64 `json:"pid"`
	Up       bool  `json:"up"`
	Restarts int64 `json:"restarts"`
}

// newShadowChild returns the supervisor of the shadow side: self's binary
// and arguments with --shadow-side socket (it reads server.shadow_nice from
// the same configuration), in this process's environment as it is now.
func newShadowChild(self selfExec, socket string, log *slog.Logger) *shadowChild {
	args := append(append([]string{}, self.args...), "--"+shadowSideFlag, socket)
	return &shadowChild{bin: self.bin, args: args, env: os.Environ(), socket: socket, log: log, readyWithin: 2 * time.Minute,
		stop: make(chan struct{}), ended: make(chan struct{}), firstErr: make(chan error, 1)}
}

func (c *shadowChild) status() shadowStatus {
	pid := c.pid.Load()
	return shadowStatus{PID: pid, Up: pid != 0, Restarts: c.restarts.Load()}
}

// Start starts the shadow side and waits for its first readiness (its
// /healthz on the socket).
func (c *shadowChild) Start(ctx context.Context, _ *host) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("serve: shadow side: already started")
	}
	c.started = true
	c.mu.Unlock()
	go c.run()
	client := ingest.UnixClient(c.socket, time.Second)
	deadline := time.NewTimer(c.readyWithin)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := client.Get("http://shadow/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c.pastStart.Store(true)
				c.log.Info("shadow side ready", "pid", c.pid.Load(), "socket", c.socket)
				return nil
			}
		}
		select {
		case err := <-c.firstErr:
			return fmt.Errorf("serve: the shadow side exited before it was ready (its error is logged above): %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			c.pastStart.Store(true)
			c.log.Warn("serve: the shadow side is not ready yet; production is served, copies are recorded until it is", "waited", c.readyWithin)
			return nil
		case <-tick.C:
		}
	}
}

// run starts the shadow side and starts it again whenever it dies, until
// Shutdown. The goroutine keeps its OS thread: Pdeathsig is tied to the
// thread that started the child.
func (c *shadowChild) run() {
	runtime.LockOSThread()
	defer close(c.ended)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 200*time.Millisecond, 10*time.Second, 0
	for life := 0; ; life++ {
		began := time.Now()
		err := c.life()
		c.mu.Lock()
		stopping := c.stopping
		c.mu.Unlock()
		if stopping {
			return
		}
		if !c.pastStart.Load() && life == 0 {
			c.firstErr <- err
			return
		}
		if time.Since(began) > time.Minute {
			b.Reset()
		}
		wait := b.NextBackOff()
		c.restarts.Add(1)
		c.log.Error("serve: the shadow side died; production is still served and its copies are recorded until it is back", "err", err, "restart_in", wait)
		select {
		case <-c.stop:
			return
		case <-time.After(wait):
		}
	}
}

// life runs the shadow side once, until it exits.
func (c *shadowChild) life() error {
	cmd := exec.Command(c.bin, c.args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = c.env, os.Stdout, os.Stderr
	cmd.SysProcAttr = childAttr()
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return nil
	}
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("start: %w", err)
	}
	c.cmd = cmd
	c.pid.Store(int64(cmd.Process.Pid))
	c.mu.Unlock()
	err := cmd.Wait()
	c.pid.Store(0)
	c.mu.Lock()
	c.cmd = nil
	c.mu.Unlock()
	if err == nil {
		return errors.New("exited")
	}
	return err
}

// Shutdown tells the shadow side to stop (SIGTERM: it drains as serve does)
// and waits until it has, or kills it at ctx's end: what it accepted is in
// the store already. Safe without Start and twice.
func (c *shadowChild) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	if !c.started {
		c.mu.Unlock()
		return nil
	}
	if !c.stopping {
		c.stopping = true
		close(c.stop)
	}
	cmd := c.cmd
	c.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-c.ended:
		return nil
	case <-ctx.Done():
	}
	if cmd != nil {
		_ = cmd.Process.Kill()
	}
	<-c.ended
	return fmt.Errorf("serve: the shadow side did not stop within the deadline; killed (what it accepted is stored): %w", ctx.Err())
}
