package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sync/errgroup"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/cmd/internal/progress"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// replayOptions configure `conductor-shadow replay`.
type replayOptions struct {
	File        string // JSONL of ingest.Exchange
	TapURL      string // e.g. http://127.0.0.1:8080/v1/tap
	Token       string // bearer token for a tap beyond loopback
	Concurrency int
	// Incumbent is the worker asked for an answer when a line has none and its
	// request's model is not a worker of the pool; the answer is marked simulated
	// when the pool says so.
	Incumbent string
	// IsWorker reports whether a model name is a configured worker.
	IsWorker func(name string) bool
	// Retries is how many times one line is sent again after a 503 (the tap's
	// queue is full or it sheds load) or a dropped connection; 0 takes
	// defaultReplayRetries.
	Retries int
	// RetryWait is the first wait before a retry, doubled after each up to
	// maxReplayRetryWait; 0 takes defaultReplayRetryWait.
	RetryWait time.Duration
	// Bar draws a progress bar (lines, with the counts) on BarTo.
	Bar   bool
	BarTo io.Writer
}

// Retry defaults of replay: 12 retries waiting 250 ms, 500 ms, … up to 5 s
// each (about 43 s for one line at most), counted and logged.
const (
	defaultReplayRetries   = 12
	defaultReplayRetryWait = 250 * time.Millisecond
	maxReplayRetryWait     = 5 * time.Second
)

// replayCounts is what a replay did, line by line.
type replayCounts struct {
	Total int // non-empty lines in the file
	Lines int // lines handled (the rest were not sent: the replay stopped)
	Sent  int // lines posted to the tap
	// Accepted lines: Queued (202) and Duplicates (200, already taken).
	Queued, Duplicates int
	Refused            int // lines that are no exchange, or that the tap answered 4xx
	Failed             int // no incumbent answer, or no 2xx from the tap after the retries
	Answered           int // incumbent answers fetched
	Retries            int // attempts beyond each line's first
}

// NotSent counts the lines the replay never got to (it stopped early).
func (c replayCounts) NotSent() int { return c.Total - c.Lines }

func (c replayCounts) String() string {
	return fmt.Sprintf("%d lines: %d sent, %d accepted (%d queued, %d duplicates), %d refused, %d failed, %d not sent; %d incumbent answers fetched, %d retries",
		c.Total, c.Sent, c.Queued+c.Duplicates, c.Queued, c.Duplicates, c.Refused, c.Failed, c.NotSent(), c.Answered, c.Retries)
}

// short is the counts for the progress bar.
func (c replayCounts) short() string {
	return fmt.Sprintf("accepted %d, refused %d, failed %d, retries %d", c.Queued+c.Duplicates, c.Refused, c.Failed, c.Retries)
}

// loss is an error when a line was not accepted: loss is never silent, and
// the exit status says so.
func (c replayCounts) loss() error {
	if n := c.Refused + c.Failed + c.NotSent(); n > 0 {
		return fmt.Errorf("replay: %d of %d lines not accepted (%d refused, %d failed, %d not sent); see the warnings above", n, c.Total, c.Refused, c.Failed, c.NotSent())
	}
	return nil
}

// errServerDown ends a replay whose server stopped answering.
var errServerDown = errors.New("the server stopped answering")

