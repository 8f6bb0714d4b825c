package ingest

import (
	"errors"
	"testing"
	"time"
)

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
