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

// StoredRequests implements Store: lookups on the requests' primary key, as
// many ids at once as one statement binds (inStrings).
func (s *sqlStore) StoredRequests(ctx context.Context, ids []string) ([]string, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: stored requests: %w", err)
	}
	type row struct {
		RequestID string `json:"request_id"`
	}
	var out []string
	for len(ids) > 0 {
		params := Params{}
		set, n, done, err := inStrings(s.t, ids, params)
		if err != nil {
			return nil, fmt.Errorf("store: stored requests: %w", err)
		}
		rows, err := queryRows[row](ctx, s.t, fmt.Sprintf(
			"SELECT DISTINCT request_id FROM %s.requests WHERE request_id IN %s", s.db, set), params)
		done()
		if err != nil {
			return nil, fmt.Errorf("store: stored requests: %w", err)
		}
		for _, r := range rows {
			out = append(out, r.RequestID)
		}
		ids = ids[n:]
	}
	return out, nil
}

// inStrings binds a prefix of vs (at least one) as the set of one "x IN
// <set>" and returns the set's text, how many of vs it took, and done, to
// call once the statement ran. The embedded engine reads the values from a
// scratch file (stringStager): a lookup of 2,400 ids in 20 parts of
// requests took 3.2–4.9 ms read from a file and 6.0–7.3 ms bound as an
// Array(String) parameter, which is one more statement too (SET
// param_ids). Elsewhere they are the Array(String) parameter {ids}, set in
// params, of at most inParamBytes.
func inStrings(t transport, vs []string, params Params) (set string, took int, done func(), err error) {
	if st, ok := t.(stringStager); ok {
		n := takeWithin(vs, stagedSetBytes)
		set, done, err = st.stageStrings(vs[:n])
		return set, n, done, err
	}
	n := takeWithin(vs, inParamBytes)
	params.Strs("ids", vs[:n])
	return "{ids:Array(String)}", n, func() {}, nil
}

// takeWithin is how many of vs (at least one) fit in about limit bytes
// written as a quoted list: quotes, a comma and an escape or two each.
func takeWithin(vs []string, limit int) int {
	n, size := 0, 0
	for n < len(vs) && (n == 0 || size+len(vs[n])+4 <= limit) {
		size += len(vs[n]) + 4
		n++
	}
	return n
}

// inParamBytes is about how many bytes of values one statement binds as an
// Array(String) parameter: well under the engine's default max_query_size
// of 256 KiB, within which it parses the parameter statement.
const inParamBytes = 128 << 10

// stagedSetBytes bounds one staged set's file (16 MiB): a group commit's
// ids are one file.
const stagedSetBytes = 16 << 20

// pendingWorkSQL selects one page of the backlog: stored requests with pending
// work rows whose candidate version has no stored run other than a cancelled one
// (a run stored while its done mark was lost to a crash counts as done). Work rows
// of a commit cut short before its request row (the copy was refused) are left
// out before the LIMIT, so they never fill a page.
func (s *sqlStore) pendingWorkSQL(after WorkCursor, limit int) (string, Params) {
	cond := ""
	p := Params{}
	if !after.ReceivedAt.IsZero() || after.RequestID != "" {
		p.Time("after", after.ReceivedAt).Str("after_id", after.RequestID)
		cond = "\n  AND (received_at > {after:DateTime64(3, 'UTC')} OR (received_at = {after:DateTime64(3, 'UTC')} AND request_id > {after_id:String}))"
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
LIMIT %[3]d`, s.db, cond, max(limit, 1)), p
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
	sql, p := s.pendingWorkSQL(after, limit)
	page, err := queryRows[owed](ctx, s.t, sql, p)
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
		"SELECT %s FROM %s.requests FINAL WHERE request_id IN {ids:Array(String)}", selectList[Request](), s.db), Params{}.Strs("ids", ids))
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

// FinishedRuns implements RunLookup: one read of the runs of requestID.
func (s *sqlStore) FinishedRuns(ctx context.Context, requestID string) ([]WorkKey, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: finished runs: %w", err)
	}
	type row struct {
		Pipeline        string `json:"pipeline"`
		PipelineVersion string `json:"pipeline_version"`
	}
	rows, err := queryRows[row](ctx, s.t, fmt.Sprintf(`SELECT DISTINCT pipeline, pipeline_version FROM %s.runs FINAL
WHERE request_id = {id:String} AND mode = 'candidate' AND suite_run_id = '' AND status != 'cancelled'
ORDER BY pipeline, pipeline_version`, s.db), Params{}.Str("id", requestID))
	if err != nil {
		return nil, fmt.Errorf("store: finished runs of %s: %w", requestID, err)
	}
	out := make([]WorkKey, len(rows))
	for i, r := range rows {
		out[i] = WorkKey{Pipeline: r.Pipeline, PipelineVersion: r.PipelineVersion}
	}
	return out, nil
}
