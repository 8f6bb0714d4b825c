package ingest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// With UseWriter, a group commit writes the shadow workers' rows waiting in
// the writer (a candidate run, its step and its done mark) in its own
// INSERTs: the writer, never started here, makes none of its own, and the
// commit's copy is stored with its pending work as without it.
func TestStoreQueueCommitTakesWriterRowsAlong(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := storeFirstConfig()
	w, err := store.NewWriter(st, store.WriterConfig{BatchSize: 1000, BatchBytes: 1 << 30, FlushInterval: time.Hour, QueueSize: 16, MaxRetries: 1, RetryInitial: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cand := &echoPipeline{}
	stats := NewStats()
	q, err := NewStoreQueue(cfg, st, []store.WorkKey{{Pipeline: cand.Name(), PipelineVersion: cand.Version()}}, flatPricer(0.001), stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	q.UseWriter(w)
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Shutdown(context.Background())
	tap, err := NewTap(cfg, q, stats, WithPIISecret([]byte("s")))
	if err != nil {
		t.Fatal(err)
	}
	proc := NewProcessor(cfg, q, w, []shadow.Pipeline{cand}, flatPricer(0.001), stats, nil)
	if err := proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer proc.Shutdown(context.Background())

	if code, resp := tap.Offer(ctx, exchange("first", "question one")); code != http.StatusAccepted {
		t.Fatalf("offer first = %d %+v; want 202", code, resp)
	}
	waitForD(t, 30*time.Second, "the first copy shadowed into the writer", func() bool { return w.Stats().Queued == 3 })
	if runs := candidateRuns(t, st, "first"); len(runs) != 0 {
		t.Fatalf("candidate run stored before any commit or flush: %+v", runs)
	}
	if code, resp := tap.Offer(ctx, exchange("second", "question two")); code != http.StatusAccepted {
		t.Fatalf("offer second = %d %+v; want 202", code, resp)
	}
	if runs := candidateRuns(t, st, "first"); len(runs) != 1 || runs[0].Status != store.StatusOK {
		t.Errorf("first's candidate runs after the second commit = %+v; want its one ok run", runs)
	}
	if s := w.Stats(); s.Written != 3 || s.Flushes != 1 || s.Dropped != 0 {
		t.Errorf("writer stats = %+v; want the run, step and done mark written by the commit", s)
	}
	if _, err := st.GetTrace(ctx, "second"); err != nil {
		t.Errorf("second answered 202 but not stored: %v", err)
	}
}
