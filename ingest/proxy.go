package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/propagation"
)

// Mirroring-proxy outcomes, counted in Stats.Mirrored.
const (
	ProxyOutcomeOffered     = "offered"       // the exchange was handed to the tap
	ProxyOutcomeNotOK       = "incumbent_err" // the incumbent answered non-2xx: nothing to compare
	ProxyOutcomeUnparsable  = "unparsable"    // request or answer could not be read as an exchange
	ProxyOutcomeTooLarge    = "too_large"     // request or answer beyond the capture limits
	ProxyOutcomeCaptureBusy = "capture_busy"  // every capture slot was busy: copy dropped
	ProxyOutcomeClientGone  = "client_gone"   // the client or incumbent broke off mid-answer
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
}

// NewDefaultProxyConfig returns the proxy off, app "default" from X-Conductor-App,
// 4 MiB captures, 4,096 capture slots and 1 capture worker (≈50 µs of CPU per copy,
// so one worker keeps up with thousands of requests/s and leaves the other cores
// to production traffic).
func NewDefaultProxyConfig() ProxyConfig {
	return ProxyConfig{App: "default", AppHeader: "X-Conductor-App", MaxCaptureBytes: 4 << 20, CaptureSlots: 4096, CaptureWorkers: 1}
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
	return errors.Join(errs...)
}

// Offerer takes a copy of one exchange without blocking; *Tap is one.
type Offerer interface {
	Offer(ctx context.Context, ex Exchange) (int, TapResponse)
}

// Proxy fronts the incumbent. Every request is forwarded to IncumbentURL and the
// answer goes back unchanged: status, headers, body, and SSE streams chunk by chunk
// as they arrive (each chunk flushed at once). POST /v1/chat/completions and POST
// /v1/responses are also mirrored: once the answer is complete, the request, the
// answer text (reassembled from SSE deltas when streamed), latency, time to first
// byte, usage and model go to the tap in the background, so the client never waits
// for the shadow side. Shutdown waits for the background copies.
type Proxy struct {
	cfg      ProxyConfig
	tap      Offerer
	stats    *Stats
	log      *slog.Logger
	rp       *httputil.ReverseProxy
	captures chan capture
	wg       sync.WaitGroup

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
	p := &Proxy{cfg: cfg, tap: tap, stats: stats, log: log, captures: make(chan capture, cfg.CaptureSlots)}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// Rewrite drops the inbound forwarding headers; the client's own pass
			// through untouched and none is added.
			for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v, ok := pr.In.Header[h]; ok {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport:     transport,
		FlushInterval: -1,
		BufferPool:    &bufferPool{},
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("proxy: incumbent unreachable", "path", r.URL.Path, "err", err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return p, nil
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

// mirrored reports whether r is an exchange to copy to the tap.
func mirrored(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	return strings.HasSuffix(p, "/chat/completions") || strings.HasSuffix(p, "/responses")
}

// Front returns a handler that serves the mirrored routes (POST …/chat/completions,
// POST …/responses) itself, ahead of any middleware, and hands every other request
// to next. Mount the proxy as next's fallback (e.g. gin's NoRoute) so paths next
// does not serve still reach the incumbent.
func (p *Proxy) Front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mirrored(r) {
			p.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !mirrored(r) {
		p.rp.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	subject := r.Header.Get(SubjectHeader)
	r.Header.Del(SubjectHeader) // ours, not the incumbent's
	reqBody, complete, err := readUpTo(r.Body, p.cfg.MaxCaptureBytes)
	if err != nil {
		// The client broke off while sending: nothing reached the incumbent yet.
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if complete {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
	} else {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(reqBody), r.Body), r.Body}
	}
	cw := &captureWriter{ResponseWriter: w, limit: p.cfg.MaxCaptureBytes, start: start}
	defer func() {
		// ReverseProxy aborts the handler (http.ErrAbortHandler) when the client or
		// the incumbent breaks off mid-answer: nothing complete to mirror.
		if rec := recover(); rec != nil {
			p.stats.mirror(ProxyOutcomeClientGone)
			panic(rec)
		}
	}()
	p.rp.ServeHTTP(cw, r)
	end := time.Now()

	if !complete || cw.overflow {
		p.stats.mirror(ProxyOutcomeTooLarge)
		return
	}
	if cw.status < 200 || cw.status > 299 {
		p.stats.mirror(ProxyOutcomeNotOK)
		return
	}
	c := capture{
		path:        r.URL.Path,
		app:         r.Header.Get(p.cfg.AppHeader),
		requestID:   r.Header.Get("X-Request-Id"),
		subject:     subject,
		traceParent: TraceParentOf(traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))),
		reqBody:     reqBody,
		respBody:    cw.buf.Bytes(),
		respHeader:  cw.Header().Clone(),
		start:       start,
		latency:     end.Sub(start),
		ttft:        cw.firstByte.Sub(start),
	}
	if c.app == "" {
		c.app = p.cfg.App
	}
	p.mu.RLock()
	if !p.started && !p.closed {
		p.mu.RUnlock()
		p.startWorkers()
		p.mu.RLock()
	}
	if p.closed {
		p.mu.RUnlock()
		p.stats.drop("shutting_down")
		return
	}
	select {
	case p.captures <- c:
	default:
		p.stats.mirror(ProxyOutcomeCaptureBusy)
		p.stats.drop(ProxyOutcomeCaptureBusy)
	}
	p.mu.RUnlock()
}

// startWorkers launches the capture workers once.
func (p *Proxy) startWorkers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.closed {
		return
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
	ex, err := c.exchange()
	if err != nil {
		p.stats.mirror(ProxyOutcomeUnparsable)
		p.log.Debug("proxy: exchange not mirrored", "path", c.path, "err", err)
		return
	}
	p.tap.Offer(context.Background(), ex)
	p.stats.mirror(ProxyOutcomeOffered)
}

// readUpTo reads at most limit bytes; complete is false when more remain.
func readUpTo(r io.Reader, limit int64) (b []byte, complete bool, err error) {
	b, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return b, false, nil
	}
	return b, true, nil
}

