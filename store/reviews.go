package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Human review labels a random sample of judged pairs (migration 0210): a
// reviewer sees a pair's two answers as A and B in a shuffled order, without
// pipeline names, the judge's outcome or the canary kind, and says which is
// better, a tie, or skips. Labels are from the candidate's side
// (Review.Label): VerdictCandidate, VerdictIncumbent, VerdictTie, or
// ReviewSkip.
const ReviewSkip = "skip"

// Review keys (Review.Choice): the answer shown first (A), second (B), a tie
// (T) or a skip (S).
const (
	ChoiceA    = "A"
	ChoiceB    = "B"
	ChoiceTie  = "T"
	ChoiceSkip = "S"
)

// ErrReviewed: the reviewer already labelled (or skipped) the pair; a pair is
// reviewed at most once per reviewer.
var ErrReviewed = errors.New("store: the reviewer already reviewed this pair")

// PairKey names a judged pair: the request, the candidate pipeline and the
// candidate run (the key of judgments without the judge and the canary).
type PairKey struct {
	RequestID      string `json:"request_id"`
	Pipeline       string `json:"pipeline"`
	CandidateRunID string `json:"candidate_run_id"`
}

// Review is one reviewer's label of one pair (a row of reviews). Key:
// (RequestID, Pipeline, CandidateRunID, Reviewer).
type Review struct {
	RequestID      string `json:"request_id"`
	Pipeline       string `json:"pipeline"`
	CandidateRunID string `json:"candidate_run_id"`
	IncumbentRunID string `json:"incumbent_run_id"`
	SuiteRunID     string `json:"suite_run_id"` // "" for live traffic
	// Reviewer is a pseudonym: hex HMAC-SHA256 of the reviewer's identity
	// with the platform's PII key (ingest.ReviewerID), never the name.
	Reviewer string `json:"reviewer"`
	// ShownFirst is whose answer was shown as A (VerdictCandidate or
	// VerdictIncumbent); Choice the key pressed (ChoiceA, …); Label the
	// choice from the candidate's side (ReviewLabel).
	ShownFirst string `json:"shown_first"`
	Choice     string `json:"choice"`
	Label      string `json:"label"`
	// InclusionProb (0..1] is the probability the pair was in the review
	// sample: the judged sample's inclusion probability (1 in suite runs)
	// times SampleShare, the review sample's share of judged pairs.
	InclusionProb float64   `json:"inclusion_prob"`
	SampleShare   float64   `json:"sample_share"`
	ReviewedAt    time.Time `json:"reviewed_at"` // UTC, ms precision
}

// ReviewLabel undoes the shuffle: the label, from the candidate's side, of
// choice (ChoiceA, ChoiceB, ChoiceTie, ChoiceSkip) when shownFirst
// (VerdictCandidate or VerdictIncumbent) was shown as A. An unknown choice
// or shownFirst is an error.
func ReviewLabel(choice, shownFirst string) (string, error) {
	other := map[string]string{VerdictCandidate: VerdictIncumbent, VerdictIncumbent: VerdictCandidate}[shownFirst]
	if other == "" {
		return "", fmt.Errorf("store: review: shown first must be %q or %q, got %q", VerdictCandidate, VerdictIncumbent, shownFirst)
	}
	switch choice {
	case ChoiceA:
		return shownFirst, nil
	case ChoiceB:
		return other, nil
	case ChoiceTie:
		return VerdictTie, nil
	case ChoiceSkip:
		return ReviewSkip, nil
	}
	return "", fmt.Errorf("store: review: choice must be A, B, T or S, got %q", choice)
}

