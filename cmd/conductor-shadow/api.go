package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// queryRequest is the body of POST /api/query.
type queryRequest struct {
	SQL string `json:"sql"`
}

// suiteRequest is the body of POST /api/suite-runs.
type suiteRequest struct {
	// Set is one of the server's regression sets: a name ("gsm8k-150") or a
	// path inside the folders of suite.set and the scheduled suites' sets
	// (resolveRequestedSet); empty: suite.set. Other paths answer 400.
	Set   string `json:"set"`
	Limit int    `json:"limit"` // first N cases; 0: all; negative answers 400
}

// suiteResponse answers POST /api/suite-runs once the suite run is done.
// Through the API the report paths are relative to the server's
// suite.report_dir and Store names the store's kind, never a folder.
type suiteResponse struct {
	SuiteRunID   string `json:"suite_run_id"`
	Headline     string `json:"headline"`
	Markdown     string `json:"markdown"`
	MarkdownPath string `json:"markdown_path"`
	JSONPath     string `json:"json_path"`
	HTMLPath     string `json:"html_path"`
	Verdict      string `json:"verdict"` // PASS, FAIL, INCONCLUSIVE; "" without candidates
	// VerdictDetail is the policy, each candidate's gates (quality test named) and
	// the truncated runs per pipeline, in one line.
	VerdictDetail string `json:"verdict_detail"`
	Store         string `json:"store"` // the store the suite run was written to
}

// suiteStreamLine is one line of POST /api/suite-runs answered as NDJSON
// (asked with "Accept: application/x-ndjson"): the run's state after every
// finished case, then one line with the result or the error that ended it.
// The status is 200 once the run has started; a bad request is refused
// before, with its status and a JSON error as without NDJSON.
type suiteStreamLine struct {
	Progress *eval.SuiteProgress `json:"progress,omitempty"`
	Result   *suiteResponse      `json:"result,omitempty"`
	Error    string              `json:"error,omitempty"`
}

// segmentMixRequest is the body of POST /api/segment-mix: the live traffic's
// window [from, to) (RFC 3339) and optionally one app.
type segmentMixRequest struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	App  string    `json:"app,omitempty"`
}

// segmentMixResponse answers POST /api/segment-mix (store.SegmentReader).
type segmentMixResponse struct {
	Segments []store.SegmentCount `json:"segments"`
}

// api serves the read-only query endpoint, tap statistics and suite runs for the
// CLI, which cannot open the embedded store while the server holds it.
type api struct {
	console store.Console
	suites  *suiteRunner
	stats   func() ingest.StatsSnapshot
	writer  func() store.WriterStats
	// admission is the adaptive shadow-run limit's state; nil in the tap role.
	admission func() ingest.AdmissionSnapshot
	forget    *forgetter          // POST /api/forget; nil in the tap role (no store)
	segments  store.SegmentReader // POST /api/segment-mix; nil: 501
	reviews   store.ReviewReader  // GET /api/review/export; nil: 501
	// stopping ends when the server starts to stop: console statements still
	// running are ended then, so they do not hold the drain.
	stopping context.Context
	flows    *flowRecorder // POST /api/data-flows; nil in the tap role
}

func (a *api) register(r gin.IRouter) {
	r.POST("/api/query", a.query)
	r.GET("/api/stats", a.statsHandler)
	r.POST("/api/suite-runs", a.runSuite)
	r.POST("/api/forget", a.forgetHandler)
	r.POST("/api/segment-mix", a.segmentMix)
	r.GET(reviewExportPath, a.reviewExport)
	r.POST("/api/data-flows", a.flowsHandler)
}

// segmentMix answers the live traffic's segment mix of a window, for `shift`
// while the server holds the store.
func (a *api) segmentMix(c *gin.Context) {
	var req segmentMixRequest
	if err := c.ShouldBindJSON(&req); err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": "want a JSON body {\"from\": \"2026-01-01T00:00:00Z\", \"to\": \"2026-01-08T00:00:00Z\"}"})
		return
	}
	if a.segments == nil {
		c.JSON(http.StatusNotImplemented, gin.H{"error": store.NotSupported("store.SegmentReader").Error()})
		return
	}
	q := store.SegmentMixQuery{From: req.From, To: req.To, App: req.App}
	if err := q.Validate(); err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	mix, err := a.segments.SegmentMix(c.Request.Context(), q)
	if err != nil {
		_ = c.Error(err)
		c.JSON(http.StatusInternalServerError, gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, segmentMixResponse{Segments: mix})
}

// maxQueryBodyBytes bounds the body of POST /api/query (1 MiB of SQL).
const maxQueryBodyBytes = 1 << 20