// captureWriter passes everything to the client and keeps a copy of the body up
// to limit bytes. It implements http.Flusher so ReverseProxy flushes every chunk.
type captureWriter struct {
	http.ResponseWriter
	limit     int64
	start     time.Time
	status    int
	firstByte time.Time
	buf       bytes.Buffer
	overflow  bool
}

func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.firstByte.IsZero() && len(b) > 0 {
		w.firstByte = time.Now()
	}
	if !w.overflow {
		if int64(w.buf.Len()+len(b)) > w.limit {
			w.overflow = true
			w.buf = bytes.Buffer{}
		} else {
			w.buf.Write(b)
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// capture is one finished proxied exchange, read by the background copier.
type capture struct {
	path, app, requestID string
	subject, traceParent string // the data subject (SubjectHeader) and the W3C traceparent sent
	reqBody, respBody    []byte
	respHeader           http.Header
	start                time.Time
	latency, ttft        time.Duration
}

// exchange builds the tapped Exchange from the raw request and answer.
func (c capture) exchange() (Exchange, error) {
	body := c.respBody
	if strings.EqualFold(c.respHeader.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return Exchange{}, fmt.Errorf("gunzip answer: %w", err)
		}
		body, err = io.ReadAll(zr)
		if err != nil {
			return Exchange{}, fmt.Errorf("gunzip answer: %w", err)
		}
	} else if enc := c.respHeader.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return Exchange{}, fmt.Errorf("answer encoded as %q", enc)
	}
	responses := strings.HasSuffix(strings.TrimSuffix(c.path, "/"), "/responses")
	req, err := parseProxyRequest(c.reqBody, responses)
	if err != nil {
		return Exchange{}, err
	}
	streamed := strings.HasPrefix(c.respHeader.Get("Content-Type"), "text/event-stream")
	var resp answer
	switch {
	case responses && streamed:
		resp, err = parseResponsesStream(body)
	case responses:
		resp, err = parseResponsesBody(body)
	case streamed:
		resp, err = parseChatStream(body)
	default:
		resp, err = parseChatBody(body)
	}
	if err != nil {
		return Exchange{}, err
	}
	id := c.requestID
	if id == "" {
		id = resp.id
	}
	if id == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id = "proxy-" + hex.EncodeToString(b[:])
	}
	model := resp.model
	if model == "" {
		model = req.Model
	}
	ex := Exchange{
		SchemaVersion: SchemaVersion,
		RequestID:     id,
		App:           c.app,
		ReceivedAt:    c.start.UTC(),
		Request:       req,
		Response: &ExchangeResponse{
			Model:     model,
			Content:   resp.content,
			LatencyMs: float64(c.latency.Microseconds()) / 1000,
			TTFTMs:    float64(c.ttft.Microseconds()) / 1000,
			Usage:     resp.usage,
		},
		Metadata:    map[string]string{"source": "proxy", "route": c.path},
		Subject:     c.subject,
		TraceParent: c.traceParent,
	}
	if !resp.hasUsage {
		ex.Response.Usage = estimateUsage(req.Messages, resp.content)
		ex.Response.UsageEstimated = true
	}
	if err := ex.Validate(1<<20, true); err != nil {
		return Exchange{}, err
	}
	return ex, nil
}

// estimateUsage guesses token counts at ≈4 characters per token.
func estimateUsage(msgs []openai.ChatCompletionMessage, answer string) Usage {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, p := range m.MultiContent {
			n += len(p.Text)
		}
	}
	return Usage{PromptTokens: int64((n + 3) / 4), CompletionTokens: int64((len(answer) + 3) / 4)}
}

// answer is what was read from the incumbent's reply.
type answer struct {
	id, model, content string
	usage              Usage
	hasUsage           bool
}

