// Package storetest provides an in-memory store.Store for other packages' tests,
// and a contract test suite (RunContract) that both the memory store and the real
// ClickHouse-backed store pass.
package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Memory is an in-memory store.Store. It keeps the last write of each record key,
// as the ReplacingMergeTree tables do after FINAL, normalizes values the way the
// SQL stores return them (times in UTC truncated to ms, empty maps and slices as
// nil), and is safe for concurrent use. Query validates the statement kind
// (store.ErrReadOnly) but cannot run SQL.
type Memory struct {
	mu        sync.RWMutex
	closed    bool
	requests  map[string]store.Request
	runs      map[string]store.Run
	steps     map[stepKey]store.Step
	scores    map[scoreKey]store.Score
	suiteRuns map[string]store.SuiteRun
	cases     map[caseKey]store.Case
	work      map[workKey]store.Work
}

type workKey struct{ requestID, pipeline, version string }

type stepKey struct {
	runID string
	index int32
}

type scoreKey struct{ suiteRunID, runID, grader string }

type caseKey struct{ suiteRunID, caseID string }

var _ store.Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		requests:  map[string]store.Request{},
		runs:      map[string]store.Run{},
		steps:     map[stepKey]store.Step{},
		scores:    map[scoreKey]store.Score{},
		suiteRuns: map[string]store.SuiteRun{},
		cases:     map[caseKey]store.Case{},
		work:      map[workKey]store.Work{},
	}
}

// Counts returns how many distinct records the store holds, per table.
func (m *Memory) Counts() Counts {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return Counts{
		Requests: len(m.requests), Runs: len(m.runs), Steps: len(m.steps),
		Scores: len(m.scores), SuiteRuns: len(m.suiteRuns), Cases: len(m.cases),
	}
}

func (m *Memory) check(ctx context.Context) error {
	if m.closed {
		return store.ErrClosed
	}
	return ctx.Err()
}

func ms(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Millisecond)
}

func cloneMap(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	return maps.Clone(in)
}

func cloneSlice(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return slices.Clone(in)
}

func normRequest(r store.Request) store.Request {
	r.ReceivedAt = ms(r.ReceivedAt)
	r.Metadata = cloneMap(r.Metadata)
	return r
}

func normRun(r store.Run) store.Run {
	r.StartedAt = ms(r.StartedAt)
	return r
}

func normStep(s store.Step) store.Step {
	s.StartedAt = ms(s.StartedAt)
	return s
}

func normScore(s store.Score) store.Score {
	s.CreatedAt = ms(s.CreatedAt)
	return s
}

func normSuiteRun(s store.SuiteRun) store.SuiteRun {
	s.StartedAt = ms(s.StartedAt)
	s.FinishedAt = ms(s.FinishedAt)
	s.Candidates = cloneSlice(s.Candidates)
	return s
}

func normCase(c store.Case) store.Case {
	c.Choices = cloneSlice(c.Choices)
	return c
}

// InsertRequests implements store.Store.
func (m *Memory) InsertRequests(ctx context.Context, reqs []store.Request) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return fmt.Errorf("store: insert requests: %w", err)
	}
	for _, r := range reqs {
		m.requests[r.RequestID] = normRequest(r)
	}
	return nil
}

// InsertRuns implements store.Store.
func (m *Memory) InsertRuns(ctx context.Context, runs []store.Run) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return fmt.Errorf("store: insert runs: %w", err)
	}
	for _, r := range runs {
		m.runs[r.RunID] = normRun(r)
	}
	return nil
}

// InsertSteps implements store.Store.
func (m *Memory) InsertSteps(ctx context.Context, steps []store.Step) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return fmt.Errorf("store: insert steps: %w", err)
	}
	for _, s := range steps {
		m.steps[stepKey{s.RunID, s.Index}] = normStep(s)
	}
	return nil
}

// InsertScores implements store.Store.
func (m *Memory) InsertScores(ctx context.Context, scores []store.Score) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return fmt.Errorf("store: insert scores: %w", err)
	}
	for _, s := range scores {
		m.scores[scoreKey{s.SuiteRunID, s.RunID, s.Grader}] = normScore(s)
	}
	return nil
}

// InsertSuiteRuns implements store.Store.
func (m *Memory) InsertSuiteRuns(ctx context.Context, runs []store.SuiteRun) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return fmt.Errorf("store: insert suite runs: %w", err)
	}
	for _, s := range runs {
		m.suiteRuns[s.SuiteRunID] = normSuiteRun(s)
	}
	return nil
}

// InsertCases implements store.Store.
func (m *Memory) InsertCases(ctx context.Context, cases []store.Case) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return fmt.Errorf("store: insert cases: %w", err)
	}
	for _, c := range cases {
		m.cases[caseKey{c.SuiteRunID, c.CaseID}] = normCase(c)
	}
	return nil
}

// newerFirst orders requests by (ReceivedAt, RequestID) descending.
func newerFirst(a, b store.Request) int {
	if c := b.ReceivedAt.Compare(a.ReceivedAt); c != 0 {
		return c
	}
	return strings.Compare(b.RequestID, a.RequestID)
}

