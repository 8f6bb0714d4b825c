package main

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// TestStreamedAPIAnswerPassesTheScrubber: the /api answers are scrubbed of
// the server's folders, and a streamed one (the NDJSON of a suite run's
// progress) still reaches the caller line by line, each line scrubbed, while
// the handler is still running, even when a flush falls inside a line.
func TestStreamedAPIAnswerPassesTheScrubber(t *testing.T) {
	cfg := platform.NewDefaultConfig()
	cfg.Store.Path = filepath.Join(t.TempDir(), "data")
	data := platform.AbsPath(cfg.Store.Path)
	release := make(chan struct{})
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(newPathScrubber(cfg).middleware())
	r.POST("/api/stream", func(c *gin.Context) {
		c.Header("Content-Type", ndjson)
		c.Status(http.StatusOK)
		rc := http.NewResponseController(c.Writer)
		// A flush inside a line sends nothing of it: the folder, cut in
		// two by that flush, is still replaced when the line ends.
		half := len(data) / 2
		_, _ = c.Writer.WriteString(`{"line":1,"where":"` + data[:half])
		_ = rc.Flush()
		_, _ = c.Writer.WriteString(data[half:] + `/x"}` + "\n")
		_ = rc.Flush()
		<-release // the caller has the first line before the handler ends
		_, _ = c.Writer.WriteString(`{"line":2}` + "\n")
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	defer close(release)
	resp, err := http.Post(srv.URL+"/api/stream", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case first := <-lines:
		if first != `{"line":1,"where":"<data>/x"}` {
			t.Fatalf("first line %q, want it scrubbed", first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first line did not arrive while the handler ran: the answer is buffered whole")
	}
	release <- struct{}{}
	if second := <-lines; second != `{"line":2}` {
		t.Fatalf("second line %q", second)
	}
}
