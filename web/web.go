// Package web serves conductor-shadow's server-rendered UI (gin + templ) over the
// readers of a store (Readers): the overview (traffic, cost and latency over time, agreement,
// latest verdicts), the traces list with search filters, a trace's drill-down
// (answers side by side with text diffs, the plan, the workflow graph and the
// timeline as inline SVG, every step's context and output), run and suite-run
// comparisons, worker analytics, and suite runs with their reports. Each page
// reads only the roles it shows (store.TraceReader, store.SuiteReader,
// store.OverviewReader, store.RunComparer, store.WorkerReader,
// store.SegmentReader), handed over once at Register; a page whose role is
// missing answers 501 naming it, never a page with less. Pages need
// no JavaScript and load no third-party assets; all stored text is escaped, and
// Markdown is rendered and sanitized before it is embedded. Auth.Middleware
// guards the pages when they are reachable beyond loopback.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
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

// runStatuses returns the choices of the traces list's status filter.
func runStatuses() []string {
	return []string{store.StatusOK, store.StatusError, store.StatusCancelled, store.StatusCancelledByClient, store.StatusPlanUnparsable, store.StatusBudgetExceeded, store.StatusSkipped}
}

// traceSources returns the choices of the traces list's source filter.
func traceSources() []string {
	return []string{store.SourceTap, store.SourceReplay, store.SourceSuite}
}

// Readers are the store roles the pages read, resolved once where the
// program is wired (ReadersOf(store.NewRoles(st))). Suites is required; a page
// whose role is nil answers 501 naming it (store.NotSupported), decided at
// Register.
type Readers struct {
	Suites   store.SuiteReader    // the suite-run pages, the overview's verdicts
	Traces   store.TraceReader    // the traces list and a trace
	Overview store.OverviewReader // the overview
	Live     store.LiveReader     // the overview's live verdicts
	Runs     store.RunComparer    // a suite run's cases, the comparison pages
	Workers  store.WorkerReader   // the workers page
	Segments store.SegmentReader  // the shift page
	// Judgments is optional: without it a trace page has no judgment section.
	Judgments store.JudgmentReader
	// LiveJudgments is optional: without it the overview has no live judges.
	LiveJudgments store.LiveJudgmentReader
	// Plans: the plans page (a conductor's plan shapes, attribution, drift, diff).
	Plans store.PlanReader
	Flows store.FlowReader // the data-flows page
}

// ReadersOf picks the pages' roles out of r.
func ReadersOf(r store.Roles) Readers {
	return Readers{Suites: r.SuiteReader, Traces: r.TraceReader, Overview: r.OverviewReader, Live: r.LiveReader,
		Runs: r.RunComparer, Workers: r.WorkerReader, Segments: r.SegmentReader, Judgments: r.JudgmentReader, LiveJudgments: r.LiveJudgments,
		Flows: r.FlowReader, Plans: r.PlanReader}
}

// server holds what the handlers share; it is read-only after Register.
type server struct {
	read   Readers
	cfg    Config
	md     *markdown
	static fs.FS
	// suiteRunPage serves /suite-runs/{id}: suiteRun, or 501 without Runs.
	suiteRunPage gin.HandlerFunc
}