// Validate reports a review missing its key or reviewer, a choice or label
// that do not agree with shown_first, or an inclusion probability or share
// outside (0, 1].
func (r Review) Validate() error {
	var errs []error
	if r.RequestID == "" || r.Pipeline == "" || r.CandidateRunID == "" {
		errs = append(errs, errors.New("store: review: request, pipeline and candidate run are required"))
	}
	if r.Reviewer == "" {
		errs = append(errs, errors.New("store: review: reviewer is required"))
	}
	if want, err := ReviewLabel(r.Choice, r.ShownFirst); err != nil {
		errs = append(errs, err)
	} else if r.Label != want {
		errs = append(errs, fmt.Errorf("store: review: label %q does not follow from choice %s with %s shown first (want %q)", r.Label, r.Choice, r.ShownFirst, want))
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"inclusion_prob", r.InclusionProb}, {"sample_share", r.SampleShare}} {
		if !(v.v > 0 && v.v <= 1) {
			errs = append(errs, fmt.Errorf("store: review: %s must be in (0, 1], got %g", v.name, v.v))
		}
	}
	return errors.Join(errs...)
}

// ReviewWriter stores the review page's labels: the only write of the web UI,
// into its own table.
type ReviewWriter interface {
	// AddReview stores one review after r.Validate. ErrReviewed when the
	// reviewer already reviewed the pair (checked before the write; two
	// writes racing for one key keep the later, so a pair still counts
	// once per reviewer).
	AddReview(ctx context.Context, r Review) error
}

// ReviewReader reads the review sample and the reviews back.
type ReviewReader interface {
	// ReviewQueue returns the next pairs of the review sample q.Reviewer has
	// not reviewed, in an order random per reviewer, with the sample's size
	// and how many of it the reviewer did. An invalid q returns its Validate
	// error.
	ReviewQueue(ctx context.Context, q ReviewQueueQuery) (ReviewQueue, error)
	// ReviewedPairs returns the reviews q selects (skips left out), one row
	// per review and real judgment of its pair (a pair judged by two judges
	// gives two rows per review; a review whose pair has no judgment left
	// gives one row with an empty Judge), by (request, pipeline, candidate
	// run, reviewer, judge): one page of at most q.PageLimit() pairs after
	// q.After.
	ReviewedPairs(ctx context.Context, q ReviewedQuery) ([]ReviewedPair, error)
}

// ReviewQueueQuery selects the review sample: the real judged pairs of
// judgments — not canaries, and only those the judge decided (win, tie, loss,
// inconsistent; an error, a live pair left unjudged or decided without the
// judge (a note) has no verdict to check) — each in the sample with
// probability Share, decided by a hash of its key (cityHash64 of request,
// pipeline and candidate run below Share × 2⁶⁴), so the sample is the same on
// every read and for every reviewer. SuiteRunID narrows it to one suite
// run's pairs, Live to live traffic's (suite run "").
type ReviewQueueQuery struct {
	Reviewer   string
	Share      float64 // (0, 1]
	SuiteRunID string
	Live       bool
	// Limit is how many unreviewed pairs to return: 0 gives 1, at most
	// MaxReviewQueueLimit.
	Limit int
}

// DefaultReviewShare is the review sample's default share of the judged
// pairs (web.review.sample_share): a 300-case suite run gives about 60 pairs
// to review, above the gate policy's default judge.min_reviews (50).
const DefaultReviewShare = 0.2

// MaxReviewQueueLimit caps ReviewQueueQuery.Limit.
const MaxReviewQueueLimit = 100

// Validate reports a query without a reviewer, a share outside (0, 1], both
// scopes at once or a negative limit.
func (q ReviewQueueQuery) Validate() error {
	switch {
	case q.Reviewer == "":
		return errors.New("store: review queue: reviewer is required")
	case !(q.Share > 0 && q.Share <= 1):
		return fmt.Errorf("store: review queue: share must be in (0, 1], got %g", q.Share)
	case q.SuiteRunID != "" && q.Live:
		return errors.New("store: review queue: name a suite run or live traffic, not both")
	case q.Limit < 0:
		return fmt.Errorf("store: review queue: limit must be >= 0, got %d", q.Limit)
	}
	return nil
}

// ReviewQueue is a reviewer's place in the review sample.
type ReviewQueue struct {
	Pairs    []ReviewPair `json:"pairs"`
	Sample   int64        `json:"sample"`   // pairs in the sample (with their request and both runs stored)
	Reviewed int64        `json:"reviewed"` // of them, reviewed or skipped by the reviewer
}

