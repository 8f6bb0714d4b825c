package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// A subject forgotten while its candidate run is in flight: when the run
// finishes the worker drops its records, so no row of the subject is left;
// the exchange without a subject in flight at the same time is stored whole,
// and a copy of the same subject received after the erasure is stored too.
func TestForgetWhileCandidateRunInFlight(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := NewDefaultConfig()
	cfg.Workers = 2
	q := NewMemoryQueue(10)
	stats := NewStats()
	cand := &echoPipeline{release: make(chan struct{})} // holds every run until released
	p := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{cand}, flatPricer(0), stats, nil)
	lookup := store.NewRoles(st).ForgetLookup
	if lookup == nil {
		t.Fatal("the store has no store.ForgetLookup")
	}
	p.UseForgetLookup(lookup)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)

	withSubject := exchange("subj-1", "my account number is 12345")
	withSubject.SubjectHash = "hash-ada"
	if err := q.Publish(ctx, withSubject); err != nil {
		t.Fatal(err)
	}
	if err := q.Publish(ctx, exchange("anon-1", "what is 2+2")); err != nil {
		t.Fatal(err)
	}
	// Both requests and incumbent runs are stored; both candidate runs wait.
	waitForD(t, 30*time.Second, "both candidate runs in flight", func() bool { return cand.running.Load() == 2 })

	rep, err := st.(store.SubjectEraser).ForgetSubject(ctx, "hash-ada", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 1 || rep.Runs != 1 {
		t.Fatalf("forget removed %+v; want the request and its incumbent run", rep)
	}
	close(cand.release)
	waitForD(t, 30*time.Second, "both exchanges settled", func() bool {
		s := stats.Snapshot(q.Len())
		return s.Processed+s.DroppedTotal() == 2
	})

	// Received after the erasure: new data, stored.
	later := exchange("subj-2", "hello again")
	later.SubjectHash = "hash-ada"
	later.ReceivedAt = rep.At.Add(time.Second)
	if err := q.Publish(ctx, later); err != nil {
		t.Fatal(err)
	}
	waitForD(t, 30*time.Second, "the later exchange shadowed", func() bool { return stats.Snapshot(q.Len()).Processed == 2 })
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	count := func(sql string) int64 {
		t.Helper()
		res, err := st.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		fmt.Sscan(res.Rows[0][0], &n)
		return n
	}
	for _, tc := range []struct {
		request, text                string // text: in the prompt, so in every step's output
		requests, runs, steps, score int64
	}{
		{"subj-1", "12345", 0, 0, 0, 0},       // forgotten: the late candidate run was dropped
		{"anon-1", "what is 2+2", 1, 2, 2, 0}, // no subject: untouched by the erasure
		{"subj-2", "hello again", 1, 2, 2, 0}, // received after the erasure
	} {
		t.Run(tc.request, func(t *testing.T) {
			got := [4]int64{
				count(fmt.Sprintf("SELECT count() FROM requests FINAL WHERE request_id = '%s'", tc.request)),
				count(fmt.Sprintf("SELECT count() FROM runs FINAL WHERE request_id = '%s'", tc.request)),
				count(fmt.Sprintf("SELECT count() FROM steps FINAL WHERE position(output, '%s') > 0", tc.text)),
				count(fmt.Sprintf("SELECT count() FROM scores FINAL WHERE request_id = '%s'", tc.request)),
			}
			if want := [4]int64{tc.requests, tc.runs, tc.steps, tc.score}; got != want {
				t.Errorf("requests/runs/steps/scores = %v, want %v", got, want)
			}
		})
	}
	snap := stats.Snapshot(q.Len())
	if snap.Dropped[DropForgotten] != 1 || snap.Processed != 2 {
		t.Errorf("stats dropped %v, processed %d; want 1 dropped as %q and 2 processed", snap.Dropped, snap.Processed, DropForgotten)
	}
}

// A copy the store-first queue recovers from its stored request keeps the
// subject hash: the workers check it, and the request row they write again
// (with segments) does not lose it.
func TestRecoveredExchangeKeepsSubjectHash(t *testing.T) {
	ex, err := exchangeFromStored(store.Request{RequestID: "r1", SubjectHash: "hash-ada", Input: `[{"role":"user","content":"hi"}]`})
	if err != nil {
		t.Fatal(err)
	}
	req, err := RequestRecord(ex)
	if err != nil {
		t.Fatal(err)
	}
	if ex.SubjectHash != "hash-ada" || req.SubjectHash != "hash-ada" {
		t.Errorf("recovered exchange subject hash %q, rewritten request %q; want hash-ada", ex.SubjectHash, req.SubjectHash)
	}
}
