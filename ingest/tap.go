package ingest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Tap is the HTTP copy API: POST /v1/tap takes one Exchange and answers 202 once it
// is queued, and on a DurableQueue once it is durable. It never waits for the
// shadow side: a full queue or a store that cannot be written refuses the copy
// with 503 (counted and logged) at once or within accept_timeout.
type Tap struct {
	cfg     Config
	queue   Queue
	stats   *Stats
	seen    *dedup         // recent request ids and the copies still being committed, for idempotency; nil when DedupWindow is 0
	pii     *Pseudonymizer // nil when PII.Enabled is false
	sampler *Sampler
	secret  []byte // the PII secret: keys pseudonyms and subject hashes
	loss    *lossLog
	budget  *BodyBudget // the request bodies held in memory at once
	rec     *Recorder   // records the copies not shadowed; nil: they leave no row

	ephemeralSecret bool
}

// TapOption adjusts NewTap.
type TapOption func(*tapOptions)

type tapOptions struct {
	secret []byte
	log    *slog.Logger
	budget *BodyBudget
}

// WithBodyBudget makes the tap hold the bodies it reads within b, a budget it
// may share with the mirroring proxy (Proxy.UseBodyBudget); default: a budget
// of its own of cfg.MaxUnfinishedBodyBytes.
func WithBodyBudget(b *BodyBudget) TapOption {
	return func(o *tapOptions) { o.budget = b }
}

// WithLogger sets where the tap logs lost copies (rate-limited); default: nowhere.
func WithLogger(log *slog.Logger) TapOption {
	return func(o *tapOptions) { o.log = log }
}

// WithPIISecret sets the HMAC secret of the pseudonymizer instead of reading it
// from $<PII.SecretEnv>.
func WithPIISecret(secret []byte) TapOption {
	return func(o *tapOptions) { o.secret = secret }
}

// TapResponse is the JSON body of every /v1/tap answer.
type TapResponse struct {
	Status    string `json:"status"` // "queued", "duplicate", "unsampled", "dropped" or "rejected"
	RequestID string `json:"request_id,omitempty"`
	Reason    string `json:"reason,omitempty"` // a Reason* constant or a drop reason
	Error     string `json:"error,omitempty"`
}

// NewTap returns a tap publishing to q and counting into stats. With PII enabled,
// the secret is WithPIISecret's, else $<cfg.PII.SecretEnv>, else a random one drawn
// now (EphemeralSecret then reports true: tokens change on restart).
func NewTap(cfg Config, q Queue, stats *Stats, opts ...TapOption) (*Tap, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o tapOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.budget == nil {
		o.budget = NewBodyBudget(cfg.MaxUnfinishedBodyBytes)
	}
	t := &Tap{cfg: cfg, queue: q, stats: stats, sampler: NewSampler(cfg.Sampling), loss: newLossLog(o.log), budget: o.budget}
	secret := o.secret
	if len(secret) == 0 && cfg.PII.SecretEnv != "" {
		secret = []byte(os.Getenv(cfg.PII.SecretEnv))
	}
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // never fails (crypto/rand)
		t.ephemeralSecret = true
	}
	t.secret = secret
	if cfg.PII.Enabled {
		p, err := NewPseudonymizer(cfg.PII, secret)
		if err != nil {
			return nil, err
		}
		t.pii = p
	}
	if cfg.DedupWindow > 0 {
		seen, err := newDedup(cfg.DedupWindow)
		if err != nil {
			return nil, fmt.Errorf("ingest: dedup window: %w", err)
		}
		t.seen = seen
	}
	return t, nil
}

// SubjectHash is the keyed hash the tap stores for a data subject (see the
// package function SubjectHash), with this tap's PII secret.
func (t *Tap) SubjectHash(subject string) string { return SubjectHash(t.secret, subject) }

// EphemeralSecret reports whether the PII secret was drawn at random because none
// was configured: pseudonyms are then stable only for this process's life.
func (t *Tap) EphemeralSecret() bool { return t.ephemeralSecret }

// UseRecorder makes the tap record every copy it takes but does not shadow
// (sampled out, over the per-minute cap, shed by admission, and, for the
// mirroring proxy's copies, a full queue or an unavailable store) through
// rec, with the reason in requests.not_shadowed; and count the copies
// POST /v1/tap takes (rec.Offered). rec pseudonymizes raw records and the
// offered counts' labels with this tap's rules and secret. Call it before
// serving.
func (t *Tap) UseRecorder(rec *Recorder) {
	t.rec = rec
	rec.clean, rec.labels = t.cleanRecord, t.cleanLabels
}

