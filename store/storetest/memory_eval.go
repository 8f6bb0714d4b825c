package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

var _ store.EvalHistory = (*Memory)(nil)

// ListCases implements store.EvalHistory.
func (m *Memory) ListCases(ctx context.Context, suiteRunID string) ([]store.Case, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list cases: %w", err)
	}
	out := []store.Case{}
	for k, c := range m.cases {
		if k.suiteRunID == suiteRunID {
			out = append(out, normCase(c))
		}
	}
	slices.SortFunc(out, func(a, b store.Case) int { return strings.Compare(a.CaseID, b.CaseID) })
	return out, nil
}

// ListSuiteScores implements store.EvalHistory.
func (m *Memory) ListSuiteScores(ctx context.Context, suiteRunID string) ([]store.Score, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list suite scores: %w", err)
	}
	out := []store.Score{}
	for k, s := range m.scores {
		if k.suiteRunID == suiteRunID {
			out = append(out, normScore(s))
		}
	}
	slices.SortFunc(out, func(a, b store.Score) int {
		return cmp.Or(strings.Compare(a.CaseID, b.CaseID), strings.Compare(a.Pipeline, b.Pipeline), strings.Compare(a.Grader, b.Grader))
	})
	return out, nil
}

// PreviousSuiteRun implements store.EvalHistory.
func (m *Memory) PreviousSuiteRun(ctx context.Context, setName, candidate string, before time.Time) (store.SuiteRun, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return store.SuiteRun{}, fmt.Errorf("store: previous suite run: %w", err)
	}
	var best store.SuiteRun
	found := false
	before = ms(before)
	for _, s := range m.suiteRuns {
		s = normSuiteRun(s)
		if s.SetName != setName || s.Status != "done" || !slices.Contains(s.Candidates, candidate) || !s.StartedAt.Before(before) {
			continue
		}
		if !found || s.StartedAt.After(best.StartedAt) || (s.StartedAt.Equal(best.StartedAt) && s.SuiteRunID > best.SuiteRunID) {
			best, found = s, true
		}
	}
	if !found {
		return store.SuiteRun{}, fmt.Errorf("store: previous suite run of %q/%q: %w", setName, candidate, store.ErrNotFound)
	}
	return best, nil
}

// ListSuiteRunRuns implements store.EvalHistory.
func (m *Memory) ListSuiteRunRuns(ctx context.Context, suiteRunID string) ([]store.Run, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list suite run runs: %w", err)
	}
	out := []store.Run{}
	for _, r := range m.runs {
		if r.SuiteRunID == suiteRunID {
			out = append(out, normRun(r))
		}
	}
	slices.SortFunc(out, func(a, b store.Run) int {
		return cmp.Or(strings.Compare(a.RequestID, b.RequestID), strings.Compare(a.Pipeline, b.Pipeline))
	})
	return out, nil
}

// ListConductorSteps implements store.EvalHistory.
func (m *Memory) ListConductorSteps(ctx context.Context, suiteRunID string) ([]store.Step, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list conductor steps: %w", err)
	}
	out := []store.Step{}
	for _, s := range m.steps {
		if r, ok := m.runs[s.RunID]; ok && r.SuiteRunID == suiteRunID && s.Role == "conductor" {
			out = append(out, normStep(s))
		}
	}
	slices.SortFunc(out, func(a, b store.Step) int {
		return cmp.Or(strings.Compare(a.RunID, b.RunID), cmp.Compare(a.Index, b.Index))
	})
	return out, nil
}

// ListSetSources implements store.EvalHistory.
func (m *Memory) ListSetSources(ctx context.Context, q store.SetSourceQuery) ([]store.SetSource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list set sources: %w", err)
	}
	latest := map[string]store.Run{}
	for _, r := range m.runs {
		if r.Mode != store.ModeIncumbent || r.Status != store.StatusOK || r.FinalOutput == "" {
			continue
		}
		if cur, ok := latest[r.RequestID]; !ok || r.StartedAt.After(cur.StartedAt) {
			latest[r.RequestID] = r
		}
	}
	since, until := ms(q.Since), ms(q.Until)
	out := []store.SetSource{}
	for _, req := range m.requests {
		req = normRequest(req)
		if req.Source != store.SourceTap && req.Source != store.SourceReplay {
			continue
		}
		if (!q.Since.IsZero() && req.ReceivedAt.Before(since)) || (!q.Until.IsZero() && !req.ReceivedAt.Before(until)) {
			continue
		}
		run, ok := latest[req.RequestID]
		if !ok {
			continue
		}
		out = append(out, store.SetSource{Request: req, IncumbentPipeline: run.Pipeline, IncumbentOutput: run.FinalOutput})
	}
	slices.SortFunc(out, func(a, b store.SetSource) int {
		return cmp.Or(b.ReceivedAt.Compare(a.ReceivedAt), strings.Compare(b.RequestID, a.RequestID))
	})
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = store.DefaultSetSourceLimit
	case limit > store.MaxSetSourceLimit:
		limit = store.MaxSetSourceLimit
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
