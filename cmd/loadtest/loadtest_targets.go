package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// The load commands' own targets, so no test double is compiled into the binary:
// a stand-in incumbent that answers after a fixed delay, and a store that counts
// rows and keeps nothing.

// loadIncumbent answers POST …/chat/completions after Delay with
// "echo: <last user message>", streamed (SSE, in Chunks pieces) when asked.
type loadIncumbent struct {
	Delay  time.Duration
	Chunks int
}

func (h *loadIncumbent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(body, &req) != nil || !strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/chat/completions") {
		http.Error(w, `{"error":{"message":"want a chat completion","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	t := time.NewTimer(h.Delay)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
		return
	}
	// The answer's id derives from the body: the mirroring proxy uses it as the
	// request id, so distinct requests stay distinct copies.
	sum := sha256.Sum256(body)
	id := "chatcmpl-load-" + hex.EncodeToString(sum[:8])
	content := "echo: "
	if n := len(req.Messages); n > 0 {
		content += req.Messages[n-1].Content
	}
	out := (len(content) + 3) / 4 // ≈4 characters per token
	usage := fmt.Sprintf(`{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}`, out, 12+out)
	if !req.Stream {
		c, _ := json.Marshal(content)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1764493200,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":%s}`+"\n", id, req.Model, c, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f, _ := w.(http.Flusher)
	n := max(1, h.Chunks)
	size := max(1, (len(content)+n-1)/n)
	for i := 0; i < len(content); i += size {
		p, _ := json.Marshal(content[i:min(i+size, len(content))])
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", id, req.Model, p)
		if f != nil {
			f.Flush()
		}
	}
	fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":%s}\n\ndata: [DONE]\n\n", id, req.Model, usage)
}

// errSinkReads: the load store keeps nothing to read.
var errSinkReads = errors.New("loadtest: the counting store keeps no rows to read")

// sinkStore counts inserted rows and keeps none; once stopped every INSERT fails
// (a store that cannot be written). Reads fail with errSinkReads.
type sinkStore struct {
	requests, rows atomic.Int64
	stopped        atomic.Bool
}

var errStoreStopped = errors.New("loadtest: store stopped")

func sinkInsert[T any](s *sinkStore, rows []T) error {
	if s.stopped.Load() {
		return errStoreStopped
	}
	s.rows.Add(int64(len(rows)))
	return nil
}

func (s *sinkStore) InsertRequests(_ context.Context, r []store.Request) error {
	if err := sinkInsert(s, r); err != nil {
		return err
	}
	s.requests.Add(int64(len(r)))
	return nil
}
func (s *sinkStore) InsertRuns(_ context.Context, r []store.Run) error       { return sinkInsert(s, r) }
func (s *sinkStore) InsertSteps(_ context.Context, r []store.Step) error     { return sinkInsert(s, r) }
func (s *sinkStore) InsertScores(_ context.Context, r []store.Score) error   { return sinkInsert(s, r) }
func (s *sinkStore) InsertSuiteRuns(context.Context, []store.SuiteRun) error { return nil }
func (s *sinkStore) InsertCases(context.Context, []store.Case) error         { return nil }
func (s *sinkStore) InsertWork(_ context.Context, r []store.Work) error      { return sinkInsert(s, r) }
func (s *sinkStore) StoredRequests(context.Context, []string) ([]string, error) {
	return nil, nil // every id is new: the load generator never repeats one
}
func (s *sinkStore) PendingWork(context.Context, store.WorkCursor, int) ([]store.PendingRequest, error) {
	return nil, nil
}
func (s *sinkStore) GetTrace(context.Context, string) (store.Trace, error) {
	return store.Trace{}, errSinkReads
}
func (s *sinkStore) ListSuiteRuns(context.Context, int) ([]store.SuiteRun, error) {
	return nil, errSinkReads
}
func (s *sinkStore) GetSuiteRun(context.Context, string) (store.SuiteRun, error) {
	return store.SuiteRun{}, errSinkReads
}
func (s *sinkStore) Query(context.Context, string) (store.QueryResult, error) {
	return store.QueryResult{}, errSinkReads
}
func (s *sinkStore) Close() error { return nil }

func (s *sinkStore) Shutdown(context.Context) error { return nil }

var _ store.Store = (*sinkStore)(nil)
