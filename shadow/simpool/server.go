// Package simpool simulates a pool of LLM workers behind an OpenAI-compatible chat
// API, so the platform can run end to end without any real model: the Conductor
// paper's seven workers (accuracy per task family from its Table 1, estimated
// latency and verbosity), a stand-in incumbent, and a conductor model that writes
// workflows in the paper's format.
//
// Answers are SIMULATED. A request is matched against the regression-set questions
// it contains; a matched question is answered right with the model's probability
// for its family (raised when an earlier correct answer is visible in the request)
// and plausibly wrong otherwise, formatted the way the graders expect. Everything is
// deterministic for a seed. Every response carries system_fingerprint "simllm" and
// the header X-Simulated: simllm so clients can mark results as simulated.
//
// Endpoints: POST /v1/chat/completions (JSON or SSE streaming with an optional
// final usage chunk), GET /v1/models, GET /v1/models/{model}.
package simpool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// SystemFingerprint is set on every response of the simulated pool.
const SystemFingerprint = "simllm"

// SimulatedHeader is the response header that marks simulated answers; its value is
// SystemFingerprint.
const SimulatedHeader = "X-Simulated"

// LatencyScaleHeader carries Config.LatencyScale on every response, so a report
// built from the answers can say that their latencies were scaled. Its value is
// the factor as a decimal number (1 = realistic, 0 = instant).
const LatencyScaleHeader = "X-Simulated-Latency-Scale"

// maxBodyBytes caps a request body (32 MiB).
const maxBodyBytes = 32 << 20

// Server is the simulated pool as an http.Handler. It is safe for concurrent use
// and starts no goroutines of its own.
type Server struct {
	cfg      Config
	ix       *index
	profiles map[string]Profile
	models   []string
	calls    atomic.Uint64 // sequence number for injected errors
	mux      *http.ServeMux
	created  int64 // the "created" field of every response (fixed, so bodies are reproducible)
	limits   map[string]*modelLimit
	limited  atomic.Int64 // calls answered 429 by a model's own rate limit
}

// modelLimit is one model's RateLimit in force.
type modelLimit struct {
	bucket *rate.Limiter // nil: no requests-per-minute limit
	slots  chan struct{} // nil: no concurrency limit
}

// admit takes a slot and a token, or returns how long to wait before retrying.
// release must be called once the call ends when ok.
func (l *modelLimit) admit(now time.Time) (release func(), wait time.Duration, ok bool) {
	release = func() {}
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
			release = func() { <-l.slots }
		default:
			return nil, time.Second, false
		}
	}
	if l.bucket != nil {
		r := l.bucket.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			release()
			return nil, d, false
		}
	}
	return release, 0, true
}

// RateLimited counts the calls answered 429 because a model's own rate limit
// (Config.RateLimit, RateLimits) was reached.
func (s *Server) RateLimited() int64 { return s.limited.Load() }

// New validates cfg, loads cfg.SetsDir (when set) and cfg.Cases, and returns the
// server. Errors: an invalid config or an unreadable set.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cases := append([]Case(nil), cfg.Cases...)
	if cfg.SetsDir != "" {
		loaded, err := LoadSets(cfg.SetsDir)
		if err != nil {
			return nil, err
		}
		cases = append(cases, loaded...)
	}
	s := &Server{
		cfg:      cfg,
		ix:       newIndex(cases),
		profiles: map[string]Profile{},
		mux:      http.NewServeMux(),
		created:  time.Date(2025, 8, 7, 0, 0, 0, 0, time.UTC).Unix(),
	}
	s.models = append(WorkerModels(), IncumbentModel, ConductorModel, ConductorJSONModel)
	s.limits = map[string]*modelLimit{}
	for _, m := range s.models {
		l := cfg.limitFor(m)
		ml := &modelLimit{}
		if l.RequestsPerMinute > 0 {
			ml.bucket = rate.NewLimiter(rate.Limit(float64(l.RequestsPerMinute)/60), max(1, l.RequestsPerMinute/60))
		}
		if l.Concurrent > 0 {
			ml.slots = make(chan struct{}, l.Concurrent)
		}
		s.limits[m] = ml
	}
	for _, p := range DefaultProfiles() {
		s.profiles[p.Name] = p
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("GET /v1/models/{model}", s.handleModel)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "not_found",
			fmt.Sprintf("no route %s %s on the simulated pool", r.Method, r.URL.Path))
	})
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Models returns the served model names: the seven workers (WorkerModels order),
// IncumbentModel, ConductorModel and ConductorJSONModel.
func (s *Server) Models() []string { return append([]string(nil), s.models...) }

