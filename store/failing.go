package store

import (
	"sync"
	"time"
)

// Failing remembers since when a sink (the writer, a work queue, a Kafka
// producer) has been failing and the last error, for readiness and stats. The
// zero value is ready to use and safe for concurrent use.
type Failing struct {
	mu     sync.Mutex
	since  time.Time
	lastAt time.Time
	last   string
}

// Note records the outcome of one attempt: nil clears the failure; an error
// starts it (keeping the first failure's time) and becomes the last error.
func (f *Failing) Note(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		f.since, f.last = time.Time{}, ""
		return
	}
	now := time.Now()
	if f.since.IsZero() {
		f.since = now
	}
	f.lastAt, f.last = now, err.Error()
}

// LastFailure returns when the last failed attempt was noted (zero when the
// last attempt succeeded).
func (f *Failing) LastFailure() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		return time.Time{}
	}
	return f.lastAt
}

// State returns since when attempts have failed (zero when the last one
// succeeded) and the last error's text.
func (f *Failing) State() (since time.Time, last string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.since, f.last
}
