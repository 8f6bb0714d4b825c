package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// countingRuns is a TraceWriter that counts the runs inserted.
type countingRuns struct{ runs atomic.Int64 }

func (c *countingRuns) InsertRequests(context.Context, []store.Request) error { return nil }
func (c *countingRuns) InsertRuns(_ context.Context, r []store.Run) error {
	c.runs.Add(int64(len(r)))
	return nil
}
func (c *countingRuns) InsertSteps(context.Context, []store.Step) error   { return nil }
func (c *countingRuns) InsertScores(context.Context, []store.Score) error { return nil }
func (c *countingRuns) InsertWork(context.Context, []store.Work) error    { return nil }

// TestFlushWritesWhatTheLoopHolds: every batch enqueued before Flush is
// written when Flush returns, also while the running loop is taking batches
// off the queue. The loop takes a batch before it takes the writer's lock, so
// a Flush that drained the queue by itself could return without that batch.
func TestFlushWritesWhatTheLoopHolds(t *testing.T) {
	st := &countingRuns{}
	cfg := store.NewDefaultWriterConfig()
	cfg.FlushInterval = time.Hour
	w, err := store.NewWriter(st, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Start(context.Background())
	defer w.Shutdown(context.Background())
	for i := range 20_000 {
		if err := w.Enqueue(store.Batch{Runs: []store.Run{{RunID: "r"}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.runs.Load(); got != int64(i+1) {
			t.Fatalf("flush %d returned with %d of the %d runs enqueued before it written", i+1, got, i+1)
		}
	}
}
