package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// SequenceStart is when a candidate version's live sequence started: the
// start of the earliest live run (suite_run_id "", mode candidate) of that
// (pipeline, version) the store recorded (table live_sequences). A live
// verdict reads the version's runs from StartedAt on, whatever window a page
// looks at.
type SequenceStart struct {
	Pipeline        string    `json:"pipeline"`
	PipelineVersion string    `json:"pipeline_version"`
	StartedAt       time.Time `json:"started_at"`   // UTC
	FirstRunID      string    `json:"first_run_id"` // the run that started it
}

// LiveQuery selects one candidate version's live traffic: its live runs
// started in [From, To) (LiveObservations) or the production requests
// received in [From, To) (LiveCoverage). Judgments() is the query of its
// live judgments judged in [From, To) (LiveJudgeStats).
type LiveQuery struct {
	Pipeline        string
	PipelineVersion string
	From, To        time.Time
}

// Validate reports a query without a pipeline or with an empty window.
func (q LiveQuery) Validate() error {
	switch {
	case q.Pipeline == "":
		return errors.New("store: live: name a candidate pipeline")
	case q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From):
		return errors.New("store: live: the window needs a start before its end")
	}
	return nil
}

// LiveObservation is one production request of a live sequence: the first
// live run of the candidate version on it that was neither cancelled (a stop:
// owed work, shadowed again) nor skipped (the daily shadow cap), with the
// incumbent's run and the candidate run's pairwise judgment when there is
// one. Money is USD, latencies ms, times UTC.
type LiveObservation struct {
	RequestID      string    `json:"request_id"`
	CandidateRunID string    `json:"candidate_run_id"`
	StartedAt      time.Time `json:"started_at"` // the candidate run's start
	Status         string    `json:"status"`     // the candidate run's status (StatusOK, StatusError, …)
	CostUSD        float64   `json:"cost_usd"`
	LatencyMs      float64   `json:"latency_ms"`
	// IncumbentFound is false when the request has no live incumbent run;
	// the Incumbent* fields are then zero.
	IncumbentFound     bool    `json:"incumbent_found"`
	IncumbentStatus    string  `json:"incumbent_status"`
	IncumbentCostUSD   float64 `json:"incumbent_cost_usd"`
	IncumbentLatencyMs float64 `json:"incumbent_latency_ms"`
	// Outcome is the earliest real (not canary) live judgment of the
	// candidate run (JudgmentWin, …), "" when it has none; InclusionProb,
	// JudgedAt and Judge are that judgment's.
	Outcome       string    `json:"outcome"`
	InclusionProb float64   `json:"inclusion_prob"`
	JudgedAt      time.Time `json:"judged_at"`
	Judge         string    `json:"judge"`
	// The request's segment columns (ingest/segment) and app; zero when its
	// row is missing.
	Language     string `json:"language"`
	HasTable     bool   `json:"has_table"`
	HasCode      bool   `json:"has_code"`
	LengthBucket string `json:"length_bucket"`
	App          string `json:"app"`
}

// LivePage is one page of a sequence's observations: those after the
// observation (AfterAt, AfterID) in (start, request id) order, at most Limit
// (0 gives DefaultLivePage, at most MaxLivePage). A reader replays a
// sequence page by page, so its memory stays bounded however long it runs.
type LivePage struct {
	AfterAt time.Time
	AfterID string
	Limit   int
}

// Limits of LivePage.Limit.
const (
	DefaultLivePage = 50_000
	MaxLivePage     = 100_000
)

func (p LivePage) limit() int {
	switch {
	case p.Limit <= 0:
		return DefaultLivePage
	case p.Limit > MaxLivePage:
		return MaxLivePage
	}
	return p.Limit
}

// livePageSlack is how far before a page's cursor the runs of its requests
// are read: a request's observation is its first run, so a page re-reads the
// runs that started up to a day before the cursor to tell a request seen
// already from a new one (a second live run of one request and version more
// than a day after its first would be read as a new observation; the shadow
// workers never start one: store-first work and RunLookup skip finished
// runs).
const livePageSlack = 24 * time.Hour

// Coverage dimensions (CoverageCell.Dimension): one partition of the
// requests each, so a chi-square test can compare its cells.
const (
	CoverageAll   = "all"   // every request; Value ""
	CoverageLang  = "lang"  // Value: ISO 639-1 language, "" when undetermined
	CoverageLen   = "len"   // Value: length bucket ("0-127", …)
	CoverageTable = "table" // Value: "yes" or "no"
	CoverageCode  = "code"  // Value: "yes" or "no"
	CoverageApp   = "app"   // Value: the app
)

