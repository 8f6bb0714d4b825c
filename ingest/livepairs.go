package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// LivePair is one live shadow pair handed to live judging once the candidate
// run is stored: the exchange (its texts pseudonymized by the tap, as
// stored), the incumbent's run and the candidate's run as stored (its texts
// pseudonymized like every record).
type LivePair struct {
	Exchange Exchange
	// Incumbent is the incumbent run recorded from the exchange's answer;
	// nil when the delivery carries no answer (the store-first queue's
	// copies picked up at start: the incumbent run is in the store).
	Incumbent *store.Run
	Candidate store.Run
	// Span is the candidate run's span (shadow.Result.Span); invalid without
	// telemetry.
	Span trace.SpanContext
	// Write stores the pair's judgment rows: pseudonymized like every
	// record (Pseudonymizer.Records), never written when the exchange's data
	// subject was forgotten meanwhile, handed to the store writer with
	// backoff while it is full. It returns nil once the writer took them,
	// ErrForgotten for a forgotten subject, or why they were dropped (ctx
	// ended before the writer took them; the writer refused them).
	Write func(ctx context.Context, js []store.Judgment) error
}

// ErrForgotten: the pair's data subject was forgotten while it was being
// judged; nothing of it is written (LivePair.Write).
var ErrForgotten = errors.New("ingest: the request's data subject was forgotten")

// PairSink takes live pairs for judging (eval/livejudge). Offer is called by
// a shadow worker after it stored a candidate run (never for a run stopped by
// shutdown: that run is still owed) and must return at once: judging happens
// in the sink's own bounded workers, and what the sink cannot take it counts.
type PairSink interface {
	Offer(ctx context.Context, p LivePair)
}

// UsePairSink makes the shadow workers hand every stored live candidate run,
// with its exchange, to s (call before Start; nil turns it off).
func (p *Processor) UsePairSink(s PairSink) { p.pairs = s }

// offerPair hands a stored candidate run to the pair sink, if any.
func (p *Processor) offerPair(ctx context.Context, ex Exchange, res storedRun) {
	if p.pairs == nil {
		return
	}
	pair := LivePair{Exchange: ex, Candidate: res.run, Span: res.span,
		Write: func(ctx context.Context, js []store.Judgment) error { return p.writeJudgments(ctx, ex, js) }}
	if ex.Response != nil {
		inc, _ := IncumbentRun(ex, nil)
		pair.Incumbent = &inc
	}
	p.pairs.Offer(ctx, pair)
}

// storedRun is what offerPair needs of a stored candidate run.
type storedRun struct {
	run  store.Run
	span trace.SpanContext
}

// writeJudgments is LivePair.Write.
func (p *Processor) writeJudgments(ctx context.Context, ex Exchange, js []store.Judgment) error {
	if len(js) == 0 {
		return nil
	}
	switch gone, ok := p.subjectForgotten(ctx, ex); {
	case !ok:
		return ctx.Err()
	case gone:
		return ErrForgotten
	}
	b := store.Batch{Judgments: js}
	p.pseudonymize(ex.App, &b)
	return p.enqueueBatch(ctx, b)
}

// enqueueBatch hands b to the writer, waiting with exponential backoff while
// the writer is full or the store unavailable, until ctx ends; a writer that
// refuses b for another reason returns that error at once.
func (p *Processor) enqueueBatch(ctx context.Context, b store.Batch) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 10 * time.Millisecond
	bo.MaxInterval = time.Second
	bo.MaxElapsedTime = 0
	return backoff.Retry(func() error {
		err := p.writer.Enqueue(b)
		if err != nil && !errors.Is(err, store.ErrQueueFull) && !errors.Is(err, ErrStoreUnavailable) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(bo, ctx))
}
