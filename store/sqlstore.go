package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// sqlStore implements Store over a transport; all SQL text lives here and in
// migrations/, shared by both transports.
type sqlStore struct {
	t           transport
	db          string // quoted database identifier
	dbName      string // the database name unquoted
	cluster     string // ClickHouse cluster of Replicated/Distributed tables; "" for one node
	queryLimits queryLimits
	console     *consoleGuard
	consoleT    transport       // the console's own connection (console_dsn); nil: t (or a console worker on the embedded engine)
	workers     *consoleWorkers // the embedded engine's console workers; nil on a server
	workerWait  time.Duration   // how long a console statement may wait for its worker (consoleWorkerStart)
	log         *slog.Logger    // the console's audit lines and the store's warnings; nil discards
	stallAfter  time.Duration
	closed      atomic.Bool
	starts      sequenceCache // the live sequence starts this store recorded

	// Tests only: onWorker is called once a console statement has its worker
	// (before its checks), onStatement just before the statement runs.
	onWorker    func()
	onStatement func()
	onWorkerSQL func(sql string) // sees every statement sent to a console worker
}

// mutationTarget is what an ALTER of table names: db.table, or on a cluster
// its shard-local table on every node (Distributed tables take INSERTs and
// SELECTs but no ALTER … DELETE or TTL).
func (s *sqlStore) mutationTarget(table string) string {
	if s.cluster == "" {
		return s.db + "." + quoteIdent(table)
	}
	return s.db + "." + quoteIdent(table+localSuffix) + " ON CLUSTER " + quoteIdent(s.cluster)
}

var _ Store = (*sqlStore)(nil)

// quoteString renders s as a ClickHouse string literal. NUL becomes \0 (the
// embedded engine takes statements as C strings); other bytes pass unchanged.
func quoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// quoteIdent renders a validated name as a back-quoted identifier.
func quoteIdent(name string) string { return "`" + name + "`" }

// selectList renders the columns of T for a SELECT.
func selectList[T any]() string {
	cols := columnsOf[T]()
	for i, c := range cols {
		cols[i] = quoteIdent(c)
	}
	return strings.Join(cols, ", ")
}

func (s *sqlStore) check(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// insertSetting = insertSettingValue is set on every INSERT the store writes,
// on both transports: optimize_on_insert = 0, so a block is written as it
// came instead of being collapsed by its ReplacingMergeTree key first (the
// engine's default merges each block on insert). Every read of a latest value
// is FINAL or argMax, which collapse a key's rows within a part as across
// parts, so only the cost goes: about 0.93× the process CPU per copy on the
// intake's batch path (README, intake fifth round).
const (
	insertSetting      = "optimize_on_insert"
	insertSettingValue = 0
)

// insert writes rows of T into table: the transport's native batch (server) or
// one INSERT … FORMAT RowBinaryWithNamesAndTypes (embedded); the columns are
// T's json tags.
func insert[T any](ctx context.Context, s *sqlStore, table string, rows []T) error {
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("store: insert %s: %w", table, err)
	}
	if len(rows) == 0 {
		return nil
	}
	if err := s.t.insert(ctx, s.db, table, columnsOf[T](), rows); err != nil {
		return fmt.Errorf("store: insert %s: %w", table, err)
	}
	return nil
}

// InsertRequests implements Store.
func (s *sqlStore) InsertRequests(ctx context.Context, reqs []Request) error {
	return insert(ctx, s, "requests", reqs)
}

// InsertRuns implements Store.
// The first live run of a candidate version also records the start of its
// live sequence (live_sequences, recordSequenceStarts).
func (s *sqlStore) InsertRuns(ctx context.Context, runs []Run) error {
	if err := insert(ctx, s, "runs", runs); err != nil {
		return err
	}
	if err := s.recordSequenceStarts(ctx, runs); err != nil {
		return fmt.Errorf("store: insert runs: record live sequence starts: %w", err)
	}
	return nil
}

