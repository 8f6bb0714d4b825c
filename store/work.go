package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// InsertWork implements Store.
func (s *sqlStore) InsertWork(ctx context.Context, work []Work) error {
	return insert(ctx, s, "shadow_work", work)
}

// quoteList renders ids as a comma-separated list of string literals.
func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = quoteString(id)
	}
	return strings.Join(q, ", ")
}

// StoredRequests implements Store: one lookup on the requests' primary key.
func (s *sqlStore) StoredRequests(ctx context.Context, ids []string) ([]string, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: stored requests: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	type row struct {
		RequestID string `json:"request_id"`
	}
	rows, err := queryRows[row](ctx, s.t, fmt.Sprintf(
		"SELECT DISTINCT request_id FROM %s.requests WHERE request_id IN (%s)", s.db, quoteList(ids)))
	if err != nil {
		return nil, fmt.Errorf("store: stored requests: %w", err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.RequestID
	}
	return out, nil
}

// pendingWorkSQL selects one page of the backlog: stored requests with pending
// work rows whose candidate version has no stored run other than a cancelled one
// (a run stored while its done mark was lost to a crash counts as done). Work rows
// of a commit cut short before its request row (the copy was refused) are left
// out before the LIMIT, so they never fill a page.
func (s *sqlStore) pendingWorkSQL(after WorkCursor, limit int) string {
	cond := ""
	if !after.ReceivedAt.IsZero() || after.RequestID != "" {
		t := timeLiteral(after.ReceivedAt)
		cond = fmt.Sprintf("\n  AND (received_at > %s OR (received_at = %s AND request_id > %s))", t, t, quoteString(after.RequestID))
	}
	return fmt.Sprintf(`SELECT request_id, min(received_at) AS first_received_at,
    groupArray(pipeline) AS pipelines, groupArray(pipeline_version) AS versions
FROM %[1]s.shadow_work FINAL
WHERE status = 'pending'%[2]s
  AND request_id IN (
    SELECT request_id FROM %[1]s.requests
    WHERE request_id IN (SELECT request_id FROM %[1]s.shadow_work FINAL WHERE status = 'pending'))
  AND (request_id, pipeline, pipeline_version) NOT IN (
    SELECT request_id, pipeline, pipeline_version FROM %[1]s.runs FINAL
    WHERE mode = 'candidate' AND status != 'cancelled'
      AND request_id IN (SELECT request_id FROM %[1]s.shadow_work FINAL WHERE status = 'pending'))
GROUP BY request_id
ORDER BY first_received_at, request_id
LIMIT %[3]d`, s.db, cond, max(limit, 1))
}

// PendingWork implements Store: two statements, the page of owed work and the
// page's request rows.
func (s *sqlStore) PendingWork(ctx context.Context, after WorkCursor, limit int) ([]PendingRequest, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: pending work: %w", err)
	}
	type owed struct {
		RequestID string   `json:"request_id"`
		Pipelines []string `json:"pipelines"`
		Versions  []string `json:"versions"`
	}
	page, err := queryRows[owed](ctx, s.t, s.pendingWorkSQL(after, limit))
	if err != nil {
		return nil, fmt.Errorf("store: pending work: %w", err)
	}
	if len(page) == 0 {
		return nil, nil
	}
	ids := make([]string, len(page))
	for i, o := range page {
		ids[i] = o.RequestID
	}
	reqs, err := queryRows[Request](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.requests FINAL WHERE request_id IN (%s)", selectList[Request](), s.db, quoteList(ids)))
	if err != nil {
		return nil, fmt.Errorf("store: pending work: requests: %w", err)
	}
	byID := make(map[string]Request, len(reqs))
	for _, r := range reqs {
		byID[r.RequestID] = r
	}
	out := make([]PendingRequest, 0, len(page))
	for _, o := range page {
		r, ok := byID[o.RequestID]
		if !ok {
			continue
		}
		p := PendingRequest{Request: r}
		for i := range min(len(o.Pipelines), len(o.Versions)) {
			p.Owed = append(p.Owed, WorkKey{Pipeline: o.Pipelines[i], PipelineVersion: o.Versions[i]})
		}
		slices.SortFunc(p.Owed, func(a, b WorkKey) int {
			return strings.Compare(a.Pipeline+"\x00"+a.PipelineVersion, b.Pipeline+"\x00"+b.PipelineVersion)
		})
		out = append(out, p)
	}
	return out, nil
}
