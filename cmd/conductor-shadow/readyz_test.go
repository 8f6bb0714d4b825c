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
)

// readOnlyStore is the store-first queue's and the writer's view of a store
// whose data folder turned read-only: reads answer (nothing is stored, nothing
// pending), every INSERT fails as the engine's does.
type readOnlyStore struct{}

var _ store.WorkStore = readOnlyStore{}

var errReadOnlyFolder = errors.New("Cannot open file /data/store/requests/tmp_insert: Read-only file system")

// readOnly fails an INSERT of rows; an empty one writes nothing and succeeds,
// as the store's does.
func readOnly[T any](rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	return errReadOnlyFolder
}

func (readOnlyStore) InsertRequests(_ context.Context, r []store.Request) error { return readOnly(r) }
func (readOnlyStore) InsertRuns(_ context.Context, r []store.Run) error         { return readOnly(r) }
func (readOnlyStore) InsertSteps(_ context.Context, r []store.Step) error       { return readOnly(r) }
func (readOnlyStore) InsertScores(_ context.Context, r []store.Score) error     { return readOnly(r) }
func (readOnlyStore) InsertWork(_ context.Context, r []store.Work) error        { return readOnly(r) }
func (readOnlyStore) StoredRequests(context.Context, []string) ([]string, error) {
	return nil, nil
}
func (readOnlyStore) PendingWork(context.Context, store.WorkCursor, int) ([]store.PendingRequest, error) {
	return nil, nil
}

// /readyz names the reason when the store cannot be written; /healthz is not
// concerned.
func TestReadyzNamesTheStoreFailure(t *testing.T) {
	ctx := context.Background()
	st := readOnlyStore{}
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
