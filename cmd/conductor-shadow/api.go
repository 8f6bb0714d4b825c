package main

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

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

// api serves the read-only query endpoint, tap statistics and suite runs for the
// CLI, which cannot open the embedded store while the server holds it.
type api struct {
	console store.Console
	suites  *suiteRunner
	stats   func() ingest.StatsSnapshot
	writer  func() store.WriterStats
	// admission is the adaptive shadow-run limit's state; nil in the tap role.
	admission func() ingest.AdmissionSnapshot
	forget    *forgetter         // POST /api/forget; nil in the tap role (no store)
	reviews   store.ReviewReader // GET /api/review/export; nil: 501
	log       *slog.Logger       // console audit: every POST /api/query with its outcome; nil: none
}

func (a *api) register(r gin.IRouter) {
	r.POST("/api/query", a.query)
	r.GET("/api/stats", a.statsHandler)
	r.POST("/api/suite-runs", a.runSuite)
	r.POST("/api/forget", a.forgetHandler)
	r.GET(reviewExportPath, a.reviewExport)
}

// maxQueryBodyBytes bounds the body of POST /api/query (1 MiB of SQL).
const maxQueryBodyBytes = 1 << 20

func (a *api) query(c *gin.Context) {
	var req queryRequest
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxQueryBodyBytes)
	if err := c.ShouldBindJSON(&req); err != nil || strings.TrimSpace(req.SQL) == "" {
		c.JSON(http.StatusBadRequest, gin.H{"error": "want a JSON body {\"sql\": \"SELECT ...\"}"})
		return
	}
	start := time.Now()
	res, err := a.console.Query(c.Request.Context(), req.SQL)
	defer a.audit(c, req.SQL, start, len(res.Rows), err)
	switch {
	case errors.Is(err, store.ErrReadOnly):
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
	case errors.Is(err, store.ErrQueryBusy):
		c.Header("Retry-After", "1")
		c.JSON(http.StatusTooManyRequests, gin.H{"error": err.Error()})
	case errors.Is(err, store.ErrClosed):
		_ = c.Error(err)
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": err.Error()})
	case err != nil:
		c.JSON(http.StatusUnprocessableEntity, gin.H{"error": err.Error()})
	default:
		c.JSON(http.StatusOK, res)
	}
}

// audit logs one console query: the statement (first 500 bytes), the caller,
// the answer's status, rows and duration (ms), and the engine's or the
// console's refusal.
func (a *api) audit(c *gin.Context, sql string, start time.Time, rows int, err error) {
	if a.log == nil {
		return
	}
	if len(sql) > 500 {
		sql = sql[:500] + "…"
	}
	attrs := []any{"sql", sql, "remote", c.Request.RemoteAddr, "status", c.Writer.Status(),
		"rows", rows, "ms", time.Since(start).Milliseconds()}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	a.log.Info("console query", attrs...)
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
	c.JSON(http.StatusOK, res)
}

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
