package ingest

import (
	"errors"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// errNotTaken is the outcome of a copy the tap took in and then let go of
// before any queue saw it (over the per-minute cap): one sent again while it
// was being decided is answered 503, and its next send is decided afresh.
var errNotTaken = errors.New("ingest: copy not taken")

// dedup is the tap's idempotency by request id: the recent ids (an LRU of
// Config.DedupWindow) and, among them, the copies whose durable outcome is not
// known yet. A copy sent again while the first one's commit still runs (the
// first was answered 503 accept_timeout) waits for that outcome rather than
// being answered "duplicate" for a copy that may still fail: "duplicate" is
// answered only once the first copy is durable. Safe for concurrent use; a nil
// *dedup (DedupWindow 0) dedups nothing.
type dedup struct {
	mu      sync.Mutex
	seen    *simplelru.LRU[string, struct{}] // guarded by mu
	pending map[string]*pendingCopy
}

// pendingCopy is the outcome of one copy still being committed: err is set
// before done is closed.
type pendingCopy struct {
	done chan struct{}
	err  error
}

func newDedup(window int) (*dedup, error) {
	seen, err := simplelru.NewLRU[string, struct{}](window, nil)
	if err != nil {
		return nil, err
	}
	return &dedup{seen: seen, pending: map[string]*pendingCopy{}}, nil
}

// claim reports whether id is new (first: it is now seen and pending) or was
// seen before; for a seen id still pending it returns the first copy's
// outcome to wait on (nil once that outcome is known and was durable).
func (d *dedup) claim(id string) (first bool, wait *pendingCopy) {
	if d == nil {
		return true, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen.Contains(id) {
		return false, d.pending[id]
	}
	d.seen.Add(id, struct{}{})
	d.pending[id] = &pendingCopy{done: make(chan struct{})}
	return true, nil
}

// settle ends id's pending state with its outcome: a copy that was not taken
// (err neither nil nor ErrDuplicate) is forgotten, so a retry gets through,
// and only then are the copies waiting on it told. Idempotent.
func (d *dedup) settle(id string, err error) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil && !errors.Is(err, ErrDuplicate) {
		d.seen.Remove(id)
	}
	if p := d.pending[id]; p != nil {
		delete(d.pending, id)
		p.err = err
		close(p.done)
	}
}