// parseProxyRequest reads the model and messages of a chat completions request, or
// of a responses request (instructions → system message; input as a string or a
// list of {role, content} items whose content is a string or input_text parts).
func parseProxyRequest(body []byte, responses bool) (ExchangeRequest, error) {
	if !responses {
		var r ExchangeRequest
		if err := json.Unmarshal(body, &r); err != nil {
			return r, fmt.Errorf("chat request: %w", err)
		}
		return r, nil
	}
	var r struct {
		Model        string          `json:"model"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return ExchangeRequest{}, fmt.Errorf("responses request: %w", err)
	}
	out := ExchangeRequest{Model: r.Model}
	if r.Instructions != "" {
		out.Messages = append(out.Messages, openai.ChatCompletionMessage{Role: "system", Content: r.Instructions})
	}
	var s string
	if err := json.Unmarshal(r.Input, &s); err == nil {
		out.Messages = append(out.Messages, openai.ChatCompletionMessage{Role: "user", Content: s})
		return out, nil
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(r.Input, &items); err != nil {
		return out, fmt.Errorf("responses request input: %w", err)
	}
	for _, it := range items {
		if it.Role == "" {
			continue // tool outputs and other non-message items
		}
		var text string
		if err := json.Unmarshal(it.Content, &text); err != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(it.Content, &parts); err != nil {
				return out, fmt.Errorf("responses request content: %w", err)
			}
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p.Text)
			}
			text = b.String()
		}
		out.Messages = append(out.Messages, openai.ChatCompletionMessage{Role: it.Role, Content: text})
	}
	return out, nil
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

func parseChatBody(body []byte) (answer, error) {
	var r struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage *chatUsage `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return answer{}, fmt.Errorf("chat answer: %w", err)
	}
	a := answer{id: r.ID, model: r.Model}
	if len(r.Choices) > 0 {
		a.content = r.Choices[0].Message.Content
	}
	if r.Usage != nil {
		a.usage, a.hasUsage = Usage(*r.Usage), true
	}
	return a, nil
}

// sseData calls fn with the data of every SSE event in body (multi-line data
// joined by "\n"), stopping at "[DONE]".
func sseData(body []byte, fn func(data []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, min(len(body)+1, 4<<10)), len(body)+1)
	var data []byte
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		d := data
		data = nil
		if string(d) == "[DONE]" {
			return nil
		}
		return fn(d)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

func parseChatStream(body []byte) (answer, error) {
	var a answer
	var b strings.Builder
	err := sseData(body, func(d []byte) error {
		var ch struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *chatUsage `json:"usage"`
		}
		if err := json.Unmarshal(d, &ch); err != nil {
			return fmt.Errorf("chat stream chunk: %w", err)
		}
		if a.id == "" {
			a.id = ch.ID
		}
		if a.model == "" {
			a.model = ch.Model
		}
		for _, c := range ch.Choices {
			if c.Index == 0 {
				b.WriteString(c.Delta.Content)
			}
		}
		if ch.Usage != nil {
			a.usage, a.hasUsage = Usage(*ch.Usage), true
		}
		return nil
	})
	a.content = b.String()
	return a, err
}

// responsesObject is the part of a Responses API response object read here.
type responsesObject struct {
	ID     string `json:"id"`
	Model  string `json:"model"`
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

func (o responsesObject) answer() answer {
	a := answer{id: o.ID, model: o.Model}
	var b strings.Builder
	for _, it := range o.Output {
		if it.Type != "message" {
			continue
		}
		for _, c := range it.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	a.content = b.String()
	if o.Usage != nil {
		a.usage, a.hasUsage = Usage{PromptTokens: o.Usage.InputTokens, CompletionTokens: o.Usage.OutputTokens}, true
	}
	return a
}

func parseResponsesBody(body []byte) (answer, error) {
	var o responsesObject
	if err := json.Unmarshal(body, &o); err != nil {
		return answer{}, fmt.Errorf("responses answer: %w", err)
	}
	return o.answer(), nil
}

// parseResponsesStream joins response.output_text.delta events; the final
// response.completed event, when present, supplies id, model and usage.
func parseResponsesStream(body []byte) (answer, error) {
	var a answer
	var b strings.Builder
	var completed *responsesObject
	err := sseData(body, func(d []byte) error {
		var ev struct {
			Type     string           `json:"type"`
			Delta    string           `json:"delta"`
			Response *responsesObject `json:"response"`
		}
		if err := json.Unmarshal(d, &ev); err != nil {
			return fmt.Errorf("responses stream event: %w", err)
		}
		switch ev.Type {
		case "response.output_text.delta":
			b.WriteString(ev.Delta)
		case "response.created":
			if ev.Response != nil {
				a.id, a.model = ev.Response.ID, ev.Response.Model
			}
		case "response.completed":
			completed = ev.Response
		}
		return nil
	})
	a.content = b.String()
	if completed != nil {
		c := completed.answer()
		a.id, a.model, a.usage, a.hasUsage = c.id, c.model, c.usage, c.hasUsage
	}
	return a, err
}
