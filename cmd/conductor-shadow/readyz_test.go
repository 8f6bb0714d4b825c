package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// readOnlyStore fails every INSERT as a data folder turned read-only does.
type readOnlyStore struct{ store.Store }

var errReadOnlyFolder = errors.New("Cannot open file /data/store/requests/tmp_insert: Read-only file system")

func (readOnlyStore) InsertRequests(context.Context, []store.Request) error { return errReadOnlyFolder }
func (readOnlyStore) InsertWork(context.Context, []store.Work) error        { return errReadOnlyFolder }

// /readyz names the reason when the store cannot be written; /healthz is not
// concerned.
func TestReadyzNamesTheStoreFailure(t *testing.T) {
	ctx := context.Background()
	st := readOnlyStore{storetest.NewMemory()}
	cfg := NewDefaultConfig()
	w, err := store.NewWriter(st, cfg.Writer, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stats := ingest.NewStats()
	sq, err := ingest.NewStoreQueue(cfg.Ingest, st, nil, nil, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sq.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer sq.Shutdown(ctx)
	s := &server{writer: w, sq: sq}
	r := gin.New()
	r.GET("/readyz", s.readyz)

	status := func() (int, readiness) {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body readiness
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		return rec.Code, body
	}
	if code, body := status(); code != http.StatusOK || body.Status != "ready" {
		t.Fatalf("before any write: %d %+v; want 200 ready", code, body)
	}
	tap, err := ingest.NewTap(cfg.Ingest, sq, stats)
	if err != nil {
		t.Fatal(err)
	}
	var ex ingest.Exchange
	ex.RequestID, ex.Request.Messages = "ro-1", nil
	if code, resp := tap.Offer(ctx, ex); code != http.StatusServiceUnavailable || resp.Reason != ingest.ReasonStoreUnavailable {
		t.Fatalf("offer on a read-only store = %d %+v; want 503 store_unavailable", code, resp)
	}
	code, body := status()
	if code != http.StatusServiceUnavailable || body.Status != "not_ready" || body.Reasons["store"] == "" {
		t.Fatalf("after a failed write: %d %+v; want 503 naming the store", code, body)
	}
}
