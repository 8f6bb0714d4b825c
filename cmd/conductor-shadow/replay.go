package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
}

// replayCounts is what a replay did, line by line.
type replayCounts struct {
	Lines, Queued, Duplicates, Rejected, Failed, Answered int
}

func (c replayCounts) String() string {
	return fmt.Sprintf("%d lines: %d queued, %d duplicates, %d rejected, %d failed (%d incumbent answers fetched)",
		c.Lines, c.Queued, c.Duplicates, c.Rejected, c.Failed, c.Answered)
}

// replay sends every exchange of opts.File to the tap. Lines that fail to parse are
// counted as rejected with their line number logged; a tap answering 503 (queue
// full) is retried with backoff for up to a minute per line.
func replay(ctx context.Context, opts replayOptions, caller shadow.Caller, log *slog.Logger) (replayCounts, error) {
	f, err := os.Open(opts.File)
	if err != nil {
		return replayCounts{}, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()

	type line struct {
		n    int
		data []byte
	}
	var (
		mu     sync.Mutex
		counts replayCounts
	)
	count := func(fn func(*replayCounts)) { mu.Lock(); fn(&counts); mu.Unlock() }
	client := &http.Client{Timeout: 30 * time.Second}
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
				return gctx.Err()
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
				count(func(c *replayCounts) { c.Lines++ })
				ex, err := ingest.DecodeExchange(l.data, 1<<16, false)
				if err != nil {
					log.Warn("replay: line refused", "file", opts.File, "line", l.n, "err", err)
					count(func(c *replayCounts) { c.Rejected++ })
					continue
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
					if err := answer(gctx, caller, worker, &ex); err != nil {
						log.Warn("replay: incumbent did not answer", "line", l.n, "request_id", ex.RequestID, "err", err)
						count(func(c *replayCounts) { c.Failed++ })
						continue
					}
					count(func(c *replayCounts) { c.Answered++ })
				}
				status, err := send(gctx, client, opts, ex)
				switch {
				case err != nil:
					log.Warn("replay: tap refused", "line", l.n, "request_id", ex.RequestID, "err", err)
					if status >= 400 && status < 500 {
						count(func(c *replayCounts) { c.Rejected++ })
					} else {
						count(func(c *replayCounts) { c.Failed++ })
					}
				case status == http.StatusOK:
					count(func(c *replayCounts) { c.Duplicates++ })
				default:
					count(func(c *replayCounts) { c.Queued++ })
				}
			}
			return nil
		})
	}
	err = g.Wait()
	return counts, err
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

// send posts one exchange to the tap, retrying 503 and connection errors with
// exponential backoff for up to a minute. It returns the final HTTP status.
func send(ctx context.Context, client *http.Client, opts replayOptions, ex ingest.Exchange) (int, error) {
	body, err := json.Marshal(ex)
	if err != nil {
		return 0, fmt.Errorf("encode exchange: %w", err)
	}
	var status int
	bo := backoff.NewExponentialBackOff()
	bo.MaxElapsedTime = time.Minute
	err = backoff.Retry(func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, opts.TapURL, bytes.NewReader(body))
		if err != nil {
			return backoff.Permanent(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if opts.Token != "" {
			req.Header.Set("Authorization", "Bearer "+opts.Token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		status = resp.StatusCode
		switch {
		case status == http.StatusAccepted || status == http.StatusOK:
			return nil
		case status == http.StatusServiceUnavailable:
			return fmt.Errorf("tap busy: %s", strings.TrimSpace(string(msg)))
		default:
			return backoff.Permanent(fmt.Errorf("tap answered %d: %s", status, strings.TrimSpace(string(msg))))
		}
	}, backoff.WithContext(bo, ctx))
	return status, err
}
