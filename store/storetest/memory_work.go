package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// InsertWork implements store.Store.
func (m *Memory) InsertWork(ctx context.Context, work []store.Work) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return fmt.Errorf("store: insert shadow_work: %w", err)
	}
	for _, w := range work {
		w.ReceivedAt = ms(w.ReceivedAt)
		m.work[workKey{w.RequestID, w.Pipeline, w.PipelineVersion}] = w
	}
	return nil
}

// StoredRequests implements store.Store.
func (m *Memory) StoredRequests(ctx context.Context, ids []string) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: stored requests: %w", err)
	}
	var out []string
	for _, id := range ids {
		if _, ok := m.requests[id]; ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// PendingWork implements store.Store with the SQL store's rules.
func (m *Memory) PendingWork(ctx context.Context, after store.WorkCursor, limit int) ([]store.PendingRequest, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: pending work: %w", err)
	}
	ran := map[workKey]bool{}
	for _, r := range m.runs {
		if r.Mode == store.ModeCandidate && r.Status != store.StatusCancelled {
			ran[workKey{r.RequestID, r.Pipeline, r.PipelineVersion}] = true
		}
	}
	byReq := map[string]*store.PendingRequest{}
	for k, w := range m.work {
		if w.Status != store.WorkPending || ran[k] {
			continue
		}
		req, ok := m.requests[k.requestID]
		if !ok {
			continue
		}
		if c := cmp.Or(req.ReceivedAt.Compare(after.ReceivedAt), cmp.Compare(req.RequestID, after.RequestID)); (!after.ReceivedAt.IsZero() || after.RequestID != "") && c <= 0 {
			continue
		}
		p := byReq[k.requestID]
		if p == nil {
			p = &store.PendingRequest{Request: req}
			byReq[k.requestID] = p
		}
		p.Owed = append(p.Owed, store.WorkKey{Pipeline: k.pipeline, PipelineVersion: k.version})
	}
	out := make([]store.PendingRequest, 0, len(byReq))
	for _, p := range byReq {
		slices.SortFunc(p.Owed, func(a, b store.WorkKey) int {
			return cmp.Or(cmp.Compare(a.Pipeline, b.Pipeline), cmp.Compare(a.PipelineVersion, b.PipelineVersion))
		})
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b store.PendingRequest) int {
		return cmp.Or(a.Request.ReceivedAt.Compare(b.Request.ReceivedAt), cmp.Compare(a.Request.RequestID, b.Request.RequestID))
	})
	if len(out) > max(limit, 1) {
		out = out[:max(limit, 1)]
	}
	return out, nil
}
