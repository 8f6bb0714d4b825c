package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

var _ store.Analytics = (*Memory)(nil)

// SearchTraces implements store.Analytics with the SQL store's semantics: text
// matches the input or any run's final output case-insensitively; run filters
// hold over the request's runs as a whole; newest first, paged by keyset.
func (m *Memory) SearchTraces(ctx context.Context, q store.TraceSearch) ([]store.TraceSummary, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: search traces: %w", err)
	}
	byReq := map[string][]store.Run{}
	for _, run := range m.runs {
		byReq[run.RequestID] = append(byReq[run.RequestID], run)
	}
	workerRuns := map[string]bool{} // run ids whose steps called q.Worker
	if q.Worker != "" {
		for _, s := range m.steps {
			if s.Worker == q.Worker {
				workerRuns[s.RunID] = true
			}
		}
	}
	graded := map[string]bool{} // request ids with a score of the asked grade
	if q.Grade != "" {
		for _, s := range m.scores {
			if s.Error == "" && s.Passed == (q.Grade == store.GradePassed) {
				graded[s.RequestID] = true
			}
		}
	}
	before, from, to := ms(q.Before), ms(q.From), ms(q.To)
	lower := strings.ToLower(q.Text)
	var picked []store.Request
	for _, r := range m.requests {
		runs := byReq[r.RequestID]
		switch {
		case q.App != "" && r.App != q.App, q.Source != "" && r.Source != q.Source,
			!from.IsZero() && r.ReceivedAt.Before(from), !to.IsZero() && !r.ReceivedAt.Before(to),
			q.Text != "" && !textMatches(r, runs, lower),
			!runsMatch(q, runs, workerRuns),
			q.Grade != "" && !graded[r.RequestID],
			!q.Segments.Matches(r):
			continue
		}
		if !before.IsZero() {
			c := r.ReceivedAt.Compare(before)
			if c > 0 || c == 0 && (q.BeforeID == "" || r.RequestID >= q.BeforeID) {
				continue
			}
		}
		picked = append(picked, r)
	}
	slices.SortFunc(picked, newerFirst)
	picked = picked[:min(len(picked), store.ClampLimit(q.Limit))]
	out := make([]store.TraceSummary, 0, len(picked))
	for _, r := range picked {
		out = append(out, summarize(r, byReq[r.RequestID]))
	}
	return out, nil
}

// textMatches: lower (a lower-cased needle) is in the input or a final output.
func textMatches(r store.Request, runs []store.Run, lower string) bool {
	if inputHolds(r.Input, lower) {
		return true
	}
	return slices.ContainsFunc(runs, func(run store.Run) bool {
		return strings.Contains(strings.ToLower(run.FinalOutput), lower)
	})
}

// runsMatch applies the run-level filters of q to one request's runs.
func runsMatch(q store.TraceSearch, runs []store.Run, workerRuns map[string]bool) bool {
	var cost, slowest float64
	cand, status, worker := q.Candidate == "", q.Status == "", q.Worker == ""
	for _, r := range runs {
		cost += r.CostUSD
		slowest = max(slowest, r.LatencyMs)
		cand = cand || r.Mode == store.ModeCandidate && r.Pipeline == q.Candidate
		status = status || r.Status == q.Status
		worker = worker || workerRuns[r.RunID]
	}
	if !cand || !status || !worker {
		return false
	}
	needRuns := q.MinCostUSD > 0 || q.MaxCostUSD > 0 || q.MinLatencyMs > 0 || q.MaxLatencyMs > 0
	if needRuns && len(runs) == 0 {
		return false
	}
	return (q.MinCostUSD == 0 || cost >= q.MinCostUSD) && (q.MaxCostUSD == 0 || cost <= q.MaxCostUSD) &&
		(q.MinLatencyMs == 0 || slowest >= q.MinLatencyMs) && (q.MaxLatencyMs == 0 || slowest <= q.MaxLatencyMs)
}