// InsertSteps implements Store.
func (s *sqlStore) InsertSteps(ctx context.Context, steps []Step) error {
	return insert(ctx, s, "steps", steps)
}

// InsertScores implements Store.
func (s *sqlStore) InsertScores(ctx context.Context, scores []Score) error {
	return insert(ctx, s, "scores", scores)
}

// InsertSuiteRuns implements Store.
func (s *sqlStore) InsertSuiteRuns(ctx context.Context, runs []SuiteRun) error {
	return insert(ctx, s, "suite_runs", runs)
}

// InsertCases implements Store.
func (s *sqlStore) InsertCases(ctx context.Context, cases []Case) error {
	return insert(ctx, s, "cases", cases)
}

// previewExpr computes TraceSummary.InputPreview in SQL, as InputPreview does in Go.
const previewExpr = `leftUTF8(if(empty(user_msgs), input, JSONExtractString(user_msgs[-1], 'content')), 200)`

const userMsgsExpr = `arrayFilter(m -> JSONExtractString(m, 'role') = 'user' AND JSONType(m, 'content') = 'String', JSONExtractArrayRaw(input))`

// runFiguresSQL aggregates the runs of the given requests (FINAL, so a
// re-delivered run counts once) into the figures of TraceSummary.
func (s *sqlStore) runFiguresSQL(requestIDs []string) (string, Params) {
	return fmt.Sprintf(`SELECT
    request_id,
    count() AS runs,
    maxIf(latency_ms, mode = 'incumbent') AS incumbent_ms,
    maxIf(latency_ms, mode = 'candidate') AS candidate_ms,
    sumIf(cost_usd, mode = 'incumbent') AS incumbent_cost_usd,
    sumIf(cost_usd, mode = 'candidate') AS candidate_cost_usd,
    arraySort(groupUniqArray(status)) AS statuses,
    countIf(input_reduced) AS input_reduced_runs
FROM %s.runs FINAL
WHERE request_id IN {ids:Array(String)}
GROUP BY request_id`, s.db), Params{}.Strs("ids", requestIDs)
}

// fillRunFigures sets each summary's run count, statuses, latencies (ms),
// costs (USD) and input-reduced runs from its runs, in one query over the
// page's request ids.
func (s *sqlStore) fillRunFigures(ctx context.Context, page []TraceSummary) error {
	if len(page) == 0 {
		return nil
	}
	ids := make([]string, len(page))
	for i, p := range page {
		ids[i] = p.RequestID
	}
	sql, p := s.runFiguresSQL(ids)
	figs, err := queryRows[TraceSummary](ctx, s.t, sql, p)
	if err != nil {
		return err
	}
	byID := make(map[string]TraceSummary, len(figs))
	for _, f := range figs {
		byID[f.RequestID] = f
	}
	for i := range page {
		if f, ok := byID[page[i].RequestID]; ok {
			page[i].Runs, page[i].Statuses = f.Runs, f.Statuses
			page[i].IncumbentMs, page[i].CandidateMs = f.IncumbentMs, f.CandidateMs
			page[i].IncumbentCostUSD, page[i].CandidateCostUSD = f.IncumbentCostUSD, f.CandidateCostUSD
			page[i].InputReducedRuns = f.InputReducedRuns
		}
	}
	return nil
}