// Register mounts the UI on r under cfg.BasePath:
//
//	GET /                            302 to /traces
//	GET /overview                    counts, per-pipeline cost/latency/agreement/verdict and charts for a
//	                                 window; query: app, from, to (UTC; default the last 24 h)
//	GET /workers                     worker usage by plan position and category with shares of steps,
//	                                 cost and latency; query: app, pipeline, from, to (default the last 24 h)
//	GET /traces                      traces list; query: app, source (tap|replay|suite), q (input text),
//	                                 limit (1..store.MaxListLimit, default store.DefaultListLimit),
//	                                 before (RFC 3339, received_at of the previous page's last row)
//	                                 and before_id (its request_id), candidate, worker, status, grade,
//	                                 min_cost/max_cost (USD), min_ms/max_ms (slowest run), from/to (UTC);
//	                                 q matches final outputs too; sort (cost_delta|latency_delta|agreement|
//	                                 judgment) with dir (asc|desc) and the sorted cursor after/after_id
//	GET /traces/{id}                 one trace; 404 when the store has no such request; query: candidate
//	                                 (the run id of the candidate shown beside the incumbent)
//	GET /plans                       a candidate conductor's plans explained: shapes, attribution of the cost and
//	                                 latency difference, drift, a diff between versions; query: pipeline, version
//	                                 (or version_key pipeline@version), scope (production|suite), app, from/to (UTC;
//	                                 default the 7 days up to the version's last run), bucket (day|week), compare
//	                                 (pipeline@version; default the previous version)
//	GET /suite-runs                  suite runs, newest first (store.DefaultListLimit)
//	GET /suite-runs/{id}             one suite run with its rendered report; 404 when absent
//	GET /suite-runs/{id}/report.json the stored JSON report (application/json); 404 when absent or empty
//	GET /suite-runs/{id}/report.html the stored self-contained HTML report, sandboxed (no scripts, no
//	                                 requests); 404 when absent or empty
//	GET /compare/runs                two runs side by side; query: a, b (run ids)
//	GET /compare/suite-runs          two suite runs case by case; query: a, b (suite run ids), pipeline, changed=1
//	GET /data-flows                  every party outside the platform that received data in a window, with what it
//	                                 received and the retention that applies (store/dataflow); query: since (default 168h)
//	GET /static/*file                the embedded stylesheet
//
// An {id} may hold "/" (suite-case request ids such as "suite-…/gsm8k-test-0"),
// sent as "%2F" or as "/": the id is the rest of the path. Every route answers
// HEAD like GET, without a body.
//
// HTML pages answer 501 naming the store role a page needs when rd lacks it
// (store.ErrNotSupported; the traces pages need Traces, the overview
// Overview and Live, the workers page Workers, a suite run and the comparisons Runs,
// the shift page Segments), 400 for bad query parameters, and 500 with a
// short message when the store fails; the cause is attached to the gin
// context, and with WithLogger it is logged with the method and path (serve
// logs every 5xx router-wide instead).
// It returns an error for a nil router, readers without Suites (every store
// has it) and an invalid cfg.
func Register(r gin.IRouter, rd Readers, cfg Config, opts ...Option) error {
	if r == nil {
		return errors.New("web: register: nil router")
	}
	if rd.Suites == nil {
		return fmt.Errorf("web: register: %w", store.NotSupported("store.SuiteReader"))
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("web: register: %w", err)
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return fmt.Errorf("web: register: static files: %w", err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &server{read: rd, cfg: cfg, md: newMarkdown(), static: static}
	traces := pageRole{"store.TraceReader", rd.Traces != nil}
	runs := pageRole{"store.RunComparer", rd.Runs != nil}
	s.suiteRunPage = s.needs("a suite run's cases", func(c *gin.Context) { s.suiteRun(c, pathID(c)) }, runs)

	var mw []gin.HandlerFunc
	if o.log != nil {
		mw = append(mw, logServerErrors(o.log))
	}
	g := r.Group(cfg.BasePath, mw...)
	get := func(path string, h gin.HandlerFunc) {
		g.GET(path, h)
		g.HEAD(path, h)
	}
	if cfg.BasePath != "" {
		get("", s.root)
	}
	get("/", s.root)
	get("/overview", s.needs("the overview", s.overview, pageRole{"store.OverviewReader", rd.Overview != nil}, pageRole{"store.LiveReader", rd.Live != nil}))
	get("/workers", s.needs("worker usage", s.workers, pageRole{"store.WorkerReader", rd.Workers != nil}))
	get("/traces", s.needs("traces", s.traces, traces))
	get("/shift", s.needs("the shift page", s.shift, pageRole{"store.SegmentReader", rd.Segments != nil}))
	get("/plans", s.needs("the plans page", s.plans, pageRole{"store.PlanReader", rd.Plans != nil}))
	get("/data-flows", s.needs("the data flows", s.dataFlows, pageRole{"store.FlowReader", rd.Flows != nil}))
	get("/traces/*id", s.needs("a trace", s.trace, traces))
	get("/suite-runs", s.suiteRuns)
	get("/suite-runs/*id", s.suiteRunRoutes)
	get("/compare/runs", s.needs("comparisons", s.compareRuns, runs))
	get("/compare/suite-runs", s.needs("comparisons", s.compareSuiteRuns, runs))
	get("/static/*file", s.staticFile)
	return nil
}

// pageRole is a store role a page reads and whether the readers have it.
type pageRole struct {
	name    string // "store.TraceReader"
	present bool
}

// needs returns h, or, when one of roles is missing, a handler answering 501
// naming it: what a page can show is decided once, at Register.
func (s *server) needs(what string, h gin.HandlerFunc, roles ...pageRole) gin.HandlerFunc {
	for _, r := range roles {
		if !r.present {
			err := store.NotSupported(r.name)
			return func(c *gin.Context) { s.unsupported(c, what, err) }
		}
	}
	return h
}

// Option adjusts Register.
type Option func(*options)

type options struct {
	log *slog.Logger
}

// WithLogger logs the cause of every 5xx page to l (default: not logged here, for
// a router that logs server errors itself).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// logServerErrors logs, after a page answered 5xx, the errors its handler
// attached to the gin context (the cause the page itself does not show).
func logServerErrors(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if c.Writer.Status() < 500 {
			return
		}
		errs := c.Errors.ByType(gin.ErrorTypeAny)
		if len(errs) == 0 && c.Writer.Status() == http.StatusNotImplemented {
			return // the store lacks a role: said on the page, nothing failed
		}
		if len(errs) == 0 {
			log.Error("web: page failed without a recorded cause", "method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status())
			return
		}
		for _, e := range errs {
			log.Error("web: page failed", "method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(), "err", e.Err)
		}
	}
}

// pathID is the id of a wildcard route: the rest of the path without its
// leading "/" (it may hold "/").
func pathID(c *gin.Context) string { return strings.TrimPrefix(c.Param("id"), "/") }

// suiteRunRoutes serves /suite-runs/{id}, /suite-runs/{id}/report.json and
// /suite-runs/{id}/report.html; the id may hold "/".
func (s *server) suiteRunRoutes(c *gin.Context) {
	id := pathID(c)
	switch {
	case strings.HasSuffix(id, "/report.json"):
		s.reportJSON(c, strings.TrimSuffix(id, "/report.json"))
	case strings.HasSuffix(id, "/report.html"):
		s.reportHTML(c, strings.TrimSuffix(id, "/report.html"))
	default:
		s.suiteRunPage(c)
	}
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
	// NUL is no HTML character: text stored before NUL was replaced at the tap
	// still never reaches the page.
	c.Data(status, "text/html; charset=utf-8", bytes.ReplaceAll(buf.Bytes(), []byte{0}, []byte("\uFFFD")))
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

// unsupported answers a page whose store role is missing: 501 naming the role
// (what is the error's text) for store.ErrNotSupported, 500 otherwise.
func (s *server) unsupported(c *gin.Context, what string, err error) {
	if errors.Is(err, store.ErrNotSupported) {
		s.fail(c, http.StatusNotImplemented, fmt.Sprintf("This store cannot show %s (%v).", what, err), nil)
		return
	}
	s.fail(c, http.StatusInternalServerError, fmt.Sprintf("The store cannot show %s. Check the server log.", what),
		fmt.Errorf("web: %s: %w", what, err))
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
	sq := q.search()
	// Ask for one row more than shown to know whether an older page exists.
	sq.Limit = min(limit+1, store.MaxListLimit)
	rows, err := s.read.Traces.SearchTraces(c.Request.Context(), sq)
	if err != nil {
		s.storeFailed(c, "trace list", "", err)
		return
	}
	more := len(rows) > limit || (sq.Limit == limit && len(rows) == limit)
	rows = rows[:min(len(rows), limit)]

	v := tracesView{Meta: s.meta("Traces", navTraces), Query: q, Rows: rows, Sources: traceSources(),
		Searchable: true, Statuses: runStatuses()}
	if more && len(rows) > 0 {
		next := q
		last := rows[len(rows)-1]
		if q.Sort != "" {
			next.AfterValue, next.AfterID = last.SortValue, last.RequestID
		} else {
			next.Before, next.BeforeID = last.ReceivedAt, last.RequestID
		}
		v.OlderURL = s.urls().tracesWith(next)
	}
	if !q.Before.IsZero() || q.AfterID != "" {
		first := q
		first.Before, first.BeforeID, first.AfterValue, first.AfterID = time.Time{}, "", 0, ""
		v.FirstURL = s.urls().tracesWith(first)
	}
	s.render(c, http.StatusOK, tracesPage(v))
}

func (s *server) trace(c *gin.Context) {
	id := pathID(c)
	tr, err := s.read.Traces.GetTrace(c.Request.Context(), id)
	if err != nil {
		s.storeFailed(c, "trace", id, err)
		return
	}
	v := newTraceView(s.meta("Trace "+shortID(id, 24), navTraces), s.md, tr)
	v.Judging = s.judgmentsOf(c, tr)
	if v.Pair, v.HasPair, err = newTracePair(v, strings.TrimSpace(c.Query("candidate"))); err != nil {
		s.fail(c, http.StatusBadRequest, "Bad query: "+err.Error()+".", nil)
		return
	}
	s.render(c, http.StatusOK, tracePage(v))
}

func (s *server) suiteRuns(c *gin.Context) {
	runs, err := s.read.Suites.ListSuiteRuns(c.Request.Context(), 0)
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

func (s *server) suiteRun(c *gin.Context, id string) {
	sr, cs := s.read.Suites, s.read.Runs
	run, err := sr.GetSuiteRun(c.Request.Context(), id)
	if err != nil {
		s.storeFailed(c, "suite run", id, err)
		return
	}
	v := suiteRunView{Meta: s.meta("Suite run "+shortID(id, 24), navSuiteRuns), Run: run,
		Simulated: reportSimulated(run.ReportJSON), Truncated: reportTruncated(run.ReportJSON), Judges: reportJudging(run.ReportJSON)}
	if all, err := sr.ListSuiteRuns(c.Request.Context(), store.MaxListLimit); err == nil {
		if prev, ok := previousSuiteRun(all, run); ok {
			v.PrevURL = s.urls().compareSuiteRuns(prev.SuiteRunID, run.SuiteRunID, "", false)
		}
	} else {
		_ = c.Error(fmt.Errorf("web: list suite runs for the previous run: %w", err))
	}
	scores, err := cs.ListScores(c.Request.Context(), id)
	if err != nil {
		s.storeFailed(c, "suite run scores", id, err)
		return
	}
	if len(scores) > 0 {
		v.CasePipelines, v.Cases = suiteCases(run, scores)
	}
	if strings.TrimSpace(run.ReportMarkdown) != "" {
		if v.ReportHTML, err = s.md.render(run.ReportMarkdown); err != nil {
			s.fail(c, http.StatusInternalServerError, "The report could not be rendered.", err)
			return
		}
	}
	s.render(c, http.StatusOK, suiteRunPage(v))
}

func (s *server) reportJSON(c *gin.Context, id string) {
	run, err := s.read.Suites.GetSuiteRun(c.Request.Context(), id)
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

// reportHTMLPolicy serves a stored HTML report: a sandbox (unique origin, no
// scripts, forms or popups), its own inline styles and data: images only.
const reportHTMLPolicy = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

func (s *server) reportHTML(c *gin.Context, id string) {
	run, err := s.read.Suites.GetSuiteRun(c.Request.Context(), id)
	if err != nil {
		s.storeFailed(c, "suite run", id, err)
		return
	}
	if strings.TrimSpace(run.ReportHTML) == "" {
		s.fail(c, http.StatusNotFound, fmt.Sprintf("Suite run %q has no HTML report.", id), nil)
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", reportHTMLPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(run.ReportHTML))
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