// CoverageCell counts, for one cell of one dimension, what became of the
// production exchanges received in a window, for one candidate version. The
// stages are nested: Recorded ⊇ Shadowed ⊇ Answered ⊇ Judged.
type CoverageCell struct {
	Dimension string `json:"dimension"` // CoverageAll, CoverageLang, …
	Value     string `json:"value"`
	// Recorded are the request rows (source tap or replay) received in the
	// window: every exchange offered that left a row.
	Recorded int64 `json:"recorded"`
	// Shed are the recorded rows whose not_shadowed column names a reason
	// (a proxy's row of an exchange it did not shadow, Request.NotShadowed).
	Shed int64 `json:"shed"`
	// Shadowed have a live run of the version that is neither cancelled nor
	// skipped: an observation of the sequence (failed runs included).
	Shadowed int64 `json:"shadowed"`
	// Skipped have only skipped runs (the daily shadow cap).
	Skipped int64 `json:"skipped"`
	// Owed have only cancelled runs, or pending shadow work: a stop, not a
	// loss; they are shadowed again.
	Owed int64 `json:"owed"`
	// Missing have neither a run, a reason, nor pending work: lost.
	Missing int64 `json:"missing"`
	// Answered are shadowed with both answers to judge: the candidate run ok
	// (or answered by its fallback after an unparsable plan) and the
	// incumbent's ok.
	Answered int64 `json:"answered"`
	// Judged have a real live judgment with a verdict (win, tie, loss,
	// inconsistent); JudgeErrors one whose outcome is error; NotJudged were
	// sampled but never judged (JudgmentUnjudged: the daily judge budget, a
	// full judging queue or a stop).
	Judged      int64 `json:"judged"`
	JudgeErrors int64 `json:"judge_errors"`
	NotJudged   int64 `json:"not_judged"`
}

// ReasonCount is how many recorded exchanges one reason kept from shadowing.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Coverage is one candidate version's coverage in one window: per dimension
// and cell (CoverageAll first, then by dimension and value) and the reasons
// of the shed rows, most first.
type Coverage struct {
	Cells   []CoverageCell `json:"cells"`
	Reasons []ReasonCount  `json:"reasons"`
}

// LiveReader reads what the live verdicts are computed from: the sequences'
// starts, each sequence's observations, its coverage and its judge's record
// (LiveJudgmentReader.LiveJudgeStats with LiveQuery.Judgments). The SQL
// stores (embedded and server) implement it.
type LiveReader interface {
	LiveJudgmentReader
	// SequenceStarts returns every recorded sequence, by pipeline, then
	// start, then version.
	SequenceStarts(ctx context.Context) ([]SequenceStart, error)
	// LiveObservations returns one page of q's observations, ordered by the
	// candidate run's start, then request id; fewer than the page's limit
	// means the last page. An invalid q returns its Validate error.
	LiveObservations(ctx context.Context, q LiveQuery, page LivePage) ([]LiveObservation, error)
	// LiveCoverage counts what became of the production exchanges received
	// in q's window, for q's candidate version. An invalid q returns its
	// Validate error.
	LiveCoverage(ctx context.Context, q LiveQuery) (Coverage, error)
}

var _ LiveReader = (*sqlStore)(nil)

// sequenceCache remembers, per (pipeline, version), the earliest start this
// store has recorded in live_sequences, so a writer records a sequence once
// and again only for a run stored out of order that started earlier.
type sequenceCache struct {
	mu    sync.Mutex
	start map[WorkKey]time.Time
}