// Record keeps ex, an exchange the caller will not shadow (the admission
// shedding a proxy copy), as a store-only record with notShadowed as the
// reason; without a recorder nothing is kept. O(1): it is pseudonymized by the
// recorder's writer.
func (t *Tap) Record(ex Exchange, notShadowed string) {
	if t.rec == nil {
		return
	}
	ex.SubjectHash = "" // the tap's to set (cleanRecord)
	t.rec.Record(ex, notShadowed)
}

// record keeps a copy the tap took but will not shadow; raw when it is not
// pseudonymized yet.
func (t *Tap) record(ex Exchange, reason string, raw bool) {
	if t.rec != nil {
		t.rec.take(ex, reason, raw)
	}
}

// cleanRecord pseudonymizes a raw record as begin does a copy: the data
// subject replaced by its keyed hash, NUL replaced, PII pseudonymized.
func (t *Tap) cleanRecord(ex *Exchange) {
	if ex.Subject != "" {
		ex.SubjectHash, ex.Subject = t.SubjectHash(ex.Subject), ""
	}
	ex.ReplaceNUL()
	if t.pii != nil {
		t.stats.addPII(t.pii.Exchange(ex))
	}
}

// cleanLabels is an app and route as a stored row of them carries them
// (pseudonymized like an exchange's app and metadata).
func (t *Tap) cleanLabels(app, route string) (string, string) {
	if t.pii == nil {
		return app, route
	}
	ex := Exchange{App: app, Metadata: map[string]string{"route": route}}
	t.pii.Exchange(&ex)
	return ex.App, ex.Metadata["route"]
}

// Stats returns the counters the tap writes to.
func (t *Tap) Stats() *Stats { return t.stats }

// Register mounts POST /v1/tap and POST /v1/tap/batch on r.
func (t *Tap) Register(r gin.IRouter) {
	r.POST("/v1/tap", t.handle)
	r.POST("/v1/tap/batch", t.handleBatch)
}

// Offer samples, pseudonymizes and queues one validated exchange; it is what the
// HTTP handlers call. The returned status code is 202 (queued), 200 (duplicate or
// unsampled), 413 (too_large: Kafka refused the copy for its size) or 503
// (dropped: queue full or closed, store or Kafka unavailable, or not confirmed
// within accept_timeout). On a DurableQueue (the store-first
// queue, Kafka) 202 is answered only once the copy is durable: stored, or
// acknowledged by the brokers. ex is pseudonymized before anything is queued: the
// raw values never leave this call.
func (t *Tap) Offer(ctx context.Context, ex Exchange) (int, TapResponse) {
	p := t.begin(ctx, ex, true)
	p.offered = offeredAs(ex)
	wctx, cancel := context.WithTimeout(ctx, t.cfg.AcceptTimeout)
	defer cancel()
	return t.finish(wctx, p)
}

// offeredLabels are what the offered counts key a copy by.
type offeredLabels struct {
	route, app string
	at         time.Time
}

func offeredAs(ex Exchange) *offeredLabels {
	return &offeredLabels{route: ex.Metadata["route"], app: ex.App, at: ex.ReceivedAt}
}

// countOffered counts a copy POST /v1/tap took (source tap) once it is
// answered: queued or unsampled, not a 503 (sent again) or a duplicate
// (counted when first taken).
func (t *Tap) countOffered(l *offeredLabels, code int, resp TapResponse) {
	if t.rec != nil && l != nil && code < http.StatusInternalServerError && resp.Status != "duplicate" {
		t.rec.Offered().Offer(store.OfferedTap, l.route, l.app, l.at)
	}
}

// Mirror is Offer for a caller that answers nobody (the mirroring proxy): it
// hands the copy over without waiting for it to be durable, and the outcome is
// counted (and a loss logged) when it is known. The returned status is that of
// the hand-over: 202 when it was taken.
func (t *Tap) Mirror(ex Exchange) (int, TapResponse) {
	p := t.begin(context.Background(), ex, false)
	return p.code, p.resp
}

