// Package web serves conductor-shadow's server-rendered UI (gin + templ) over a
// store.Store: the traces list and a trace's drill-down (input, the incumbent's
// answer beside each candidate's, the conductor's plan, every step with its access
// list), and suite runs with their reports. Pages need no JavaScript and load no
// third-party assets; all stored text is escaped, and the report Markdown is
// rendered and sanitized before it is embedded.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

//go:embed static
var staticFiles embed.FS

// contentSecurityPolicy of every HTML page: no scripts, styles from this server only.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'self'"

// traceSources returns the choices of the traces list's source filter.
func traceSources() []string {
	return []string{store.SourceTap, store.SourceReplay, store.SourceSuite}
}

// server holds what the handlers share; it is read-only after Register.
type server struct {
	st     store.Store
	cfg    Config
	md     *markdown
	static fs.FS
}

// Register mounts the UI on r under cfg.BasePath:
//
//	GET /                            302 to /traces
//	GET /traces                      traces list; query: app, source (tap|replay|suite), q (input text),
//	                                 limit (1..store.MaxListLimit, default store.DefaultListLimit),
//	                                 before (RFC 3339, received_at of the previous page's last row)
//	                                 and before_id (its request_id)
//	GET /traces/:id                  one trace; 404 when the store has no such request
//	GET /suite-runs                  suite runs, newest first (store.DefaultListLimit)
//	GET /suite-runs/:id              one suite run with its rendered report; 404 when absent
//	GET /suite-runs/:id/report.json  the stored JSON report (application/json); 404 when absent or empty
//	GET /static/*file                the embedded stylesheet
//
// HTML pages answer 400 for bad query parameters and 500 with a short message
// when the store fails (the error is attached to the gin context for logging).
// It returns an error for a nil router or store and for an invalid cfg.
func Register(r gin.IRouter, st store.Store, cfg Config) error {
	if r == nil {
		return errors.New("web: register: nil router")
	}
	if st == nil {
		return errors.New("web: register: nil store")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("web: register: %w", err)
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return fmt.Errorf("web: register: static files: %w", err)
	}
	s := &server{st: st, cfg: cfg, md: newMarkdown(), static: static}

	g := r
	if cfg.BasePath != "" {
		g = r.Group(cfg.BasePath)
		g.GET("", s.root)
	}
	g.GET("/", s.root)
	g.GET("/traces", s.traces)
	g.GET("/traces/:id", s.trace)
	g.GET("/suite-runs", s.suiteRuns)
	g.GET("/suite-runs/:id", s.suiteRun)
	g.GET("/suite-runs/:id/report.json", s.reportJSON)
	g.GET("/static/*file", s.staticFile)
	return nil
}

func (s *server) urls() urls { return urls{s.cfg.BasePath} }

func (s *server) meta(title, nav string) pageMeta {
	return pageMeta{Title: title, Product: s.cfg.Title, Base: s.cfg.BasePath, Nav: nav}
}