// summarize computes a request's TraceSummary from its runs, as ListTraces does.
func summarize(r store.Request, runs []store.Run) store.TraceSummary {
	s := store.TraceSummary{
		RequestID: r.RequestID, ReceivedAt: r.ReceivedAt, Source: r.Source, App: r.App,
		Category: r.Category, InputPreview: store.InputPreview(r.Input),
		Language: r.Language, HasTable: r.HasTable, HasCode: r.HasCode, LengthBucket: r.LengthBucket,
	}
	for _, run := range runs {
		s.Runs++
		switch run.Mode {
		case store.ModeIncumbent:
			s.IncumbentMs = max(s.IncumbentMs, run.LatencyMs)
			s.IncumbentCostUSD += run.CostUSD
		case store.ModeCandidate:
			s.CandidateMs = max(s.CandidateMs, run.LatencyMs)
			s.CandidateCostUSD += run.CostUSD
		}
		if !slices.Contains(s.Statuses, run.Status) {
			s.Statuses = append(s.Statuses, run.Status)
		}
	}
	slices.Sort(s.Statuses)
	return s
}

var _ store.OverviewAnalytics = (*Memory)(nil)

// Overview implements store.OverviewAnalytics as the SQL stores compute it.
func (m *Memory) Overview(ctx context.Context, q store.OverviewQuery) (store.Overview, error) {
	var ov store.Overview
	if err := q.Validate(); err != nil {
		return ov, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return ov, fmt.Errorf("store: overview: %w", err)
	}
	from, to := ms(q.From), ms(q.To)
	inWindow := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	for _, r := range m.requests {
		if inWindow(r.ReceivedAt) && r.Source != store.SourceSuite && (q.App == "" || r.App == q.App) && q.Segments.Matches(r) {
			ov.Counts.Requests++
			if r.Source == store.SourceTap {
				ov.Counts.TapRequests++
			}
		}
	}
	var runs []store.Run
	for _, r := range m.runs {
		if !inWindow(r.StartedAt) || r.SuiteRunID != "" {
			continue
		}
		if req, ok := m.requests[r.RequestID]; q.App != "" && (!ok || req.App != q.App) {
			continue
		}
		if req, ok := m.requests[r.RequestID]; !q.Segments.Empty() && (!ok || !q.Segments.Matches(req)) {
			continue
		}
		runs = append(runs, r)
	}
	shadowReqs := map[string]bool{}
	for _, r := range runs {
		switch r.Mode {
		case store.ModeIncumbent:
			ov.Counts.IncumbentRuns++
		case store.ModeCandidate:
			ov.Counts.ShadowRuns++
			shadowReqs[r.RequestID] = true
		}
		if r.Status != store.StatusOK && r.Status != store.StatusCancelled {
			ov.Counts.ErrorRuns++
		}
	}
	ov.Counts.ShadowRequests = int64(len(shadowReqs))
	bucketOf := func(t time.Time) time.Time {
		return t.Truncate(time.Duration(q.BucketSeconds) * time.Second).UTC()
	}
	ov.Totals = points(runs, func(time.Time) time.Time { return time.Time{} })
	ov.Series = points(runs, bucketOf)
	ov.Agreement = agreement(runs)
	return ov, nil
}

// points groups runs by pipeline and bucket into PipelinePoints, incumbent first,
// then by pipeline and bucket.
func points(runs []store.Run, bucket func(time.Time) time.Time) []store.PipelinePoint {
	type key struct {
		pipeline string
		bucket   time.Time
	}
	groups := map[key][]store.Run{}
	for _, r := range runs {
		k := key{r.Pipeline, bucket(r.StartedAt)}
		groups[k] = append(groups[k], r)
	}
	var out []store.PipelinePoint
	for k, rs := range groups {
		p := store.PipelinePoint{Pipeline: k.pipeline, Mode: rs[0].Mode, Bucket: k.bucket, Runs: int64(len(rs))}
		reqs := map[string]bool{}
		lat := make([]float64, 0, len(rs))
		for _, r := range rs {
			p.CostUSD += r.CostUSD
			reqs[r.RequestID] = true
			if r.LatencyMs > 0 {
				lat = append(lat, r.LatencyMs)
			}
			if r.Status != store.StatusOK && r.Status != store.StatusCancelled {
				p.Errors++
			}
		}
		p.CostPerRequestUSD = p.CostUSD / float64(len(reqs))
		slices.Sort(lat)
		p.P50Ms, p.P95Ms = percentile.NearestRank(lat, 50), percentile.NearestRank(lat, 95)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b store.PipelinePoint) int {
		ai, bi := a.Mode != store.ModeIncumbent, b.Mode != store.ModeIncumbent
		switch {
		case ai != bi:
			if ai {
				return 1
			}
			return -1
		case a.Pipeline != b.Pipeline:
			return strings.Compare(a.Pipeline, b.Pipeline)
		}
		return a.Bucket.Compare(b.Bucket)
	})
	return out
}