// offerState is one copy between its hand-over and its answer: settled (code and
// resp set) or waiting for the durable outcome on res.
type offerState struct {
	id      string
	settled bool
	code    int
	resp    TapResponse
	res     chan error
	wait    *pendingCopy   // a copy sent again while the first one with its id is committed
	offered *offeredLabels // counted once answered (POST /v1/tap); nil: not counted here
}

func answered(code int, resp TapResponse) offerState {
	return offerState{settled: true, code: code, resp: resp}
}

// begin replaces the data subject by its keyed hash, keeps the request's W3C
// traceparent, then samples, dedups, pseudonymizes and hands ex to the queue.
// With wait false on a DurableQueue the outcome is settled in the background.
func (t *Tap) begin(ctx context.Context, ex Exchange, wait bool) offerState {
	ex.SubjectHash = ""
	if ex.Subject != "" {
		ex.SubjectHash, ex.Subject = t.SubjectHash(ex.Subject), ""
	}
	if ex.TraceParent == "" {
		ex.TraceParent = TraceParentOf(ctx)
	}
	if ok, reason := t.sampler.Keep(ex); !ok {
		t.stats.unsample(reason)
		t.record(ex, reason, true)
		return answered(http.StatusOK, TapResponse{Status: "unsampled", RequestID: ex.RequestID, Reason: reason})
	}
	if first, wait := t.seen.claim(ex.RequestID); !first {
		if wait != nil { // the first copy's commit still runs: its outcome answers this one
			return offerState{id: ex.RequestID, wait: wait}
		}
		t.stats.duplicates.Add(1)
		return answered(http.StatusOK, TapResponse{Status: "duplicate", RequestID: ex.RequestID})
	}
	ex.StoreOnly = ""
	if !t.cfg.ShadowIncumbentErrors && ex.incumbentNot2xx() {
		// Stored as the incumbent's failure; no candidate runs, so no shadow
		// run is taken from the per-minute cap either.
		ex.StoreOnly = SkipIncumbentNotOK
	} else if ok, reason := t.sampler.Admit(); !ok {
		t.seen.settle(ex.RequestID, errNotTaken)
		t.stats.unsample(reason)
		t.record(ex, reason, true)
		return answered(http.StatusOK, TapResponse{Status: "unsampled", RequestID: ex.RequestID, Reason: reason})
	}
	ex.ReplaceNUL() // NUL is no text: never stored, never shown
	if t.pii != nil {
		t.stats.addPII(t.pii.Exchange(&ex))
	}
	id := ex.RequestID
	dq, durable := t.queue.(DurableQueue)
	if !durable {
		code, resp := t.settle(id, t.queue.Publish(ctx, ex))
		if !wait && code >= http.StatusInternalServerError {
			t.record(ex, resp.Reason, false) // no one sends this copy again
		}
		return answered(code, resp)
	}
	if !wait {
		// No one sends a mirrored copy again: one the queue does not take is
		// recorded, not shadowed; one refused for its size (Kafka) as metadata.
		lost := func(err error) {
			switch code, resp := t.settle(id, err); {
			case code >= http.StatusInternalServerError:
				t.record(ex, resp.Reason, false)
			case code == http.StatusRequestEntityTooLarge:
				t.record(metadataOnly(ex, BodyTooLarge), resp.Reason, false)
			}
		}
		if err := dq.PublishDurable(ex, lost); err != nil {
			lost(err)
			return answered(http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: id, Reason: dropReason(err)})
		}
		return answered(http.StatusAccepted, TapResponse{Status: "queued", RequestID: id})
	}
	res := make(chan error, 1)
	publish := dq.PublishDurable
	if w, ok := dq.(waitedPublisher); ok {
		publish = w.PublishWaited // a sender waits for this one: ahead of mirrored copies
	}
	if err := publish(ex, func(err error) { res <- err }); err != nil {
		return answered(t.settle(id, err))
	}
	return offerState{id: id, res: res}
}

