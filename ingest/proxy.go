package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Mirroring-proxy outcomes, counted in Stats.Mirrored.
const (
	ProxyOutcomeOffered     = "offered"       // the exchange was handed to the tap
	ProxyOutcomeNotOK       = "incumbent_err" // the incumbent answered non-2xx: still offered, as an incumbent failure
	ProxyOutcomeUnparsable  = "unparsable"    // request or answer could not be read as an exchange
	ProxyOutcomeTooLarge    = "too_large"     // request or answer beyond the capture limits
	ProxyOutcomeCaptureBusy = "capture_busy"  // every capture slot was busy: copy dropped
	ProxyOutcomeClientGone  = "client_gone"   // the client or incumbent broke off mid-answer: what arrived is still offered, marked partial
	// ProxyOutcomeInputReduced: offered, but without part of what production
	// sent (a previous_response_id conversation the tap never saw): its runs
	// are marked input_reduced.
	ProxyOutcomeInputReduced = "input_reduced"
)

// ProxyConfig sets the mirroring proxy.
type ProxyConfig struct {
	// IncumbentURL is the incumbent's base URL, e.g. https://api.openai.com (a
	// path prefix such as /openai is kept). Empty: the proxy is off.
	IncumbentURL string `yaml:"incumbent_url"`
	// App names the production app of mirrored exchanges when the client sends no
	// AppHeader.
	App string `yaml:"app"`
	// AppHeader is the request header naming the app; it is forwarded untouched.
	AppHeader string `yaml:"app_header"`
	// MaxCaptureBytes caps the request and the answer kept for the tap (each);
	// beyond it the exchange is forwarded but not mirrored.
	MaxCaptureBytes int64 `yaml:"max_capture_bytes"`
	// CaptureSlots caps the finished exchanges waiting to be parsed and offered;
	// beyond it copies are dropped (ProxyOutcomeCaptureBusy), never waited for.
	CaptureSlots int `yaml:"capture_slots"`
	// CaptureWorkers parse, pseudonymize and offer the copies; few, so the shadow
	// side's CPU use stays bounded next to the production traffic.
	CaptureWorkers int `yaml:"capture_workers"`
	// TrustedNetworks are the caller networks (CIDR, or single addresses)
	// trusted without the token: they may use the proxy beyond loopback and
	// choose the stored request id and app (see Proxy.UseGuard). Matched
	// against the TCP peer's address, never a forwarding header. Loopback is
	// not trusted unless listed (it may use the proxy, but its ids are not
	// taken).
	TrustedNetworks []string `yaml:"trusted_networks"`
	// TokenHeader is the request header in which a caller presents the
	// server's API token (server.api_token_env) to be trusted; removed before
	// forwarding. Authorization is the incumbent's: it passes untouched.
	TokenHeader string `yaml:"token_header"`
	// ConversationBytes caps the Responses API turns kept in memory (message
	// text and media, bytes) to rebuild the conversation of a request that
	// names previous_response_id; 0: none kept, such requests are shadowed
	// with their own input only and marked input_reduced.
	ConversationBytes int64 `yaml:"conversation_bytes"`
}

// NewDefaultProxyConfig returns the proxy off, app "default" from X-Conductor-App,
// 4 MiB captures, 4,096 capture slots and 1 capture worker (≈50 µs of CPU per copy,
// so one worker keeps up with thousands of requests/s and leaves the other cores
// to production traffic), 64 MiB of Responses API conversations, no trusted
// network and the token in X-Conductor-Shadow-Token.
func NewDefaultProxyConfig() ProxyConfig {
	return ProxyConfig{App: "default", AppHeader: "X-Conductor-App", MaxCaptureBytes: 4 << 20, CaptureSlots: 4096, CaptureWorkers: 1,
		ConversationBytes: 64 << 20, TrustedNetworks: []string{}, TokenHeader: guard.DefaultTokenHeader}
}

// Enabled reports whether an incumbent URL is configured.
func (c ProxyConfig) Enabled() bool { return c.IncumbentURL != "" }

