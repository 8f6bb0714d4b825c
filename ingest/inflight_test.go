package ingest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// heldQueue is a DurableQueue whose outcomes the test gives: every
// PublishDurable is held until release is called with its request id.
type heldQueue struct {
	*MemoryQueue
	mu    sync.Mutex
	held  map[string][]func(error)
	taken chan string
}

func newHeldQueue() *heldQueue {
	return &heldQueue{MemoryQueue: NewMemoryQueue(10), held: map[string][]func(error){}, taken: make(chan string, 10)}
}

func (q *heldQueue) PublishDurable(ex Exchange, done func(error)) error {
	q.mu.Lock()
	q.held[ex.RequestID] = append(q.held[ex.RequestID], done)
	q.mu.Unlock()
	q.taken <- ex.RequestID
	return nil
}

func (q *heldQueue) release(id string, err error) {
	q.mu.Lock()
	dones := q.held[id]
	delete(q.held, id)
	q.mu.Unlock()
	for _, d := range dones {
		d(err)
	}
}

// TestResentCopyWaitsForTheFirstCommit: a copy answered 503 accept_timeout and
// sent again while its commit still runs is answered by that commit's outcome:
// "duplicate" only once the first copy is durable, 503 when it failed (and the
// next send is taken afresh), never "duplicate" for a copy that was lost.
func TestResentCopyWaitsForTheFirstCommit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		outcome   error
		wantCode  int
		wantState string
		// wantTaken: whether a third send after the outcome is handed to the queue again.
		wantTaken bool
	}{
		{"first durable", nil, http.StatusOK, "duplicate", false},
		{"first already stored", ErrDuplicate, http.StatusOK, "duplicate", false},
		{"first failed", fmt.Errorf("commit: %w", ErrStoreUnavailable), http.StatusServiceUnavailable, "dropped", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			cfg.AcceptTimeout = 50 * time.Millisecond
			q := newHeldQueue()
			stats := NewStats()
			tap, err := NewTap(cfg, q, stats, WithPIISecret(testSecret))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ex := exchange("r-1", "hello")
			if code, resp := tap.Offer(ctx, ex); code != http.StatusServiceUnavailable || resp.Reason != ReasonAcceptTimeout {
				t.Fatalf("first send: %d %+v, want 503 accept_timeout while its commit is held", code, resp)
			}
			<-q.taken
			// The second send waits for the first's outcome (given while it waits).
			type answer struct {
				code int
				resp TapResponse
			}
			got := make(chan answer, 1)
			go func() {
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				p := tap.begin(sctx, ex, true)
				code, resp := tap.finish(sctx, p)
				got <- answer{code, resp}
			}()
			select {
			case a := <-got:
				t.Fatalf("the second send was answered %d %+v before the first copy's outcome", a.code, a.resp)
			case <-time.After(100 * time.Millisecond):
			}
			q.release("r-1", tc.outcome)
			a := <-got
			if a.code != tc.wantCode || a.resp.Status != tc.wantState {
				t.Fatalf("second send: %d %+v, want %d %s", a.code, a.resp, tc.wantCode, tc.wantState)
			}
			select {
			case id := <-q.taken:
				t.Fatalf("the second send handed %s to the queue again", id)
			default:
			}
			// A third send: queued afresh only when the first copy was not taken.
			res := make(chan int, 1)
			go func() {
				code, _ := tap.Offer(ctx, ex)
				res <- code
			}()
			if tc.wantTaken {
				<-q.taken
				q.release("r-1", nil)
				if code := <-res; code != http.StatusAccepted {
					t.Fatalf("third send: %d, want 202", code)
				}
			} else if code := <-res; code != http.StatusOK {
				t.Fatalf("third send: %d, want 200 duplicate", code)
			}
			snap := stats.Snapshot(0)
			wantDropped := int64(0)
			if tc.wantTaken {
				wantDropped = 1
			}
			if got := snap.Dropped[ReasonStoreUnavailable]; got != wantDropped {
				t.Fatalf("dropped store_unavailable %d, want %d (the failed copy counted once)", got, wantDropped)
			}
		})
	}
}
