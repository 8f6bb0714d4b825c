package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Tap is the HTTP copy API: POST /v1/tap takes one Exchange and answers 202 once it
// is queued. It never waits for the shadow side: a full queue drops the copy
// (counted) and still answers at once.
type Tap struct {
	cfg   Config
	queue Queue
	stats *Stats
	seen  *lru.Cache[string, struct{}] // recent request ids, for idempotency; nil when DedupWindow is 0
}

// TapResponse is the JSON body of every /v1/tap answer.
type TapResponse struct {
	Status    string `json:"status"` // "queued", "duplicate", "dropped" or "rejected"
	RequestID string `json:"request_id,omitempty"`
	Reason    string `json:"reason,omitempty"` // a Reason* constant or a drop reason
	Error     string `json:"error,omitempty"`
}

// NewTap returns a tap publishing to q and counting into stats.
func NewTap(cfg Config, q Queue, stats *Stats) (*Tap, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Tap{cfg: cfg, queue: q, stats: stats}
	if cfg.DedupWindow > 0 {
		seen, err := lru.New[string, struct{}](cfg.DedupWindow)
		if err != nil {
			return nil, fmt.Errorf("ingest: dedup window: %w", err)
		}
		t.seen = seen
	}
	return t, nil
}

// Register mounts POST /v1/tap on r.
func (t *Tap) Register(r gin.IRouter) {
	r.POST("/v1/tap", t.handle)
}

// Offer validates and queues one exchange; it is what the HTTP handler and the
// mirroring proxy call. The returned status code is 202 (queued), 200 (duplicate),
// 503 (dropped: queue full or closed) or 4xx (rejected, with a *DecodeError).
func (t *Tap) Offer(ctx context.Context, ex Exchange) (int, TapResponse) {
	if t.seen != nil {
		if found, _ := t.seen.ContainsOrAdd(ex.RequestID, struct{}{}); found {
			t.stats.duplicates.Add(1)
			return http.StatusOK, TapResponse{Status: "duplicate", RequestID: ex.RequestID}
		}
	}
	if err := t.queue.Publish(ctx, ex); err != nil {
		if t.seen != nil {
			t.seen.Remove(ex.RequestID) // not queued: a retry must get through
		}
		reason := "queue_full"
		if errors.Is(err, ErrQueueClosed) {
			reason = "shutting_down"
		}
		t.stats.drop(reason)
		return http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: ex.RequestID, Reason: reason, Error: err.Error()}
	}
	t.stats.accepted.Add(1)
	return http.StatusAccepted, TapResponse{Status: "queued", RequestID: ex.RequestID}
}

func (t *Tap) handle(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, t.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			t.reject(c, http.StatusRequestEntityTooLarge, &DecodeError{Reason: ReasonTooLarge, Detail: fmt.Sprintf("body exceeds %d bytes", t.cfg.MaxBodyBytes)})
			return
		}
		t.reject(c, http.StatusBadRequest, &DecodeError{Reason: ReasonMalformedJSON, Detail: "reading body: " + err.Error()})
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
	c.JSON(code, resp)
}

func (t *Tap) reject(c *gin.Context, code int, de *DecodeError) {
	t.stats.reject(de.Reason)
	c.JSON(code, TapResponse{Status: "rejected", Reason: de.Reason, Error: de.Error()})
}