// Validate checks the URL (http or https with a host) and the limits.
func (c ProxyConfig) Validate() error {
	var errs []error
	if c.IncumbentURL != "" {
		u, err := url.Parse(c.IncumbentURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ingest: proxy.incumbent_url %q: want http(s)://host[:port][/prefix]", c.IncumbentURL))
		}
	}
	if c.MaxCaptureBytes < 1024 {
		errs = append(errs, fmt.Errorf("ingest: proxy.max_capture_bytes must be at least 1024, got %d", c.MaxCaptureBytes))
	}
	if c.CaptureSlots < 1 {
		errs = append(errs, fmt.Errorf("ingest: proxy.capture_slots must be at least 1, got %d", c.CaptureSlots))
	}
	if c.CaptureWorkers < 1 || c.CaptureWorkers > 1024 {
		errs = append(errs, fmt.Errorf("ingest: proxy.capture_workers must be between 1 and 1024, got %d", c.CaptureWorkers))
	}
	if c.App == "" {
		errs = append(errs, errors.New("ingest: proxy.app must not be empty"))
	}
	if _, err := guard.ParseNetworks("ingest: proxy.trusted_networks", c.TrustedNetworks); err != nil {
		errs = append(errs, err)
	}
	if c.TokenHeader == "" || strings.ContainsAny(c.TokenHeader, " :\r\n") {
		errs = append(errs, fmt.Errorf("ingest: proxy.token_header %q: want a header name such as %s", c.TokenHeader, guard.DefaultTokenHeader))
	} else if strings.EqualFold(c.TokenHeader, "Authorization") {
		errs = append(errs, errors.New("ingest: proxy.token_header must not be Authorization: it carries the client's incumbent API key"))
	}
	if c.ConversationBytes < 0 {
		errs = append(errs, fmt.Errorf("ingest: proxy.conversation_bytes must be at least 0, got %d", c.ConversationBytes))
	}
	return errors.Join(errs...)
}

// mirrorer hands a copy over without waiting for it to be durable; *Tap is one.
type mirrorer interface {
	Mirror(ex Exchange) (int, TapResponse)
}

// Offerer takes a copy of one exchange without blocking; *Tap is one.
type Offerer interface {
	Offer(ctx context.Context, ex Exchange) (int, TapResponse)
}

// Proxy fronts the incumbent. Every request is forwarded to IncumbentURL and the
// answer goes back unchanged: status, headers, body, and SSE streams chunk by chunk
// as they arrive (each chunk flushed at once). POST /v1/chat/completions, POST
// /v1/responses and Anthropic's POST /v1/messages are also mirrored: once the answer has ended, the request, the
// answer (reassembled from SSE deltas when streamed: text, reasoning, every choice
// and tool call), latency, time to first byte, usage and model go to the tap in the
// background, so the client never waits for the shadow side. A non-2xx answer goes
// with its status, error body and rate-limit headers; an answer broken off (client
// or incumbent gone) with what arrived, marked partial (see capture.go).
// Shutdown waits for the background copies.
type Proxy struct {
	cfg      ProxyConfig
	tap      Offerer
	stats    *Stats
	log      *slog.Logger
	rp       *httputil.ReverseProxy
	captures chan capture
	convs    *conversations // Responses API turns, for previous_response_id; nil: off
	wg       sync.WaitGroup
	observer AddedLatencyObserver // nil: nothing measured
	loss     *lossLog
	rec      *Recorder // records what is forwarded but not copied; nil: it leaves no row

	// The guard (UseGuard, UseBodyBudget): who may call, who is trusted, and
	// the memory the bodies being copied may hold.
	hosts    guard.Hosts
	networks []netip.Prefix
	callers  guard.Callers
	budget   *BodyBudget

	mu      sync.RWMutex
	started bool
	closed  bool
}