// render writes comp as an HTML page with status, rendered with the request's context.
func (s *server) render(c *gin.Context, status int, comp templ.Component) {
	var buf bytes.Buffer
	if err := comp.Render(c.Request.Context(), &buf); err != nil {
		_ = c.Error(fmt.Errorf("web: render %s: %w", c.FullPath(), err))
		c.Header("Content-Type", "text/plain; charset=utf-8")
		c.String(http.StatusInternalServerError, "internal error: the page could not be rendered")
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// fail renders an error page; err, when not nil, is attached to the context for logging.
func (s *server) fail(c *gin.Context, status int, msg string, err error) {
	if err != nil {
		_ = c.Error(err)
	}
	title := http.StatusText(status)
	s.render(c, status, errorPage(errorView{Meta: s.meta(title, ""), Status: status, Message: msg}))
}

// storeFailed answers a store error: 404 for store.ErrNotFound, 500 otherwise.
func (s *server) storeFailed(c *gin.Context, what, id string, err error) {
	if errors.Is(err, store.ErrNotFound) {
		s.fail(c, http.StatusNotFound, fmt.Sprintf("No %s with id %q.", what, id), nil)
		return
	}
	if errors.Is(err, context.Canceled) {
		// The client went away; nothing useful to show.
		c.Status(499)
		return
	}
	s.fail(c, http.StatusInternalServerError, fmt.Sprintf("The store could not load this %s. Try again; if it persists, check the server log.", what),
		fmt.Errorf("web: load %s %q: %w", what, id, err))
}

func (s *server) root(c *gin.Context) {
	c.Redirect(http.StatusFound, s.urls().traces())
}

func (s *server) traces(c *gin.Context) {
	q, err := parseTraceQuery(c.Request.URL.Query())
	if err == nil && q.Source != "" && !slices.Contains(traceSources(), q.Source) {
		err = fmt.Errorf("source %q must be one of %s", q.Source, strings.Join(traceSources(), ", "))
	}
	if err != nil {
		s.fail(c, http.StatusBadRequest, "Bad filter: "+err.Error()+".", nil)
		return
	}
	limit := store.ClampLimit(q.Limit)
	f := q.filter()
	// Ask for one row more than shown to know whether an older page exists.
	f.Limit = min(limit+1, store.MaxListLimit)
	rows, err := s.st.ListTraces(c.Request.Context(), f)
	if err != nil {
		s.storeFailed(c, "trace list", "", err)
		return
	}
	more := len(rows) > limit || (f.Limit == limit && len(rows) == limit)
	rows = rows[:min(len(rows), limit)]

	v := tracesView{Meta: s.meta("Traces", navTraces), Query: q, Rows: rows, Sources: traceSources()}
	if more && len(rows) > 0 {
		next := q
		last := rows[len(rows)-1]
		next.Before, next.BeforeID = last.ReceivedAt, last.RequestID
		v.OlderURL = s.urls().tracesWith(next)
	}
	if !q.Before.IsZero() {
		first := q
		first.Before, first.BeforeID = time.Time{}, ""
		v.FirstURL = s.urls().tracesWith(first)
	}
	s.render(c, http.StatusOK, tracesPage(v))
}

func (s *server) trace(c *gin.Context) {
	id := c.Param("id")
	tr, err := s.st.GetTrace(c.Request.Context(), id)
	if err != nil {
		s.storeFailed(c, "trace", id, err)
		return
	}
	s.render(c, http.StatusOK, tracePage(newTraceView(s.meta("Trace "+shortID(id, 24), navTraces), tr)))
}

func (s *server) suiteRuns(c *gin.Context) {
	runs, err := s.st.ListSuiteRuns(c.Request.Context(), 0)
	if err != nil {
		s.storeFailed(c, "suite run list", "", err)
		return
	}
	v := suiteRunsView{Meta: s.meta("Suite runs", navSuiteRuns)}
	for _, r := range runs {
		v.Rows = append(v.Rows, suiteRunRow{Run: r, Simulated: reportSimulated(r.ReportJSON)})
	}
	s.render(c, http.StatusOK, suiteRunsPage(v))
}

func (s *server) suiteRun(c *gin.Context) {
	id := c.Param("id")
	run, err := s.st.GetSuiteRun(c.Request.Context(), id)
	if err != nil {
		s.storeFailed(c, "suite run", id, err)
		return
	}
	v := suiteRunView{Meta: s.meta("Suite run "+shortID(id, 24), navSuiteRuns), Run: run,
		Simulated: reportSimulated(run.ReportJSON)}
	if strings.TrimSpace(run.ReportMarkdown) != "" {
		if v.ReportHTML, err = s.md.render(run.ReportMarkdown); err != nil {
			s.fail(c, http.StatusInternalServerError, "The report could not be rendered.", err)
			return
		}
	}
	s.render(c, http.StatusOK, suiteRunPage(v))
}

func (s *server) reportJSON(c *gin.Context) {
	id := c.Param("id")
	run, err := s.st.GetSuiteRun(c.Request.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.JSON(http.StatusNotFound, gin.H{"error": fmt.Sprintf("no suite run with id %q", id)})
		return
	case err != nil:
		_ = c.Error(fmt.Errorf("web: load suite run %q: %w", id, err))
		c.JSON(http.StatusInternalServerError, gin.H{"error": "the store could not load this suite run"})
		return
	case strings.TrimSpace(run.ReportJSON) == "":
		c.JSON(http.StatusNotFound, gin.H{"error": fmt.Sprintf("suite run %q has no JSON report yet", id)})
		return
	}
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(http.StatusOK, "application/json", []byte(run.ReportJSON))
}

func (s *server) staticFile(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("file"), "/")
	if st, err := fs.Stat(s.static, name); name == "" || err != nil || st.IsDir() {
		c.String(http.StatusNotFound, "not found")
		return
	}
	c.Header("Cache-Control", "public, max-age=3600")
	http.ServeFileFS(c.Writer, c.Request, s.static, name)
}
