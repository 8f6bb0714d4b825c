package ingest

import (
	"testing"
	"time"
)

// TestGroupWaits: a group commit waits for more copies as long as the last
// commit took, within accept_linger and accept_timeout / 8, and closes after
// a quiet gap of accept_linger or a quarter of the last commit.
func TestGroupWaits(t *testing.T) {
	cfg := NewDefaultConfig() // accept_linger 5ms, accept_timeout 2s
	for _, tc := range []struct {
		last, quiet, most time.Duration
	}{
		{0, 5 * time.Millisecond, 5 * time.Millisecond},                       // first commit: accept_linger
		{2 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},    // a fast engine: accept_linger
		{80 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond}, // paced by the last commit
		{time.Second, 250 * time.Millisecond, 250 * time.Millisecond},         // at most accept_timeout / 8
		{10 * time.Second, 250 * time.Millisecond, 250 * time.Millisecond},    // quiet never beyond most
		{12 * time.Millisecond, 5 * time.Millisecond, 12 * time.Millisecond},  // quarter below accept_linger
	} {
		quiet, most := groupWaits(cfg, tc.last)
		if quiet != tc.quiet || most != tc.most {
			t.Errorf("last commit %s: quiet %s, most %s; want %s, %s", tc.last, quiet, most, tc.quiet, tc.most)
		}
	}
}

// TestGatherTakesCopiesThatKeepComing: copies that come closer together than
// the quiet gap join one group (callers answered by the last commit sending
// again); a gap closes it; a group never exceeds accept_batch nor waits past
// most.
func TestGatherTakesCopiesThatKeepComing(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.AcceptBatch = 50
	q := &StoreQueue{cfg: cfg, intake: make(chan *acceptOp, 200)}
	send := func(n int, every time.Duration) {
		for range n {
			time.Sleep(every)
			q.intake <- &acceptOp{}
		}
	}

	go send(30, 2*time.Millisecond)
	if got := q.gather([]*acceptOp{{}}, 300*time.Millisecond, 5*time.Second); len(got) != 31 {
		t.Errorf("copies 2 ms apart with a 300 ms quiet gap: group of %d; want all 31", len(got))
	}

	go send(80, 0)
	time.Sleep(50 * time.Millisecond)
	if got := q.gather([]*acceptOp{{}}, time.Second, 5*time.Second); len(got) != cfg.AcceptBatch {
		t.Errorf("80 waiting: group of %d; want accept_batch %d", len(got), cfg.AcceptBatch)
	}
	for len(q.intake) > 0 {
		<-q.intake
	}

	start := time.Now()
	go send(40, 5*time.Millisecond)
	got := q.gather([]*acceptOp{{}}, time.Second, 100*time.Millisecond)
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second || len(got) >= cfg.AcceptBatch {
		t.Errorf("a steady trickle 5 ms apart: group of %d closed after %s; want it closed at most's 100 ms, under accept_batch", len(got), took)
	}
}