// agreement pairs every ok candidate run with its request's ok incumbent answer.
func agreement(runs []store.Run) []store.Agreement {
	inc := map[string]string{}
	for _, r := range runs {
		if r.Mode == store.ModeIncumbent && r.Status == store.StatusOK {
			inc[r.RequestID] = store.NormalizeAnswer(r.FinalOutput)
		}
	}
	by := map[string]*store.Agreement{}
	for _, r := range runs {
		want, ok := inc[r.RequestID]
		if r.Mode != store.ModeCandidate || r.Status != store.StatusOK || !ok {
			continue
		}
		a := by[r.Pipeline]
		if a == nil {
			a = &store.Agreement{Candidate: r.Pipeline}
			by[r.Pipeline] = a
		}
		a.Pairs++
		if store.NormalizeAnswer(r.FinalOutput) == want {
			a.Agree++
		}
	}
	var out []store.Agreement
	for _, a := range by {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b store.Agreement) int { return strings.Compare(a.Candidate, b.Candidate) })
	return out
}

var _ store.LiveAgreement = (*Memory)(nil)

// AgreementSequence implements store.LiveAgreement as the SQL stores compute it.
func (m *Memory) AgreementSequence(ctx context.Context, q store.OverviewQuery) ([]store.AgreementPair, bool, error) {
	if err := q.Validate(); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var runs []store.Run
	for _, r := range m.runs {
		if r.StartedAt.Before(q.From) || !r.StartedAt.Before(q.To) || r.SuiteRunID != "" || r.Status != store.StatusOK {
			continue
		}
		if req, ok := m.requests[r.RequestID]; q.App != "" && (!ok || req.App != q.App) {
			continue
		}
		if req, ok := m.requests[r.RequestID]; !q.Segments.Empty() && (!ok || !q.Segments.Matches(req)) {
			continue
		}
		runs = append(runs, r)
	}
	inc := map[string]string{}
	for _, r := range runs {
		if r.Mode == store.ModeIncumbent {
			inc[r.RequestID] = store.NormalizeAnswer(r.FinalOutput)
		}
	}
	var out []store.AgreementPair
	for _, r := range runs {
		want, ok := inc[r.RequestID]
		if r.Mode != store.ModeCandidate || !ok {
			continue
		}
		req := m.requests[r.RequestID]
		out = append(out, store.AgreementPair{Candidate: r.Pipeline, RequestID: r.RequestID, StartedAt: r.StartedAt.UTC(),
			Agree:    store.NormalizeAnswer(r.FinalOutput) == want,
			Language: req.Language, HasTable: req.HasTable, HasCode: req.HasCode, LengthBucket: req.LengthBucket})
	}
	slices.SortFunc(out, func(a, b store.AgreementPair) int {
		if c := strings.Compare(a.Candidate, b.Candidate); c != 0 {
			return c
		}
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.RequestID, b.RequestID)
	})
	truncated := len(out) > store.MaxAgreementPairs
	if truncated {
		out = out[:store.MaxAgreementPairs]
	}
	return out, truncated, nil
}

var _ store.Comparisons = (*Memory)(nil)

// GetRun implements store.Comparisons.
func (m *Memory) GetRun(ctx context.Context, runID string) (store.Run, []store.Step, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return store.Run{}, nil, fmt.Errorf("store: get run: %w", err)
	}
	run, ok := m.runs[runID]
	if !ok {
		return store.Run{}, nil, fmt.Errorf("store: get run %q: %w", runID, store.ErrNotFound)
	}
	var steps []store.Step
	for _, s := range m.steps {
		if s.RunID == runID {
			steps = append(steps, s)
		}
	}
	slices.SortFunc(steps, func(a, b store.Step) int { return int(a.Index) - int(b.Index) })
	return run, steps, nil
}

// ListScores implements store.Comparisons.
func (m *Memory) ListScores(ctx context.Context, suiteRunID string) ([]store.Score, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: list scores: %w", err)
	}
	var out []store.Score
	for _, s := range m.scores {
		if s.SuiteRunID == suiteRunID {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b store.Score) int {
		for _, c := range [][2]string{{a.CaseID, b.CaseID}, {a.Pipeline, b.Pipeline}, {a.Grader, b.Grader}, {a.RunID, b.RunID}} {
			if r := strings.Compare(c[0], c[1]); r != 0 {
				return r
			}
		}
		return 0
	})
	return out, nil
}

