package store

import (
	"context"
	"fmt"
	"time"
)

// EvalHistory is the eval package's read side: a suite run's case snapshot and
// scores, and the suite run history a report compares against. The SQL stores
// (embedded and server) implement it; use a type assertion on a Store.
type EvalHistory interface {
	// ListCases returns the case snapshot of a suite run, by case id.
	// An unknown suite run gives an empty slice.
	ListCases(ctx context.Context, suiteRunID string) ([]Case, error)
	// ListSuiteScores returns every score of a suite run, by (case id,
	// pipeline, grader).
	ListSuiteScores(ctx context.Context, suiteRunID string) ([]Score, error)
	// PreviousSuiteRun returns the newest suite run with status "done" of
	// setName that had candidate among its candidates and started before
	// before; ErrNotFound when there is none.
	PreviousSuiteRun(ctx context.Context, setName, candidate string, before time.Time) (SuiteRun, error)
	// ListSuiteRunRuns returns every run of a suite run, by (request id, pipeline).
	ListSuiteRunRuns(ctx context.Context, suiteRunID string) ([]Run, error)
	// ListConductorSteps returns the planning steps (role "conductor") of a
	// suite run's runs, by (run id, index).
	ListConductorSteps(ctx context.Context, suiteRunID string) ([]Step, error)
	// ListSetSources returns captured requests (sources tap and replay) that
	// have an incumbent run with status ok and an answer, newest first, with
	// that answer (the latest such run when several).
	ListSetSources(ctx context.Context, q SetSourceQuery) ([]SetSource, error)
}

// SetSourceQuery selects ListSetSources' requests. Zero times mean unbounded.
type SetSourceQuery struct {
	Since time.Time // received at or after (UTC)
	Until time.Time // received before (UTC)
	// Limit caps the requests returned: 0 gives 10,000; at most 100,000.
	Limit int
}

// Limits of SetSourceQuery.Limit.
const (
	DefaultSetSourceLimit = 10_000
	MaxSetSourceLimit     = 100_000
)

func (q SetSourceQuery) limit() int {
	switch {
	case q.Limit <= 0:
		return DefaultSetSourceLimit
	case q.Limit > MaxSetSourceLimit:
		return MaxSetSourceLimit
	}
	return q.Limit
}

// SetSource is a captured request with its incumbent's answer.
type SetSource struct {
	Request
	IncumbentPipeline string `json:"incumbent_pipeline"`
	IncumbentOutput   string `json:"incumbent_output"`
}

var _ EvalHistory = (*sqlStore)(nil)

// ListCases implements EvalHistory.
func (s *sqlStore) ListCases(ctx context.Context, suiteRunID string) ([]Case, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list cases: %w", err)
	}
	rows, err := queryRows[Case](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.cases FINAL WHERE suite_run_id = {id:String} ORDER BY case_id",
		selectList[Case](), s.db), Params{}.Str("id", suiteRunID))
	if err != nil {
		return nil, fmt.Errorf("store: list cases of %q: %w", suiteRunID, err)
	}
	if rows == nil {
		rows = []Case{}
	}
	return rows, nil
}

// ListSuiteScores implements EvalHistory.
func (s *sqlStore) ListSuiteScores(ctx context.Context, suiteRunID string) ([]Score, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list suite scores: %w", err)
	}
	rows, err := queryRows[Score](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.scores FINAL WHERE suite_run_id = {id:String} ORDER BY case_id, pipeline, grader",
		selectList[Score](), s.db), Params{}.Str("id", suiteRunID))
	if err != nil {
		return nil, fmt.Errorf("store: list scores of %q: %w", suiteRunID, err)
	}
	if rows == nil {
		rows = []Score{}
	}
	return rows, nil
}

