package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// Pairwise judgment outcomes (Judgment.Outcome), from the candidate's side:
// both orders preferred the candidate (win), both said tie (tie), both
// preferred the incumbent (loss), the orders disagree (inconsistent: never a
// win), or a call failed or a reply could not be read (error).
const (
	JudgmentWin          = "win"
	JudgmentTie          = "tie"
	JudgmentLoss         = "loss"
	JudgmentInconsistent = "inconsistent"
	JudgmentError        = "error"
	// JudgmentUnjudged marks a live pair that was sampled for judging but
	// not judged: the daily judge budget could not cover the call's
	// upper-bound cost, the judging queue was full, or the process stopped
	// first. Judgment.Note says which. It is no verdict: it is what the
	// sample owes (coverage), never a win, tie or loss.
	JudgmentUnjudged = "unjudged"
)

// One order's verdict (Judgment.Verdict1, Verdict2): the answer the judge
// preferred, or a tie; "" when that order failed.
const (
	VerdictIncumbent = "incumbent"
	VerdictCandidate = "candidate"
	VerdictTie       = "tie"
)

// Judgment is one pairwise judgment of a candidate's answer against the
// incumbent's on one request, asked in both orders: order 1 shows the
// incumbent's answer first, order 2 the candidate's. Suite runs write one per
// judged case and one per canary; live judging writes the same rows with
// SuiteRunID "" and the sample's InclusionProb. Key: (RequestID, Pipeline,
// CandidateRunID, Judge, Canary).
type Judgment struct {
	RequestID         string `json:"request_id"`
	SuiteRunID        string `json:"suite_run_id"` // "" for live traffic
	CaseID            string `json:"case_id"`      // the regression-set case; "" for live traffic
	Pipeline          string `json:"pipeline"`     // the candidate pipeline
	PipelineVersion   string `json:"pipeline_version"`
	CandidateRunID    string `json:"candidate_run_id"` // the run whose answer is the candidate side
	IncumbentPipeline string `json:"incumbent_pipeline"`
	IncumbentRunID    string `json:"incumbent_run_id"`
	// Judge is the model id the judge answered with (else the one asked for);
	// JudgeWorker the pool worker that judged; PromptVersion the judge
	// prompt's version.
	Judge         string `json:"judge"`
	JudgeWorker   string `json:"judge_worker"`
	PromptVersion string `json:"prompt_version"`
	// Canary is "" for a real pair, else the check of the judge this row is:
	// "identical" (the same answer twice: must tie), "padded" (an answer
	// against itself padded with its own repeated content: the padded one must
	// not win), "label_swap" (a real pair again with other label words in the
	// other order: must agree with the real judgment). CanaryPassed says
	// whether it held.
	Canary       string `json:"canary"`
	CanaryPassed bool   `json:"canary_passed"`
	// Labels are the label words of the two positions, first/second, e.g.
	// "A/B" or "Response 2/Response 1".
	Labels   string    `json:"labels"`
	JudgedAt time.Time `json:"judged_at"` // UTC, ms precision
	Outcome  string    `json:"outcome"`   // JudgmentWin, …
	// Verdict1 and Raw1: order 1 (incumbent first), the verdict read
	// (VerdictIncumbent, VerdictCandidate, VerdictTie, "" on error) and the
	// judge's reply as sent (clipped); Verdict2 and Raw2 for order 2.
	Verdict1 string `json:"verdict_1"`
	Raw1     string `json:"raw_1"`
	Verdict2 string `json:"verdict_2"`
	Raw2     string `json:"raw_2"`
	// InclusionProb is the probability (0..1] that this pair was sampled for
	// judging: 1 in suite runs; a live sample's share, so estimates weight
	// each judgment by 1/InclusionProb (Horvitz–Thompson).
	InclusionProb float64 `json:"inclusion_prob"`
	TokensIn      int64   `json:"tokens_in"`  // both orders' prompt tokens
	TokensOut     int64   `json:"tokens_out"` // both orders' completion tokens
	CostUSD       float64 `json:"cost_usd"`   // both calls, USD
	Error         string  `json:"error"`      // why the outcome is JudgmentError
	// Note says why a live row was decided without asking the judge (the
	// candidate run has no answer: a loss) or why a sampled pair was not
	// judged (JudgmentUnjudged: "budget: …", "queue_full: …", "stopped: …");
	// "" for a judged pair.
	Note string `json:"note"`
	// JudgeHost is the host[:port] of the judge worker's base URL when it was
	// called; JudgeCalls and JudgeRequests count the calls and their HTTP
	// requests (attempts) of this judgment, both orders; SentBytes and
	// ReceivedBytes their HTTP bodies.
	JudgeHost     string `json:"judge_host"`
	JudgeCalls    int32  `json:"judge_calls"`
	JudgeRequests int32  `json:"judge_requests"`
	SentBytes     int64  `json:"sent_bytes"`
	ReceivedBytes int64  `json:"received_bytes"`
}

