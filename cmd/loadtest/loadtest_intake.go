package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Intake paths of the durable-intake run: each offers copies to the tap in
// front of the store-first queue, as the all-in-one server does.
const (
	intakeQueue  = "queue"  // Tap.Mirror, as the mirroring proxy hands copies over
	intakeBatch  = "batch"  // POST /v1/tap/batch over loopback HTTP
	intakeSingle = "single" // POST /v1/tap over loopback HTTP, one copy per request
)

// intakePaths are the paths in the order they are run and printed.
var intakePaths = []string{intakeQueue, intakeBatch, intakeSingle}

// intakeOptions drive one durable-intake run.
type intakeOptions struct {
	Path      string // intakeQueue, intakeBatch or intakeSingle
	Exchanges int    // copies offered
	// Senders is how many HTTP clients post at once (batch and single paths).
	Senders   int
	BatchSize int // exchanges per POST /v1/tap/batch
}

// intakeResult is what one durable-intake run measured.
type intakeResult struct {
	Path                 string
	Accepted             int64         // copies answered 202: rows in the store
	Retries              int64         // offers answered 503 (queue full, store unavailable, not confirmed in time) and sent again
	AcceptedIn, StoredIn time.Duration // from the first offer to the last 202; to the last candidate run stored
	CPU                  time.Duration // process CPU (user+system, every thread: engine, tap, load generator)
	Processed            int64
	WriterRows           int64
	Stored               int64 // request rows of the run in the store
	Lost                 int64 // offered copies without a stored request row, plus rows the writer dropped
}

// AcceptedPerSecond is the durable intake rate: copies stored (202) per second.
func (r intakeResult) AcceptedPerSecond() float64 {
	return float64(r.Accepted) / max(r.AcceptedIn.Seconds(), 1e-9)
}

// StoredPerSecond is the end-to-end rate: copies whose candidate run is stored per second.
func (r intakeResult) StoredPerSecond() float64 {
	return float64(r.Processed) / max(r.StoredIn.Seconds(), 1e-9)
}

// CPUPer1000 is process CPU seconds per 1,000 accepted copies.
func (r intakeResult) CPUPer1000() float64 {
	return r.CPU.Seconds() / max(float64(r.Accepted), 1) * 1000
}

// processCPU is this process's user+system CPU time so far (getrusage), every
// thread included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadExchange is the i-th copy of a run: a unique request id, an e-mail
// address for the PII pseudonymizer to replace, the incumbent's answer.
func loadExchange(run string, i int) ingest.Exchange {
	var ex ingest.Exchange
	ex.SchemaVersion = ingest.SchemaVersion
	ex.RequestID = fmt.Sprintf("load-%s-%d", run, i)
	ex.App = "loadtest"
	ex.ReceivedAt = time.Now()
	ex.Request.Model = "gpt-4o"
	ex.Request.Messages = []openai.ChatCompletionMessage{{Role: "user", Content: fmt.Sprintf("Customer user%d@example.com asks: what is %d * 7?", i, i)}}
	ex.Response = &ingest.ExchangeResponse{Model: "gpt-4o", Content: fmt.Sprintf("%d", i*7), LatencyMs: 50, Usage: ingest.Usage{PromptTokens: 20, CompletionTokens: 2}}
	return ex
}

