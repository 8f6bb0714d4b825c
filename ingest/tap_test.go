package ingest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

func newTestTap(t *testing.T, cfg Config) (*Tap, *MemoryQueue, *Stats, http.Handler) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	q := NewMemoryQueue(cfg.QueueSize)
	stats := NewStats()
	tap, err := NewTap(cfg, q, stats)
	if err != nil {
		t.Fatal(err)
	}
	r := gin.New()
	tap.Register(r)
	return tap, q, stats, r
}

func post(h http.Handler, body []byte) (*httptest.ResponseRecorder, TapResponse) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/tap", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	var resp TapResponse
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	return rec, resp
}

func TestTapRefusesBadInputAndQueuesNothing(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.MaxBodyBytes = 64 << 10
	_, q, stats, h := newTestTap(t, cfg)
	huge := `{"request_id":"big","request":{"messages":[{"role":"user","content":"` + strings.Repeat("a", 80<<10) + `"}]},"response":{"content":"x"}}`
	tests := []struct {
		name       string
		body       []byte
		wantCode   int
		wantReason string
	}{
		{"malformed", []byte(`{"request_id":`), http.StatusBadRequest, ReasonMalformedJSON},
		{"wrong type", readFile(t, "bad_wrong_type.json"), http.StatusBadRequest, ReasonWrongType},
		{"empty messages", readFile(t, "bad_empty_messages.json"), http.StatusBadRequest, ReasonInvalid},
		{"missing response", readFile(t, "bad_missing_response.json"), http.StatusBadRequest, ReasonInvalid},
		{"invalid utf-8", readFile(t, "bad_invalid_utf8.json"), http.StatusBadRequest, ReasonInvalidUTF8},
		{"too large", []byte(huge), http.StatusRequestEntityTooLarge, ReasonTooLarge},
		{"empty body", nil, http.StatusBadRequest, ReasonMalformedJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, resp := post(h, tt.body)
			if rec.Code != tt.wantCode || resp.Reason != tt.wantReason || resp.Status != "rejected" || resp.Error == "" {
				t.Fatalf("got %d %+v, want %d with reason %s and an error message", rec.Code, resp, tt.wantCode, tt.wantReason)
			}
		})
	}
	if q.Len() != 0 {
		t.Fatalf("%d refused copies were queued", q.Len())
	}
	snap := stats.Snapshot(q.Len())
	var rejected int64
	for _, n := range snap.Rejected {
		rejected += n
	}
	if rejected != int64(len(tests)) || snap.Accepted != 0 {
		t.Fatalf("stats = %+v, want %d rejected and 0 accepted", snap, len(tests))
	}
}

func TestTapQueuesOnceAndDropsWhenFull(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.QueueSize = 1
	_, q, stats, h := newTestTap(t, cfg)
	first := readFile(t, "good_minimal.json")
	if rec, resp := post(h, first); rec.Code != http.StatusAccepted || resp.Status != "queued" || resp.RequestID != "r-1" {
		t.Fatalf("first copy: %d %+v", rec.Code, resp)
	}
	if rec, resp := post(h, first); rec.Code != http.StatusOK || resp.Status != "duplicate" {
		t.Fatalf("re-sent copy: %d %+v, want 200 duplicate", rec.Code, resp)
	}
	second := readFile(t, "good_full.json")
	rec, resp := post(h, second)
	if rec.Code != http.StatusServiceUnavailable || resp.Status != "dropped" || resp.Reason != "queue_full" {
		t.Fatalf("copy into a full queue: %d %+v, want 503 dropped queue_full", rec.Code, resp)
	}
	// The dropped copy was not remembered: once there is room, a retry gets through.
	if _, err := q.Next(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rec, resp := post(h, second); rec.Code != http.StatusAccepted {
		t.Fatalf("retry after a drop: %d %+v, want 202", rec.Code, resp)
	}
	snap := stats.Snapshot(q.Len())
	if snap.Accepted != 2 || snap.Duplicates != 1 || snap.Dropped["queue_full"] != 1 || snap.Queued != 1 {
		t.Fatalf("stats = %+v", snap)
	}
}

func TestTapAfterCloseDrops(t *testing.T) {
	_, q, stats, h := newTestTap(t, NewDefaultConfig())
	_ = q.Close()
	_ = q.Close()
	rec, resp := post(h, readFile(t, "good_minimal.json"))
	if rec.Code != http.StatusServiceUnavailable || resp.Reason != "shutting_down" {
		t.Fatalf("got %d %+v", rec.Code, resp)
	}
	if stats.Snapshot(0).Dropped["shutting_down"] != 1 {
		t.Fatal("drop not counted")
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/decode/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