var _ store.WorkerAnalytics = (*Memory)(nil)

// WorkerUsage implements store.WorkerAnalytics as the SQL stores compute it.
func (m *Memory) WorkerUsage(ctx context.Context, q store.WorkerQuery) ([]store.WorkerUse, error) {
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		return nil, fmt.Errorf("store: worker usage: the window needs a start before its end")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: worker usage: %w", err)
	}
	from, to := ms(q.From), ms(q.To)
	category := map[string]string{} // selected run id → its request's category
	for _, r := range m.runs {
		req, ok := m.requests[r.RequestID]
		if !ok || r.Mode != store.ModeCandidate || r.StartedAt.Before(from) || !r.StartedAt.Before(to) ||
			q.Pipeline != "" && r.Pipeline != q.Pipeline || q.App != "" && req.App != q.App {
			continue
		}
		category[r.RunID] = req.Category
	}
	byRun := map[string][]store.Step{}
	for _, s := range m.steps {
		if _, ok := category[s.RunID]; ok && s.Role == "worker" && s.Depth == 0 {
			byRun[s.RunID] = append(byRun[s.RunID], s)
		}
	}
	type key struct{ worker, category, position string }
	agg := map[key]*store.WorkerUse{}
	for runID, steps := range byRun {
		first, last := steps[0].Index, steps[0].Index
		for _, s := range steps {
			first, last = min(first, s.Index), max(last, s.Index)
		}
		for _, s := range steps {
			pos := store.PositionMiddle
			switch {
			case first == last:
				pos = store.PositionOnly
			case s.Index == first:
				pos = store.PositionFirst
			case s.Index == last:
				pos = store.PositionFinal
			}
			k := key{s.Worker, category[runID], pos}
			u := agg[k]
			if u == nil {
				u = &store.WorkerUse{Worker: k.worker, Category: k.category, Position: k.position}
				agg[k] = u
			}
			u.Steps++
			u.CostUSD += s.CostUSD
			u.LatencyMs += s.LatencyMs
		}
	}
	var out []store.WorkerUse
	for _, u := range agg {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b store.WorkerUse) int {
		for _, c := range [][2]string{{a.Worker, b.Worker}, {a.Category, b.Category}, {a.Position, b.Position}} {
			if r := strings.Compare(c[0], c[1]); r != 0 {
				return r
			}
		}
		return 0
	})
	return out, nil
}

// SegmentMix implements store.SegmentAnalytics.
func (m *Memory) SegmentMix(ctx context.Context, q store.SegmentMixQuery) ([]store.SegmentCount, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, fmt.Errorf("store: segment mix: %w", err)
	}
	from, to := ms(q.From), ms(q.To)
	type key struct {
		lang, bucket string
		table, code  bool
	}
	counts := map[key]*store.SegmentCount{}
	for _, r := range m.requests {
		if r.ReceivedAt.Before(from) || !r.ReceivedAt.Before(to) || r.Source == store.SourceSuite || q.App != "" && r.App != q.App {
			continue
		}
		k := key{r.Language, r.LengthBucket, r.HasTable, r.HasCode}
		c, ok := counts[k]
		if !ok {
			c = &store.SegmentCount{Language: r.Language, HasTable: r.HasTable, HasCode: r.HasCode, LengthBucket: r.LengthBucket}
			counts[k] = c
		}
		c.Requests++
		if r.Novelty >= 0 {
			c.WithNovelty++
			c.NoveltySum += r.Novelty
			if r.Novelty >= 0.5 {
				c.NovelRequests++
			}
		}
	}
	out := make([]store.SegmentCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b store.SegmentCount) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Language, b.Language),
			cmp.Compare(fmt.Sprint(a.HasTable), fmt.Sprint(b.HasTable)), cmp.Compare(fmt.Sprint(a.HasCode), fmt.Sprint(b.HasCode)),
			strings.Compare(a.LengthBucket, b.LengthBucket))
	})
	return out, nil
}

// inputHolds reports whether input holds text as typed or JSON-escaped
// (store.InputNeedles), exactly or case-insensitively.
func inputHolds(input, text string) bool {
	lowerInput := strings.ToLower(input)
	for _, n := range store.InputNeedles(text) {
		if strings.Contains(input, n) || strings.Contains(lowerInput, strings.ToLower(n)) {
			return true
		}
	}
	return false
}