// JudgmentWriter stores pairwise judgments (suite runs, live judging).
// Synchronous and idempotent on the key; a failed INSERT returns the
// transport's error wrapped with the table, ErrClosed after Close.
type JudgmentWriter interface {
	// InsertJudgments stores judgments, keyed by (RequestID, Pipeline,
	// CandidateRunID, Judge, Canary); a later write replaces an earlier one.
	InsertJudgments(ctx context.Context, js []Judgment) error
}

// JudgmentReader reads pairwise judgments back: one trace's, one suite run's,
// and per (candidate, judge) the figures a judge is trusted on.
type JudgmentReader interface {
	// ListJudgments returns the judgments q selects, by (request id,
	// pipeline, canary, judge), at most q's limit. An invalid q returns its
	// Validate error.
	ListJudgments(ctx context.Context, q JudgmentQuery) ([]Judgment, error)
	// JudgeStats returns, per (pipeline, judge) of the judgments q selects,
	// the outcome counts, the position consistency (figure.
	// PositionConsistencySQL) and the canaries, by (pipeline, judge).
	JudgeStats(ctx context.Context, q JudgmentQuery) ([]JudgeStat, error)
}

// JudgmentQuery selects judgments: those of one request (RequestID), of one
// suite run (SuiteRunID), or both; at least one is required.
type JudgmentQuery struct {
	RequestID  string
	SuiteRunID string
	// Limit caps ListJudgments: 0 gives DefaultJudgmentLimit, at most
	// MaxJudgmentLimit.
	Limit int
}

// Limits of JudgmentQuery.Limit.
const (
	DefaultJudgmentLimit = 10_000
	MaxJudgmentLimit     = 100_000
)

// Validate reports a query that selects neither a request nor a suite run.
func (q JudgmentQuery) Validate() error {
	if q.RequestID == "" && q.SuiteRunID == "" {
		return errors.New("store: judgments: name a request or a suite run")
	}
	if q.Limit < 0 {
		return fmt.Errorf("store: judgments: limit must be >= 0, got %d", q.Limit)
	}
	return nil
}

func (q JudgmentQuery) limit() int {
	switch {
	case q.Limit <= 0:
		return DefaultJudgmentLimit
	case q.Limit > MaxJudgmentLimit:
		return MaxJudgmentLimit
	}
	return q.Limit
}

// JudgeStat is one judge's record on one candidate's pairs. Real pairs only
// in the outcome counts; canaries apart.
type JudgeStat struct {
	Pipeline     string `json:"pipeline"`
	Judge        string `json:"judge"`
	Wins         int64  `json:"wins"`
	Ties         int64  `json:"ties"`
	Losses       int64  `json:"losses"`
	Inconsistent int64  `json:"inconsistent"`
	Errors       int64  `json:"errors"`
	// Unjudged counts live pairs sampled but not judged (JudgmentUnjudged);
	// 0 in suite runs.
	Unjudged int64 `json:"unjudged"`
	// PositionConsistency is (Wins + Ties + Losses) / (the same +
	// Inconsistent), figure.PositionConsistency; 0 with nothing judged.
	PositionConsistency float64 `json:"position_consistency"`
	Canaries            int64   `json:"canaries"`
	CanariesFailed      int64   `json:"canaries_failed"`
	CostUSD             float64 `json:"cost_usd"` // every judge call of the group, canaries included
}