// NewProxy returns a proxy to cfg.IncumbentURL offering copies to tap. transport
// nil means a clone of http.DefaultTransport with 1,024 idle connections per host.
func NewProxy(cfg ProxyConfig, tap Offerer, stats *Stats, transport http.RoundTripper, log *slog.Logger) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("ingest: proxy: incumbent_url is not set")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	target, _ := url.Parse(cfg.IncumbentURL)
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 4096
		t.MaxIdleConnsPerHost = 1024
		transport = t
	}
	networks, _ := guard.ParseNetworks("", cfg.TrustedNetworks) // validated above
	p := &Proxy{cfg: cfg, tap: tap, stats: stats, log: log, captures: make(chan capture, cfg.CaptureSlots), loss: newLossLog(log),
		convs: newConversations(cfg.ConversationBytes),
		hosts: guard.NewHosts("", nil), networks: networks, callers: guard.NewCallers(networks, cfg.TokenHeader, ""),
		budget: NewBodyBudget(max(DefaultMaxUnfinishedBodyBytes, cfg.MaxCaptureBytes+1))}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del(SubjectHeader)   // ours, not the incumbent's
			pr.Out.Header.Del(cfg.TokenHeader) // the server's token never leaves
			// Rewrite drops the inbound forwarding headers; the client's own pass
			// through untouched and none is added.
			for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v, ok := pr.In.Header[h]; ok {
					pr.Out.Header[h] = v
				}
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			setAnswerGuards(resp.Header)
			return nil
		},
		Transport:     transport,
		FlushInterval: -1,
		BufferPool:    &bufferPool{},
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if cw, ok := w.(*captureWriter); ok && (r.Context().Err() != nil || errors.Is(err, context.Canceled)) {
				cw.clientGone = true // gone before the incumbent answered: the 502 goes to no one
			}
			log.Warn("proxy: incumbent unreachable", "path", r.URL.Path, "err", err)
			setAnswerGuards(w.Header())
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return p, nil
}

// AddedLatencyObserver takes the proxy's own added latency of one mirrored request:
// from receiving it to having written it to the incumbent (reading the body,
// rewriting, taking a connection, writing), so CPU starvation of the forwarding
// path shows up in it. *Admission is one; it must not block.
type AddedLatencyObserver interface {
	ObserveAdded(d time.Duration)
}

// ObserveAddedLatency makes every mirrored request report its added latency to o.
// Call it before serving.
func (p *Proxy) ObserveAddedLatency(o AddedLatencyObserver) { p.observer = o }

// UseRecorder makes the proxy count every exchange it forwards on a mirrored
// route (rec.Offered, source proxy) and record, as a metadata row, every one
// it forwards without handing a copy to the tap: too large, over the body
// budget, every capture slot busy, not started or stopping, unparsable. Call
// it before serving.
func (p *Proxy) UseRecorder(rec *Recorder) { p.rec = rec }

// recordMeta records c as a metadata row, why naming what kept its text out
// (also its not_shadowed reason). O(1).
func (p *Proxy) recordMeta(c capture, why string) {
	if p.rec != nil {
		p.rec.Record(c.metadata(why), why)
	}
}

// bufferPool recycles ReverseProxy's 32 KiB copy buffers (one per answer otherwise).
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// ForwardFullDuplex lets a handler that forwards its request's body upstream
// (httputil.ReverseProxy with the incoming Request.Body) keep reading that
// body after the answer's headers are flushed. Without it, Go's HTTP/1 server
// treats the first flush of a streamed answer as the end of the request: it
// discards and closes the unread request body, and the transport, whose copy
// of the body has not yet seen its end (the upstream decoded the JSON and
// began streaming), fails its next read and closes the upstream connection
// mid-answer ("ReverseProxy read error during body copy: use of closed network
// connection", then http.ErrAbortHandler; golang/go#15527, #57786). Call it
// first in the handler; a writer that cannot (HTTP/2, a test recorder) is
// full duplex already or never flushes early, so its error is ignored.
func ForwardFullDuplex(w http.ResponseWriter) {
	_ = http.NewResponseController(w).EnableFullDuplex()
}

// mirrored reports whether r is an exchange to copy to the tap (routeOf).
func mirrored(r *http.Request) bool {
	return r.Method == http.MethodPost && routeOf(r.URL.Path) != apiNone
}