// ReviewPair is one pair to review: its key, the request's input (JSON chat
// messages, as stored) and the two answers.
type ReviewPair struct {
	RequestID      string `json:"request_id"`
	Pipeline       string `json:"pipeline"`
	CandidateRunID string `json:"candidate_run_id"`
	IncumbentRunID string `json:"incumbent_run_id"`
	SuiteRunID     string `json:"suite_run_id"`
	// JudgedProb is the probability the pair was judged (the largest of its
	// judgments'; 1 in suite runs).
	JudgedProb      float64 `json:"judged_prob"`
	Input           string  `json:"input"`
	CandidateAnswer string  `json:"candidate_answer"`
	IncumbentAnswer string  `json:"incumbent_answer"`
}

// Key is the pair's key.
func (p ReviewPair) Key() PairKey {
	return PairKey{RequestID: p.RequestID, Pipeline: p.Pipeline, CandidateRunID: p.CandidateRunID}
}

// ReviewedQuery selects reviews: all, or those of one suite run
// (SuiteRunID), of live traffic (Live), joined with one judge's judgments
// (Judge: judgments.judge; reviews of pairs that judge did not judge are left
// out). Texts adds the request's input and both answers.
//
// The rows come a page of whole pairs at a time: the first Limit reviewed
// pairs in key order (request, pipeline, candidate run) after After (the
// zero key: from the first). A page with fewer than Limit pairs is the last;
// else the next page starts after its last row's pair (eval.ReadReviews
// reads them all).
type ReviewedQuery struct {
	SuiteRunID string
	Live       bool
	Judge      string
	Texts      bool
	// Limit caps the pairs of a page: 0 gives MaxReviewedPairs, at most that.
	Limit int
	After PairKey
}

// MaxReviewedPairs caps ReviewedQuery.Limit: the reviewed pairs of one page.
const MaxReviewedPairs = 10_000

// PageLimit is q's effective page size in pairs (Limit, 0 or above the cap
// read as MaxReviewedPairs).
func (q ReviewedQuery) PageLimit() int {
	if q.Limit <= 0 || q.Limit > MaxReviewedPairs {
		return MaxReviewedPairs
	}
	return q.Limit
}

// ReviewedPair is one review with one real judgment of its pair, the
// pair's regression set ("" for live traffic) and its request's segments;
// with ReviewedQuery.Texts also the prompt and the answers.
type ReviewedPair struct {
	RequestID      string    `json:"request_id"`
	Pipeline       string    `json:"pipeline"`
	CandidateRunID string    `json:"candidate_run_id"`
	IncumbentRunID string    `json:"incumbent_run_id"`
	SuiteRunID     string    `json:"suite_run_id"`
	SetName        string    `json:"set_name"`
	Reviewer       string    `json:"reviewer"`
	ShownFirst     string    `json:"shown_first"`
	Label          string    `json:"label"`
	InclusionProb  float64   `json:"inclusion_prob"`
	ReviewedAt     time.Time `json:"reviewed_at"`
	// The judgment ("" when the pair has none left): the judge (model id),
	// its worker and prompt version, its outcome from the candidate's side
	// and each order's verdict.
	Judge         string `json:"judge"`
	JudgeWorker   string `json:"judge_worker"`
	PromptVersion string `json:"prompt_version"`
	Outcome       string `json:"outcome"`
	Verdict1      string `json:"verdict_1"`
	Verdict2      string `json:"verdict_2"`
	// The request's segments (ingest/segment).
	Language     string `json:"language"`
	HasTable     bool   `json:"has_table"`
	HasCode      bool   `json:"has_code"`
	LengthBucket string `json:"length_bucket"`
	// With ReviewedQuery.Texts.
	Input           string `json:"input"`
	CandidateAnswer string `json:"candidate_answer"`
	IncumbentAnswer string `json:"incumbent_answer"`
}

// Key is the pair's key.
func (p ReviewedPair) Key() PairKey {
	return PairKey{RequestID: p.RequestID, Pipeline: p.Pipeline, CandidateRunID: p.CandidateRunID}
}

