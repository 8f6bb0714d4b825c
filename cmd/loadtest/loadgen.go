package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The load commands' open-loop generator. Requests are due on a fixed schedule
// (rate per second, per path) whatever the answers do; each latency is measured
// from the request's intended send time, so a stalled generator or a full
// connection pool shows up in the figures instead of hiding them (coordinated
// omission, Gil Tene, "How NOT to Measure Latency"). A fixed set of sender
// goroutines per path bounds the requests outstanding; a request due while every
// sender is busy is not sent and is counted as unsent, never queued behind the others.

// lateAfter: a request dispatched this long after its intended send time counts as
// late (its latency still runs from the intended time).
const lateAfter = time.Millisecond

// raiseOpenFileLimit lifts the soft RLIMIT_NOFILE to the hard limit (children
// started afterwards inherit it) and returns the limit now in force.
func raiseOpenFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("loadtest: read open-file limit: %w", err)
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return lim.Cur, fmt.Errorf("loadtest: raise open-file limit to %d: %w", lim.Max, err)
		}
		lim = want
	}
	return lim.Cur, nil
}

// newLoadClient is the generator's one HTTP client: keep-alive connections, at
// most outstanding per target (so idle ones are reused, never re-dialled), no
// compression.
func newLoadClient(outstanding int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns:        0, // no overall cap; per host below
		MaxIdleConnsPerHost: outstanding,
		MaxConnsPerHost:     outstanding,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// pathResult is what one load path measured.
type pathResult struct {
	mu        sync.Mutex
	latencies []time.Duration // from intended send time to the last byte of the answer
	errors    atomic.Int64    // transport errors and non-200 answers
	unsent    atomic.Int64    // due while every sender of the path was busy: not sent
	late      atomic.Int64    // sent more than lateAfter after the intended time
	firstErr  atomic.Pointer[string]
}

func (r *pathResult) add(d time.Duration) {
	r.mu.Lock()
	r.latencies = append(r.latencies, d)
	r.mu.Unlock()
}

func (r *pathResult) fail(err error) {
	r.errors.Add(1)
	s := err.Error()
	r.firstErr.CompareAndSwap(nil, &s)
}

// firstError is the first error seen on the path, "" when none.
func (r *pathResult) firstError() string {
	if p := r.firstErr.Load(); p != nil {
		return *p
	}
	return ""
}

// loadTarget is one path of an open-loop run.
type loadTarget struct {
	// request builds request i (the body and headers of the path).
	request func(ctx context.Context, i int) (*http.Request, error)
	result  *pathResult
}

// openLoop is one open-loop run: Rate requests/s to every target for Duration.
type openLoop struct {
	Rate        int
	Duration    time.Duration
	Outstanding int          // senders per target: the most requests in flight on it
	OnTick      func(i int)  // optional, called by the scheduler before request i is due
	Client      *http.Client // shared by all targets
}

// run sends the load and returns the number of requests due per target and the
// elapsed time. On every tick the targets are served in rotating order.
func (o openLoop) run(ctx context.Context, targets []loadTarget) (int, time.Duration) {
	type ticket struct {
		i        int
		intended time.Time
	}
	interval := time.Second / time.Duration(o.Rate)
	total := int(o.Duration / interval)
	queues := make([]chan ticket, len(targets))
	var wg sync.WaitGroup
	for k, t := range targets {
		q := make(chan ticket) // unbuffered: a hand-off only to an idle sender
		queues[k] = q
		if t.result.latencies == nil {
			t.result.latencies = make([]time.Duration, 0, total)
		}
		for range max(1, o.Outstanding) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for tk := range q {
					o.send(ctx, t, tk.i, tk.intended)
				}
			}()
		}
	}
	start := time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		if o.OnTick != nil {
			o.OnTick(i)
		}
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		late := time.Since(due) > lateAfter
		for j := range targets {
			k := (i + j) % len(targets)
			select {
			case queues[k] <- ticket{i: i, intended: due}:
				if late {
					targets[k].result.late.Add(1)
				}
			default:
				targets[k].result.unsent.Add(1)
			}
		}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	return total, time.Since(start)
}

func (o openLoop) send(ctx context.Context, t loadTarget, i int, intended time.Time) {
	req, err := t.request(ctx, i)
	if err != nil {
		t.result.fail(err)
		return
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		t.result.fail(err)
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		t.result.fail(err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		t.result.fail(fmt.Errorf("status %d", resp.StatusCode))
		return
	}
	t.result.add(time.Since(intended))
}