// Front returns a handler that serves the mirrored routes (POST …/chat/completions,
// POST …/responses, POST …/v1/messages, judged on the normalised path)
// itself, ahead of any middleware, and hands every other request to next.
// Mount the proxy as next's fallback (e.g. gin's NoRoute) so paths next does
// not serve still reach the incumbent.
func (p *Proxy) Front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clean, err := withCleanPath(r)
		if err == nil && mirrored(clean) || err != nil && mirrored(r) {
			p.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler. Every request passes the guard first
// (UseGuard), whatever its route, and is forwarded on its normalised path.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ForwardFullDuplex(w)
	trusted, ok := p.admit(w, r)
	if !ok {
		return
	}
	r, err := withCleanPath(r)
	if err != nil {
		p.refuse(w, r, http.StatusBadRequest, RefusedBadPath, err.Error())
		return
	}
	if !mirrored(r) {
		p.rp.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	reqBody, complete, release, err := p.budget.Read(r.Body, r.ContentLength, p.cfg.MaxCaptureBytes)
	defer release()
	overBudget := errors.Is(err, ErrBodyBudget)
	if err != nil && !overBudget {
		// The client broke off while sending: nothing reached the incumbent yet.
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if overBudget {
		// Forwarded whole, not copied: production never waits for the shadow side.
		p.stats.mirror(ReasonBodyBudget)
		p.stats.drop(ReasonBodyBudget)
		p.loss.log("proxy: exchange forwarded without a copy: the request bodies in memory reached ingest.max_unfinished_body_bytes", ReasonBodyBudget, err, 1)
	}
	reqBytes := &countingReader{n: int64(len(reqBody))}
	if complete {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
	} else {
		reqBytes.r = r.Body
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(reqBody), reqBytes), r.Body}
	}
	if p.observer != nil {
		obs := p.observer
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { obs.ObserveAdded(time.Since(start)) },
		}))
	}
	app := p.cfg.App
	if trusted && r.Header.Get(p.cfg.AppHeader) != "" {
		app = r.Header.Get(p.cfg.AppHeader)
	}
	if p.rec != nil {
		p.rec.Offered().Offer(store.OfferedProxy, r.URL.Path, app, start)
	}
	cw := &captureWriter{ResponseWriter: w, limit: p.cfg.MaxCaptureBytes, start: start}
	capt := func(end time.Time, how captureEnd) capture {
		c := newCapture(r, app, reqBody, cw, end, how)
		c.reqBytes = reqBytes.n
		if !trusted {
			// Only trusted callers choose the stored id and app; what the others
			// sent is kept beside the generated id.
			c.callerRequestID, c.requestID = callerValue(c.requestID), ""
			c.callerApp = callerValue(r.Header.Get(p.cfg.AppHeader))
		}
		return c
	}
	// copyOf hands the finished exchange over: a copy to parse, or, when its
	// text was not kept (over the body budget, too large), a metadata record.
	copyOf := func(c capture) {
		switch {
		case overBudget:
			p.recordMeta(c, BodyOverBudget)
		case !complete || cw.overflow:
			p.stats.mirror(ProxyOutcomeTooLarge)
			md := c.metadata(BodyTooLarge) // its id, for the log line
			p.log.Info("proxy: exchange forwarded without a copy: beyond ingest.proxy.max_capture_bytes; recorded as metadata",
				"request_id", md.RequestID, "route", c.path, "request_bytes", c.reqBytes, "response_bytes", c.respBytes,
				"max_capture_bytes", p.cfg.MaxCaptureBytes)
			if p.rec != nil {
				p.rec.Record(md, BodyTooLarge)
			}
		default:
			p.handOff(c)
		}
	}
	defer func() {
		// ReverseProxy aborts the handler (http.ErrAbortHandler) when the client or
		// the incumbent breaks off mid-answer: what arrived is still mirrored,
		// marked partial (unless it holds the whole answer: capture.exchange),
		// then the abort goes on.
		if rec := recover(); rec != nil {
			copyOf(capt(time.Now(), brokenEnd(r, cw))) // client_gone is counted when the copy is read as partial
			if overBudget || !complete || cw.overflow {
				p.stats.mirror(ProxyOutcomeClientGone)
			}
			panic(rec)
		}
	}()
	p.rp.ServeHTTP(cw, r)
	end := time.Now()
	if cw.status < 200 || cw.status > 299 {
		p.stats.mirror(ProxyOutcomeNotOK) // still mirrored: an incumbent failure to compare against
	}
	// ServeHTTP returned: the whole answer was written to the client. The
	// client closing its connection right after the last byte (its request
	// context ends then) does not make it partial; only a failed write does,
	// or a client gone before the incumbent answered (the 502 went to no one).
	how := endComplete
	if cw.clientErr != nil || cw.clientGone {
		how = endClientGone
	}
	copyOf(capt(end, how))
}

