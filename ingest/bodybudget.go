package ingest

import (
	"errors"
	"io"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultMaxUnfinishedBodyBytes is ingest.max_unfinished_body_bytes by
// default: 64 MiB of request bodies held in memory at once by the tap and the
// mirroring proxy together.
const DefaultMaxUnfinishedBodyBytes = 64 << 20

// ErrBodyBudget is BodyBudget.Read's error when the bodies already held take
// the whole budget: the tap answers 503 "body_budget", the mirroring proxy
// forwards the request without copying it.
var ErrBodyBudget = errors.New("ingest: the request bodies held in memory reached ingest.max_unfinished_body_bytes")

// ReasonBodyBudget is the drop reason (and proxy outcome) of a copy refused
// because the body budget was spent.
const ReasonBodyBudget = "body_budget"

// bodyStep is how much of a body of unknown length is reserved at a time, bytes.
const bodyStep = 32 << 10

// BodyBudget caps the request bytes the tap and the mirroring proxy hold in
// memory while bodies arrive: a caller that sends slowly holds only what it
// sent, and all callers together at most the budget. A body of known length
// (Content-Length) reserves its length at once, one of unknown length
// (chunked) 32 KiB at a time as it arrives. It is a weighted semaphore
// (golang.org/x/sync/semaphore) that is never waited on: a body that does not
// fit is refused at once. Safe for concurrent use.
type BodyBudget struct {
	sem  *semaphore.Weighted
	max  int64
	held atomic.Int64
}

// NewBodyBudget returns a budget of maxBytes (at least 1).
func NewBodyBudget(maxBytes int64) *BodyBudget {
	maxBytes = max(maxBytes, 1)
	return &BodyBudget{sem: semaphore.NewWeighted(maxBytes), max: maxBytes}
}

// Max is the budget, bytes.
func (b *BodyBudget) Max() int64 { return b.max }

// Held is what the bodies being read or still in use hold now, bytes.
func (b *BodyBudget) Held() int64 { return b.held.Load() }

// bodyHold is one body's share of the budget.
type bodyHold struct {
	b *BodyBudget
	n int64
}

func (h *bodyHold) take(n int64) bool {
	if n <= 0 {
		return true
	}
	if !h.b.sem.TryAcquire(n) {
		return false
	}
	h.n += n
	h.b.held.Add(n)
	return true
}

func (h *bodyHold) give(n int64) {
	n = min(n, h.n)
	if n <= 0 {
		return
	}
	h.n -= n
	h.b.held.Add(-n)
	h.b.sem.Release(n)
}

// Read reads r (a body of contentLength bytes, -1 when unknown) up to limit
// bytes while holding budget for what it read; release gives the budget back
// and must be called once the bytes are no longer needed (also after an
// error).
//
//   - contentLength beyond limit: nothing is read (data nil, complete false);
//   - more than limit bytes arrive: data holds the first limit+1, complete false;
//   - the budget is spent: ErrBodyBudget, data holds what was read before;
//   - r fails (the caller broke off): that error.
//
// A body of unknown length may take up to twice its size in memory for a
// moment while its buffer grows.
func (b *BodyBudget) Read(r io.Reader, contentLength, limit int64) (data []byte, complete bool, release func(), err error) {
	h := &bodyHold{b: b}
	release = func() { h.give(h.n) }
	if contentLength > limit {
		return nil, false, release, nil
	}
	if contentLength >= 0 {
		if !h.take(contentLength) {
			return nil, false, release, ErrBodyBudget
		}
		data = make([]byte, contentLength)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, false, release, err
		}
		return data, true, release, nil
	}
	for {
		if int64(len(data)) > limit {
			return data, false, release, nil
		}
		step := min(int64(bodyStep), limit+1-int64(len(data)))
		if !h.take(step) {
			return data, false, release, ErrBodyBudget
		}
		start := len(data)
		data = append(data, make([]byte, step)...)
		n, err := readSome(r, data[start:])
		data = data[:start+n]
		h.give(step - int64(n))
		switch {
		case errors.Is(err, io.EOF):
			return data, int64(len(data)) <= limit, release, nil
		case err != nil:
			return data, false, release, err
		}
	}
}

// readSome fills p from r until p is full or r fails; unlike io.ReadFull it
// keeps io.EOF (the body ended) apart from io.ErrUnexpectedEOF (a chunked
// body broken off), which it returns as they came.
func readSome(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
