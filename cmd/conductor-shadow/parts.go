package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/schedule"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// build makes the parts of the role (server.role), in start order; Shutdown
// stops them in reverse:
//
//	part              all  tap  shadow  shutdown
//	stop log           ✓         ✓      logs what was accepted, processed and dropped
//	store              ✓         ✓      closed last but the log
//	data flows         ✓    ✓    ✓      the exporters' counts: last flush to the store (none in the tap role)
//	tracing            ✓    ✓    ✓      the OTLP exporter flushes its last spans (counted above)
//	metrics            ✓    ✓    ✓      meter provider stopped
//	pipelines          ✓         ✓      worker pool closed
//	writer             ✓         ✓      flushes within the deadline
//	queue              ✓    ✓    ✓      store-first queue, or Kafka
//	admission          ✓         ✓
//	live judging       ✓         ✓      when judge.live.share > 0; after the workers: half its time to judge, the rest stored unjudged
//	shadow workers     ✓         ✓      half of the time left, then the rest to the writer
//	recorder           ✓    ✓           the exchanges not shadowed, and the offered counts; writes what it holds
//	tap                ✓    ✓           POST /v1/tap, /v1/tap/batch
//	api                ✓    ✓    ✓      /api/*, /metrics (the tap role: /api/stats only)
//	proxy              ✓    ✓           when ingest.proxy.incumbent_url is set; drains its capture workers
//	notify             ✓                when a sink is configured; undelivered notices stay pending
//	schedules          ✓                waits for a scheduled suite run going on
//	web                ✓         ✓
//	listener           ✓    ✓    ✓      stops accepting first, drains in-flight requests
//
// The shadow side of an isolated all-in-one server (server.isolate,
// isolate.go) is role all without the tap, the recorder and the proxy, with
// the hand-off's routes after the queue and the listener on its socket; the
// front has parts of its own (buildFront).
//
// Each part is added as soon as it is built, so a failure half-way shuts down
// what was built. Add a part here, where its role and its dependencies are.
func (s *server) build(ctx context.Context, tp trace.TracerProvider) error {
	if s.side == sideFront {
		return s.buildFront()
	}
	role := s.cfg.Server.Role
	var err error
	s.add("stop log", funcs(nil, func(context.Context) error { s.logStopped(); return nil }))
	if role != platform.RoleTap {
		if err := s.addStore(ctx); err != nil {
			return err
		}
	}
	s.addFlows()
	if err := s.addMetrics(); err != nil {
		return err
	}
	if role != platform.RoleTap {
		if err := s.addPipelines(tp); err != nil {
			return err
		}
		if err := s.addWriter(); err != nil {
			return err
		}
		// The segments of every stored request: computed by the store-first
		// queue as it accepts a copy, else by the shadow workers.
		if s.segmenter, err = newSegmenter(s.cfg, s.log); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	if err := s.addQueue(role); err != nil {
		return err
	}
	if s.side == sideShadow { // the front's copies and records come in over the socket
		s.addHandoffReceiver()
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
	if role != platform.RoleShadow && s.side != sideShadow {
		if err := s.addTap(pii.Key); err != nil {
			return err
		}
	}
	if role != platform.RoleTap {
		if err := s.addShadowWorkers(pii.Key); err != nil {
			return err
		}
	}
	s.addAPI(role, pii.Key)
	if s.cfg.Ingest.Proxy.Enabled() && s.tap != nil {
		if err := s.addProxy(); err != nil {
			return err
		}
	}
	if role == platform.RoleAll {
		if err := s.addNotify(); err != nil {
			return err
		}
		// Schedules run in one place: with several shadow workers, each would run them.
		if err := s.addSchedules(); err != nil {
			return err
		}
	}
	if s.st != nil {
		if err := s.addWeb(pii.Key); err != nil {
			return err
		}
	}
	s.add("listener", funcs(s.listen, s.stopListening))
	return nil
}

// add appends p to the parts, to be started after and stopped before those
// already added.
func (s *server) add(name string, p part) { s.parts = append(s.parts, namedPart{name, p}) }

// addStore opens the store and resolves its roles once: every later part
// takes the roles it uses.
func (s *server) addStore(ctx context.Context) error {
	st, where, err := platform.OpenStore(ctx, s.cfg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.st, s.where, s.roles = st, where, store.NewRoles(st)
	// Within the drain deadline: a statement stuck inside the embedded engine
	// is abandoned (logged, named in the error), not waited for.
	s.add("store", funcs(nil, st.Shutdown))
	s.checkCodeSandbox(ctx)
	return nil
}

// addFlows adds the flow meter (the exporters' counts for the record of
// data flows, written to the store; in the tap role kept in memory and on
// /metrics only) and, after it, the tracer provider's shutdown, so the spans
// it flushes last are counted before the meter's last flush. The settings
// (the configured recipients) are read now, before serve scrubs the
// webhook's URL from the environment.
func (s *server) addFlows() {
	if s.roles.FlowExportWriter != nil {
		s.flows.UseWriter(s.roles.FlowExportWriter)
	} else if s.st != nil {
		s.log.Warn("serve: the store cannot keep the exporters' counts; the record of data flows misses OTLP, Kafka and notifications", "err", store.NotSupported("store.FlowExportWriter"))
	} else if s.cfg.Ingest.Kafka.Enabled() || s.cfg.Telemetry.OTLPEndpoint != "" {
		s.log.Info("serve: tap role without a store: what this process sends to Kafka and the OTLP receiver is counted on /metrics (conductor_shadow_data_flow_*), not in a store's record of data flows")
	}
	s.add("data flows", funcs(func(ctx context.Context, _ *host) error { return s.flows.Start(ctx) }, s.flows.Shutdown))
	if s.stopTracing != nil {
		s.add("tracing", funcs(nil, s.stopTracing))
	}
	if s.st != nil {
		s.flowRec = &flowRecorder{reader: s.roles.FlowReader, settings: flowSettings(s.cfg, os.Getenv)}
	}
}

func (s *server) addMetrics() error {
	m, err := newMetrics()
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.metrics = m
	s.add("metrics", funcs(nil, m.Shutdown))
	return nil
}

func (s *server) addPipelines(tp trace.TracerProvider) error {
	pipes, err := platform.BuildInstrumentedPipelines(s.cfg, shadow.Telemetry{Tracers: tp, Meters: s.metrics.meters,
		CaptureContent: s.cfg.Telemetry.CaptureContent, MaxContentBytes: s.cfg.Telemetry.MaxContentBytes})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.pipes = pipes
	s.add("pipelines", funcs(nil, func(context.Context) error { pipes.Close(); return nil }))
	return nil
}

func (s *server) addWriter() error {
	w, err := store.NewWriter(s.st, s.cfg.Writer, s.log)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.writer = w
	s.add("writer", funcs(func(ctx context.Context, _ *host) error { w.Start(ctx); return nil }, w.Shutdown))
	return nil
}

// addQueue adds Kafka when brokers are configured (the tap role only
// produces), else the store-first queue: a copy is stored before the tap
// answers 202, and the work left pending by a crash or a stop is picked up
// at Start.
func (s *server) addQueue(role string) error {
	if s.cfg.Ingest.Kafka.Enabled() {
		q, err := ingest.NewKafkaQueue(s.cfg.Ingest.Kafka, role != platform.RoleTap, s.stats, s.log)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		q.UseFlowMeter(s.flows)
		s.kafka, s.queue = q, q
		s.add("kafka", hostless{q}) // Start runs the metadata ping /readyz reads
		return nil
	}
	q, err := ingest.NewStoreQueue(s.cfg.Ingest, s.roles.WorkStore, s.pipes.WorkKeys(), platform.NewPriceTable(s.cfg.Shadow), s.stats, s.log)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	q.UseSegmenter(s.segmenter)
	if s.writer != nil { // group commits take the shadow workers' waiting rows along
		q.UseWriter(s.writer)
	}
	s.sq, s.queue = q, q
	s.add("store-first queue", hostless{q})
	return nil
}

func (s *server) addTap(piiKey []byte) error {
	tap, err := ingest.NewTap(s.cfg.Ingest, s.queue, s.stats, ingest.WithLogger(s.log), ingest.WithPIISecret(piiKey), ingest.WithBodyBudget(s.bodies))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := s.addRecorder(tap); err != nil {
		return err
	}
	s.tap = tap
	s.add("tap", routes(func(h *host) error { tap.Register(h.guarded); return nil }))
	return nil
}

// addRecorder adds the recorder of the exchanges the tap and the proxy take
// but do not shadow: into the store where there is one, else (the tap role)
// through Kafka for the shadow workers to store. The offered counts are
// stored where there is a store; the tap role keeps them in memory (metrics).
func (s *server) addRecorder(tap *ingest.Tap) error {
	var sink ingest.RecordSink
	counts := s.roles.CoverageWriter
	switch {
	case s.handoff != nil: // the front of an isolated server: into the shadow side's store
		sink, counts = s.handoff, s.handoff
	case s.roles.TraceWriter != nil:
		sink = ingest.StoreRecords{Store: s.roles.TraceWriter, Segmenter: s.segmenter, Pricer: platform.NewPriceTable(s.cfg.Shadow), Stats: s.stats}
	case s.kafka != nil:
		sink = ingest.QueueRecords{Queue: s.kafka}
	default:
		return errors.New("serve: recorder: neither a store nor Kafka to record exchanges into")
	}
	rec, err := ingest.NewRecorder(s.cfg.Ingest.Record, sink, counts, s.stats, s.log)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	tap.UseRecorder(rec)
	s.recorder = rec
	s.add("recorder", hostless{rec})
	return nil
}

// addShadowWorkers adds the adaptive admission and the shadow workers. Shadow
// runs take a slot of the adaptive limit first, so they back off when
// production (the proxy, the CPU) shows pressure.
func (s *server) addShadowWorkers(piiKey []byte) error {
	adm, err := ingest.NewAdmission(s.cfg.Ingest.Admission, s.stats, s.log)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.admission = adm
	s.add("admission", funcs(func(ctx context.Context, _ *host) error { return adm.Start(ctx) },
		func(ctx context.Context) error { _ = adm.Shutdown(ctx); return nil }))
	candidates := make([]shadow.Pipeline, len(s.pipes.Candidates))
	for i, c := range s.pipes.Candidates {
		candidates[i] = adm.Pipeline(c)
	}
	// Kafka's workers write synchronously: an offset is committed once an
	// exchange and its runs are stored.
	var w ingest.BatchWriter = s.writer
	if s.kafka != nil {
		w = ingest.StoreWriter{Store: s.roles.TraceWriter}
		s.kafka.LimitInFlight(func() int { return adm.Snapshot().Limit }) // hold from Kafka only what can run
	}
	proc := ingest.NewProcessor(s.cfg.Ingest, s.queue, w, candidates, platform.NewPriceTable(s.cfg.Shadow), s.stats, s.log)
	proc.UseSegmenter(s.segmenter)
	if s.cfg.Ingest.PII.Enabled { // workers' answers can echo personal data too
		pz, err := ingest.NewPseudonymizer(s.cfg.Ingest.PII, piiKey)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		proc.UsePseudonymizer(pz)
	}
	// A data subject forgotten while its copies are queued or shadowed: the
	// workers drop their records instead of writing them back.
	if s.roles.ForgetLookup != nil {
		proc.UseForgetLookup(s.roles.ForgetLookup)
	} else {
		s.log.Warn("serve: the store cannot tell forgotten subjects; shadow runs finishing after a forget are removed by its second sweep only", "err", store.NotSupported("store.ForgetLookup"))
	}
	// A delivery whose queue cannot tell which runs are owed (Kafka delivers
	// at least once): before running a candidate, the workers look up whether
	// its run is stored already.
	if s.roles.RunLookup != nil {
		proc.UseRunLookup(s.roles.RunLookup)
	} else if s.kafka != nil {
		return fmt.Errorf("serve: %w", store.NotSupported("store.RunLookup"))
	}
	if err := s.addLiveJudging(proc, piiKey); err != nil {
		return err
	}
	s.add("shadow workers", funcs(func(ctx context.Context, _ *host) error { return proc.Start(ctx) }, s.stopWorkers(proc)))
	return nil
}

// stopWorkers is the shadow workers' Shutdown: they get half of the time left
// and the writer the rest, so what the workers finished is stored rather than
// dropped at the deadline. A stop is not a failure: with a durable queue the
// runs still going at the workers' deadline are stored cancelled and their
// work stays pending (store-first) or uncommitted (Kafka) for the next start.
func (s *server) stopWorkers(proc *ingest.Processor) func(context.Context) error {
	return func(ctx context.Context) error {
		procCtx, cancel := halfOfRemaining(ctx)
		err := proc.Shutdown(procCtx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && (s.sq != nil || s.kafka != nil) {
			s.log.Info("shadow runs still going at the deadline were stored cancelled; their work is redone at the next start",
				"deadline", "half of server.shutdown_timeout")
			return nil
		}
		return err
	}
}

// addAPI adds /api/* and /metrics: the tap role serves /api/stats only.
func (s *server) addAPI(role string, piiKey []byte) {
	stopping, stopConsole := context.WithCancel(context.Background())
	s.stopConsole = stopConsole
	a := &api{
		console:  s.roles.Console,
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
	if role != platform.RoleTap {
		s.suites = &suiteRunner{cfg: s.cfg, stores: eval.SuiteStoresOf(s.roles), p: s.pipes, where: s.where + " (through the server at " + s.cfg.Server.Addr + ")"}
		a.suites = s.suites
		a.forget = newForgetter(s.roles.SubjectEraser, piiKey, forgetSweepAfter(s.cfg.Writer))
		a.segments = s.roles.SegmentReader
		a.reviews = s.roles.ReviewReader
		a.flows = s.flowRec
		s.suites.flows = s.flowRec
	}
	s.add("api", routes(func(h *host) error {
		if role == platform.RoleTap {
			h.guarded.GET("/api/stats", a.statsHandler)
		} else {
			a.register(h.guarded)
		}
		parts := ingestParts{admission: a.admission, recorder: s.recorder}
		if err := s.metrics.watch(a.stats, a.writer, parts); err != nil {
			return err
		}
		if err := s.metrics.reg.Register(flowsCollector{s.flows}); err != nil {
			return fmt.Errorf("metrics: data flows: %w", err)
		}
		registerMetrics(h.guarded, s.metrics)
		return nil
	}))
}

// addNotify adds the verdict notifications (notify.go): every finished
// suite run's verdicts and the live verdicts go to the notifier.
func (s *server) addNotify() error {
	u, err := newNotify(s.cfg, s.roles, s.pipes, s.metrics.reg, s.log, s.flows)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if u == nil {
		return nil
	}
	s.notify = u
	s.suites.onReport = u.suiteDone
	s.add("notify", u)
	return nil
}

func (s *server) addSchedules() error {
	sched, err := schedule.New(s.cfg.Schedules, func(ctx context.Context, job schedule.Suite) (string, error) {
		res, err := s.suites.runScheduled(ctx, job, nil)
		return res.SuiteRunID, err
	}, s.log)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.add("schedules", hostless{sched})
	return nil
}

// addProxy adds the mirroring proxy: production clients bring their own
// incumbent API key; paths the server does not serve pass through.
func (s *server) addProxy() error {
	var offerer ingest.Offerer = s.tap
	if s.admission != nil {
		offerer = s.admission.Offerer(s.tap, s.queue.Len)
	}
	proxy, err := ingest.NewProxy(s.cfg.Ingest.Proxy, offerer, s.stats, nil, s.log)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// The same names and origins as the API; beyond loopback the API token
	// (in its own header) or a trusted network. The tap's body budget.
	proxy.UseGuard(s.hosts, s.token)
	proxy.UseBodyBudget(s.bodies)
	if s.recorder != nil {
		proxy.UseRecorder(s.recorder)
	}
	if s.admission != nil {
		proxy.ObserveAddedLatency(s.admission)
	}
	if s.handoff != nil {
		// The front of an isolated server: no capture while the shadow side
		// refuses copies (ingest.Saturation), a metadata record instead.
		proxy.UseCaptureGate(s.handoff)
	}
	s.add("proxy", funcs(func(ctx context.Context, h *host) error {
		if err := proxy.Start(ctx); err != nil {
			return err
		}
		h.router.NoRoute(gin.WrapH(proxy))
		h.front = proxy.Front // production calls skip the middleware (the proxy guards them itself)
		return nil
	}, proxy.Shutdown))
	return nil
}

// addWeb adds the UI with its own credentials; beyond loopback the API token
// (required at Start) also opens it, as the basic-auth password. Its one
// write, the review page's labels, goes through the store's ReviewWriter;
// reviewers are pseudonymized with the PII key.
func (s *server) addWeb(piiKey []byte) error {
	webAuth := s.cfg.Web.ResolveAuth(os.Getenv)
	if webAuth.Token == "" && !web.IsLoopback(s.cfg.Server.Addr) {
		webAuth.Token = s.token
	}
	if err := web.CheckExposure(s.cfg.Server.Addr, webAuth); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	webCfg := s.cfg.Web
	if len(webCfg.ShiftSets) == 0 {
		webCfg.ShiftSets = setsInUse(s.cfg)
	}
	if s.cfg.Suite.Policy != "" { // the overview's live verdicts use the suites' policy
		p, err := gate.Load(s.cfg.Suite.Policy)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		webCfg.GatePolicy = &p
	}
	webCfg.DataFlows = s.flowRec.settings
	readers, writers := web.ReadersOf(s.roles), web.WritersOf(s.roles)
	s.add("web", routes(func(h *host) error {
		return web.Register(h.router.Group("/", webAuth.Middleware()), readers, webCfg, web.WithWriters(writers), web.WithReviewerKey(piiKey))
	}))
	return nil
}

// listen is the listener's Start: it serves the host's router (through the
// proxy's front when there is one) on server.addr.
func (s *server) listen(_ context.Context, h *host) error {
	var ln net.Listener
	var err error
	if s.side == sideShadow {
		ln, err = listenShadowSocket(s.socket)
	} else {
		ln, err = net.Listen("tcp", s.cfg.Server.Addr)
	}
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var handler http.Handler = h.router
	if h.front != nil {
		handler = h.front(handler)
	}
	if s.internal != nil {
		handler = withInternal(s.internal, handler)
	}
	// ReadTimeout bounds the request (net/http lifts it once the body has been
	// read); no WriteTimeout: the proxy's SSE answers stream as long as the
	// incumbent's do.
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: s.cfg.Server.ReadHeaderTimeout,
		ReadTimeout: s.cfg.Server.ReadTimeout, IdleTimeout: s.cfg.Server.IdleTimeout}
	go func() { s.serveErr <- s.http.Serve(ln) }()
	for _, w := range judgeFamilyWarnings(s.cfg) {
		if s.side == sideFront {
			break // the shadow side, which judges, warns
		}
		s.log.Warn(w + ": judges favour their own family's answers; set suite.judge.worker (or judge.live.worker) to another family, or judge.same_family: refuse in the gate policy to refuse such verdicts")
	}
	if s.side == sideShadow {
		s.log.Info("shadow side serving the front", "socket", s.socket, "store", s.where)
		return nil
	}
	s.log.Info("serving", "url", "http://"+ln.Addr().String(), "role", s.cfg.Server.Role, "store", s.where)
	return nil
}

// stopListening is the listener's Shutdown: it stops accepting and drains the
// requests in flight.
func (s *server) stopListening(ctx context.Context) error {
	if s.http == nil {
		return nil
	}
	if err := s.http.Shutdown(ctx); err != nil {
		return fmt.Errorf("serve: http shutdown: %w", err)
	}
	return nil
}

// logStopped logs how many copies were accepted, processed and dropped, once
// every other part stopped (the tap role has no store writer and logs
// nothing).
func (s *server) logStopped() {
	if s.writer == nil {
		return
	}
	snap := s.stats.Snapshot(0)
	s.log.Info("stopped", "accepted", snap.Accepted, "processed", snap.Processed, "left_pending", snap.LeftPending,
		"cancelled_runs", snap.CancelledRuns, "dropped", snap.Dropped, "writer", s.writer.Stats())
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