// PreviousSuiteRun implements EvalHistory.
func (s *sqlStore) PreviousSuiteRun(ctx context.Context, setName, candidate string, before time.Time) (SuiteRun, error) {
	if err := s.check(ctx); err != nil {
		return SuiteRun{}, fmt.Errorf("store: previous suite run: %w", err)
	}
	rows, err := queryRows[SuiteRun](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.suite_runs FINAL WHERE set_name = {set:String} AND has(candidates, {candidate:String}) AND status = 'done'"+
			" AND started_at < {before:DateTime64(3, 'UTC')} ORDER BY started_at DESC, suite_run_id DESC LIMIT 1",
		selectList[SuiteRun](), s.db), Params{}.Str("set", setName).Str("candidate", candidate).Time("before", before))
	if err != nil {
		return SuiteRun{}, fmt.Errorf("store: previous suite run of %q/%q: %w", setName, candidate, err)
	}
	if len(rows) == 0 {
		return SuiteRun{}, fmt.Errorf("store: previous suite run of %q/%q: %w", setName, candidate, ErrNotFound)
	}
	return rows[0], nil
}

// ListSuiteRunRuns implements EvalHistory.
func (s *sqlStore) ListSuiteRunRuns(ctx context.Context, suiteRunID string) ([]Run, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list suite run runs: %w", err)
	}
	rows, err := queryRows[Run](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.runs FINAL WHERE suite_run_id = {id:String} ORDER BY request_id, pipeline",
		selectList[Run](), s.db), Params{}.Str("id", suiteRunID))
	if err != nil {
		return nil, fmt.Errorf("store: list runs of suite run %q: %w", suiteRunID, err)
	}
	if rows == nil {
		rows = []Run{}
	}
	return rows, nil
}

// ListConductorSteps implements EvalHistory.
func (s *sqlStore) ListConductorSteps(ctx context.Context, suiteRunID string) ([]Step, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list conductor steps: %w", err)
	}
	rows, err := queryRows[Step](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.steps FINAL WHERE role = 'conductor' AND run_id IN (SELECT run_id FROM %s.runs FINAL WHERE suite_run_id = {id:String}) ORDER BY run_id, index",
		selectList[Step](), s.db, s.db), Params{}.Str("id", suiteRunID))
	if err != nil {
		return nil, fmt.Errorf("store: list conductor steps of suite run %q: %w", suiteRunID, err)
	}
	if rows == nil {
		rows = []Step{}
	}
	return rows, nil
}

// ListSetSources implements EvalHistory.
func (s *sqlStore) ListSetSources(ctx context.Context, q SetSourceQuery) ([]SetSource, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list set sources: %w", err)
	}
	where := liveRequestSQL
	p := Params{}
	if !q.Since.IsZero() {
		where += " AND received_at >= {since:DateTime64(3, 'UTC')}"
		p.Time("since", q.Since)
	}
	if !q.Until.IsZero() {
		where += " AND received_at < {until:DateTime64(3, 'UTC')}"
		p.Time("until", q.Until)
	}
	answered := fmt.Sprintf("SELECT request_id FROM %s.runs FINAL WHERE mode = 'incumbent' AND status = 'ok' AND final_output != ''", s.db)
	reqs, err := queryRows[Request](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.requests FINAL WHERE %s AND request_id IN (%s) ORDER BY received_at DESC, request_id DESC LIMIT %d",
		selectList[Request](), s.db, where, answered, q.limit()), p)
	if err != nil {
		return nil, fmt.Errorf("store: list set sources: %w", err)
	}
	out := make([]SetSource, 0, len(reqs))
	if len(reqs) == 0 {
		return out, nil
	}
	type answer struct {
		RequestID string `json:"request_id"`
		Pipeline  string `json:"pipeline"`
		Output    string `json:"output"`
	}
	answers, err := queryRows[answer](ctx, s.t, fmt.Sprintf(
		"SELECT request_id, argMax(pipeline, started_at) AS pipeline, argMax(final_output, started_at) AS output FROM %s.runs FINAL"+
			" WHERE mode = 'incumbent' AND status = 'ok' AND final_output != '' AND request_id IN (SELECT request_id FROM %s.requests FINAL WHERE %s)"+
			" GROUP BY request_id", s.db, s.db, where), p)
	if err != nil {
		return nil, fmt.Errorf("store: list set sources: incumbent answers: %w", err)
	}
	byID := make(map[string]answer, len(answers))
	for _, a := range answers {
		byID[a.RequestID] = a
	}
	for _, r := range reqs {
		a, ok := byID[r.RequestID]
		if !ok {
			continue
		}
		out = append(out, SetSource{Request: r, IncumbentPipeline: a.Pipeline, IncumbentOutput: a.Output})
	}
	return out, nil
}