// recordSequenceStarts writes a live_sequences row for each candidate
// version among runs' live candidate runs that started earlier than any this
// store recorded (every version the first time). A failed write returns the
// transport's error; the runs are stored, and a retry of the batch records
// the start.
func (s *sqlStore) recordSequenceStarts(ctx context.Context, runs []Run) error {
	first := map[WorkKey]Run{}
	for _, r := range runs {
		if r.Mode != ModeCandidate || r.SuiteRunID != "" {
			continue
		}
		k := WorkKey{Pipeline: r.Pipeline, PipelineVersion: r.PipelineVersion}
		if f, ok := first[k]; !ok || r.StartedAt.Before(f.StartedAt) {
			first[k] = r
		}
	}
	if len(first) == 0 {
		return nil
	}
	s.starts.mu.Lock()
	defer s.starts.mu.Unlock()
	var rows []SequenceStart
	for k, r := range first {
		if known, ok := s.starts.start[k]; ok && !r.StartedAt.Before(known) {
			continue
		}
		rows = append(rows, SequenceStart{Pipeline: k.Pipeline, PipelineVersion: k.PipelineVersion, StartedAt: r.StartedAt.UTC(), FirstRunID: r.RunID})
	}
	if len(rows) == 0 {
		return nil
	}
	if err := insert(ctx, s, "live_sequences", rows); err != nil {
		return err
	}
	if s.starts.start == nil {
		s.starts.start = map[WorkKey]time.Time{}
	}
	for _, r := range rows {
		s.starts.start[WorkKey{Pipeline: r.Pipeline, PipelineVersion: r.PipelineVersion}] = r.StartedAt
	}
	return nil
}

// SequenceStarts implements LiveReader.
func (s *sqlStore) SequenceStarts(ctx context.Context) ([]SequenceStart, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: sequence starts: %w", err)
	}
	rows, err := queryRows[SequenceStart](ctx, s.t, fmt.Sprintf(`SELECT pipeline, pipeline_version, first_at AS started_at, first_id AS first_run_id
FROM (
    SELECT pipeline, pipeline_version, min(started_at) AS first_at, argMin(first_run_id, started_at) AS first_id
    FROM %s.live_sequences
    GROUP BY pipeline, pipeline_version
)
ORDER BY pipeline, started_at, pipeline_version`, s.db))
	if err != nil {
		return nil, fmt.Errorf("store: sequence starts: %w", err)
	}
	return nilIfEmpty(rows), nil
}

// liveParams binds q's pipeline, version and window.
func liveParams(q LiveQuery) Params {
	return Params{}.Str("pipeline", q.Pipeline).Str("version", q.PipelineVersion).Time("from", q.From).Time("to", q.To)
}

// liveCandidateRuns is the condition of q's candidate version's live runs.
const liveCandidateRuns = "mode = 'candidate' AND suite_run_id = '' AND pipeline = {pipeline:String} AND pipeline_version = {version:String}"

// answeredStatuses are the candidate run statuses with an answer to judge:
// ok, and an unparsable plan the fallback answered.
var answeredStatuses = "('" + StatusOK + "', '" + StatusPlanUnparsable + "')"

// notObserved are the candidate run statuses that are no observation: a stop
// (owed, shadowed again) and a run skipped by the daily cap.
var notObserved = "('" + StatusCancelled + "', '" + StatusSkipped + "')"