// GetTrace implements Store. Runs: incumbent first, then by pipeline name (run_id
// breaks ties); steps by (run_id, index); scores by (suite_run_id, run_id, grader).
func (s *sqlStore) GetTrace(ctx context.Context, requestID string) (Trace, error) {
	if err := s.check(ctx); err != nil {
		return Trace{}, fmt.Errorf("store: get trace: %w", err)
	}
	id := Params{}.Str("id", requestID)
	reqs, err := queryRows[Request](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.requests FINAL WHERE request_id = {id:String} LIMIT 1", selectList[Request](), s.db), id)
	if err != nil {
		return Trace{}, fmt.Errorf("store: get trace %q: request: %w", requestID, err)
	}
	if len(reqs) == 0 {
		return Trace{}, fmt.Errorf("store: get trace %q: %w", requestID, ErrNotFound)
	}
	t := Trace{Request: reqs[0]}
	if t.Runs, err = queryRows[Run](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.runs FINAL WHERE request_id = {id:String} ORDER BY mode != 'incumbent', pipeline, run_id",
		selectList[Run](), s.db), id); err != nil {
		return Trace{}, fmt.Errorf("store: get trace %q: runs: %w", requestID, err)
	}
	// The runs' ids as a constant set: the steps' primary key prunes on it, where
	// a subquery on runs would scan runs again.
	runIDs := make([]string, len(t.Runs))
	for i, r := range t.Runs {
		runIDs[i] = r.RunID
	}
	if len(runIDs) > 0 {
		if t.Steps, err = queryRows[Step](ctx, s.t, fmt.Sprintf(
			"SELECT %s FROM %s.steps FINAL WHERE run_id IN {ids:Array(String)} ORDER BY run_id, `index`",
			selectList[Step](), s.db), Params{}.Strs("ids", runIDs)); err != nil {
			return Trace{}, fmt.Errorf("store: get trace %q: steps: %w", requestID, err)
		}
	}
	if t.Scores, err = queryRows[Score](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.scores FINAL WHERE request_id = {id:String} ORDER BY suite_run_id, run_id, grader",
		selectList[Score](), s.db), id); err != nil {
		return Trace{}, fmt.Errorf("store: get trace %q: scores: %w", requestID, err)
	}
	t.Runs, t.Steps, t.Scores = nilIfEmpty(t.Runs), nilIfEmpty(t.Steps), nilIfEmpty(t.Scores)
	return t, nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// ListSuiteRuns implements Store: newest started_at first, suite_run_id
// descending on ties, at most ClampLimit(limit).
func (s *sqlStore) ListSuiteRuns(ctx context.Context, limit int) ([]SuiteRun, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list suite runs: %w", err)
	}
	rows, err := queryRows[SuiteRun](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.suite_runs FINAL ORDER BY started_at DESC, suite_run_id DESC LIMIT %d",
		selectList[SuiteRun](), s.db, ClampLimit(limit)))
	if err != nil {
		return nil, fmt.Errorf("store: list suite runs: %w", err)
	}
	return rows, nil
}

// GetSuiteRun implements Store.
func (s *sqlStore) GetSuiteRun(ctx context.Context, suiteRunID string) (SuiteRun, error) {
	if err := s.check(ctx); err != nil {
		return SuiteRun{}, fmt.Errorf("store: get suite run: %w", err)
	}
	rows, err := queryRows[SuiteRun](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.suite_runs FINAL WHERE suite_run_id = {id:String} LIMIT 1",
		selectList[SuiteRun](), s.db), Params{}.Str("id", suiteRunID))
	if err != nil {
		return SuiteRun{}, fmt.Errorf("store: get suite run %q: %w", suiteRunID, err)
	}
	if len(rows) == 0 {
		return SuiteRun{}, fmt.Errorf("store: get suite run %q: %w", suiteRunID, ErrNotFound)
	}
	return rows[0], nil
}

// keysetCond is the WHERE condition of a newest-first page that starts after the
// cursor (before, beforeID): strictly older, or as old with a smaller request
// id. It binds before and before_id in p.
func keysetCond(p Params, before time.Time, beforeID string) string {
	p.Time("before", before)
	if beforeID == "" {
		return "received_at < {before:DateTime64(3, 'UTC')}"
	}
	p.Str("before_id", beforeID)
	return "(received_at < {before:DateTime64(3, 'UTC')} OR (received_at = {before:DateTime64(3, 'UTC')} AND request_id < {before_id:String}))"
}
