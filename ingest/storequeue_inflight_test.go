package ingest

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// gatedStore holds every commit's first INSERT until the gate opens, then
// fails it while fail is set.
type gatedStore struct {
	store.Store
	gate chan struct{}
	fail atomic.Bool
}

func (s *gatedStore) InsertWork(ctx context.Context, w []store.Work) error {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.fail.Load() {
		return errDiskReadOnly
	}
	return s.Store.InsertWork(ctx, w)
}

// A 200 "duplicate" means stored, like a 202: a copy sent again while the
// first is still being committed (its sender was answered accept_timeout) is
// answered 503 in_flight, not duplicate; when that commit then fails, the
// copy sent again is stored, and only then is a further one a duplicate.
func TestResentCopyIsNoDuplicateBeforeItIsStored(t *testing.T) {
	ctx := context.Background()
	st := &gatedStore{Store: engine.Open(t), gate: make(chan struct{})}
	st.fail.Store(true)
	cfg := storeFirstConfig()
	cfg.AcceptTimeout = 100 * time.Millisecond
	sf := startStoreFirst(t, st, cfg, nil, nil)
	defer sf.stop(t, time.Second)

	if code, resp := sf.tap.Offer(ctx, exchange("inflight-1", "q")); code != http.StatusServiceUnavailable || resp.Reason != ReasonAcceptTimeout {
		t.Fatalf("first offer, commit held = %d %+v; want 503 accept_timeout", code, resp)
	}
	if code, resp := sf.tap.Offer(ctx, exchange("inflight-1", "q")); code != http.StatusServiceUnavailable || resp.Reason != ReasonInFlight {
		t.Errorf("sent again while the first commit is held = %d %+v; want 503 in_flight", code, resp)
	}
	close(st.gate) // the held commit fails
	waitForD(t, 10*time.Second, "the held commit refused", func() bool {
		return sf.stats.Snapshot(0).Dropped[ReasonStoreUnavailable] >= 1
	})
	st.fail.Store(false)
	if code, resp := sf.tap.Offer(ctx, exchange("inflight-1", "q")); code != http.StatusAccepted {
		t.Errorf("sent again after the first commit failed = %d %+v; want 202", code, resp)
	}
	if code, resp := sf.tap.Offer(ctx, exchange("inflight-1", "q")); code != http.StatusOK || resp.Status != "duplicate" {
		t.Errorf("sent again once stored = %d %+v; want 200 duplicate", code, resp)
	}
	if found, err := st.StoredRequests(ctx, []string{"inflight-1"}); err != nil || len(found) != 1 {
		t.Errorf("stored = %v, %v; want the copy stored", found, err)
	}
}

// Two copies of one request id in one group commit that fails both get the
// failure: the second is never answered duplicate for a copy not stored.
func TestRepeatInAFailedGroupIsRefusedToo(t *testing.T) {
	cfg := storeFirstConfig()
	cfg.AcceptLinger = 300 * time.Millisecond // both copies join one group
	sf := startStoreFirst(t, failingStore{engine.Open(t)}, cfg, nil, nil)
	defer sf.stop(t, time.Second)
	res := make(chan error, 2)
	for range 2 {
		if err := sf.q.PublishDurable(exchange("repeat-1", "q"), func(err error) { res <- err }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		select {
		case err := <-res:
			if !errors.Is(err, ErrStoreUnavailable) {
				t.Errorf("copy %d of the failed group: %v; want ErrStoreUnavailable", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
	}
}