// LiveObservations implements LiveReader with one statement per page.
func (s *sqlStore) LiveObservations(ctx context.Context, q LiveQuery, page LivePage) ([]LiveObservation, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: live observations: %w", err)
	}
	p := liveParams(q)
	from, having := "{from:DateTime64(3, 'UTC')}", ""
	if !page.AfterAt.IsZero() {
		p.Time("slack", page.AfterAt.Add(-livePageSlack)).Time("after", page.AfterAt).Str("after_id", page.AfterID)
		from = "greatest({from:DateTime64(3, 'UTC')}, {slack:DateTime64(3, 'UTC')})"
		having = "\n    HAVING (c_at, request_id) > ({after:DateTime64(3, 'UTC')}, {after_id:String})"
	}
	// The page first (the runs of the candidate version after the cursor);
	// the incumbent runs, judgments and request rows of its requests only.
	rows, err := queryRows[LiveObservation](ctx, s.t, fmt.Sprintf(`WITH page AS (
    SELECT request_id, argMin(run_id, (started_at, run_id)) AS c_run, min(started_at) AS c_at,
        argMin(status, (started_at, run_id)) AS c_status, argMin(cost_usd, (started_at, run_id)) AS c_cost,
        argMin(latency_ms, (started_at, run_id)) AS c_latency
    FROM %[1]s.runs FINAL
    WHERE %[2]s AND status NOT IN %[3]s
        AND started_at >= %[5]s AND started_at < {to:DateTime64(3, 'UTC')}
    GROUP BY request_id%[6]s
    ORDER BY c_at, request_id
    LIMIT %[4]d
)
SELECT c.request_id AS request_id, c.c_run AS candidate_run_id,
    c.c_at AS started_at, c.c_status AS status, c.c_cost AS cost_usd, c.c_latency AS latency_ms,
    toBool(i.found = 1) AS incumbent_found, i.i_status AS incumbent_status, i.i_cost AS incumbent_cost_usd,
    i.i_latency AS incumbent_latency_ms,
    j.j_outcome AS outcome, j.j_prob AS inclusion_prob, j.j_at AS judged_at, j.j_judge AS judge,
    q.language AS language, q.has_table AS has_table, q.has_code AS has_code, q.length_bucket AS length_bucket, q.app AS app
FROM page AS c
LEFT JOIN (
    SELECT request_id, toUInt8(1) AS found, argMin(status, (started_at, run_id)) AS i_status,
        argMin(cost_usd, (started_at, run_id)) AS i_cost, argMin(latency_ms, (started_at, run_id)) AS i_latency
    FROM %[1]s.runs FINAL
    WHERE mode = 'incumbent' AND suite_run_id = '' AND request_id IN (SELECT request_id FROM page)
    GROUP BY request_id
) AS i ON c.request_id = i.request_id
LEFT JOIN (
    SELECT candidate_run_id, argMin(outcome, judged_at) AS j_outcome, argMin(inclusion_prob, judged_at) AS j_prob,
        min(judged_at) AS j_at, argMin(judge, judged_at) AS j_judge
    FROM %[1]s.judgments FINAL
    WHERE suite_run_id = '' AND canary = '' AND pipeline = {pipeline:String} AND pipeline_version = {version:String}
        AND request_id IN (SELECT request_id FROM page)
    GROUP BY candidate_run_id
) AS j ON c.c_run = j.candidate_run_id
LEFT JOIN (
    SELECT request_id, language, has_table, has_code, length_bucket, app
    FROM %[1]s.requests FINAL
    WHERE request_id IN (SELECT request_id FROM page)
) AS q ON c.request_id = q.request_id
ORDER BY started_at, request_id`, s.db, liveCandidateRuns, notObserved, page.limit(), from, having), p)
	if err != nil {
		return nil, fmt.Errorf("store: live observations: %w", err)
	}
	return nilIfEmpty(rows), nil
}

