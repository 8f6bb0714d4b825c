package ingest

import (
	"context"
	"errors"
	"sync"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// ErrQueueFull is returned by Queue.Publish when the queue has no room: the copy is
// dropped rather than waited for, so production never slows down.
var ErrQueueFull = errors.New("ingest: queue full")

// ErrQueueClosed is returned by Publish after Close, and by Next once a closed
// queue is empty.
var ErrQueueClosed = errors.New("ingest: queue closed")

// Delivery is one exchange handed to a shadow worker. Ack is called once the
// exchange and its runs are stored (at-least-once transports commit then).
type Delivery struct {
	Exchange Exchange
	Ack      func()
	// Stored is true when the request and the incumbent run are already in the
	// store (StoreQueue): the worker stores only the candidates' runs and marks
	// their store.Work done.
	Stored bool
	// Owed are the candidate versions still owed a run; nil means every
	// configured candidate.
	Owed []store.WorkKey
}

// Queue carries tapped exchanges from the tap to the shadow workers.
// Implementations: StoreQueue (store first, the all-in-one default), KafkaQueue (a
// Kafka topic) — both DurableQueues — and MemoryQueue (in-process only, lost on a
// crash; for load commands and tests).
type Queue interface {
	// Publish enqueues ex or fails with ErrQueueFull or ErrQueueClosed. It never
	// waits for room; a DurableQueue waits until ex is durable or ctx ends.
	Publish(ctx context.Context, ex Exchange) error
	// Next blocks until an exchange is available, ctx is done, or the queue is
	// closed and drained (ErrQueueClosed).
	Next(ctx context.Context) (Delivery, error)
	// Len is how many exchanges wait.
	Len() int
	// Close stops Publish; Next still returns what is queued. Safe to call twice.
	Close() error
}

// MemoryQueue is a bounded in-process queue; what it holds is lost with the
// process.
type MemoryQueue struct {
	ch        chan Exchange
	mu        sync.RWMutex
	closed    bool
	closeOnce sync.Once
}

// NewMemoryQueue returns a queue holding at most size exchanges.
func NewMemoryQueue(size int) *MemoryQueue {
	return &MemoryQueue{ch: make(chan Exchange, size)}
}

// Publish implements Queue.
func (q *MemoryQueue) Publish(_ context.Context, ex Exchange) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrQueueClosed
	}
	select {
	case q.ch <- ex:
		return nil
	default:
		return ErrQueueFull
	}
}

// Next implements Queue.
func (q *MemoryQueue) Next(ctx context.Context) (Delivery, error) {
	select {
	case ex, ok := <-q.ch:
		if !ok {
			return Delivery{}, ErrQueueClosed
		}
		return Delivery{Exchange: ex, Ack: func() {}}, nil
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	}
}

// Len implements Queue.
func (q *MemoryQueue) Len() int { return len(q.ch) }

// Close implements Queue.
func (q *MemoryQueue) Close() error {
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.closed = true
		close(q.ch)
		q.mu.Unlock()
	})
	return nil
}