// finish waits for p's durable outcome until ctx ends (the caller's, bounded by
// accept_timeout); past that the caller is answered 503 and the outcome is still
// counted when it comes.
func (t *Tap) finish(ctx context.Context, p offerState) (code int, resp TapResponse) {
	defer func() { t.countOffered(p.offered, code, resp) }()
	if p.settled {
		return p.code, p.resp
	}
	if p.wait != nil {
		return t.awaitFirst(ctx, p)
	}
	select {
	case err := <-p.res:
		return t.settle(p.id, err)
	default:
	}
	select {
	case err := <-p.res:
		return t.settle(p.id, err)
	case <-ctx.Done():
	}
	t.stats.unconfirmed.Add(1)
	go func() { t.settle(p.id, <-p.res) }()
	t.loss.log("tap: copy not confirmed in time; answered 503", ReasonAcceptTimeout, fmt.Errorf("no durable write within %s", t.cfg.AcceptTimeout), 1)
	return http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: p.id, Reason: ReasonAcceptTimeout,
		Error: fmt.Sprintf("the copy was not confirmed durable within %s; sending it again is safe", t.cfg.AcceptTimeout)}
}

// Drop reasons of copies the tap could not take (StatsSnapshot.Dropped).
const (
	ReasonQueueFull        = "queue_full"
	ReasonShuttingDown     = "shutting_down"
	ReasonStoreUnavailable = "store_unavailable"
	ReasonKafkaUnavailable = "kafka_unavailable"
	ReasonAcceptTimeout    = "accept_timeout"
)

// awaitFirst answers a copy sent again while the first copy with its request
// id is still being committed: "duplicate" once the first is durable; 503 when
// it failed (then forgotten: sending again gets through) or is still not
// confirmed when ctx ends. The first copy's outcome is counted once, with it.
func (t *Tap) awaitFirst(ctx context.Context, p offerState) (int, TapResponse) {
	select {
	case <-p.wait.done:
	case <-ctx.Done():
		return http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: p.id, Reason: ReasonAcceptTimeout,
			Error: fmt.Sprintf("a copy with this request id is still being committed after %s; sending it again is safe", t.cfg.AcceptTimeout)}
	}
	switch err := p.wait.err; {
	case err == nil || errors.Is(err, ErrDuplicate):
		t.stats.duplicates.Add(1)
		return http.StatusOK, TapResponse{Status: "duplicate", RequestID: p.id}
	case errors.Is(err, ErrCopyTooLarge):
		return http.StatusRequestEntityTooLarge, TapResponse{Status: "rejected", RequestID: p.id, Reason: ReasonTooLarge, Error: err.Error()}
	case errors.Is(err, errNotTaken):
		return http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: p.id, Reason: ReasonAcceptTimeout,
			Error: "a copy with this request id was being decided; sending it again is safe"}
	default:
		reason := dropReason(err)
		return http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: p.id, Reason: reason, Error: publicDropError(reason)}
	}
}

// settle counts the outcome of one hand-over, renders the answer and then
// ends the copy's pending state in the dedup (forgetting it when it was not
// taken), so a copy sent again meanwhile is answered by this outcome.
func (t *Tap) settle(id string, err error) (int, TapResponse) {
	code, resp := t.outcome(id, err)
	t.seen.settle(id, err)
	return code, resp
}

// outcome counts the outcome of one hand-over and renders the answer.
func (t *Tap) outcome(id string, err error) (int, TapResponse) {
	switch {
	case err == nil:
		t.stats.accepted.Add(1)
		return http.StatusAccepted, TapResponse{Status: "queued", RequestID: id}
	case errors.Is(err, ErrDuplicate):
		t.stats.duplicates.Add(1)
		return http.StatusOK, TapResponse{Status: "duplicate", RequestID: id}
	}
	if errors.Is(err, ErrCopyTooLarge) { // refused for its size by the queue (Kafka), logged there with the request id
		t.stats.reject(ReasonTooLarge)
		return http.StatusRequestEntityTooLarge, TapResponse{Status: "rejected", RequestID: id, Reason: ReasonTooLarge, Error: err.Error()}
	}
	reason := dropReason(err)
	t.stats.drop(reason)
	t.loss.log("tap: copy dropped", reason, err, 1)
	return http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: id, Reason: reason, Error: publicDropError(reason)}
}

// dropReason names why a queue did not take a copy.
func dropReason(err error) string {
	switch {
	case errors.Is(err, ErrQueueFull):
		return ReasonQueueFull
	case errors.Is(err, ErrQueueClosed):
		return ReasonShuttingDown
	case errors.Is(err, ErrKafkaUnavailable):
		return ReasonKafkaUnavailable
	case errors.Is(err, ErrShadowUnavailable):
		return ReasonShadowUnavailable
	case errors.Is(err, errHandoffTimeout):
		return ReasonAcceptTimeout
	}
	return ReasonStoreUnavailable
}

