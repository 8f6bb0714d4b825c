package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LiveJudgmentReader reads back what live judging (eval/livejudge) stored in
// the judgments table (rows with an empty suite_run_id): a day's judge spend, so the
// daily judge budget survives a restart, and per (candidate, judge) the
// figures a judge of live traffic is trusted on.
type LiveJudgmentReader interface {
	// LiveJudgeDay sums the live judgments whose judged_at falls on the UTC
	// day of day: their cost (USD) and how many asked the judge. An error is
	// the transport's, wrapped.
	LiveJudgeDay(ctx context.Context, day time.Time) (LiveJudgeDay, error)
	// LiveJudgeStats returns, per (pipeline, judge), the live judgments
	// judged in [q.From, q.To) (optionally of one pipeline, or one pipeline
	// version), canaries counted apart: outcome counts,
	// unjudged pairs, position consistency (figure.PositionConsistencySQL, as
	// JudgeStats) and cost, by (pipeline, judge). An invalid q returns its
	// Validate error.
	LiveJudgeStats(ctx context.Context, q LiveJudgmentQuery) ([]JudgeStat, error)
	// LiveJudged reports whether a live row of pair k is stored, of any
	// outcome and in any version: a re-delivered exchange whose candidate
	// ran again is not judged twice. An invalid k returns its Validate
	// error; a failed read the transport's, wrapped.
	LiveJudged(ctx context.Context, k LivePairKey) (bool, error)
}

// LivePairKey names one live pair's judgment by one judge worker: the
// judgments table's key (request_id, pipeline, candidate_run_id) with
// suite_run_id and canary empty, and the judge worker that judged it.
type LivePairKey struct {
	RequestID      string
	Pipeline       string // the candidate's
	CandidateRunID string
	JudgeWorker    string
}

// Validate reports a key with an empty part.
func (k LivePairKey) Validate() error {
	if k.RequestID == "" || k.Pipeline == "" || k.CandidateRunID == "" || k.JudgeWorker == "" {
		return fmt.Errorf("store: live judged: want a request, a pipeline, a candidate run and a judge worker, got %+v", k)
	}
	return nil
}

// LiveJudgeDay is one UTC day of live judging.
type LiveJudgeDay struct {
	Day     string  `json:"day"`      // YYYY-MM-DD, UTC
	CostUSD float64 `json:"cost_usd"` // summed cost of the day's live judgments, USD
	// Asked counts the day's live judgments that called the judge (tokens
	// in > 0 or cost > 0); Rows every live row of the day, decided without
	// the judge and unjudged ones included.
	Asked int64 `json:"asked"`
	Rows  int64 `json:"rows"`
}

// LiveJudgmentQuery selects live judgments by the time they were judged.
type LiveJudgmentQuery struct {
	From, To time.Time // [From, To), UTC; both required
	Pipeline string    // one candidate pipeline; "" for all
	// PipelineVersion narrows Pipeline to one version (a live sequence's);
	// "" for all. It needs Pipeline.
	PipelineVersion string
}

// Validate reports a missing or empty window, or a version without its
// pipeline.
func (q LiveJudgmentQuery) Validate() error {
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		return errors.New("store: live judgments: want a window with From before To")
	}
	if q.PipelineVersion != "" && q.Pipeline == "" {
		return errors.New("store: live judgments: a pipeline version needs its pipeline")
	}
	return nil
}

