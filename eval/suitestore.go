package eval

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// A suite run stores its finished cases in batches, not one case at a time:
// ClickHouse (server and embedded) writes a new part per INSERT, so a case's
// four INSERTs (request, runs, steps, scores) cost about as much as four
// batches of hundreds of rows, and a 300-case suite spent most of its time
// storing. ClickHouse's own advice is to insert in large batches
// (https://clickhouse.com/docs/en/optimize/bulk-inserts).
const (
	// SuiteFlushCases is how many finished cases a suite run buffers at most
	// before writing them.
	SuiteFlushCases = 50
	// SuiteFlushInterval is how long the oldest buffered case may wait: when a
	// case finishes and the oldest one waited this long, the buffer is written.
	// What is left when the last case finishes (or the suite stops) is written then.
	SuiteFlushInterval = time.Second
)

// caseWriter buffers the records of finished cases and writes them to a
// store.TraceWriter. Safe for concurrent use; a case that finishes while a
// write is under way is buffered for the next one, not held up.
type caseWriter struct {
	traces    store.TraceWriter
	judgments store.JudgmentWriter

	writeMu sync.Mutex // held while writing, so writes never overlap

	mu      sync.Mutex // guards the fields below
	pending store.Batch
	pendJs  []store.Judgment // the cases' pairwise judgments, written after their scores
	cases   int              // cases in pending
	since   time.Time        // when the oldest case in pending finished
}

// add buffers one case's records and writes the buffer when it holds
// SuiteFlushCases cases or its oldest case waited SuiteFlushInterval, unless
// another write is under way (the next add or flush writes them). The error
// is the write's (flush).
func (w *caseWriter) add(ctx context.Context, b store.Batch, js []store.Judgment) error {
	w.mu.Lock()
	w.pendJs = append(w.pendJs, js...)
	if w.cases == 0 {
		w.since = time.Now()
	}
	w.pending.Requests = append(w.pending.Requests, b.Requests...)
	w.pending.Runs = append(w.pending.Runs, b.Runs...)
	w.pending.Steps = append(w.pending.Steps, b.Steps...)
	w.pending.Scores = append(w.pending.Scores, b.Scores...)
	w.cases++
	due := w.cases >= SuiteFlushCases || time.Since(w.since) >= SuiteFlushInterval
	w.mu.Unlock()
	if !due || !w.writeMu.TryLock() {
		return nil
	}
	defer w.writeMu.Unlock()
	return w.write(ctx)
}

// flush writes the buffered cases (after any write under way): requests
// first, then runs, steps, scores and pairwise judgments, so a request is visible no later than
// its runs. On error the cases stay buffered (every INSERT is idempotent on
// its key) for a later flush, and the error names the table and the number of
// cases not stored: "store 50 cases: insert runs: …".
func (w *caseWriter) flush(ctx context.Context) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	return w.write(ctx)
}

// write is flush with writeMu held.
func (w *caseWriter) write(ctx context.Context) error {
	w.mu.Lock()
	b, js, n, since := w.pending, w.pendJs, w.cases, w.since
	w.pending, w.pendJs, w.cases = store.Batch{}, nil, 0
	w.mu.Unlock()
	if n == 0 {
		return nil
	}
	for _, ins := range []struct {
		table string
		n     int
		do    func() error
	}{
		{"requests", len(b.Requests), func() error { return w.traces.InsertRequests(ctx, b.Requests) }},
		{"runs", len(b.Runs), func() error { return w.traces.InsertRuns(ctx, b.Runs) }},
		{"steps", len(b.Steps), func() error { return w.traces.InsertSteps(ctx, b.Steps) }},
		{"scores", len(b.Scores), func() error { return w.traces.InsertScores(ctx, b.Scores) }},
		{"judgments", len(js), func() error { return w.judgments.InsertJudgments(ctx, js) }},
	} {
		if ins.n == 0 {
			continue
		}
		if err := ins.do(); err != nil {
			w.mu.Lock()
			w.pending = store.Batch{
				Requests: append(b.Requests, w.pending.Requests...), Runs: append(b.Runs, w.pending.Runs...),
				Steps: append(b.Steps, w.pending.Steps...), Scores: append(b.Scores, w.pending.Scores...),
			}
			w.pendJs = append(js, w.pendJs...)
			w.cases += n
			w.since = since
			w.mu.Unlock()
			return fmt.Errorf("store %d cases: insert %s: %w", n, ins.table, err)
		}
	}
	return nil
}
