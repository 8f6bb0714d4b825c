package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// overviewRaw is the overview as it was computed before the answers were
// normalized at insert (migration 0290) and the window's runs were read in
// one scan: four statements on runs FINAL (counts, totals and series,
// latency histogram, agreement), NormalizeAnswer run on every differing
// answer at read time (normalizeSQL on final_output). It is the reference
// Overview must equal.
func overviewRaw(ctx context.Context, s *sqlStore, q OverviewQuery) (Overview, error) {
	var ov Overview
	reqCond, runCond, p := s.overviewConds(q)
	counts, err := queryRows[OverviewCounts](ctx, s.t, fmt.Sprintf(`SELECT
    (SELECT count() FROM %[1]s.requests FINAL WHERE %[2]s) AS requests,
    (SELECT count() FROM %[1]s.requests FINAL WHERE %[2]s AND source = 'tap') AS tap_requests,
    countIf(mode = 'incumbent') AS incumbent_runs,
    countIf(mode = 'candidate') AS shadow_runs,
    countIf(status NOT IN ('ok', 'cancelled')) AS error_runs,
    uniqExactIf(request_id, mode = 'candidate') AS shadow_requests,
    countIf(mode = 'candidate' AND input_reduced) AS input_reduced_runs
FROM %[1]s.runs FINAL WHERE %[3]s`, s.db, reqCond, runCond), p)
	if err != nil {
		return ov, err
	}
	if len(counts) > 0 {
		ov.Counts = counts[0]
	}
	points, err := queryRows[PipelinePoint](ctx, s.t, fmt.Sprintf(`SELECT pipeline, any(mode) AS mode,
    toDateTime64(toStartOfInterval(started_at, INTERVAL %[2]d SECOND), 3, 'UTC') AS bucket, count() AS runs,
    countIf(status NOT IN ('ok', 'cancelled')) AS errors, sum(cost_usd) AS cost_usd,
    countIf(input_reduced) AS input_reduced,
    %[6]s AS cost_per_request_usd,
    %[4]s AS p50_ms,
    %[5]s AS p95_ms
FROM %[1]s.runs AS r FINAL WHERE %[3]s
GROUP BY GROUPING SETS ((pipeline), (pipeline, bucket))
ORDER BY mode != 'incumbent', pipeline, bucket`, s.db, q.BucketSeconds, runCond,
		figure.LatencySQL("r.latency_ms", 50), figure.LatencySQL("r.latency_ms", 95),
		figure.CostPerRequestSQL("r.cost_usd", "r.request_id")), p)
	if err != nil {
		return ov, err
	}
	for _, p := range points {
		if p.Bucket.IsZero() {
			ov.Totals = append(ov.Totals, p)
		} else {
			ov.Series = append(ov.Series, p)
		}
	}
	bins, err := queryRows[LatencyBin](ctx, s.t, fmt.Sprintf(`SELECT pipeline, any(mode) AS mode,
    toInt64(arrayCount(e -> e <= latency_ms, %[3]s)) AS bin, count() AS runs
FROM %[1]s.runs FINAL WHERE %[2]s AND latency_ms > 0
GROUP BY pipeline, bin
ORDER BY mode != 'incumbent', pipeline, bin`, s.db, runCond, latencyEdgesSQL()), p)
	if err != nil {
		return ov, err
	}
	for _, b := range bins {
		ov.Latency = append(ov.Latency, newLatencyBin(b.Pipeline, b.Mode, b.Bin, b.Runs))
	}
	ov.Agreement, err = queryRows[Agreement](ctx, s.t, fmt.Sprintf(`SELECT cand.1 AS candidate, count() AS pairs,
    countIf(if(cand.2 = inc, 1, %[3]s = %[4]s)) AS agree
FROM (
    SELECT request_id, anyIf(final_output, mode = 'incumbent') AS inc,
        groupArrayIf((pipeline, final_output), mode = 'candidate') AS cands
    FROM %[1]s.runs FINAL
    WHERE status = 'ok' AND %[2]s
    GROUP BY request_id
    HAVING countIf(mode = 'incumbent') > 0
)
ARRAY JOIN cands AS cand
GROUP BY candidate ORDER BY candidate`, s.db, runCond,
		fmt.Sprintf(normalizeSQL, "cand.2"), fmt.Sprintf(normalizeSQL, "inc")), p)
	return ov, err
}