// Profile returns the profile of a worker or of IncumbentModel.
func (s *Server) Profile(name string) (Profile, bool) {
	p, ok := s.profiles[name]
	return p, ok
}

// CaseCount is the number of regression-set questions the server answers from.
func (s *Server) CaseCount() int { return len(s.ix.cases) }

func (s *Server) known(model string) bool {
	for _, m := range s.models {
		if m == model {
			return true
		}
	}
	return false
}

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// mediaKinds maps the chat completions API's media part types to modalities.
var mediaKinds = map[string]string{"image_url": "image", "input_audio": "audio", "file": "file"}

// media counts the message's media parts by modality (image, audio, file).
func (m wireMessage) media() map[string]int {
	raw := strings.TrimSpace(string(m.Content))
	if raw == "" || raw[0] != '[' {
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return nil
	}
	var out map[string]int
	for _, p := range parts {
		if k, ok := mediaKinds[p.Type]; ok {
			if out == nil {
				out = map[string]int{}
			}
			out[k]++
		}
	}
	return out
}

// Simulated prompt tokens of a media part (estimates in the range providers
// bill: OpenAI's high-detail image tiles, Gemini's 258 tokens per image, a
// few pages of PDF, a short clip).
var mediaTokens = map[string]int{"image": 765, "audio": 500, "file": 1500}

// mediaNote is what the simulated answer says it saw: "(SIMULATED: simllm saw
// 2 images and 1 file.)".
func mediaNote(counts map[string]int) string {
	var parts []string
	for _, k := range []string{"image", "audio", "file"} {
		n := counts[k]
		switch {
		case n == 0:
			continue
		case k == "audio" && n == 1:
			parts = append(parts, "1 audio clip")
		case k == "audio":
			parts = append(parts, fmt.Sprintf("%d audio clips", n))
		case n == 1:
			parts = append(parts, "1 "+k)
		default:
			parts = append(parts, fmt.Sprintf("%d %ss", n, k))
		}
	}
	return "(SIMULATED: simllm saw " + strings.Join(parts, " and ") + ".)\n\n"
}