// runIntake offers o.Exchanges copies through o.Path into st behind the
// store-first queue, with zero-latency shadow workers writing through a store
// writer of wcfg, and waits until every accepted copy's candidate run is stored.
func runIntake(ctx context.Context, st store.Store, wcfg store.WriterConfig, o intakeOptions, log *slog.Logger) (intakeResult, error) {
	res := intakeResult{Path: o.Path}
	icfg := ingest.NewDefaultConfig()
	stats := ingest.NewStats()
	sq, err := ingest.NewStoreQueue(icfg, st, []store.WorkKey{{Pipeline: "instant", PipelineVersion: "v1"}}, nil, stats, log)
	if err != nil {
		return res, err
	}
	// The language detector loads its models once per process (about 0.4 CPU
	// s, at a server's start): before the measurement, not in it.
	seg := segment.New(nil)
	seg.Of("warm up the language detector")
	sq.UseSegmenter(seg)
	// As serve wires them: each group commit takes the shadow workers'
	// rows waiting in the writer along.
	w, err := store.NewWriter(st, wcfg, log)
	if err != nil {
		return res, err
	}
	sq.UseWriter(w)
	if err := sq.Start(ctx); err != nil {
		return res, err
	}
	defer sq.Shutdown(context.Background())
	tap, err := ingest.NewTap(icfg, sq, stats, ingest.WithPIISecret([]byte("loadtest-secret")), ingest.WithLogger(log))
	if err != nil {
		return res, err
	}
	w.Start(ctx)
	proc := ingest.NewProcessor(icfg, sq, w, []shadow.Pipeline{instantPipeline{}}, nil, stats, log)
	if err := proc.Start(ctx); err != nil {
		return res, err
	}
	// Base 36: a run of 19 decimal digits in the id can pass the card-number
	// rule's Luhn check, and the stored id would then be pseudonymized.
	run := o.Path + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var accepted, retries atomic.Int64
	var lastAccept atomic.Int64   // UnixNano of the last 202
	note := func(code int) bool { // true: answered for good
		switch code {
		case http.StatusAccepted, http.StatusOK:
			// 200 is "duplicate": stored by an earlier post of it whose answer
			// was a 503 accept_timeout while its commit went on.
			accepted.Add(1)
			lastAccept.Store(time.Now().UnixNano())
			return true
		case http.StatusServiceUnavailable:
			retries.Add(1) // queue full: what is measured is what is sustained
			return false
		}
		return true // a 4xx: not stored, counted as lost below
	}
	// The HTTP paths' bodies are encoded before the clock starts: what is
	// measured is the tap taking them, not the load generator writing them.
	var posts []intakePost
	if o.Path == intakeBatch || o.Path == intakeSingle {
		if posts, err = encodePosts(run, o); err != nil {
			return res, err
		}
	}
	cpu0 := processCPU()
	start := time.Now()
	switch o.Path {
	case intakeQueue:
		for i := 0; i < o.Exchanges && ctx.Err() == nil; i++ {
			ex := loadExchange(run, i)
			for {
				code, _ := tap.Mirror(ex)
				if code == http.StatusAccepted {
					break // Mirror's 202 is the hand-over; the commit is counted below
				}
				if note(code) {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	case intakeBatch, intakeSingle:
		err = postIntake(ctx, tap, icfg.QueueSize, posts, o, note)
	default:
		err = fmt.Errorf("loadtest: intake path %q: want one of %v", o.Path, intakePaths)
	}
	if err != nil {
		_ = proc.Shutdown(ctx)
		_ = w.Shutdown(ctx)
		return res, err
	}
	// The queue path's copies are durable once the commit counted them.
	drainCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if o.Path == intakeQueue {
		for drainCtx.Err() == nil {
			snap := stats.Snapshot(0)
			if snap.Accepted+snap.Dropped[ingest.ReasonStoreUnavailable] >= int64(o.Exchanges) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		res.AcceptedIn = time.Since(start)
	} else {
		res.AcceptedIn = time.Since(start) // no copy answered 202 or duplicate
		if last := lastAccept.Load(); last != 0 {
			res.AcceptedIn = time.Unix(0, last).Sub(start)
		}
	}
	for drainCtx.Err() == nil {
		snap := stats.Snapshot(0)
		if snap.Processed >= snap.Accepted && w.Stats().Queued == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := proc.Shutdown(drainCtx); err != nil {
		return res, err
	}
	if err := w.Shutdown(drainCtx); err != nil {
		return res, err
	}
	res.StoredIn = time.Since(start)
	res.CPU = processCPU() - cpu0
	snap := stats.Snapshot(0)
	ws := w.Stats()
	// Copies left pending by an earlier run on the store are picked up from
	// the backlog and shadowed too; they are not this run's.
	res.Accepted, res.Retries, res.Processed, res.WriterRows = snap.Accepted, retries.Load(), snap.Processed-snap.Recovered, ws.Written
	if o.Path == intakeQueue {
		res.Retries = snap.Dropped[ingest.ReasonQueueFull]
	}
	// Every copy was offered until answered (a 503 is sent again): one whose
	// request row is not in the store is lost, whatever it was answered.
	if res.Stored, err = countStored(ctx, st, run, o.Exchanges); err != nil {
		return res, err
	}
	if res.Stored < int64(o.Exchanges) {
		// Read again once: a short count is a loss only if it stays short.
		again, err := countStored(ctx, st, run, o.Exchanges)
		if err != nil {
			return res, err
		}
		if log != nil && again != res.Stored {
			log.Warn("loadtest: the stored copies counted twice gave two figures", "first", res.Stored, "second", again)
		}
		res.Stored = max(res.Stored, again)
	}
	res.Lost = int64(o.Exchanges) - res.Stored + ws.Dropped
	return res, nil
}

// countStored counts the run's copies (request ids of loadExchange) whose
// request row is in st, by the store's own lookup (StoredRequests).
func countStored(ctx context.Context, st store.Store, run string, n int) (int64, error) {
	var stored int64
	for from := 0; from < n; from += 10000 {
		ids := make([]string, 0, 10000)
		for i := from; i < min(from+10000, n); i++ {
			ids = append(ids, loadExchange(run, i).RequestID)
		}
		found, err := st.StoredRequests(ctx, ids)
		if err != nil {
			return 0, fmt.Errorf("loadtest: count the stored copies: %w", err)
		}
		stored += int64(len(found))
	}
	return stored, nil
}

// resendPause is how long a sender waits before sending again the copies
// answered 503.
const resendPause = 20 * time.Millisecond

// intakePost is one POST of the batch or single intake path: its exchanges
// (kept to send again those answered 503) and its body, encoded by
// encodePosts.
type intakePost struct {
	items []json.RawMessage
	body  []byte
}

// encodePosts encodes the run's o.Exchanges copies (loadExchange) into the
// posts of o.Path: one exchange per POST /v1/tap, o.BatchSize per POST
// /v1/tap/batch (a BatchRequest).
func encodePosts(run string, o intakeOptions) ([]intakePost, error) {
	per := 1
	if o.Path == intakeBatch {
		per = max(o.BatchSize, 1)
	}
	posts := make([]intakePost, 0, (o.Exchanges+per-1)/per)
	for from := 0; from < o.Exchanges; from += per {
		items := make([]json.RawMessage, 0, per)
		for i := from; i < min(from+per, o.Exchanges); i++ {
			b, err := json.Marshal(loadExchange(run, i))
			if err != nil {
				return nil, fmt.Errorf("loadtest: encode exchange %d: %w", i, err)
			}
			items = append(items, b)
		}
		body, err := intakeBody(o.Path == intakeBatch, items)
		if err != nil {
			return nil, err
		}
		posts = append(posts, intakePost{items: items, body: body})
	}
	return posts, nil
}

// intakeBody is the body posting items: a BatchRequest of them, or the one
// exchange itself.
func intakeBody(batch bool, items []json.RawMessage) ([]byte, error) {
	if !batch {
		return items[0], nil
	}
	body, err := json.Marshal(ingest.BatchRequest{Exchanges: items})
	if err != nil {
		return nil, fmt.Errorf("loadtest: encode a batch: %w", err)
	}
	return body, nil
}

// postIntake posts posts (encodePosts) to the tap's HTTP routes on a
// loopback listener: o.Senders clients at once (for batches, at most
// queueSize / o.BatchSize), each taking the next post; the items answered
// 503 are sent again, in a body of their own, after resendPause.
func postIntake(ctx context.Context, tap *ingest.Tap, queueSize int, posts []intakePost, o intakeOptions, note func(int) bool) error {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	tap.Register(r)
	srv, base, err := listen(r)
	if err != nil {
		return err
	}
	defer srv.Close()
	senders := max(o.Senders, 1)
	batch := o.Path == intakeBatch
	route := base + "/v1/tap"
	if batch {
		route = base + "/v1/tap/batch"
		// No more batches in flight than the queue holds copies: more would
		// only be answered queue_full and sent again.
		senders = max(1, min(senders, queueSize/max(o.BatchSize, 1)))
	}
	client := newLoadClient(senders)
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := int(next.Add(1)) - 1
				if n >= len(posts) {
					return
				}
				items, body := posts[n].items, posts[n].body
				for len(items) > 0 && ctx.Err() == nil {
					if body == nil {
						b, err := intakeBody(batch, items)
						if err != nil {
							fail(err)
							return
						}
						body = b
					}
					again, err := postItems(ctx, client, route, batch, body, items, note)
					if err != nil {
						fail(err)
						return
					}
					if len(again) > 0 {
						// Refused (queue full, not confirmed in time, still being
						// stored): sent again after a pause, as a client does.
						time.Sleep(resendPause)
					}
					items, body = again, nil
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// postItems posts body (items: one, or a batch) and returns the items to send
// again (answered 503).
func postItems(ctx context.Context, client *http.Client, route string, batch bool, body []byte, items []json.RawMessage, note func(int) bool) ([]json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, route, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("loadtest: post %s: %w", route, err)
	}
	defer resp.Body.Close()
	if !batch {
		_, _ = io.Copy(io.Discard, resp.Body)
		if note(resp.StatusCode) {
			return nil, nil
		}
		return items, nil
	}
	var br ingest.BatchResponse
	if err := json.NewDecoder(resp.Body).Decode(&br); err != nil || resp.StatusCode != http.StatusOK || len(br.Results) != len(items) {
		return nil, fmt.Errorf("loadtest: post %s: status %d, %d results for %d items (%v)", route, resp.StatusCode, len(br.Results), len(items), err)
	}
	var again []json.RawMessage
	for i, r := range br.Results {
		code := http.StatusAccepted
		switch r.Status {
		case "queued":
		case "duplicate": // stored by an earlier post of it (answered 503 while its commit went on)
			code = http.StatusOK
		case "dropped":
			code = http.StatusServiceUnavailable
		default:
			code = http.StatusBadRequest
		}
		if !note(code) {
			again = append(again, items[i])
		}
	}
	return again, nil
}

// runIntakePaths runs o on each of paths into st (described by where) and
// prints each run's figures as it ends.
func runIntakePaths(ctx context.Context, out io.Writer, st store.Store, where string, wcfg store.WriterConfig, paths []string, o intakeOptions, log *slog.Logger) ([]intakeResult, error) {
	fmt.Fprintf(out, "durable intake: %d exchanges per path, zero-latency shadow workers, %s, store-first queue\n", o.Exchanges, where)
	var results []intakeResult
	for _, path := range paths {
		o.Path = path
		r, err := runIntake(ctx, st, wcfg, o, log)
		if err != nil {
			return results, err
		}
		printIntake(out, r)
		results = append(results, r)
	}
	return results, nil
}

// printIntake prints one intake run's figures.
func printIntake(out io.Writer, r intakeResult) {
	fmt.Fprintf(out, "intake %-6s accepted %d in %s = %.0f/s durable; candidate runs stored %d in %s = %.0f/s; %.3f CPU s per 1,000; %d sent again (503), %d lost; writer rows %d\n",
		r.Path, r.Accepted, r.AcceptedIn.Round(time.Millisecond), r.AcceptedPerSecond(), r.Processed, r.StoredIn.Round(time.Millisecond), r.StoredPerSecond(),
		r.CPUPer1000(), r.Retries, r.Lost, r.WriterRows)
}