// coverageRaw is OverviewCharts' coverage as it was read before the window's
// requests were made the hash table (coverageSQL): every candidate run's
// request id in one set. It is the reference OverviewCharts must equal.
func coverageRaw(ctx context.Context, s *sqlStore, q OverviewQuery) (OverviewCharts, error) {
	reqCond, _, p := s.overviewConds(q)
	cov, err := queryRows[CoveragePoint](ctx, s.t, fmt.Sprintf(`SELECT
    toDateTime64(toStartOfInterval(received_at, INTERVAL %[3]d SECOND), 3, 'UTC') AS bucket,
    count() AS requests, countIf(shadowed_flag = 1) AS shadowed, %[4]s AS coverage
FROM (
    SELECT received_at, request_id IN (SELECT request_id FROM %[1]s.runs WHERE mode = 'candidate' AND suite_run_id = '') AS shadowed_flag
    FROM %[1]s.requests FINAL WHERE %[2]s
)
GROUP BY bucket ORDER BY bucket`, s.db, reqCond, q.BucketSeconds, figure.CoverageSQL("shadowed_flag = 1")), p)
	return OverviewCharts{Coverage: nilIfEmpty(cov)}, err
}

// equalsRaw reads q with read and with its raw reference and reports under
// name when the two differ; it returns the reference.
func equalsRaw[T any](t *testing.T, name string, q OverviewQuery, read, raw func(context.Context, OverviewQuery) (T, error)) T {
	t.Helper()
	got, err := read(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want, err := raw(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: raw: %v", name, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
	}
	return want
}

// TestOverviewEqualsRawQuery checks on the real engine that Overview (one
// scan for counts, series, histogram and agreement, answers normalized at
// insert) gives exactly
// what the raw three-statement read gives, over windows, apps, segments,
// buckets and sources, after runs were re-written (same run id: another
// status, cost, latency and answer; the re-write must replace, not add) and
// a data subject was forgotten (its requests and runs deleted).
func TestOverviewEqualsRawQuery(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	answers := []string{"The answer is $1,000.", "so \\boxed{1000}", "Paris", "  paris. ", "Answer: B", "answer = (C)", "42", ""}
	statuses := []string{StatusOK, StatusOK, StatusOK, StatusError, StatusOK, "cancelled", StatusOK, "budget_exceeded"}
	sources := []string{SourceTap, SourceReplay, SourceTap, SourceGenerated, SourceTap, SourceSuite}
	var reqs []Request
	var runs, rewrites []Run
	for i := range 120 {
		id := fmt.Sprintf("q%03d", i)
		recv := at.Add(time.Duration(i*37) * time.Minute / 2) // about 37 hours
		reqs = append(reqs, Request{RequestID: id, ReceivedAt: recv, Source: sources[i%len(sources)],
			App: []string{"a", "b", "c"}[i%3], Input: "[]", Language: []string{"en", "fr", ""}[i%3/2+i%2],
			HasTable: i%4 == 0, SubjectHash: fmt.Sprint("subject-", i%7)})
		suite := ""
		if reqs[i].Source == SourceSuite {
			suite = "sr-1"
		}
		// Costs are multiples of 1/1024 USD so every sum is exact in any order.
		runs = append(runs, Run{RunID: id + "-inc", RequestID: id, SuiteRunID: suite, Pipeline: "incumbent:gpt-5", Mode: ModeIncumbent,
			StartedAt: recv, Status: statuses[i%len(statuses)], LatencyMs: float64((i * 53) % 900),
			CostUSD: float64(i%9) / 1024, FinalOutput: answers[i%len(answers)], Generated: reqs[i].Source == SourceGenerated})
		for k, cand := range []string{"conductor", "conductor-v2"} {
			if (i+k)%5 == 0 {
				continue // not shadowed by this candidate
			}
			runs = append(runs, Run{RunID: fmt.Sprintf("%s-c%d", id, k), RequestID: id, SuiteRunID: suite, Pipeline: cand, Mode: ModeCandidate,
				StartedAt: recv.Add(time.Duration(k+1) * 40 * time.Minute), Status: statuses[(i+k+1)%len(statuses)],
				LatencyMs: float64((i*71+k*13)%3000 + 1), CostUSD: float64((i+k)%11) / 512, InputReduced: (i+k)%6 == 1,
				FinalOutput: answers[(i+k*3)%len(answers)], Generated: reqs[i].Source == SourceGenerated})
		}
	}
	for i, r := range runs {
		if i%4 == 1 { // re-written later: other status, cost, latency and answer
			r.Status = statuses[(i+3)%len(statuses)]
			r.CostUSD += 3.0 / 1024
			r.LatencyMs += 250
			r.FinalOutput = answers[(i+5)%len(answers)]
			rewrites = append(rewrites, r)
		}
	}
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, rewrites); err != nil {
		t.Fatal(err)
	}
	// Every tenth request is re-written too, received 30 hours later and of
	// app b: its window and app are its last version's.
	var reqRewrites []Request
	for i := 0; i < len(reqs); i += 10 {
		r := reqs[i]
		r.ReceivedAt, r.App = r.ReceivedAt.Add(30*time.Hour), "b"
		reqRewrites = append(reqRewrites, r)
	}
	if err := s.InsertRequests(ctx, reqRewrites); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForgetSubject(ctx, "subject-3", "test", 0); err != nil {
		t.Fatal(err)
	}
	windows := []struct {
		name     string
		from, to time.Time
	}{
		{"all", at.Add(-time.Hour), at.Add(48 * time.Hour)},
		{"first day", at, at.Add(24 * time.Hour)},
		{"afternoon", at.Add(13*time.Hour + 17*time.Minute), at.Add(19 * time.Hour)},
		{"empty", at.Add(-48 * time.Hour), at.Add(-24 * time.Hour)},
	}
	// Each window with apps, segments, bucket widths and both sources.
	views := []struct {
		app    string
		seg    SegmentFilter
		bucket int
		gen    bool
	}{
		{"", SegmentFilter{}, 3600, false},
		{"a", SegmentFilter{}, 300, false},
		{"", SegmentFilter{Language: "fr"}, 86400, false},
		{"c", SegmentFilter{HasTable: SegmentYes}, 3600, false},
		{"", SegmentFilter{}, 900, true},
		{"b", SegmentFilter{Language: SegmentUnknown, HasTable: SegmentNo}, 3600, true},
	}
	var checked, nonEmpty, covered int
	for _, w := range windows {
		for _, v := range views {
			q := OverviewQuery{App: v.app, From: w.from, To: w.to, BucketSeconds: v.bucket, Segments: v.seg, Generated: v.gen}
			name := fmt.Sprintf("%s/app=%q/%+v/%ds/generated=%v", w.name, v.app, v.seg, v.bucket, v.gen)
			want := equalsRaw(t, name, q, s.Overview, func(ctx context.Context, q OverviewQuery) (Overview, error) { return overviewRaw(ctx, s, q) })
			wantCov := equalsRaw(t, name+": coverage", q, s.OverviewCharts,
				func(ctx context.Context, q OverviewQuery) (OverviewCharts, error) { return coverageRaw(ctx, s, q) })
			if len(wantCov.Coverage) > 0 {
				covered++
			}
			checked++
			if len(want.Totals) > 0 && len(want.Agreement) > 0 && len(want.Latency) > 0 {
				nonEmpty++
			}
		}
	}
	// The comparison means something only when the windows hold data.
	if nonEmpty < checked/4 || covered < checked/4 {
		t.Errorf("only %d of %d overviews had runs and pairs, %d coverage", nonEmpty, checked, covered)
	}
	// The re-writes replaced: each run is counted once.
	ov, err := s.Overview(ctx, OverviewQuery{From: at.Add(-time.Hour), To: at.Add(48 * time.Hour), BucketSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	var runsSeen int64
	for _, p := range ov.Totals {
		runsSeen += p.Runs
	}
	if c := ov.Counts; runsSeen != c.IncumbentRuns+c.ShadowRuns || runsSeen == 0 {
		t.Errorf("totals count %d runs, counts %+v", runsSeen, c)
	}
}
