package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/schedule"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// server is `conductor-shadow serve`: by role (server.role), the tap and proxy,
// the shadow workers, the web UI and the API on one listener, over one store.
type server struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	started   bool
	stopped   bool
	st        store.Store
	writer    *store.Writer
	pipes     *pipelines
	queue     ingest.Queue
	sq        *ingest.StoreQueue // the store-first queue; nil with Kafka
	proc      *ingest.Processor
	admission *ingest.Admission
	proxy     *ingest.Proxy
	kafka     *ingest.KafkaQueue
	stats     *ingest.Stats
	http      *http.Server
	sched     *schedule.Scheduler
	metrics   *metrics // GET /metrics: a private Prometheus registry
	notify    *notifyUnit
	tap       *ingest.Tap
	serveErr  chan error
	codeNote  string // /readyz detail when code graders are refused (sandbox.go)
	// stopConsole ends the console statements still running when the server
	// stops, so the HTTP drain does not wait for them; nil before Start.
	stopConsole context.CancelFunc
}

func newServer(cfg Config, log *slog.Logger) *server {
	return &server{cfg: cfg, log: log, serveErr: make(chan error, 1)}
}

// Start opens what the role needs (server.role): the store, the writer and the
// shadow workers unless the role is tap; the tap and the proxy unless it is
// shadow; then listens. On error everything already started is shut down.
func (s *server) Start(ctx context.Context, tp trace.TracerProvider) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("serve: already started")
	}
	s.started = true
	defer func() {
		if err != nil {
			_ = s.shutdownLocked(context.Background())
		}
	}()

	role := s.cfg.Server.Role
	token := os.Getenv(s.cfg.Server.APITokenEnv)
	if !web.IsLoopback(s.cfg.Server.Addr) && token == "" {
		return fmt.Errorf("serve: listening on %s beyond loopback needs a bearer token in $%s", s.cfg.Server.Addr, s.cfg.Server.APITokenEnv)
	}
	s.stats = ingest.NewStats()
	if s.metrics, err = newMetrics(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	where := "none (tap role: copies go to Kafka)"
	if role != RoleTap {
		st, w, err := openStore(ctx, s.cfg)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		s.st, where = st, w
		s.checkCodeSandbox(ctx)
		if s.writer, err = store.NewWriter(st, s.cfg.Writer, s.log); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		s.writer.Start(ctx)
		s.pipes, err = buildInstrumentedPipelines(s.cfg, shadow.Telemetry{Tracers: tp, Meters: s.metrics.meters, CaptureContent: s.cfg.Telemetry.CaptureContent})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	var shadowWriter ingest.BatchWriter = s.writer
	if s.cfg.Ingest.Kafka.Enabled() {
		// Offsets are committed once an exchange and its runs are stored, so the
		// workers write synchronously rather than through the buffered writer.
		// The tap role only produces.
		if s.kafka, err = ingest.NewKafkaQueue(s.cfg.Ingest.Kafka, role != RoleTap, s.stats, s.log); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if err := s.kafka.Start(ctx); err != nil { // the metadata ping /readyz reads
			return fmt.Errorf("serve: %w", err)
		}
		s.queue = s.kafka
		if s.st != nil {
			shadowWriter = ingest.StoreWriter{Store: s.st}
		}
	} else {
		// Store first: a copy is stored before the tap answers 202, and the work
		// left pending by a crash or a stop is picked up here.
		if s.sq, err = ingest.NewStoreQueue(s.cfg.Ingest, s.st, s.pipes.workKeys(), newPriceTable(s.cfg.Shadow), s.stats, s.log); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if err := s.sq.Start(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		s.queue = s.sq
	}
	// One PII secret for pseudonyms and subject hashes, stable across restarts:
	// the environment's, else the key kept in the data folder.
	pii, err := ingest.LoadPIISecret(s.cfg.Ingest.PII.SecretEnv, s.cfg.Store.Path)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if pii.Created {
		s.log.Info("PII key created; pseudonyms and subject hashes use it from now on (taps on other machines need the same key: set $"+s.cfg.Ingest.PII.SecretEnv+")", "key", pii.Source)
	} else {
		s.log.Info("PII key in use", "key", pii.Source)
	}
	var tap *ingest.Tap
	if role != RoleShadow {
		if tap, err = ingest.NewTap(s.cfg.Ingest, s.queue, s.stats, ingest.WithLogger(s.log), ingest.WithPIISecret(pii.Key)); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		s.tap = tap
	}
	if role != RoleTap {
		// Shadow runs take a slot of the adaptive limit first, so they back off
		// when production (the proxy, the CPU) shows pressure.
		if s.admission, err = ingest.NewAdmission(s.cfg.Ingest.Admission, s.stats, s.log); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if err := s.admission.Start(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		candidates := make([]shadow.Pipeline, len(s.pipes.candidates))
		for i, c := range s.pipes.candidates {
			candidates[i] = s.admission.Pipeline(c)
		}
		s.proc = ingest.NewProcessor(s.cfg.Ingest, s.queue, shadowWriter, candidates, newPriceTable(s.cfg.Shadow), s.stats, s.log)
		seg, err := newSegmenter(s.cfg, s.log)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		s.proc.UseSegmenter(seg)
		if s.cfg.Ingest.PII.Enabled { // workers' answers can echo personal data too
			pz, err := ingest.NewPseudonymizer(s.cfg.Ingest.PII, pii.Key)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			s.proc.UsePseudonymizer(pz)
		}
		// A data subject forgotten while its copies are queued or shadowed:
		// the workers drop their records instead of writing them back.
		if forgotten, err := store.NewRoles(s.st).ForgetLookup(); err == nil {
			s.proc.UseForgetLookup(forgotten)
		} else {
			s.log.Warn("serve: the store cannot tell forgotten subjects; shadow runs finishing after a forget are removed by its second sweep only", "err", err)
		}
		if s.kafka != nil {
			// Kafka delivers at least once: before running a candidate, the
			// workers look up whether its run is stored already.
			lookup, err := store.NewRoles(s.st).RunLookup()
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			s.proc.UseRunLookup(lookup)
		}
		if err := s.proc.Start(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}

	gin.SetMode(gin.ReleaseMode)
	router := gin.New()
	// W3C trace context from incoming requests: a tapped copy's shadow runs
	// join the production request's trace.
	router.Use(gin.Recovery(), otelgin.Middleware(s.cfg.Telemetry.ServiceName, otelgin.WithTracerProvider(tp),
		otelgin.WithPropagators(propagation.TraceContext{})),
		logServerErrors(s.log), browserGuard(newHostRules(s.cfg.Server.Addr, s.cfg.Server.AllowedHosts), s.log))
	health := serverHealth{Status: "ok", Role: role, Store: "none (tap role)"}
	if s.st != nil {
		health.Store = storeKind(s.cfg)
		if s.cfg.Store.DSN == "" {
			health.StoreID = storeID(s.cfg.Store.Path)
		}
	}
	router.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, health) })
	router.GET("/readyz", s.readyz)
	guarded := router.Group("/", requireToken(token))
	if tap != nil {
		tap.Register(guarded)
	}
	stopping, stopConsole := context.WithCancel(context.Background())
	s.stopConsole = stopConsole
	a := &api{
		console:  s.st,
		stats:    func() ingest.StatsSnapshot { return s.stats.Snapshot(s.queue.Len()) },
		writer:   func() store.WriterStats { return store.WriterStats{} },
		stopping: stopping,
	}
	if s.writer != nil {
		a.writer = s.writer.Stats
	}
	if s.admission != nil {
		a.admission = s.admission.Snapshot
	}
	if role == RoleTap {
		guarded.GET("/api/stats", a.statsHandler)
	} else {
		a.suites = &suiteRunner{cfg: s.cfg, roles: store.NewRoles(s.st), p: s.pipes, where: where + " (through the server at " + s.cfg.Server.Addr + ")"}
		if s.notify, err = startNotify(ctx, s.cfg, s.st, s.pipes, s.metrics.reg, s.log); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		a.suites.onReport = s.notify.suiteDone
		a.forget = newForgetter(s.st, pii.Key, forgetSweepAfter(s.cfg.Writer))
		a.register(guarded)
	}
	if err := s.metrics.watch(a.stats, a.writer); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	registerMetrics(guarded, s.metrics)
	if role == RoleAll {
		// Schedules run in one place: with several shadow workers, each would run them.
		s.sched, err = schedule.New(s.cfg.Schedules, func(ctx context.Context, job schedule.Suite) (string, error) {
			res, err := a.suites.runScheduled(ctx, job, nil)
			return res.SuiteRunID, err
		}, s.log)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if err := s.sched.Start(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	if s.cfg.Ingest.Proxy.Enabled() && tap != nil {
		// The mirroring proxy: production clients bring their own incumbent API key.
		var offerer ingest.Offerer = tap
		if s.admission != nil {
			offerer = s.admission.Offerer(tap, s.queue.Len)
		}
		if s.proxy, err = ingest.NewProxy(s.cfg.Ingest.Proxy, offerer, s.stats, nil, s.log); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if s.admission != nil {
			s.proxy.ObserveAddedLatency(s.admission)
		}
		if err := s.proxy.Start(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		router.NoRoute(gin.WrapH(s.proxy)) // paths the server does not serve pass through
	}
	if s.st != nil {
		// The UI's own credentials; beyond loopback the API token (required above)
		// also opens it, as the basic-auth password.
		webAuth := s.cfg.Web.ResolveAuth(os.Getenv)
		if webAuth.Token == "" && !web.IsLoopback(s.cfg.Server.Addr) {
			webAuth.Token = token
		}
		if err := web.CheckExposure(s.cfg.Server.Addr, webAuth); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		webCfg := s.cfg.Web
		if len(webCfg.ShiftSets) == 0 {
			webCfg.ShiftSets = setsInUse(s.cfg)
		}
		if s.cfg.Suite.Policy != "" { // the overview's running verdicts use the suites' policy
			p, err := gate.Load(s.cfg.Suite.Policy)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			webCfg.GatePolicy = &p
		}
		if err := web.Register(router.Group("/", webAuth.Middleware()), store.NewRoles(s.st), webCfg); err != nil {
			return fmt.Errorf("serve: web: %w", err)
		}
	}

	ln, err := net.Listen("tcp", s.cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("serve: listen: %w", err)
	}
	var handler http.Handler = router
	if s.proxy != nil {
		handler = s.proxy.Front(router) // production calls skip the middleware
	}
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	// Everything that reads a secret from the environment has read it.
	scrubSecrets(s.cfg)
	go func() { s.serveErr <- s.http.Serve(ln) }()
	for _, w := range judgeFamilyWarnings(s.cfg) {
		s.log.Warn(w + ": judges favour their own family's answers; set suite.judge.worker to another family, or judge.same_family: refuse in the gate policy to refuse such verdicts")
	}
	s.log.Info("serving", "url", "http://"+ln.Addr().String(), "role", role, "store", where)
	return nil
}

// Err reports the listener's failure, if it stops on its own.
func (s *server) Err() <-chan error { return s.serveErr }

// Shutdown stops accepting, drains in-flight HTTP requests, lets the shadow workers
// finish the queue, flushes the writer and closes the store, all within ctx. It
// logs how many copies were flushed and dropped. Safe without Start and twice.
func (s *server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdownLocked(ctx)
}

func (s *server) shutdownLocked(ctx context.Context) error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	if s.stopConsole != nil {
		s.stopConsole()
	}
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("serve: http shutdown: %w", err))
		}
	}
	if s.sched != nil {
		if err := s.sched.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.notify.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.proxy != nil {
		if err := s.proxy.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.proc != nil {
		// The shadow workers get half of the time left and the writer the rest, so
		// what the workers finished is stored rather than dropped at the deadline.
		procCtx, cancel := halfOfRemaining(ctx)
		err := s.proc.Shutdown(procCtx)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && (s.sq != nil || s.kafka != nil):
			// A stop is not a failure: with a durable queue the runs still going at
			// the workers' deadline are stored cancelled and their work stays
			// pending (store-first) or uncommitted (Kafka) for the next start.
			s.log.Info("shadow runs still going at the deadline were stored cancelled; their work is redone at the next start",
				"deadline", "half of server.shutdown_timeout")
		default:
			errs = append(errs, err)
		}
	}
	if s.admission != nil {
		_ = s.admission.Shutdown(ctx)
	}
	if s.sq != nil {
		if err := s.sq.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.kafka != nil {
		if err := s.kafka.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.writer != nil {
		if err := s.writer.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.pipes != nil {
		s.pipes.Close()
	}
	if err := s.metrics.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.st != nil {
		// Within the drain deadline: a statement stuck inside the embedded
		// engine is abandoned (logged, named in the error), not waited for.
		if err := s.st.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.stats != nil && s.writer != nil {
		snap := s.stats.Snapshot(0)
		var ws store.WriterStats
		if s.writer != nil {
			ws = s.writer.Stats()
		}
		s.log.Info("stopped", "accepted", snap.Accepted, "processed", snap.Processed, "left_pending", snap.LeftPending,
			"cancelled_runs", snap.CancelledRuns, "dropped", snap.Dropped, "writer", ws)
	}
	return errors.Join(errs...)
}

// halfOfRemaining returns a context ending halfway to ctx's deadline (ctx itself
// when it has none).
func halfOfRemaining(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(deadline)/2)
}

// readiness is the body of GET /readyz.
type readiness struct {
	Status  string            `json:"status"`            // "ready" or "not_ready"
	Reasons map[string]string `json:"reasons,omitempty"` // by part: "store", "queue", "kafka"
	// Detail names trouble that does not make the process unready, e.g.
	// "notify_webhook": "failing since … (see server log)".
	Detail map[string]string `json:"detail,omitempty"`
}

// Public reasons of /readyz. The endpoint answers without a token, so it says
// what is wrong in fixed words; the engine's or client's message (folders,
// part files, broker addresses) goes to the server log only.
const (
	readyStoreUnavailable = "store_unavailable: writes failing (see server log)"
	readyQueueFull        = "queue_full: the shadow queue is full"
	readyKafkaUnavailable = "kafka_unavailable: brokers unreachable (see server log)"
	readyStoreStalled     = "store_stalled: a statement has been inside the engine longer than store.stalled_after (see server log)"
)

// kafkaReason is the public /readyz reason of an unreachable Kafka: which
// operation failed and since when ("kafka_unavailable: kafka unreachable since
// 2026-01-02T03:04:05Z (ping) (see server log)"), without the client's message
// that follows (it names broker addresses); readyKafkaUnavailable when err has
// another form.
func kafkaReason(err error) string {
	msg := err.Error()
	head, _, ok := strings.Cut(msg, "): ")
	if !ok || !strings.HasPrefix(head, "kafka unreachable since ") {
		return readyKafkaUnavailable
	}
	return "kafka_unavailable: " + head + ") (see server log)"
}

// readyz answers 200 while copies can be taken and stored, else 503 naming why:
// the store cannot be written (its last write failed), its engine is stuck in
// one statement, the queue is full, or Kafka is unreachable
// (readyStoreUnavailable, readyStoreStalled, readyQueueFull,
// readyKafkaUnavailable). The full causes are logged (logServerErrors).
// /healthz stays a liveness check.
func (s *server) readyz(c *gin.Context) {
	r := readiness{Status: "ready", Reasons: map[string]string{}, Detail: s.notify.readyDetail()}
	var causes []error
	note := func(part, public string, err error) {
		r.Reasons[part] = public
		causes = append(causes, fmt.Errorf("readyz: %s: %w", part, err))
	}
	if s.writer != nil { // the tap role has no store
		if err := s.writer.Ready(); err != nil {
			if errors.Is(err, store.ErrQueueFull) {
				note("store", "store_queue_full: the store writer's queue is full", err)
			} else {
				note("store", readyStoreUnavailable, err)
			}
		}
	}
	if s.sq != nil {
		if err := s.sq.Ready(); err != nil {
			if errors.Is(err, ingest.ErrQueueFull) {
				note("queue", readyQueueFull, err)
			} else {
				note("store", readyStoreUnavailable, err)
			}
		}
	}
	if h, ok := s.st.(store.EngineHealth); ok { // the embedded engine runs one statement at a time
		if err := h.Stalled(); err != nil {
			note("store", readyStoreStalled, err)
		}
	}
	if s.kafka != nil {
		if err := s.kafka.Ready(); err != nil {
			if errors.Is(err, ingest.ErrQueueFull) {
				note("kafka", "kafka_buffer_full: the Kafka send buffer is full", err)
			} else {
				note("kafka", kafkaReason(err), err)
			}
		}
	}
	if s.codeNote != "" {
		if r.Detail == nil {
			r.Detail = map[string]string{}
		}
		r.Detail["code_grader"] = s.codeNote
	}
	if len(r.Reasons) > 0 {
		r.Status = "not_ready"
		for _, err := range causes {
			_ = c.Error(err)
		}
		c.JSON(http.StatusServiceUnavailable, r)
		return
	}
	c.JSON(http.StatusOK, r)
}