// publicDropError is the error text of a 503 for a dropped copy: the reason in
// words, never the queue's or engine's raw message (it can name folders, part
// files and broker addresses), which the loss log line carries instead.
func publicDropError(reason string) string {
	switch reason {
	case ReasonQueueFull:
		return "queue_full: the shadow queue is full; sending the copy again later is safe"
	case ReasonShuttingDown:
		return "shutting_down: the server is stopping; sending the copy again is safe"
	case ReasonKafkaUnavailable:
		return "kafka_unavailable: publish failed (see server log)"
	case ReasonShadowUnavailable:
		return "shadow_unavailable: the shadow side is restarting; sending the copy again is safe"
	default:
		return reason + ": insert failed (see server log)"
	}
}

func (t *Tap) handle(c *gin.Context) {
	body, release, ok := t.readBody(c, t.cfg.MaxBodyBytes, "body")
	defer release()
	if !ok {
		return
	}
	ex, err := DecodeExchange(body, t.cfg.MaxMessages, true)
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			de = &DecodeError{Reason: ReasonInvalid, Detail: err.Error()}
		}
		t.reject(c, http.StatusBadRequest, de)
		return
	}
	code, resp := t.Offer(c.Request.Context(), ex)
	if code >= http.StatusInternalServerError {
		// The loss is counted and logged (rate-limited) already; the cause goes
		// with the answer so request logs name it without logging it twice.
		_ = c.Error(&LoggedLossError{Reason: resp.Reason, Detail: resp.Error})
	}
	c.JSON(code, resp)
}

// readBody reads the request body, at most limit bytes, within the body
// budget. It answers the caller itself and returns ok false when the body is
// too large (413), broken off (400) or does not fit the budget (503
// "body_budget", counted and logged: the bodies of other callers hold the
// budget; sending again later is safe). release gives the body's share of the
// budget back: call it when the request is answered.
func (t *Tap) readBody(c *gin.Context, limit int64, what string) (body []byte, release func(), ok bool) {
	body, complete, release, err := t.budget.Read(c.Request.Body, c.Request.ContentLength, limit)
	switch {
	case errors.Is(err, ErrBodyBudget):
		t.stats.drop(ReasonBodyBudget)
		t.loss.log("tap: copy refused: the request bodies in memory reached ingest.max_unfinished_body_bytes", ReasonBodyBudget, err, 1)
		c.Header("Retry-After", "1")
		_ = c.Error(&LoggedLossError{Reason: ReasonBodyBudget, Detail: err.Error()})
		c.JSON(http.StatusServiceUnavailable, TapResponse{Status: "dropped", Reason: ReasonBodyBudget,
			Error: "body_budget: the server holds as many request bodies as it may; sending the copy again later is safe"})
		return nil, release, false
	case err != nil:
		t.reject(c, http.StatusBadRequest, &DecodeError{Reason: ReasonMalformedJSON, Detail: "reading " + what + ": " + err.Error()})
		return nil, release, false
	case !complete:
		t.reject(c, http.StatusRequestEntityTooLarge, &DecodeError{Reason: ReasonTooLarge, Detail: fmt.Sprintf("%s exceeds %d bytes", what, limit)})
		return nil, release, false
	}
	return body, release, true
}

func (t *Tap) reject(c *gin.Context, code int, de *DecodeError) {
	t.stats.reject(de.Reason)
	c.JSON(code, TapResponse{Status: "rejected", Reason: de.Reason, Error: de.Error()})
}

// BatchRequest is the body of POST /v1/tap/batch.
type BatchRequest struct {
	Exchanges []json.RawMessage `json:"exchanges"`
}

// BatchResponse answers POST /v1/tap/batch: one result per exchange, in order, and
// how many ended in each status.
type BatchResponse struct {
	Results []TapResponse  `json:"results"`
	Counts  map[string]int `json:"counts"` // by TapResponse.Status
}

