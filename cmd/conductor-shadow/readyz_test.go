package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
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
	cfg := platform.NewDefaultConfig()
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
	if code != http.StatusServiceUnavailable || body.Status != "not_ready" || body.Reasons["store"] != readyStoreUnavailable {
		t.Fatalf("after a failed write: %d %+v; want 503 naming the store", code, body)
	}

	// The tap's 503 over HTTP and /readyz say the reason, not the engine's
	// message with its part path (that goes to the log).
	tap.Register(r)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/tap", strings.NewReader(`{"request_id":"ro-2","request":{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]},"response":{"model":"gpt-5","content":"hello","latency_ms":100,"usage":{"prompt_tokens":10,"completion_tokens":2}}}`))
	req.Header.Set("Content-Type", "application/json")
	r.ServeHTTP(rec, req)
	readyRec := httptest.NewRecorder()
	r.ServeHTTP(readyRec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	for _, tc := range []struct {
		what string
		code int
		body string
		want string
	}{
		{"POST /v1/tap", rec.Code, rec.Body.String(), "store_unavailable: insert failed (see server log)"},
		{"GET /readyz", readyRec.Code, readyRec.Body.String(), "store_unavailable: writes failing (see server log)"},
	} {
		if tc.code != http.StatusServiceUnavailable || !strings.Contains(tc.body, tc.want) {
			t.Errorf("%s = %d %s; want 503 saying %q", tc.what, tc.code, tc.body, tc.want)
		}
		if strings.Contains(tc.body, "/data/store") || strings.Contains(tc.body, "Read-only file system") {
			t.Errorf("%s shows the engine's message: %s", tc.what, tc.body)
		}
	}
}

// /readyz of an idle tap names Kafka once the brokers stop answering, though
// no copy was offered (the queue's metadata ping sees it).
func TestReadyzNamesKafkaDownOnAnIdleTap(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "readyz"))
	if err != nil {
		t.Fatal(err)
	}
	kcfg := ingest.NewDefaultKafkaConfig()
	kcfg.Brokers, kcfg.Topic, kcfg.PingInterval = c.ListenAddrs(), "readyz", 100*time.Millisecond
	q, err := ingest.NewKafkaQueue(kcfg, false, ingest.NewStats(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer q.Shutdown(context.Background())
	s := &server{kafka: q}
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
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := status(); code != http.StatusOK; code, _ = status() {
		if time.Now().After(deadline) {
			t.Fatal("/readyz never ready with Kafka up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Close()
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, body := status()
		if code == http.StatusServiceUnavailable && strings.Contains(body.Reasons["kafka"], "unreachable") {
			// Which operation and since when, not the client's message with
			// the broker addresses.
			if !strings.HasPrefix(body.Reasons["kafka"], "kafka_unavailable: kafka unreachable since ") {
				t.Errorf("reasons.kafka = %q; want which operation failed and since when", body.Reasons["kafka"])
			}
			for _, a := range kcfg.Brokers {
				if strings.Contains(body.Reasons["kafka"], a) {
					t.Errorf("reasons.kafka = %q names the broker %s", body.Reasons["kafka"], a)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with Kafka down = %d %+v; want 503 naming kafka", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stalledStore is a store whose engine has been inside one statement too long.
type stalledStore struct{ store.Store }

func (stalledStore) Stalled() error {
	return errors.New("store: stalled: \"ALTER TABLE `shadow`.`runs` DELETE WHERE\" has been inside the engine for 12s, 3 call(s) waiting")
}

// getReadyz answers GET /readyz of s: its status, body and raw text.
func getReadyz(t *testing.T, s *server) (int, readiness, string) {
	t.Helper()
	r := gin.New()
	r.GET("/readyz", s.readyz)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var body readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return rec.Code, body, rec.Body.String()
}

// /readyz names a stalled store in fixed words; the statement goes to the log.
func TestReadyzNamesAStalledStore(t *testing.T) {
	code, body, raw := getReadyz(t, &server{st: stalledStore{}})
	if code != http.StatusServiceUnavailable || body.Reasons["store"] != readyStoreStalled {
		t.Fatalf("/readyz of a stalled store = %d %+v; want 503 naming it stalled", code, body)
	}
	if strings.Contains(raw, "ALTER TABLE") {
		t.Errorf("/readyz shows the statement: %s", raw)
	}
}