// queryResponse answers POST /api/query: the rows, and on the embedded
// engine how fresh the snapshot they were read from is.
type queryResponse struct {
	store.QueryResult
	// SnapshotAgeMs is how long before the answer the snapshot was taken
	// (ms); absent on a ClickHouse server, where the console reads the live
	// tables.
	SnapshotAgeMs *int64 `json:"snapshot_age_ms,omitempty"`
}

func (a *api) query(c *gin.Context) {
	var req queryRequest
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxQueryBodyBytes)
	if err := c.ShouldBindJSON(&req); err != nil || strings.TrimSpace(req.SQL) == "" {
		c.JSON(http.StatusBadRequest, gin.H{"error": "want a JSON body {\"sql\": \"SELECT ...\"}"})
		return
	}
	// The store writes the audit lines (before the statement runs, and its
	// outcome after), naming the caller; a stopping server ends the statement.
	ctx := store.WithConsoleCaller(c.Request.Context(), c.Request.RemoteAddr)
	if a.stopping != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(a.stopping, cancel)()
	}
	res, err := a.console.Query(ctx, req.SQL)
	switch {
	case errors.Is(err, store.ErrReadOnly):
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
	case errors.Is(err, store.ErrQueryBusy):
		c.Header("Retry-After", "1")
		c.JSON(http.StatusTooManyRequests, gin.H{"error": err.Error()})
	case errors.Is(err, context.Canceled) && a.stopping != nil && a.stopping.Err() != nil:
		// A stop is not a failure: the statement was ended for the drain.
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "the server is stopping; the statement was ended"})
	case errors.Is(err, store.ErrClosed):
		_ = c.Error(err)
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": err.Error()})
	case err != nil:
		c.JSON(http.StatusUnprocessableEntity, gin.H{"error": err.Error()})
	default:
		out := queryResponse{QueryResult: res}
		if !res.SnapshotAt.IsZero() {
			age := time.Since(res.SnapshotAt).Milliseconds()
			out.SnapshotAgeMs = &age
		}
		c.JSON(http.StatusOK, out)
	}
}

func (a *api) statsHandler(c *gin.Context) {
	body := gin.H{"tap": a.stats(), "writer": a.writer()}
	if a.admission != nil {
		body["admission"] = a.admission()
	}
	c.JSON(http.StatusOK, body)
}

func (a *api) runSuite(c *gin.Context) {
	var req suiteRequest
	if c.Request.ContentLength != 0 {
		if err := c.ShouldBindJSON(&req); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": "want a JSON body {\"set\": \"gsm8k-150\", \"limit\": 0}"})
			return
		}
	}
	if err := checkLimit(req.Limit); err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	set, err := resolveRequestedSet(a.suites.cfg, req.Set)
	if err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	if strings.Contains(c.GetHeader("Accept"), ndjson) {
		a.streamSuite(c, set, req.Limit)
		return
	}
	res, err := a.suites.run(c.Request.Context(), set, req.Limit, nil)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, errBadSet) {
			code = http.StatusBadRequest
		} else {
			_ = c.Error(err)
		}
		c.JSON(code, gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, a.suites.public(res))
}

// streamSuite runs the suite answering NDJSON (suiteStreamLine): a line per
// finished case, flushed at once, then the result or the error. Each write
// gets a deadline of its own (streamWriteTimeout), so a long run is not cut
// by a server-wide write timeout and a caller that stops reading does not
// hold the run's workers for longer.
func (a *api) streamSuite(c *gin.Context, set string, limit int) {
	c.Header("Content-Type", ndjson)
	c.Status(http.StatusOK)
	rc := http.NewResponseController(c.Writer)
	enc := json.NewEncoder(c.Writer)
	var mu sync.Mutex
	write := func(l suiteStreamLine) {
		mu.Lock()
		defer mu.Unlock()
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if enc.Encode(l) == nil {
			_ = rc.Flush()
		}
	}
	write(suiteStreamLine{Progress: &eval.SuiteProgress{}}) // the headers, at once
	res, err := a.suites.run(c.Request.Context(), set, limit, func(p eval.SuiteProgress) { write(suiteStreamLine{Progress: &p}) })
	if err != nil {
		if !errors.Is(err, errBadSet) && !errors.Is(err, context.Canceled) {
			_ = c.Error(err)
		}
		write(suiteStreamLine{Error: err.Error()})
		return
	}
	pub := a.suites.public(res)
	write(suiteStreamLine{Result: &pub})
}

// streamWriteTimeout bounds one write of a streamed answer.
const streamWriteTimeout = time.Minute

// requireToken lets loopback callers through and asks every other caller for
// "Authorization: Bearer <token>". An empty token refuses every non-loopback call.
func requireToken(token string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if web.IsLoopback(c.Request.RemoteAddr) {
			c.Next()
			return
		}
		got, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
		if !ok || token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": "this endpoint answers loopback callers or a valid bearer token"})
			return
		}
		c.Next()
	}
}