// replay sends every exchange of opts.File to the tap. Lines that fail to parse
// are counted as refused with their line number logged; a tap answering 503
// or a dropped connection is retried opts.Retries times with backoff, each
// retry counted and logged; when a connection is refused and the server's
// /healthz does not answer either, the replay stops at once with
// errServerDown (the lines not yet read are counted as not sent).
func replay(ctx context.Context, opts replayOptions, caller shadow.Caller, log *slog.Logger) (replayCounts, error) {
	if opts.Retries <= 0 {
		opts.Retries = defaultReplayRetries
	}
	if opts.RetryWait <= 0 {
		opts.RetryWait = defaultReplayRetryWait
	}
	var counts replayCounts
	total, err := countLines(opts.File)
	if err != nil {
		return counts, fmt.Errorf("replay: %w", err)
	}
	counts.Total = total
	f, err := os.Open(opts.File)
	if err != nil {
		return counts, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()

	type line struct {
		n    int
		data []byte
	}
	bar := progress.New(opts.BarTo, opts.Bar, int64(total), "")
	var mu sync.Mutex
	count := func(fn func(*replayCounts)) {
		mu.Lock()
		fn(&counts)
		bar.Describe(counts.short())
		mu.Unlock()
	}
	tx := &tapSender{opts: opts, client: &http.Client{Timeout: 30 * time.Second}, log: log,
		retried: func() { count(func(c *replayCounts) { c.Retries++ }) }}
	lines := make(chan line)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(lines)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			select {
			case lines <- line{n: n, data: bytes.Clone(sc.Bytes())}:
			case <-gctx.Done():
				return nil // a worker's error or the caller's stop says why
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("replay: read %s: %w", opts.File, err)
		}
		return nil
	})
	for range max(opts.Concurrency, 1) {
		g.Go(func() error {
			for l := range lines {
				err := replayLine(gctx, opts, caller, tx, log, l.n, l.data, count)
				bar.Add(1)
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	err = g.Wait()
	bar.Finish()
	if err == nil {
		err = ctx.Err()
	}
	return counts, err
}

// replayLine decodes, answers (when the line has no answer) and sends one
// line, counting what happened; only a server gone down is an error.
func replayLine(ctx context.Context, opts replayOptions, caller shadow.Caller, tx *tapSender, log *slog.Logger, n int, data []byte, count func(func(*replayCounts))) error {
	count(func(c *replayCounts) { c.Lines++ })
	ex, err := ingest.DecodeExchange(data, 1<<16, false)
	if err != nil {
		log.Warn("replay: line refused", "file", opts.File, "line", n, "err", err)
		count(func(c *replayCounts) { c.Refused++ })
		return nil
	}
	if ex.Metadata == nil {
		ex.Metadata = map[string]string{}
	}
	ex.Metadata["source"] = store.SourceReplay
	if ex.Response == nil {
		worker := opts.Incumbent
		if opts.IsWorker != nil && opts.IsWorker(ex.Request.Model) {
			worker = ex.Request.Model
		}
		if err := answer(ctx, caller, worker, &ex); err != nil {
			log.Warn("replay: incumbent did not answer", "line", n, "request_id", ex.RequestID, "err", err)
			count(func(c *replayCounts) { c.Failed++ })
			return nil
		}
		count(func(c *replayCounts) { c.Answered++ })
	}
	count(func(c *replayCounts) { c.Sent++ })
	status, err := tx.send(ctx, n, ex)
	switch {
	case errors.Is(err, errServerDown):
		count(func(c *replayCounts) { c.Failed++ })
		return fmt.Errorf("replay: line %d: %w", n, err)
	case err != nil:
		log.Warn("replay: tap refused", "line", n, "request_id", ex.RequestID, "err", err)
		if status >= 400 && status < 500 {
			count(func(c *replayCounts) { c.Refused++ })
		} else {
			count(func(c *replayCounts) { c.Failed++ })
		}
	case status == http.StatusOK:
		count(func(c *replayCounts) { c.Duplicates++ })
	default:
		count(func(c *replayCounts) { c.Queued++ })
	}
	return nil
}

// countLines counts the non-empty lines of path (the progress bar's total).
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// answer asks the incumbent worker for the exchange's answer, as production would
// have, and records it with its latency and usage.
func answer(ctx context.Context, caller shadow.Caller, worker string, ex *ingest.Exchange) error {
	call, err := caller.Call(ctx, worker, ex.Request.Messages)
	if err != nil {
		return err
	}
	ex.Response = &ingest.ExchangeResponse{
		Model:     call.Model,
		Content:   call.Output,
		LatencyMs: call.LatencyMs,
		TTFTMs:    call.TTFTMs,
		Usage:     ingest.Usage{PromptTokens: call.PromptTokens, CompletionTokens: call.CompletionTokens},
	}
	ex.Simulated = ex.Simulated || call.Simulated
	return nil
}

// tapSender posts exchanges to the tap with bounded retries.
type tapSender struct {
	opts    replayOptions
	client  *http.Client
	log     *slog.Logger
	retried func() // counts one retry
}

// send posts one exchange (line n of the file) to the tap, retrying a 503 and
// a dropped connection opts.Retries times with exponential backoff, each
// retry logged with its number. A refused connection while the server's
// /healthz does not answer either is errServerDown at once. It returns the
// final HTTP status.
func (t *tapSender) send(ctx context.Context, n int, ex ingest.Exchange) (int, error) {
	body, err := json.Marshal(ex)
	if err != nil {
		return 0, fmt.Errorf("encode exchange: %w", err)
	}
	var status int
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = t.opts.RetryWait, maxReplayRetryWait, 0
	attempt := 0
	err = backoff.Retry(func() error {
		attempt++
		if attempt > 1 {
			t.retried()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.opts.TapURL, bytes.NewReader(body))
		if err != nil {
			return backoff.Permanent(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if t.opts.Token != "" {
			req.Header.Set("Authorization", "Bearer "+t.opts.Token)
		}
		resp, err := t.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return backoff.Permanent(ctx.Err())
			}
			if platform.IsNoServer(err) {
				base := strings.TrimSuffix(t.opts.TapURL, "/v1/tap")
				if _, herr := platform.FetchHealth(ctx, base); errors.Is(herr, platform.ErrNoServer) {
					return backoff.Permanent(fmt.Errorf("%w at %s: %v", errServerDown, base, err))
				}
			}
			t.log.Warn("replay: retrying", "line", n, "attempt", attempt, "of", t.opts.Retries+1, "err", err)
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		status = resp.StatusCode
		switch {
		case status == http.StatusAccepted || status == http.StatusOK:
			return nil
		case status == http.StatusServiceUnavailable:
			err := fmt.Errorf("tap busy: %s", strings.TrimSpace(string(msg)))
			t.log.Warn("replay: retrying", "line", n, "attempt", attempt, "of", t.opts.Retries+1, "err", err)
			return err
		default:
			return backoff.Permanent(fmt.Errorf("tap answered %d: %s", status, strings.TrimSpace(string(msg))))
		}
	}, backoff.WithContext(backoff.WithMaxRetries(bo, uint64(t.opts.Retries)), ctx))
	return status, err
}
