package main

import (
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/conductor-shadow/conductor-shadow/ingest"
)

// hostRules decides which Host and Origin names reach the server. A browser
// on the operator's machine can be pointed at a loopback server under a name
// the attacker controls (DNS rebinding); that name is not one of these, so the
// request is refused before any handler runs. IP literals are always ours as
// a Host: a browser only sends one when it connected to that address itself.
type hostRules struct {
	hosts   nameSet // Host: localhost, server.addr's name, server.allowed_hosts
	origins nameSet // Origin beyond the request's own: server.allowed_hosts only
}

// nameSet matches host names exactly or, for entries starting with ".", every
// name under that domain.
type nameSet struct {
	names    map[string]bool
	suffixes []string
}

func (n *nameSet) add(name string) {
	name = strings.ToLower(strings.TrimSpace(name))
	switch {
	case strings.HasPrefix(name, "."):
		n.suffixes = append(n.suffixes, name)
	case name != "":
		if n.names == nil {
			n.names = map[string]bool{}
		}
		n.names[name] = true
	}
}

func (n nameSet) has(host string) bool {
	if n.names[host] {
		return true
	}
	for _, s := range n.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// newHostRules allows as Host "localhost", the host of addr (server.addr) when
// it is a name, any IP literal, and every entry of allowed
// (server.allowed_hosts: names, or ".example.com" for every name under
// example.com); as Origin the request's own Host and the entries of allowed.
func newHostRules(addr string, allowed []string) hostRules {
	var r hostRules
	r.hosts.add("localhost")
	if host, _, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host) == nil {
		r.hosts.add(host)
	}
	for _, a := range allowed {
		r.hosts.add(a)
		r.origins.add(a)
	}
	return r
}

// hostName returns the lower-case host of a Host header or an Origin's host,
// without port, brackets or a trailing dot.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// allows reports whether a Host header names this server.
func (r hostRules) allows(hostport string) bool {
	host := hostName(hostport)
	return host != "" && (net.ParseIP(host) != nil || r.hosts.has(host))
}

// sameSite reports whether a browser says req comes from a page of this
// server: Sec-Fetch-Site same-origin or none, and an Origin equal to the
// request's scheme-less Host or named in server.allowed_hosts. Requests with
// neither header (curl, the CLI, server-side clients) are not from a browser
// page and pass.
func (r hostRules) sameSite(req *http.Request) bool {
	switch req.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none": // none: typed by the user, a bookmark
	default: // cross-site, same-site (a sibling name)
		return false
	}
	origin := req.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" { // includes "null" (sandboxed frames, file://)
		return false
	}
	return strings.EqualFold(u.Host, req.Host) || r.origins.has(hostName(u.Host))
}

// browserGuard refuses what a browser could be made to send against the
// server, on every route of the router:
//   - a Host that is not one of hostRules (DNS rebinding): 421, except for
//     /healthz and the paths passed through to the incumbent (server-side
//     clients call those under any name);
//   - a state-changing request (any method but GET, HEAD, OPTIONS) that a
//     browser marks cross-site (Sec-Fetch-Site) or sends from another
//     Origin: 403;
//   - a state-changing request with a body that is not JSON
//     (Content-Type application/json) on the server's own endpoints: 415.
//     A cross-site form or fetch cannot send JSON without a CORS preflight,
//     which the server never grants.
func browserGuard(rules hostRules, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		req := c.Request
		own := c.FullPath() != "" // "" for NoRoute: the proxy's pass-through
		if own && c.FullPath() != "/healthz" && !rules.allows(req.Host) {
			log.Warn("refused a request for another host name", "host", req.Host, "path", req.URL.Path, "remote", req.RemoteAddr)
			c.AbortWithStatusJSON(http.StatusMisdirectedRequest, gin.H{"error": fmt.Sprintf("host %q is not a name of this server; add it to server.allowed_hosts", req.Host)})
			return
		}
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			c.Next()
			return
		}
		if !rules.sameSite(req) {
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