// countingReader counts the bytes read through it (n starts at what was
// read before).
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// handOff gives c to the capture workers without waiting: a full queue drops it
// (counted as capture_busy).
func (p *Proxy) handOff(c capture) {
	p.mu.RLock()
	switch {
	case p.closed:
		p.mu.RUnlock()
		p.stats.drop(ReasonShuttingDown)
		p.recordMeta(c, ReasonShuttingDown)
		return
	case !p.started:
		// Forwarding works without Start; only the copy is lost: counted and
		// recorded as metadata.
		p.mu.RUnlock()
		p.stats.drop(BodyNotStarted)
		p.recordMeta(c, BodyNotStarted)
		return
	}
	select {
	case p.captures <- c:
		p.mu.RUnlock()
	default:
		p.mu.RUnlock()
		p.stats.mirror(ProxyOutcomeCaptureBusy)
		p.stats.drop(ProxyOutcomeCaptureBusy)
		p.recordMeta(c, BodyCaptureBusy)
	}
}

// Start launches the capture workers (cfg.CaptureWorkers goroutines) that turn
// answered requests into copies for the tap. Copies of requests served before
// Start are dropped and counted as "not_started"; forwarding itself needs no
// Start. An error when already started or shut down. ctx bounds nothing: the
// workers stop at Shutdown.
func (p *Proxy) Start(_ context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errors.New("ingest: proxy: start after shutdown")
	case p.started:
		return errors.New("ingest: proxy: already started")
	}
	p.started = true
	for range p.cfg.CaptureWorkers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for c := range p.captures {
				p.offer(c)
			}
		}()
	}
	return nil
}

// Shutdown lets the background copies finish (their Offer never blocks), stops
// taking new ones and closes idle incumbent connections; call it after the HTTP
// server has stopped. Safe twice and without traffic.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.captures) // the workers offer what is waiting, then stop
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	defer func() {
		if t, ok := p.rp.Transport.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ingest: proxy shutdown: %w", ctx.Err())
	}
}

func (p *Proxy) offer(c capture) {
	ex, err := c.exchange(p.convs)
	if err != nil {
		p.stats.mirror(ProxyOutcomeUnparsable)
		md := c.metadata(BodyUnparsable)
		p.log.Debug("proxy: exchange not mirrored; recorded as metadata", "request_id", md.RequestID, "path", c.path, "err", err)
		if p.rec != nil {
			p.rec.Record(md, BodyUnparsable)
		}
		return
	}
	for k, v := range map[string]string{MetaCallerRequestID: c.callerRequestID, MetaCallerApp: c.callerApp} {
		if v != "" {
			if ex.Metadata == nil {
				ex.Metadata = map[string]string{}
			}
			ex.Metadata[k] = v
		}
	}
	if ex.Response != nil && ex.Response.Partial {
		p.stats.mirror(ProxyOutcomeClientGone)
	}
	if ex.Request.InputReduced != "" {
		p.stats.mirror(ProxyOutcomeInputReduced)
		p.log.Info("proxy: exchange mirrored without part of its input", "request_id", ex.RequestID, "reason", ex.Request.InputReduced)
	}
	if m, ok := p.tap.(mirrorer); ok {
		m.Mirror(ex) // no one waits for this copy to be durable
	} else {
		p.tap.Offer(context.Background(), ex)
	}
	p.stats.mirror(ProxyOutcomeOffered)
}