// text returns the message content: a string, the text parts of an array of
// content parts joined by newlines, or "" for null.
func (m wireMessage) text() (string, error) {
	raw := strings.TrimSpace(string(m.Content))
	switch {
	case raw == "" || raw == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		err := json.Unmarshal(m.Content, &s)
		return s, err
	case raw[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return "", err
		}
		var texts []string
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n"), nil
	default:
		return "", errors.New("content must be a string, an array of parts or null")
	}
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid_json",
			"could not parse the request body as JSON: "+err.Error())
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model", "missing_required_parameter",
			"you must provide a model parameter")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "messages", "missing_required_parameter",
			"messages must be a non-empty array")
		return
	}
	msgs := make([]message, len(req.Messages))
	seen := map[string]int{}
	for i, m := range req.Messages {
		t, err := m.text()
		if err != nil || m.Role == "" {
			writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages[%d]", i), "invalid_value",
				fmt.Sprintf("messages[%d] needs a role and a string or text-part content", i))
			return
		}
		msgs[i] = message{Role: m.Role, Content: t}
		for k, n := range m.media() {
			seen[k] += n
		}
	}
	if !s.known(req.Model) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model))
		return
	}
	for _, k := range []string{"image", "audio", "file"} {
		if p := s.profiles[req.Model]; seen[k] > 0 && !p.Takes(k) {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "messages", "unsupported_content",
				fmt.Sprintf("The model `%s` does not take %s input (simulated by simllm: its profile takes %v).", req.Model, k, append([]string{"text"}, p.InputModalities...)))
			return
		}
	}
	if s.injectError(w) {
		return
	}
	release, wait, ok := s.limits[req.Model].admit(time.Now())
	if !ok {
		s.limited.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "", "rate_limit_exceeded",
			fmt.Sprintf("Rate limit reached for %s (simulated by simllm: the model's requests per minute or concurrent calls). Please retry after the delay in Retry-After.", req.Model))
		return
	}
	defer release()

	c, pos, matched := s.ix.match(msgs)
	var cp *Case
	caseID := ""
	u := 0.0
	if matched {
		cp, caseID = &c, c.ID
		u = correctnessDraw(s.cfg.Seed, req.Model, pos, c, msgs)
	}
	rng := newRand(s.cfg.Seed, req.Model, caseID, msgs)
	maxTok := req.MaxCompletionTokens
	if maxTok == 0 {
		maxTok = req.MaxTokens
	}
	var rep reply
	if req.Model == ConductorModel || req.Model == ConductorJSONModel {
		rep = answerConductor(req.Model, cp, msgs, rng, s.cfg.MalformedPlanProb)
	} else {
		rep = answerWorker(s.profiles[req.Model], cp, msgs, rng, u, s.cfg.PriorHelp, maxTok)
	}
	if len(seen) > 0 {
		rep.Content = mediaNote(seen) + rep.Content
		for k, n := range seen {
			rep.PromptTokens += n * mediaTokens[k]
		}
	}
	id := responseID(s.cfg.Seed, req.Model, msgs)
	w.Header().Set(SimulatedHeader, SystemFingerprint)
	w.Header().Set(LatencyScaleHeader, strconv.FormatFloat(s.cfg.LatencyScale, 'g', -1, 64))
	if req.Stream {
		s.stream(r.Context(), w, id, req.Model, rep, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	if !s.sleep(r.Context(), rep.Total) {
		return
	}
	writeJSON(w, http.StatusOK, completionJSON{
		ID: id, Object: "chat.completion", Created: s.created, Model: req.Model,
		SystemFingerprint: SystemFingerprint,
		Choices: []choiceJSON{{
			Message:      messageJSON{Role: "assistant", Content: rep.Content},
			FinishReason: rep.FinishReason,
		}},
		Usage: usageOf(rep),
	})
}

// injectError answers 429 or 500 with the configured probabilities. The draw uses
// the seed and a per-server call counter, so a retry can succeed.
func (s *Server) injectError(w http.ResponseWriter) bool {
	if s.cfg.RateLimitProb == 0 && s.cfg.ServerErrorProb == 0 {
		return false
	}
	u := rand.New(rand.NewPCG(uint64(s.cfg.Seed), s.calls.Add(1))).Float64()
	switch {
	case u < s.cfg.RateLimitProb:
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(s.cfg.RetryAfter.Seconds()))))
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "", "rate_limit_exceeded",
			"Rate limit reached (simulated by simllm). Please retry after the delay in Retry-After.")
		return true
	case u < s.cfg.RateLimitProb+s.cfg.ServerErrorProb:
		writeError(w, http.StatusInternalServerError, "server_error", "", "internal_error",
			"The server had an error while processing your request (simulated by simllm).")
		return true
	}
	return false
}

func responseID(seed int64, model string, msgs []message) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00", seed, model)
	for _, m := range msgs {
		fmt.Fprintf(h, "%s\x00%s\x00", m.Role, m.Content)
	}
	return "chatcmpl-sim-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// sleep waits d×LatencyScale; false when ctx ended first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	d = time.Duration(float64(d) * s.cfg.LatencyScale)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// maxChunks caps the number of content chunks of one streamed answer.
const maxChunks = 200

