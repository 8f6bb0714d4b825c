package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval/livejudge"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// server is `conductor-shadow serve`, the composition root: by role
// (server.role) it builds an ordered list of parts (parts.go) over one store
// — the tap and proxy, the shadow workers, the web UI and the API on one
// listener — starts them in order and shuts them down in reverse.
type server struct {
	cfg      platform.Config
	log      *slog.Logger
	stats    *ingest.Stats
	serveErr chan error

	mu      sync.Mutex
	started bool
	stopped bool
	parts   []namedPart // in start order

	// What the parts share, set as they are built.
	token     string              // the API bearer token
	st        store.Store         // nil in the tap role
	where     string              // which store, for logs
	roles     store.Roles         // st's roles, resolved once
	writer    *store.Writer       // nil in the tap role
	pipes     *platform.Pipelines // nil in the tap role
	queue     ingest.Queue        // sq or kafka
	sq        *ingest.StoreQueue
	kafka     *ingest.KafkaQueue
	tap       *ingest.Tap      // nil in the shadow role
	recorder  *ingest.Recorder // the exchanges not shadowed; nil in the shadow role
	admission *ingest.Admission
	segmenter *segment.Segmenter // nil in the tap role
	suites    *suiteRunner       // nil in the tap role
	metrics   *metrics           // GET /metrics: a private Prometheus registry
	notify    *notifyUnit        // nil without a sink, outside the all-in-one role
	live      *livejudge.Stage   // live judging; nil when judge.live.share is 0 or in the tap role
	http      *http.Server
	codeNote  string // /readyz detail when code graders are refused (sandbox.go)
	// hosts are the names the server answers under and the origins of its
	// own pages (server.allowed_hosts), for the router and the proxy alike.
	hosts guard.Hosts
	// bodies caps the request bodies the tap and the proxy hold in memory.
	bodies *ingest.BodyBudget
	// stopConsole ends the console statements still running when the server
	// stops, so the HTTP drain does not wait for them; nil before addAPI.
	stopConsole context.CancelFunc
	// flows counts what the exporters send outside the platform (OTLP
	// spans, Kafka messages, notices) for the record of data flows; its
	// part writes the counts to the store.
	flows *dataflow.Meter
	// stopTracing flushes and stops the tracer provider (newTracerProvider):
	// a part stopped after every other exporter and before the flow meter's
	// last flush, so the last spans are counted. nil: serve's caller does it.
	stopTracing func(context.Context) error
	flowRec     *flowRecorder // the record of data flows; nil in the tap role

	// An isolated all-in-one server (isolate.go): side is sideFront or
	// sideShadow ("" one process); socket the hand-off's unix socket.
	side    string
	socket  string
	self    selfExec        // the front's own binary and arguments, to start the shadow side
	handoff *ingest.Handoff // the front's hand-off to the shadow side
	child   *shadowChild    // the front's shadow side process
	// internal serves the hand-off on the shadow side's socket, beside the
	// router (never forwarded by the front).
	internal   *gin.Engine
	shadowOnce sync.Once
	shadowHTTP *http.Client // the front's client of the shadow side
}

func newServer(cfg platform.Config, log *slog.Logger) *server {
	return &server{cfg: cfg, log: log, serveErr: make(chan error, 1),
		where:  "none (tap role: copies go to Kafka)",
		hosts:  guard.NewHosts(cfg.Server.Addr, cfg.Server.AllowedHosts),
		bodies: ingest.NewBodyBudget(cfg.Ingest.MaxUnfinishedBodyBytes),
		flows:  dataflow.NewMeter(log)}
}

// Start builds the role's parts, starts them in order on one host (the
// router they mount their routes on) and listens last. On error everything
// already built is shut down.
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
	s.token = os.Getenv(s.cfg.Server.APITokenEnv)
	if !web.IsLoopback(s.cfg.Server.Addr) && s.token == "" {
		return fmt.Errorf("serve: listening on %s beyond loopback needs a bearer token in $%s", s.cfg.Server.Addr, s.cfg.Server.APITokenEnv)
	}
	s.stats = ingest.NewStats()
	if err := s.build(ctx, tp); err != nil {
		return err
	}
	// Everything that reads a secret from the environment has read it.
	scrubSecrets(s.cfg)
	return s.startParts(ctx, s.newHost(tp))
}

// startParts starts the parts in order, stopping at the first that fails.
func (s *server) startParts(ctx context.Context, h *host) error {
	for _, p := range s.parts {
		if err := p.Start(ctx, h); err != nil {
			return fmt.Errorf("serve: start %s: %w", p.name, err)
		}
	}
	return nil
}

// newHost makes the router every part mounts its routes on, with the routes
// of the server itself: /healthz, /readyz and the token-guarded group.
func (s *server) newHost(tp trace.TracerProvider) *host {
	gin.SetMode(gin.ReleaseMode)
	router := gin.New()
	// W3C trace context from incoming requests: a tapped copy's shadow runs
	// join the production request's trace.
	router.Use(gin.Recovery(), otelgin.Middleware(s.cfg.Telemetry.ServiceName, otelgin.WithTracerProvider(tp),
		otelgin.WithPropagators(propagation.TraceContext{})),
		logServerErrors(s.log), browserGuard(s.hosts, s.log), securityHeaders(), newPathScrubber(s.cfg).middleware())
	health := platform.ServerHealth{Status: "ok", Role: s.cfg.Server.Role, Store: "none (tap role)"}
	if s.st != nil || s.side == sideFront { // the front answers for its shadow side's store
		health.Store = platform.StoreKind(s.cfg)
		if s.cfg.Store.DSN == "" {
			health.StoreID = platform.StoreID(s.cfg.Store.Path)
		}
	}
	router.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, health) })
	router.GET("/readyz", s.readyz)
	return &host{router: router, guarded: router.Group("/", requireToken(s.token))}
}

// Err reports the listener's failure, if it stops on its own.
func (s *server) Err() <-chan error { return s.serveErr }

// Shutdown stops the parts in reverse start order, all within ctx: the
// listener stops accepting and drains in-flight HTTP requests, the shadow
// workers finish the queue (in half of the time left), the writer flushes and
// the store closes; the last logs how many copies were flushed and dropped.
// Safe without Start and twice.
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
	if s.stopConsole != nil {
		s.stopConsole() // before the listener drains: a console statement does not hold the drain
	}
	var errs []error
	for i := len(s.parts) - 1; i >= 0; i-- {
		if err := s.parts[i].Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
	if s.recorder != nil {
		if err := s.recorder.Ready(); err != nil {
			if errors.Is(err, ingest.ErrRecordBufferFull) {
				note("recorder", "record_buffer_full: exchanges not shadowed are about to leave no row", err)
			} else {
				note("recorder", "record_store_failing: the records of exchanges not shadowed are not stored", err)
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
	if s.handoff != nil {
		s.frontReadiness(c, &r, note)
	}
	if s.codeNote != "" {
		if r.Detail == nil {
			r.Detail = map[string]string{}
		}
		r.Detail["code_grader"] = s.codeNote
	}
	if s.live != nil {
		if r.Detail == nil {
			r.Detail = map[string]string{}
		}
		r.Detail["live_judging"] = s.live.Stats().Detail()
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