// ListTraces implements store.Store: newest first by (ReceivedAt, RequestID);
// Text matches case-insensitively; Before/BeforeID page by keyset.
func (m *Memory) ListTraces(ctx context.Context, f store.TraceFilter) ([]store.TraceSummary, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list traces: %w", err)
	}
	before := ms(f.Before)
	var picked []store.Request
	for _, r := range m.requests {
		if f.App != "" && r.App != f.App || f.Source != "" && r.Source != f.Source {
			continue
		}
		if f.Text != "" && !inputHolds(r.Input, f.Text) {
			continue
		}
		if !before.IsZero() {
			c := r.ReceivedAt.Compare(before)
			if c > 0 || c == 0 && (f.BeforeID == "" || r.RequestID >= f.BeforeID) {
				continue
			}
		}
		picked = append(picked, r)
	}
	slices.SortFunc(picked, newerFirst)
	picked = picked[:min(len(picked), store.ClampLimit(f.Limit))]

	byReq := map[string][]store.Run{}
	for _, run := range m.runs {
		byReq[run.RequestID] = append(byReq[run.RequestID], run)
	}
	out := make([]store.TraceSummary, 0, len(picked))
	for _, r := range picked {
		s := store.TraceSummary{
			RequestID: r.RequestID, ReceivedAt: r.ReceivedAt, Source: r.Source, App: r.App,
			Category: r.Category, InputPreview: store.InputPreview(r.Input),
			Language: r.Language, HasTable: r.HasTable, HasCode: r.HasCode, LengthBucket: r.LengthBucket,
		}
		seen := map[string]bool{}
		for _, run := range byReq[r.RequestID] {
			s.Runs++
			switch run.Mode {
			case store.ModeIncumbent:
				s.IncumbentMs = max(s.IncumbentMs, run.LatencyMs)
				s.IncumbentCostUSD += run.CostUSD
			case store.ModeCandidate:
				s.CandidateMs = max(s.CandidateMs, run.LatencyMs)
				s.CandidateCostUSD += run.CostUSD
			}
			if !seen[run.Status] {
				seen[run.Status] = true
				s.Statuses = append(s.Statuses, run.Status)
			}
		}
		slices.Sort(s.Statuses)
		out = append(out, s)
	}
	return out, nil
}

// RunOrder orders a trace's runs: incumbent first, then by pipeline name, then RunID.
func runOrder(a, b store.Run) int {
	ai, bi := a.Mode != store.ModeIncumbent, b.Mode != store.ModeIncumbent
	if ai != bi {
		if !ai {
			return -1
		}
		return 1
	}
	return cmp.Or(strings.Compare(a.Pipeline, b.Pipeline), strings.Compare(a.RunID, b.RunID))
}

// GetTrace implements store.Store. Runs: incumbent first, then by pipeline name
// (RunID breaks ties); steps by (RunID, Index); scores by (SuiteRunID, RunID, Grader).
func (m *Memory) GetTrace(ctx context.Context, requestID string) (store.Trace, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return store.Trace{}, fmt.Errorf("store: get trace: %w", err)
	}
	req, ok := m.requests[requestID]
	if !ok {
		return store.Trace{}, fmt.Errorf("store: get trace %q: %w", requestID, store.ErrNotFound)
	}
	t := store.Trace{Request: normRequest(req)}
	runIDs := map[string]bool{}
	for _, run := range m.runs {
		if run.RequestID == requestID {
			t.Runs = append(t.Runs, run)
			runIDs[run.RunID] = true
		}
	}
	slices.SortFunc(t.Runs, runOrder)
	for _, s := range m.steps {
		if runIDs[s.RunID] {
			t.Steps = append(t.Steps, s)
		}
	}
	slices.SortFunc(t.Steps, func(a, b store.Step) int {
		return cmp.Or(strings.Compare(a.RunID, b.RunID), cmp.Compare(a.Index, b.Index))
	})
	for _, s := range m.scores {
		if s.RequestID == requestID {
			t.Scores = append(t.Scores, s)
		}
	}
	slices.SortFunc(t.Scores, func(a, b store.Score) int {
		return cmp.Or(strings.Compare(a.SuiteRunID, b.SuiteRunID), strings.Compare(a.RunID, b.RunID),
			strings.Compare(a.Grader, b.Grader))
	})
	return t, nil
}

// ListSuiteRuns implements store.Store: newest StartedAt first, SuiteRunID
// descending on ties.
func (m *Memory) ListSuiteRuns(ctx context.Context, limit int) ([]store.SuiteRun, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list suite runs: %w", err)
	}
	out := make([]store.SuiteRun, 0, len(m.suiteRuns))
	for _, s := range m.suiteRuns {
		out = append(out, normSuiteRun(s))
	}
	slices.SortFunc(out, func(a, b store.SuiteRun) int {
		return cmp.Or(b.StartedAt.Compare(a.StartedAt), strings.Compare(b.SuiteRunID, a.SuiteRunID))
	})
	return out[:min(len(out), store.ClampLimit(limit))], nil
}

// GetSuiteRun implements store.Store.
func (m *Memory) GetSuiteRun(ctx context.Context, suiteRunID string) (store.SuiteRun, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return store.SuiteRun{}, fmt.Errorf("store: get suite run: %w", err)
	}
	s, ok := m.suiteRuns[suiteRunID]
	if !ok {
		return store.SuiteRun{}, fmt.Errorf("store: get suite run %q: %w", suiteRunID, store.ErrNotFound)
	}
	return normSuiteRun(s), nil
}

// ErrSQLUnsupported is returned by Memory.Query for read statements: the memory
// store cannot run SQL.
var ErrSQLUnsupported = errors.New("store: SQL is not supported by the memory fake")

// Query implements store.Store: an error wrapping store.ErrReadOnly for anything
// but one read statement, ErrSQLUnsupported otherwise.
func (m *Memory) Query(ctx context.Context, sql string) (store.QueryResult, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return store.QueryResult{}, fmt.Errorf("store: query: %w", err)
	}
	if err := store.CheckReadOnly(sql); err != nil {
		return store.QueryResult{}, err
	}
	return store.QueryResult{}, ErrSQLUnsupported
}

// Close implements store.Store; later calls return store.ErrClosed. Safe twice.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
