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

// Delivery is one exchange handed to a shadow worker with what is still
// owed for it: the contract between every queue and the worker
// (Processor). Ack is called once what is owed is stored (at-least-once
// transports commit then). Release ends a delivery stopped before it was done
// (a shutdown) without acknowledging it: the queue keeps what is owed for a
// later delivery (the store-first queue's work rows stay pending, Kafka
// delivers what is not committed again). A queue that keeps nothing leaves
// Release nil: such a copy is lost and counted as dropped ("shutdown").
type Delivery struct {
	Exchange Exchange
	Owed     Owed
	Ack      func()
	Release  func()
}

// Owed is what the store still owes for a delivered exchange.
type Owed struct {
	// Records: the request row and, when the incumbent answered, its run are
	// still to be written (exchangeRecords). False when the queue stored them
	// on accepting the copy (StoreQueue).
	Records bool
	// Runs are the candidate versions owed a run when the queue knows them
	// (StoreQueue: from its work rows; empty, not nil, when none is owed).
	// nil: the queue cannot tell, so every configured candidate version is
	// owed unless the store already holds a finished run of it (the worker asks
	// its store.RunLookup, when it has one: an at-least-once transport delivers
	// again what was run and stored).
	Runs []store.WorkKey
	// Work: each finished run's store.Work row is marked done with the run
	// (the queue keeps work rows: StoreQueue).
	Work bool
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
		return Delivery{Exchange: ex, Owed: Owed{Records: true}, Ack: func() {}}, nil
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