// judgmentWhere is the WHERE clause of q.
func judgmentWhere(q JudgmentQuery) (string, Params) {
	p := Params{}
	var conds []string
	if q.RequestID != "" {
		conds = append(conds, "request_id = {request:String}")
		p.Str("request", q.RequestID)
	}
	if q.SuiteRunID != "" {
		conds = append(conds, "suite_run_id = {suite:String}")
		p.Str("suite", q.SuiteRunID)
	}
	return strings.Join(conds, " AND "), p
}

// InsertJudgments implements JudgmentWriter.
func (s *sqlStore) InsertJudgments(ctx context.Context, js []Judgment) error {
	return insert(ctx, s, "judgments", js)
}

// ListJudgments implements JudgmentReader.
func (s *sqlStore) ListJudgments(ctx context.Context, q JudgmentQuery) ([]Judgment, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list judgments: %w", err)
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	where, p := judgmentWhere(q)
	rows, err := queryRows[Judgment](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.judgments FINAL WHERE %s ORDER BY request_id, pipeline, canary, judge LIMIT %d",
		selectList[Judgment](), s.db, where, q.limit()), p)
	if err != nil {
		return nil, fmt.Errorf("store: list judgments: %w", err)
	}
	return rows, nil
}

// JudgeStats implements JudgmentReader.
func (s *sqlStore) JudgeStats(ctx context.Context, q JudgmentQuery) ([]JudgeStat, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: judge stats: %w", err)
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	where, p := judgmentWhere(q)
	rows, err := s.judgeStats(ctx, where, p)
	if err != nil {
		return nil, fmt.Errorf("store: judge stats: %w", err)
	}
	return rows, nil
}

// judgeStats is JudgeStats over the judgments where selects. Position
// consistency counts the pairs the judge was asked about (both orders gave a
// verdict): a live pair decided without the judge (a run without an answer)
// is an outcome, not a measure of the judge.
func (s *sqlStore) judgeStats(ctx context.Context, where string, p Params) ([]JudgeStat, error) {
	real := "canary = ''"
	judged := real + " AND outcome IN ('" + JudgmentWin + "', '" + JudgmentTie + "', '" + JudgmentLoss + "', '" + JudgmentInconsistent + "') AND verdict_1 != '' AND verdict_2 != ''"
	consistent := "outcome IN ('" + JudgmentWin + "', '" + JudgmentTie + "', '" + JudgmentLoss + "')"
	count := func(outcome string) string { return fmt.Sprintf("countIf(%s AND outcome = '%s')", real, outcome) }
	return queryRows[JudgeStat](ctx, s.t, fmt.Sprintf(`SELECT
    pipeline, judge,
    %s AS wins, %s AS ties, %s AS losses, %s AS inconsistent, %s AS errors, %s AS unjudged,
    %s AS position_consistency,
    countIf(canary != '') AS canaries,
    countIf(canary != '' AND NOT canary_passed) AS canaries_failed,
    sum(cost_usd) AS cost_usd
FROM %s.judgments FINAL
WHERE %s
GROUP BY pipeline, judge
ORDER BY pipeline, judge`,
		count(JudgmentWin), count(JudgmentTie), count(JudgmentLoss), count(JudgmentInconsistent), count(JudgmentError), count(JudgmentUnjudged),
		figure.PositionConsistencySQL(consistent, judged), s.db, where), p)
}

// The SQL stores judge: they have both roles.
var (
	_ JudgmentWriter = (*sqlStore)(nil)
	_ JudgmentReader = (*sqlStore)(nil)
)