// LiveCoverage implements LiveReader with two statements: the cells, then
// the reasons.
func (s *sqlStore) LiveCoverage(ctx context.Context, q LiveQuery) (Coverage, error) {
	var cov Coverage
	if err := q.Validate(); err != nil {
		return cov, err
	}
	if err := s.check(ctx); err != nil {
		return cov, fmt.Errorf("store: live coverage: %w", err)
	}
	recorded, recordedQ := recordedCond(""), recordedCond("q.")
	cells, err := queryRows[CoverageCell](ctx, s.t, fmt.Sprintf(`SELECT cell.1 AS dimension, cell.2 AS value,
    count() AS recorded,
    countIf(is_shed) AS shed,
    countIf(n_obs > 0) AS shadowed,
    countIf(n_obs = 0 AND n_skip > 0) AS skipped,
    countIf(n_obs = 0 AND n_skip = 0 AND (n_cancel > 0 OR is_pending = 1)) AS owed,
    countIf(n_obs = 0 AND n_skip = 0 AND n_cancel = 0 AND is_pending = 0 AND NOT is_shed) AS missing,
    countIf(is_answered) AS answered,
    countIf(is_answered AND j_out IN ('%[5]s', '%[6]s', '%[7]s', '%[8]s')) AS judged,
    countIf(is_answered AND j_out = '%[9]s') AS judge_errors,
    countIf(is_answered AND j_out = '%[22]s') AS not_judged
FROM (
    SELECT q.language AS language, q.length_bucket AS length_bucket, q.has_table AS has_table, q.has_code AS has_code,
        q.app AS app, q.not_shadowed != '' AS is_shed,
        r.observed AS n_obs, r.skipped AS n_skip, r.cancelled AS n_cancel, w.pending AS is_pending,
        r.observed > 0 AND r.r_status IN %[4]s AND i.i_status = '%[10]s' AS is_answered, j.j_outcome AS j_out
    FROM %[1]s.requests AS q FINAL
    LEFT JOIN (
        SELECT request_id, countIf(status NOT IN %[3]s) AS observed, countIf(status = '%[11]s') AS skipped,
            countIf(status = '%[12]s') AS cancelled,
            argMinIf(run_id, (started_at, run_id), status NOT IN %[3]s) AS r_run,
            argMinIf(status, (started_at, run_id), status NOT IN %[3]s) AS r_status
        FROM %[1]s.runs FINAL
        WHERE %[2]s AND request_id IN (SELECT request_id FROM %[1]s.requests WHERE %[13]s)
        GROUP BY request_id
    ) AS r ON q.request_id = r.request_id
    LEFT JOIN (
        SELECT request_id, argMin(status, (started_at, run_id)) AS i_status
        FROM %[1]s.runs FINAL
        WHERE mode = 'incumbent' AND suite_run_id = '' AND request_id IN (SELECT request_id FROM %[1]s.requests WHERE %[13]s)
        GROUP BY request_id
    ) AS i ON q.request_id = i.request_id
    LEFT JOIN (
        SELECT request_id, toUInt8(status = '%[14]s') AS pending
        FROM %[1]s.shadow_work FINAL
        WHERE pipeline = {pipeline:String} AND pipeline_version = {version:String}
            AND request_id IN (SELECT request_id FROM %[1]s.requests WHERE %[13]s)
    ) AS w ON q.request_id = w.request_id
    LEFT JOIN (
        SELECT candidate_run_id, argMin(outcome, judged_at) AS j_outcome
        FROM %[1]s.judgments FINAL
        WHERE suite_run_id = '' AND canary = '' AND pipeline = {pipeline:String} AND pipeline_version = {version:String}
        GROUP BY candidate_run_id
    ) AS j ON r.r_run = j.candidate_run_id
    WHERE %[15]s
)
ARRAY JOIN [('%[16]s', ''), ('%[17]s', language), ('%[18]s', length_bucket), ('%[19]s', if(has_table, 'yes', 'no')),
    ('%[20]s', if(has_code, 'yes', 'no')), ('%[21]s', app)] AS cell
GROUP BY dimension, value
ORDER BY dimension != '%[16]s', dimension, value`,
		s.db, liveCandidateRuns, notObserved, answeredStatuses,
		JudgmentWin, JudgmentTie, JudgmentLoss, JudgmentInconsistent, JudgmentError,
		StatusOK, StatusSkipped, StatusCancelled, recorded, WorkPending, recordedQ,
		CoverageAll, CoverageLang, CoverageLen, CoverageTable, CoverageCode, CoverageApp, JudgmentUnjudged), liveParams(q))
	if err != nil {
		return cov, fmt.Errorf("store: live coverage: %w", err)
	}
	reasons, err := queryRows[ReasonCount](ctx, s.t, fmt.Sprintf(`SELECT not_shadowed AS reason, count() AS count
FROM %s.requests FINAL
WHERE %s AND not_shadowed != ''
GROUP BY reason
ORDER BY count DESC, reason`, s.db, recorded), liveParams(q))
	if err != nil {
		return cov, fmt.Errorf("store: live coverage: reasons: %w", err)
	}
	cov.Cells, cov.Reasons = nilIfEmpty(cells), nilIfEmpty(reasons)
	return cov, nil
}

// recordedCond is the condition of the production requests received in a
// live query's window, their columns prefixed with prefix.
func recordedCond(prefix string) string {
	return fmt.Sprintf("%[1]ssource IN ('%[2]s', '%[3]s') AND %[1]sreceived_at >= {from:DateTime64(3, 'UTC')} AND %[1]sreceived_at < {to:DateTime64(3, 'UTC')}",
		prefix, SourceTap, SourceReplay)
}

// Judgments is the query of q's live judgments: its candidate version's,
// judged in q's window.
func (q LiveQuery) Judgments() LiveJudgmentQuery {
	return LiveJudgmentQuery{Pipeline: q.Pipeline, PipelineVersion: q.PipelineVersion, From: q.From, To: q.To}
}

// LatestSequences picks from starts, per pipeline, the sequence that started
// last (its newest version), by pipeline.
func LatestSequences(starts []SequenceStart) []SequenceStart {
	latest := map[string]SequenceStart{}
	for _, s := range starts {
		if l, ok := latest[s.Pipeline]; !ok || s.StartedAt.After(l.StartedAt) {
			latest[s.Pipeline] = s
		}
	}
	out := make([]SequenceStart, 0, len(latest))
	for _, s := range latest {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b SequenceStart) int { return strings.Compare(a.Pipeline, b.Pipeline) })
	return out
}
