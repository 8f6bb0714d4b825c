package main

import (
	"bytes"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// defaultAnswerPolicy is the Content-Security-Policy of every answer that
// sets none of its own (the API's JSON, errors, redirects): nothing it holds
// may run or be framed. The pages set theirs (web).
const defaultAnswerPolicy = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// securityHeaders gives every answer of the router X-Content-Type-Options:
// nosniff, and those of its own routes defaultAnswerPolicy; a handler setting
// its own policy (the pages, the stored HTML report) replaces it. What the
// router does not serve (NoRoute) is the mirroring proxy's, which adds its
// sandboxing policy to the incumbent's answer.
func securityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if c.FullPath() != "" {
			h.Set("Content-Security-Policy", defaultAnswerPolicy)
		}
		c.Next()
	}
}

// pathScrubber replaces the server's own folders in API answers by what a
// caller may see: the data folder, the report folder and the regression-set
// folders, absolute, each by a name ("<data>", "<reports>", "<sets>"). The
// answers are built without them (suite runs name their set and report files
// relative to their folders); this is the check behind that.
type pathScrubber struct {
	from, to []string // longest first, so a folder inside another goes first
}

func newPathScrubber(cfg platform.Config) pathScrubber {
	type pair struct{ from, to string }
	var pairs []pair
	add := func(dir, name string) {
		if dir == "" {
			return
		}
		abs, err := filepath.Abs(dir)
		if err != nil || abs == "/" {
			return
		}
		pairs = append(pairs, pair{abs, name})
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			pairs = append(pairs, pair{real, name})
		}
	}
	if cfg.Store.DSN == "" {
		add(cfg.Store.Path, "<data>")
	}
	add(cfg.Suite.ReportDir, "<reports>")
	for _, d := range setDirs(cfg) {
		add(d, "<sets>")
	}
	// Longest first: a folder inside another is replaced before its parent.
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.from) - len(a.from) })
	var s pathScrubber
	for _, p := range pairs {
		s.from, s.to = append(s.from, p.from), append(s.to, p.to)
	}
	return s
}

// scrub replaces every folder of s in b.
func (s pathScrubber) scrub(b []byte) []byte {
	for i, f := range s.from {
		if bytes.Contains(b, []byte(f)) {
			b = bytes.ReplaceAll(b, []byte(f), []byte(s.to[i]))
		}
	}
	return b
}

// middleware buffers the answers of the /api routes and scrubs them before
// they are written; other routes pass untouched.
func (s pathScrubber) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !strings.HasPrefix(c.FullPath(), "/api/") || len(s.from) == 0 {
			c.Next()
			return
		}
		bw := &bufferedWriter{ResponseWriter: c.Writer}
		c.Writer = bw
		defer func() {
			if rec := recover(); rec != nil {
				c.Writer = bw.ResponseWriter // the recovery answers on the real writer
				panic(rec)
			}
		}()
		c.Next()
		c.Writer = bw.ResponseWriter
		body := s.scrub(bw.buf.Bytes())
		if bw.Header().Get("Content-Length") != "" {
			bw.Header().Del("Content-Length")
		}
		bw.ResponseWriter.WriteHeader(bw.status())
		_, _ = bw.ResponseWriter.Write(body)
	}
}

// bufferedWriter keeps an answer's body and status until the handler is done.
type bufferedWriter struct {
	gin.ResponseWriter
	buf  bytes.Buffer
	code int
}

func (w *bufferedWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *bufferedWriter) WriteHeaderNow()                   {}
func (w *bufferedWriter) Write(b []byte) (int, error)       { return w.buf.Write(b) }
func (w *bufferedWriter) WriteString(s string) (int, error) { return w.buf.WriteString(s) }
func (w *bufferedWriter) Status() int                       { return w.status() }
func (w *bufferedWriter) Written() bool                     { return w.code != 0 || w.buf.Len() > 0 }
func (w *bufferedWriter) Size() int                         { return w.buf.Len() }
func (w *bufferedWriter) Flush()                            {}
func (w *bufferedWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
