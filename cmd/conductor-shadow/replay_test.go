package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// replayFile writes n exchanges that carry their answer (no incumbent call)
// plus the extra lines, and returns its path.
func replayFile(t *testing.T, n int, extra ...string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"schema_version":1,"request_id":"r-%d","request":{"model":"gpt-4","messages":[{"role":"user","content":"q %d"}]},"response":{"model":"gpt-4","content":"a %d","latency_ms":10}}`+"\n", i, i, i)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	path := filepath.Join(t.TempDir(), "replay.jsonl")
	writeFile(t, path, b.String())
	return path
}

// fakeTap answers /healthz and /v1/tap with answer(the tap call's number, from 1).
func fakeTap(t *testing.T, answer func(n int64) int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			_, _ = io.WriteString(w, `{"status":"ok","store":"embedded chDB","store_id":"0"}`)
		case "/v1/tap":
			w.WriteHeader(answer(calls.Add(1)))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestReplayFailsFastWhenTheServerIsDown: against a dead address replay stops
// before sending anything, with one clear line and a non-zero exit.
func TestReplayFailsFastWhenTheServerIsDown(t *testing.T) {
	addr := freeAddr(t)
	t.Setenv("CONDUCTOR_SHADOW_ADDR", addr)
	var stdout bytes.Buffer
	start := time.Now()
	err := run(t.Context(), []string{"replay", replayFile(t, 3)}, &stdout, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "replay: no server answering at http://"+addr+": start `conductor-shadow serve` first") ||
		!strings.HasSuffix(err.Error(), "0 lines sent") {
		t.Fatalf("err %v", err)
	}
	t.Logf("failed after %s", time.Since(start).Round(time.Millisecond))
	if stdout.Len() != 0 {
		t.Errorf("stdout %q: nothing was replayed", stdout.String())
	}
}

// TestReplayStopsWhenTheServerGoesDown: a server that stops answering
// mid-replay ends it at the next refused connection (no retries against a
// dead server), counting the lines not sent.
func TestReplayStopsWhenTheServerGoesDown(t *testing.T) {
	var srv *httptest.Server
	var once sync.Once
	srv, _ = fakeTap(t, func(n int64) int {
		if n == 3 {
			once.Do(func() { go srv.Close() })
		}
		return http.StatusAccepted
	})
	opts := replayOptions{File: replayFile(t, 50), TapURL: srv.URL + "/v1/tap", Concurrency: 1, RetryWait: time.Millisecond}
	counts, err := replay(context.Background(), opts, nil, quietLog())
	if !errors.Is(err, errServerDown) || !strings.Contains(err.Error(), "the server stopped answering at "+srv.URL) {
		t.Fatalf("err %v, want errServerDown", err)
	}
	if counts.Total != 50 || counts.Queued < 3 || counts.NotSent() == 0 || counts.Failed != 1 || counts.loss() == nil {
		t.Fatalf("counts %s", counts)
	}
}

// TestReplayRetriesABusyTapAndCountsIt: a 503 is retried with a visible count;
// a tap that stays busy past the retries fails the line and the exit status.
func TestReplayRetriesABusyTapAndCountsIt(t *testing.T) {
	t.Run("busy twice per line", func(t *testing.T) {
		srv, calls := fakeTap(t, func(n int64) int {
			if n%3 != 0 {
				return http.StatusServiceUnavailable
			}
			return http.StatusAccepted
		})
		var bar bytes.Buffer
		opts := replayOptions{File: replayFile(t, 4), TapURL: srv.URL + "/v1/tap", Concurrency: 1, RetryWait: time.Millisecond, Bar: true, BarTo: &bar}
		counts, err := replay(context.Background(), opts, nil, quietLog())
		if err != nil || counts.loss() != nil {
			t.Fatal(err, counts.loss())
		}
		if counts.Queued != 4 || counts.Retries != 8 || calls.Load() != 12 {
			t.Fatalf("counts %s after %d calls", counts, calls.Load())
		}
		if got := bar.String(); !strings.Contains(got, "100%") || !strings.Contains(got, "4/4") || !strings.Contains(got, "retries 8") {
			t.Errorf("progress bar %q", got)
		}
	})
	t.Run("busy for good", func(t *testing.T) {
		srv, calls := fakeTap(t, func(int64) int { return http.StatusServiceUnavailable })
		opts := replayOptions{File: replayFile(t, 2), TapURL: srv.URL + "/v1/tap", Concurrency: 1, Retries: 3, RetryWait: time.Millisecond}
		counts, err := replay(context.Background(), opts, nil, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		if counts.Failed != 2 || counts.Retries != 6 || calls.Load() != 8 {
			t.Fatalf("counts %s after %d calls", counts, calls.Load())
		}
		if err := counts.loss(); err == nil || err.Error() != "replay: 2 of 2 lines not accepted (0 refused, 2 failed, 0 not sent); see the warnings above" {
			t.Fatalf("loss %v", err)
		}
	})
	t.Run("a bad line and a 400", func(t *testing.T) {
		srv, _ := fakeTap(t, func(n int64) int {
			if n == 1 {
				return http.StatusBadRequest
			}
			return http.StatusOK
		})
		opts := replayOptions{File: replayFile(t, 2, "{not json"), TapURL: srv.URL + "/v1/tap", Concurrency: 1, RetryWait: time.Millisecond}
		counts, err := replay(context.Background(), opts, nil, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		if want := "3 lines: 2 sent, 1 accepted (0 queued, 1 duplicates), 2 refused, 0 failed, 0 not sent; 0 incumbent answers fetched, 0 retries"; counts.String() != want {
			t.Fatalf("counts\n got %s\nwant %s", counts, want)
		}
	})
}