// AddReview implements ReviewWriter.
func (s *sqlStore) AddReview(ctx context.Context, r Review) error {
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("store: add review: %w", err)
	}
	if err := r.Validate(); err != nil {
		return err
	}
	type count struct {
		N int64 `json:"n"`
	}
	p := Params{}.Str("request", r.RequestID).Str("pipeline", r.Pipeline).Str("run", r.CandidateRunID).Str("reviewer", r.Reviewer)
	rows, err := queryRows[count](ctx, s.t, fmt.Sprintf(`SELECT count() AS n FROM %s.reviews
WHERE request_id = {request:String} AND pipeline = {pipeline:String} AND candidate_run_id = {run:String} AND reviewer = {reviewer:String}`, s.db), p)
	if err != nil {
		return fmt.Errorf("store: add review: look up earlier reviews: %w", err)
	}
	if len(rows) > 0 && rows[0].N > 0 {
		return ErrReviewed
	}
	r.ReviewedAt = r.ReviewedAt.UTC().Truncate(time.Millisecond)
	return insert(ctx, s, "reviews", []Review{r})
}

// decidedOutcomes is the SQL list of outcomes a review can check.
var decidedOutcomes = "('" + strings.Join([]string{JudgmentWin, JudgmentTie, JudgmentLoss, JudgmentInconsistent}, "', '") + "')"

// reviewSample is the WITH clause of q's review sample: pairs (real judged
// pairs in the sample, with their request and both runs stored) and mine
// (the pairs q.Reviewer reviewed).
func (s *sqlStore) reviewSample(q ReviewQueueQuery) (string, Params) {
	p := Params{}.Str("reviewer", q.Reviewer)
	scope := ""
	switch {
	case q.SuiteRunID != "":
		scope = " AND suite_run_id = {suite:String}"
		p.Str("suite", q.SuiteRunID)
	case q.Live:
		scope = " AND suite_run_id = ''"
	}
	having := ""
	if q.Share < 1 {
		// cityHash64 is uniform on UInt64: below share × 2⁶⁴ with probability share.
		having = "HAVING cityHash64(request_id, pipeline, candidate_run_id) < {threshold:UInt64}"
		p["threshold"] = strconv.FormatUint(uint64(math.Ldexp(q.Share, 64)), 10)
	}
	return fmt.Sprintf(`WITH
judged AS (
    SELECT request_id, pipeline, candidate_run_id,
        any(j_inc) AS incumbent_run_id, any(j_suite) AS suite_run_id, max(j_prob) AS judged_prob
    FROM (SELECT request_id, pipeline, candidate_run_id, incumbent_run_id AS j_inc, suite_run_id AS j_suite, inclusion_prob AS j_prob
        FROM %[1]s.judgments FINAL
        WHERE canary = '' AND note = '' AND outcome IN %[2]s%[3]s)
    GROUP BY request_id, pipeline, candidate_run_id
    %[4]s
),
pairs AS (
    SELECT * FROM judged
    WHERE request_id IN (SELECT request_id FROM %[1]s.requests WHERE request_id IN (SELECT request_id FROM judged))
      AND candidate_run_id IN (SELECT run_id FROM %[1]s.runs WHERE run_id IN (SELECT candidate_run_id FROM judged))
      AND incumbent_run_id IN (SELECT run_id FROM %[1]s.runs WHERE run_id IN (SELECT incumbent_run_id FROM judged))
),
mine AS (
    SELECT request_id, pipeline, candidate_run_id FROM %[1]s.reviews FINAL WHERE reviewer = {reviewer:String}
)
`, s.db, decidedOutcomes, scope, having), p
}