func (s *Server) stream(ctx context.Context, w http.ResponseWriter, id, model string, rep reply, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var usageNull json.RawMessage
	if includeUsage {
		usageNull = json.RawMessage("null")
	}
	send := func(ch chunkJSON) bool {
		ch.ID, ch.Object, ch.Created, ch.Model, ch.SystemFingerprint = id, "chat.completion.chunk", s.created, model, SystemFingerprint
		b, err := json.Marshal(ch)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	pieces := splitRunes(rep.Content, min(maxChunks, max(1, estimateTokens(rep.Content)/4)))
	if !s.sleep(ctx, rep.TTFT) {
		return
	}
	empty := ""
	if !send(chunkJSON{Choices: []chunkChoice{{Delta: deltaJSON{Role: "assistant", Content: &empty}}}, Usage: usageNull}) {
		return
	}
	gap := time.Duration(0)
	if len(pieces) > 1 {
		gap = (rep.Total - rep.TTFT) / time.Duration(len(pieces)-1)
	}
	for i, p := range pieces {
		if i > 0 && !s.sleep(ctx, gap) {
			return
		}
		if !send(chunkJSON{Choices: []chunkChoice{{Delta: deltaJSON{Content: &p}}}, Usage: usageNull}) {
			return
		}
	}
	finish := rep.FinishReason
	if !send(chunkJSON{Choices: []chunkChoice{{Delta: deltaJSON{}, FinishReason: &finish}}, Usage: usageNull}) {
		return
	}
	if includeUsage {
		u := usageOf(rep)
		b, _ := json.Marshal(u) // ints only: cannot fail
		if !send(chunkJSON{Choices: []chunkChoice{}, Usage: b}) {
			return
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// splitRunes cuts s into n pieces of about equal rune count (fewer when s is short);
// the pieces concatenate to s.
func splitRunes(s string, n int) []string {
	total := utf8.RuneCountInString(s)
	if total == 0 {
		return nil
	}
	n = min(n, total)
	size := (total + n - 1) / n
	out := make([]string, 0, n)
	start, count := 0, 0
	for pos := range s {
		if count == size {
			out = append(out, s[start:pos])
			start, count = pos, 0
		}
		count++
	}
	return append(out, s[start:])
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	data := make([]modelJSON, len(s.models))
	for i, m := range s.models {
		data[i] = s.modelObject(m)
	}
	writeJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []modelJSON `json:"data"`
	}{"list", data})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	m := r.PathValue("model")
	if !s.known(m) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", m))
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject(m))
}

func (s *Server) modelObject(m string) modelJSON {
	return modelJSON{ID: m, Object: "model", Created: s.created, OwnedBy: "simllm"}
}

func usageOf(rep reply) usageJSON {
	u := usageJSON{
		PromptTokens:     rep.PromptTokens,
		CompletionTokens: rep.CompletionTokens,
		TotalTokens:      rep.PromptTokens + rep.CompletionTokens,
	}
	if rep.ReasoningTokens > 0 {
		u.CompletionTokensDetails = &completionDetailsJSON{ReasoningTokens: rep.ReasoningTokens}
	}
	return u
}

func secondsToDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "simpool: encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError writes an OpenAI-style error body:
// {"error":{"message":…,"type":…,"param":…|null,"code":…}}.
func writeError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	var p *string
	if param != "" {
		p = &param
	}
	writeJSON(w, status, map[string]any{"error": errorJSON{Message: msg, Type: typ, Param: p, Code: code}})
}

type errorJSON struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type completionDetailsJSON struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

type usageJSON struct {
	PromptTokens            int                    `json:"prompt_tokens"`
	CompletionTokens        int                    `json:"completion_tokens"`
	TotalTokens             int                    `json:"total_tokens"`
	CompletionTokensDetails *completionDetailsJSON `json:"completion_tokens_details,omitempty"`
}

type messageJSON struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type choiceJSON struct {
	Index        int         `json:"index"`
	Message      messageJSON `json:"message"`
	FinishReason string      `json:"finish_reason"`
	Logprobs     any         `json:"logprobs"`
}

type completionJSON struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []choiceJSON `json:"choices"`
	Usage             usageJSON    `json:"usage"`
}

type deltaJSON struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        deltaJSON `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     any       `json:"logprobs"`
}

type chunkJSON struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}
