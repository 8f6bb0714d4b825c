package ingest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// handoffMaxBody bounds one POST of the hand-off (bytes): a batch of copies
// each within the proxy's capture limit.
const handoffMaxBody = 1 << 30

// handoffWait bounds how long the shadow side waits for a batch's commits
// before it answers; below the front's POST timeout (HandoffConfig.Timeout).
const handoffWait = 5 * time.Second

// HandoffReceiver is the shadow side of the local transport (Handoff): the
// front's copies go into the store-first queue (answered once committed),
// its records of exchanges not shadowed and its offered counts into the
// store. It trusts its caller, the front on a unix socket of mode 0600:
// copies come prepared (pseudonymized, sampled, marked store-only) and are
// not checked again. Mount it on the socket's router only.
type HandoffReceiver struct {
	Queue   DurableQueue
	Records RecordSink
	Offered store.CoverageWriter // nil: the counts are not stored (logged once per POST)
	Log     *slog.Logger
}

// Register mounts the hand-off's routes on r.
func (h *HandoffReceiver) Register(r gin.IRouter) {
	r.POST(HandoffCopiesPath, h.copies)
	r.POST(HandoffRecordsPath, h.records)
	r.POST(HandoffOfferedPath, h.offered)
}

// readHandoffLines decodes the JSON lines of one POST's body.
func readHandoffLines(r io.Reader) ([]Exchange, error) {
	sc := bufio.NewScanner(io.LimitReader(r, handoffMaxBody))
	sc.Buffer(make([]byte, 0, 64<<10), handoffMaxBody)
	var exs []Exchange
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var ex Exchange
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			return nil, fmt.Errorf("ingest: handoff: line %d: %w", len(exs)+1, err)
		}
		exs = append(exs, ex)
	}
	return exs, sc.Err()
}

// copies publishes every copy of the batch and answers each one's outcome once
// all are settled (or the caller gave up).
func (h *HandoffReceiver) copies(c *gin.Context) {
	exs, err := readHandoffLines(c.Request.Body)
	if err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	res := make([]chan error, len(exs))
	for i := range exs {
		res[i] = make(chan error, 1)
		ch := res[i]
		if err := h.Queue.PublishDurable(exs[i], func(err error) { ch <- err }); err != nil {
			ch <- err
		}
	}
	// Answered within handoffWait: a copy not committed by then is answered
	// accept_timeout (the front records it; it may still be committed, and
	// then its request row is written twice, once with its text).
	wait := time.NewTimer(handoffWait)
	defer wait.Stop()
	out := handoffOutcomes{Outcomes: make([]string, len(exs))}
	late := false
	for i, ch := range res {
		if late {
			select {
			case err := <-ch:
				out.Outcomes[i] = handoffReason(err)
			default:
				out.Outcomes[i] = ReasonAcceptTimeout
			}
			continue
		}
		select {
		case err := <-ch:
			out.Outcomes[i] = handoffReason(err)
		case <-wait.C:
			late = true
			out.Outcomes[i] = ReasonAcceptTimeout
		case <-c.Request.Context().Done():
			return // the front counts the batch as not handed over
		}
	}
	c.JSON(http.StatusOK, out)
}

// handoffReason is the reason a copy's outcome travels back as ("" taken).
func handoffReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrDuplicate):
		return "duplicate"
	}
	return dropReason(err)
}

// records stores the records of one POST before answering 204.
func (h *HandoffReceiver) records(c *gin.Context) {
	exs, err := readHandoffLines(c.Request.Body)
	if err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	if err := h.Records.WriteRecords(c.Request.Context(), exs); err != nil {
		h.log().Warn("handoff: records not stored; the front writes them again", "records", len(exs), "err", err)
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store_unavailable: the records were not stored (see the shadow side's log)"})
		return
	}
	c.Status(http.StatusNoContent)
}

// offered stores one POST of offered counts.
func (h *HandoffReceiver) offered(c *gin.Context) {
	var counts []store.OfferedCount
	if err := json.NewDecoder(io.LimitReader(c.Request.Body, handoffMaxBody)).Decode(&counts); err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": fmt.Sprintf("ingest: handoff: offered counts: %v", err)})
		return
	}
	if h.Offered == nil {
		h.log().Warn("handoff: the store cannot keep the offered counts", "err", store.NotSupported("store.CoverageWriter"))
		c.Status(http.StatusNoContent)
		return
	}
	if err := h.Offered.InsertOffered(c.Request.Context(), counts); err != nil {
		h.log().Warn("handoff: offered counts not stored; the front writes them again", "err", err)
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store_unavailable: the offered counts were not stored"})
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *HandoffReceiver) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}