// ReviewQueue implements ReviewReader.
func (s *sqlStore) ReviewQueue(ctx context.Context, q ReviewQueueQuery) (ReviewQueue, error) {
	if err := s.check(ctx); err != nil {
		return ReviewQueue{}, fmt.Errorf("store: review queue: %w", err)
	}
	if err := q.Validate(); err != nil {
		return ReviewQueue{}, err
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = 1
	case limit > MaxReviewQueueLimit:
		limit = MaxReviewQueueLimit
	}
	with, p := s.reviewSample(q)
	type counts struct {
		Sample   int64 `json:"sample"`
		Reviewed int64 `json:"reviewed"`
	}
	cs, err := queryRows[counts](ctx, s.t, with+`SELECT count() AS sample,
    countIf((request_id, pipeline, candidate_run_id) IN (SELECT request_id, pipeline, candidate_run_id FROM mine)) AS reviewed
FROM pairs`, p)
	if err != nil {
		return ReviewQueue{}, fmt.Errorf("store: review queue: count the sample: %w", err)
	}
	out := ReviewQueue{Pairs: []ReviewPair{}}
	if len(cs) > 0 {
		out.Sample, out.Reviewed = cs[0].Sample, cs[0].Reviewed
	}
	if out.Reviewed >= out.Sample {
		return out, nil
	}
	pairs, err := queryRows[ReviewPair](ctx, s.t, with+fmt.Sprintf(`, next AS (
    SELECT * FROM pairs
    WHERE (request_id, pipeline, candidate_run_id) NOT IN (SELECT request_id, pipeline, candidate_run_id FROM mine)
    ORDER BY cityHash64(request_id, pipeline, candidate_run_id, {reviewer:String}), request_id, pipeline, candidate_run_id
    LIMIT %[2]d
)
SELECT n.request_id AS request_id, n.pipeline AS pipeline, n.candidate_run_id AS candidate_run_id,
    n.incumbent_run_id AS incumbent_run_id, n.suite_run_id AS suite_run_id, n.judged_prob AS judged_prob,
    q.input AS input, c.final_output AS candidate_answer, i.final_output AS incumbent_answer
FROM next AS n
INNER JOIN (SELECT request_id, any(input) AS input FROM %[1]s.requests FINAL WHERE request_id IN (SELECT request_id FROM next) GROUP BY request_id) AS q
    ON q.request_id = n.request_id
INNER JOIN (SELECT run_id, any(final_output) AS final_output FROM %[1]s.runs FINAL WHERE run_id IN (SELECT candidate_run_id FROM next) GROUP BY run_id) AS c
    ON c.run_id = n.candidate_run_id
INNER JOIN (SELECT run_id, any(final_output) AS final_output FROM %[1]s.runs FINAL WHERE run_id IN (SELECT incumbent_run_id FROM next) GROUP BY run_id) AS i
    ON i.run_id = n.incumbent_run_id
ORDER BY cityHash64(n.request_id, n.pipeline, n.candidate_run_id, {reviewer:String}), n.request_id, n.pipeline, n.candidate_run_id`, s.db, limit), p)
	if err != nil {
		return ReviewQueue{}, fmt.Errorf("store: review queue: %w", err)
	}
	out.Pairs = pairs
	return out, nil
}