// splitBatch reads a BatchRequest body in one pass and returns its first
// maxItems exchanges as they were sent, and how many it holds (the rest are
// checked and counted, not copied): the object's "exchanges" member (matched as
// encoding/json matches a field name, case-insensitively; the last one
// counts; other members are skipped), an array of JSON values, or null for
// none. Invalid UTF-8 and repeated member names inside one exchange are that
// exchange's problem, found when it is decoded (DecodeExchange); anything
// else that is not one such object, trailing data included, is an error.
// encoding/json took 4.0–4.4 ms to decode a 1,000-exchange body into
// []json.RawMessage (it scans each exchange twice and validates it once
// more), jsontext 0.6–0.8 ms.
func splitBatch(body []byte, maxItems int) (items []json.RawMessage, total int, err error) {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil {
		return nil, 0, err
	} else if tok.Kind() != '{' {
		return nil, 0, fmt.Errorf("the body is a JSON %s, not an object", kindName(tok.Kind()))
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, 0, err
		}
		if !strings.EqualFold(name.String(), "exchanges") {
			if err := dec.SkipValue(); err != nil {
				return nil, 0, err
			}
			continue
		}
		switch k := dec.PeekKind(); k {
		case 'n':
			if _, err := dec.ReadToken(); err != nil {
				return nil, 0, err
			}
			items, total = nil, 0
			continue
		case '[':
		default:
			return nil, 0, fmt.Errorf("\"exchanges\" is a JSON %s, not an array", kindName(k))
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, 0, err
		}
		items, total = items[:0], 0
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return nil, 0, err
			}
			if total++; total <= maxItems {
				items = append(items, json.RawMessage(bytes.Clone(v)))
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, 0, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, 0, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("trailing data after the JSON object")
		}
		return nil, 0, err
	}
	return items, total, nil
}

// kindName names a JSON value kind as an error reads it.
func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	}
	return k.String() // null, string, number
}

// handleBatch takes many exchanges at once. The envelope must be valid JSON (else
// 400 or 413 and nothing is queued); each exchange is then validated and offered
// on its own — invalid UTF-8, malformed or out-of-range values included — and
// answered in results (a bad item never spoils the others). The status is 200
// when every item was answered.
func (t *Tap) handleBatch(c *gin.Context) {
	body, release, ok := t.readBody(c, t.cfg.MaxBatchBytes, "batch body")
	defer release()
	if !ok {
		return
	}
	var req BatchRequest
	var total int
	var err error
	if req.Exchanges, total, err = splitBatch(body, t.cfg.MaxBatchItems); err != nil {
		t.reject(c, http.StatusBadRequest, &DecodeError{Reason: ReasonMalformedJSON, Detail: "want {\"exchanges\": [ ... ]}: " + err.Error()})
		return
	}
	switch {
	case total == 0:
		t.reject(c, http.StatusBadRequest, &DecodeError{Reason: ReasonInvalid, Detail: "exchanges must hold at least one exchange"})
		return
	case total > t.cfg.MaxBatchItems:
		t.reject(c, http.StatusRequestEntityTooLarge, &DecodeError{Reason: ReasonTooLarge, Detail: fmt.Sprintf("batch holds %d exchanges, at most %d allowed", total, t.cfg.MaxBatchItems)})
		return
	}
	resp := BatchResponse{Results: make([]TapResponse, len(req.Exchanges)), Counts: map[string]int{}}
	// Every item is handed over first, so one store commit can take them all;
	// then each is answered in order.
	states := make([]offerState, len(req.Exchanges))
	for i, raw := range req.Exchanges {
		var r TapResponse
		switch {
		case int64(len(raw)) > t.cfg.MaxBodyBytes:
			de := &DecodeError{Reason: ReasonTooLarge, Detail: fmt.Sprintf("exchange exceeds %d bytes", t.cfg.MaxBodyBytes)}
			t.stats.reject(de.Reason)
			r = TapResponse{Status: "rejected", Reason: de.Reason, Error: de.Error()}
		default:
			ex, err := DecodeExchange(raw, t.cfg.MaxMessages, true)
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					de = &DecodeError{Reason: ReasonInvalid, Detail: err.Error()}
				}
				t.stats.reject(de.Reason)
				r = TapResponse{Status: "rejected", Reason: de.Reason, Error: de.Error()}
				break
			}
			states[i] = t.begin(c.Request.Context(), ex, true)
			states[i].offered = offeredAs(ex)
			continue
		}
		states[i] = answered(http.StatusOK, r)
	}
	wctx, cancel := context.WithTimeout(c.Request.Context(), t.cfg.AcceptTimeout)
	defer cancel()
	for i, st := range states {
		_, r := t.finish(wctx, st)
		resp.Results[i] = r
		resp.Counts[r.Status]++
	}
	c.JSON(http.StatusOK, resp)
}
