package main

import (
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
)

// browserGuard refuses what a browser could be made to send against the
// server, on every route of the router:
//   - a Host that is not one of rules (DNS rebinding): 421, except for
//     /healthz (a liveness probe may call it under any name);
//   - a state-changing request (any method but GET, HEAD, OPTIONS) that a
//     browser marks cross-site (Sec-Fetch-Site) or sends from another
//     Origin: 403;
//   - a state-changing request with a body that is not JSON
//     (Content-Type application/json) on the server's own endpoints: 415.
//     A cross-site form or fetch cannot send JSON without a CORS preflight,
//     which the server never grants.
//
// The mirroring proxy applies the same rules to every request it serves
// (ingest.Proxy.UseGuard), the routes it mirrors included, which reach it
// before this router.
func browserGuard(rules guard.Hosts, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		req := c.Request
		own := c.FullPath() != "" // "" for NoRoute: the proxy's pass-through
		if c.FullPath() != "/healthz" && !rules.Allows(req.Host) {
			log.Warn("refused a request for another host name", "host", req.Host, "path", req.URL.Path, "remote", req.RemoteAddr)
			c.AbortWithStatusJSON(http.StatusMisdirectedRequest, gin.H{"error": fmt.Sprintf("host %q is not a name of this server; add it to server.allowed_hosts", req.Host)})
			return
		}
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			c.Next()
			return
		}
		if !rules.SameSite(req) {
			log.Warn("refused a cross-site request", "method", req.Method, "path", req.URL.Path, "origin", req.Header.Get("Origin"), "sec_fetch_site", req.Header.Get("Sec-Fetch-Site"))
			c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "cross-site requests are refused"})
			return
		}
		if own && req.ContentLength != 0 {
			mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				c.AbortWithStatusJSON(http.StatusUnsupportedMediaType, gin.H{"error": "send the body as JSON with Content-Type: application/json"})
				return
			}
		}
		c.Next()
	}
}

// logServerErrors logs answers of status 500 or more with their cause: the
// errors handlers attached to the context (c.Error), or the status alone. Lines
// are rate-limited per (method, path, status): at most one per 5 s, carrying
// how many such answers it stands for, so a failing dependency probed every
// second (/readyz) does not flood the log. A 503 of the tap whose every cause
// is an ingest.LoggedLossError is not logged here at all: the tap counted it
// and logged it already, rate-limited by reason.
func logServerErrors(log *slog.Logger) gin.HandlerFunc {
	var (
		mu    sync.Mutex
		lines = map[string]*serverErrorLine{}
	)
	return func(c *gin.Context) {
		c.Next()
		status := c.Writer.Status()
		if status < http.StatusInternalServerError {
			return
		}
		if len(c.Errors) > 0 && !slices.ContainsFunc(c.Errors, func(e *gin.Error) bool {
			var lost *ingest.LoggedLossError
			return !errors.As(e.Err, &lost)
		}) {
			return
		}
		cause := c.Errors.String()
		if cause == "" {
			cause = "no cause attached by the handler"
		}
		key := fmt.Sprintf("%s %s %d", c.Request.Method, c.FullPath(), status)
		mu.Lock()
		l := lines[key]
		if l == nil {
			l = &serverErrorLine{every: rate.Sometimes{Interval: 5 * time.Second}}
			lines[key] = l
		}
		l.answers++
		var answers int64
		l.every.Do(func() { answers, l.answers = l.answers, 0 })
		mu.Unlock()
		if answers > 0 {
			log.Error("server error", "status", status, "method", c.Request.Method, "path", c.Request.URL.Path, "cause", cause, "answers", answers)
		}
	}
}

// serverErrorLine is the rate limit of one kind of server error log line.
type serverErrorLine struct {
	every   rate.Sometimes
	answers int64 // answers since the last line
}