// LiveJudgeDay implements LiveJudgmentReader.
func (s *sqlStore) LiveJudgeDay(ctx context.Context, day time.Time) (LiveJudgeDay, error) {
	if err := s.check(ctx); err != nil {
		return LiveJudgeDay{}, fmt.Errorf("store: live judge day: %w", err)
	}
	start := day.UTC().Truncate(24 * time.Hour)
	p := Params{}
	p.Time("from", start)
	p.Time("to", start.Add(24*time.Hour))
	type row struct {
		Spend float64 `json:"spend"`
		Asked int64   `json:"asked"`
		Rows  int64   `json:"n"`
	}
	rows, err := queryRows[row](ctx, s.t, fmt.Sprintf(`SELECT sum(cost_usd) AS spend, countIf(tokens_in > 0 OR cost_usd > 0) AS asked, count() AS n
FROM %s.judgments FINAL
WHERE suite_run_id = '' AND canary = '' AND judged_at >= {from:DateTime64(3, 'UTC')} AND judged_at < {to:DateTime64(3, 'UTC')}`, s.db), p)
	if err != nil {
		return LiveJudgeDay{}, fmt.Errorf("store: live judge day: %w", err)
	}
	out := LiveJudgeDay{Day: start.Format(time.DateOnly)}
	if len(rows) == 1 {
		out.CostUSD, out.Asked, out.Rows = rows[0].Spend, rows[0].Asked, rows[0].Rows
	}
	return out, nil
}

// LiveJudgeStats implements LiveJudgmentReader.
func (s *sqlStore) LiveJudgeStats(ctx context.Context, q LiveJudgmentQuery) ([]JudgeStat, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: live judge stats: %w", err)
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	p := Params{}
	p.Time("from", q.From.UTC())
	p.Time("to", q.To.UTC())
	where := "suite_run_id = '' AND judged_at >= {from:DateTime64(3, 'UTC')} AND judged_at < {to:DateTime64(3, 'UTC')}"
	if q.Pipeline != "" {
		where += " AND pipeline = {pipeline:String}"
		p.Str("pipeline", q.Pipeline)
	}
	if q.PipelineVersion != "" {
		where += " AND pipeline_version = {version:String}"
		p.Str("version", q.PipelineVersion)
	}
	rows, err := s.judgeStats(ctx, where, p)
	if err != nil {
		return nil, fmt.Errorf("store: live judge stats: %w", err)
	}
	return rows, nil
}

// LiveJudged implements LiveJudgmentReader. It reads one key range of the
// judgments table's order (request_id, pipeline, candidate_run_id), one
// column, at most one row, without FINAL: any stored version of the row
// means the pair was judged, so the read skips the merge that FINAL does and
// the columns a judgment holds. Live judging asks it once per sampled pair.
func (s *sqlStore) LiveJudged(ctx context.Context, k LivePairKey) (bool, error) {
	if err := s.check(ctx); err != nil {
		return false, fmt.Errorf("store: live judged: %w", err)
	}
	if err := k.Validate(); err != nil {
		return false, err
	}
	p := Params{}.Str("request", k.RequestID).Str("pipeline", k.Pipeline).Str("run", k.CandidateRunID).Str("worker", k.JudgeWorker)
	type row struct {
		One int64 `json:"one"`
	}
	rows, err := queryRows[row](ctx, s.t, fmt.Sprintf(`SELECT 1 AS one FROM %s.judgments
WHERE request_id = {request:String} AND pipeline = {pipeline:String} AND candidate_run_id = {run:String}
  AND suite_run_id = '' AND canary = '' AND judge_worker = {worker:String}
LIMIT 1`, s.db), p)
	if err != nil {
		return false, fmt.Errorf("store: live judged: %w", err)
	}
	return len(rows) > 0, nil
}

var _ LiveJudgmentReader = (*sqlStore)(nil)

// InsertJudgmentsOf returns tw's InsertJudgments when tw is also a
// JudgmentWriter, else an insert that fails with NotSupported (the rows are
// then dropped and counted like any the store did not take). The Writer and
// ingest's StoreWriter write Batch.Judgments with it.
func InsertJudgmentsOf(tw TraceWriter) func(context.Context, []Judgment) error {
	if jw, ok := tw.(JudgmentWriter); ok {
		return jw.InsertJudgments
	}
	return func(_ context.Context, js []Judgment) error {
		if len(js) == 0 {
			return nil
		}
		return fmt.Errorf("store: insert judgments: %w", NotSupported("store.JudgmentWriter"))
	}
}