// ReviewedPairs implements ReviewReader.
func (s *sqlStore) ReviewedPairs(ctx context.Context, q ReviewedQuery) ([]ReviewedPair, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: reviewed pairs: %w", err)
	}
	if q.SuiteRunID != "" && q.Live {
		return nil, errors.New("store: reviewed pairs: name a suite run or live traffic, not both")
	}
	if q.Limit < 0 {
		return nil, fmt.Errorf("store: reviewed pairs: limit must be >= 0, got %d", q.Limit)
	}
	p := Params{}
	where := "label != '" + ReviewSkip + "'"
	switch {
	case q.SuiteRunID != "":
		where += " AND suite_run_id = {suite:String}"
		p.Str("suite", q.SuiteRunID)
	case q.Live:
		where += " AND suite_run_id = ''"
	}
	after := ""
	if q.After != (PairKey{}) {
		after = " AND (request_id, pipeline, candidate_run_id) > ({after_req:String}, {after_pipe:String}, {after_cand:String})"
		p.Str("after_req", q.After.RequestID).Str("after_pipe", q.After.Pipeline).Str("after_cand", q.After.CandidateRunID)
	}
	// The page's pairs: the first PageLimit reviewed pairs after After.
	where = fmt.Sprintf(`%[2]s AND (request_id, pipeline, candidate_run_id) IN (
    SELECT request_id, pipeline, candidate_run_id FROM %[1]s.reviews FINAL WHERE %[2]s%[3]s
    GROUP BY request_id, pipeline, candidate_run_id ORDER BY request_id, pipeline, candidate_run_id LIMIT %[4]d)`, s.db, where, after, q.PageLimit())
	join, judge := "LEFT JOIN", ""
	if q.Judge != "" {
		join, judge = "INNER JOIN", " AND judge = {judge:String}"
		p.Str("judge", q.Judge)
	}
	texts, textJoins, input := "", "", ""
	if q.Texts {
		input = "any(input) AS input, "
		texts = ", q.input AS input, c.final_output AS candidate_answer, i.final_output AS incumbent_answer"
		textJoins = fmt.Sprintf(`
LEFT JOIN (SELECT run_id, any(final_output) AS final_output FROM %[1]s.runs FINAL WHERE run_id IN (SELECT candidate_run_id FROM r) GROUP BY run_id) AS c
    ON c.run_id = r.candidate_run_id
LEFT JOIN (SELECT run_id, any(final_output) AS final_output FROM %[1]s.runs FINAL WHERE run_id IN (SELECT incumbent_run_id FROM r) GROUP BY run_id) AS i
    ON i.run_id = r.incumbent_run_id`, s.db)
	}
	rows, err := queryRows[ReviewedPair](ctx, s.t, fmt.Sprintf(`WITH r AS (SELECT * FROM %[1]s.reviews FINAL WHERE %[2]s)
SELECT r.request_id AS request_id, r.pipeline AS pipeline, r.candidate_run_id AS candidate_run_id,
    r.incumbent_run_id AS incumbent_run_id, r.suite_run_id AS suite_run_id, sr.set_name AS set_name,
    r.reviewer AS reviewer, r.shown_first AS shown_first, r.label AS label, r.inclusion_prob AS inclusion_prob,
    r.reviewed_at AS reviewed_at,
    j.judge AS judge, j.judge_worker AS judge_worker, j.prompt_version AS prompt_version, j.outcome AS outcome,
    j.verdict_1 AS verdict_1, j.verdict_2 AS verdict_2,
    q.language AS language, q.has_table AS has_table, q.has_code AS has_code, q.length_bucket AS length_bucket%[3]s
FROM r
%[4]s (SELECT request_id, pipeline, candidate_run_id, judge, judge_worker, prompt_version, outcome, verdict_1, verdict_2
    FROM %[1]s.judgments FINAL WHERE canary = '' AND note = '' AND outcome IN %[5]s%[6]s
      AND request_id IN (SELECT request_id FROM r)) AS j
    ON j.request_id = r.request_id AND j.pipeline = r.pipeline AND j.candidate_run_id = r.candidate_run_id
LEFT JOIN (SELECT suite_run_id, any(set_name) AS set_name FROM %[1]s.suite_runs FINAL WHERE suite_run_id IN (SELECT suite_run_id FROM r) GROUP BY suite_run_id) AS sr
    ON sr.suite_run_id = r.suite_run_id
LEFT JOIN (SELECT request_id, %[8]sany(language) AS language, any(has_table) AS has_table, any(has_code) AS has_code,
        any(length_bucket) AS length_bucket
    FROM %[1]s.requests FINAL WHERE request_id IN (SELECT request_id FROM r) GROUP BY request_id) AS q
    ON q.request_id = r.request_id%[7]s
ORDER BY request_id, pipeline, candidate_run_id, reviewer, judge`, s.db, where, texts, join, decidedOutcomes, judge, textJoins, input), p)
	if err != nil {
		return nil, fmt.Errorf("store: reviewed pairs: %w", err)
	}
	return rows, nil
}

// The SQL stores take reviews: they have both roles.
var (
	_ ReviewWriter = (*sqlStore)(nil)
	_ ReviewReader = (*sqlStore)(nil)
)
