package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Sort keys of TraceSearch.Sort: the pair figures of a trace (TraceSummary's
// Pair* fields), each candidate minus incumbent.
const (
	TraceSortCost      = "cost_delta"    // PairCostDeltaUSD
	TraceSortLatency   = "latency_delta" // PairLatencyDeltaMs
	TraceSortAgreement = "agreement"     // PairAgreement (0 disagree, 1 agree)
	TraceSortJudgment  = "judgment"      // PairJudgment ranked loss < inconsistent < tie < win
)

// TraceSortKeys are the sort keys, in the order the traces page offers them.
func TraceSortKeys() []string {
	return []string{TraceSortCost, TraceSortLatency, TraceSortAgreement, TraceSortJudgment}
}

// judgmentRanks rank a pair's judgment for TraceSortJudgment.
var judgmentRanks = map[string]float64{JudgmentLoss: 0, JudgmentInconsistent: 1, JudgmentTie: 2, JudgmentWin: 3}

// JudgmentRank is the sort value of a judgment outcome under
// TraceSortJudgment (loss 0, inconsistent 1, tie 2, win 3); -1 for none.
func JudgmentRank(outcome string) float64 {
	if r, ok := judgmentRanks[outcome]; ok {
		return r
	}
	return -1
}

// validateSort reports an unknown sort key and a sorted cursor without a sort.
func (q TraceSearch) validateSort() error {
	if q.Sort != "" && !slices.Contains(TraceSortKeys(), q.Sort) {
		return fmt.Errorf("store: trace search: sort %q must be one of %s", q.Sort, strings.Join(TraceSortKeys(), ", "))
	}
	if q.AfterID != "" && q.Sort == "" {
		return errors.New("store: trace search: a sorted cursor needs a sort")
	}
	if math.IsNaN(q.AfterValue) || math.IsInf(q.AfterValue, 0) {
		return errors.New("store: trace search: the cursor value must be a finite number")
	}
	return nil
}

// pairSQL selects, per request of the runs where runCond holds, the pair
// figures of TraceSummary: the trace's candidate is the pipeline named by
// candidate (a bound {candidate:String} when not ""), else the first candidate
// pipeline by name; its newest run (by start, then run id) is paired with the
// incumbent's.
// withOutputs adds the agreement (it reads the answers). The judgment comes
// from the judgments table: the real pair's (no canary, that candidate run's)
// judged outcome, a live
// one before a suite run's, the newest first.
func (s *sqlStore) pairSQL(runCond, candidate string, withOutputs bool) string {
	outputs, agree := "", "toInt8(-1)"
	if withOutputs {
		outputs = ", final_output"
		agree = fmt.Sprintf("if(c.4 = 'ok' AND inc.3 = 'ok', toInt8(if(c.7 = inc.4, 1, %s = %s)), toInt8(-1))",
			fmt.Sprintf(normalizeSQL, "c.7"), fmt.Sprintf(normalizeSQL, "inc.4"))
	}
	// cands: (pipeline, cost, latency, status, run id, started ms[, answer]);
	// a pipeline's newest run first (a newer version's), then by run id.
	pick := "arraySort(x -> (x.1, -x.6, x.5), cands)[1]"
	if candidate != "" {
		pick = "arraySort(x -> (-x.6, x.5), arrayFilter(x -> x.1 = {candidate:String}, cands))[1]"
	}
	return fmt.Sprintf(`SELECT r.request_id AS request_id, r.candidate AS pair_candidate, r.candidates AS pair_candidates, r.inc_pipeline AS pair_incumbent,
    r.paired AS paired, r.cost_delta AS pair_cost_delta_usd, r.latency_known AS pair_latency_known,
    r.latency_delta AS pair_latency_delta_ms, r.agreement AS pair_agreement, j.jo AS pair_judgment
FROM (
    SELECT request_id, c.1 AS candidate, c.5 AS cand_run, length(arrayDistinct(arrayMap(x -> x.1, cands))) AS candidates, inc_pipeline,
        notEmpty(c.1) AND has_inc AS paired,
        if(paired, c.2 - inc.1, 0) AS cost_delta,
        paired AND c.3 > 0 AND inc.2 > 0 AS latency_known,
        if(latency_known, c.3 - inc.2, 0) AS latency_delta,
        if(paired, %[4]s, toInt8(-1)) AS agreement
    FROM (
        SELECT request_id, countIf(mode = 'incumbent') > 0 AS has_inc,
            argMinIf((cost_usd, latency_ms, status%[3]s), run_id, mode = 'incumbent') AS inc,
            argMinIf(pipeline, run_id, mode = 'incumbent') AS inc_pipeline,
            groupArrayIf((pipeline, cost_usd, latency_ms, status, run_id, toUnixTimestamp64Milli(started_at)%[3]s), mode = 'candidate') AS cands,
            %[5]s AS c
        FROM %[1]s.runs FINAL
        WHERE %[2]s
        GROUP BY request_id
    )
) AS r
LEFT JOIN (
    SELECT request_id, candidate_run_id, argMax(outcome, (suite_run_id = '', judged_at)) AS jo
    FROM %[1]s.judgments FINAL
    WHERE canary = '' AND outcome IN %[6]s AND request_id IN (SELECT request_id FROM %[1]s.runs WHERE %[2]s)
    GROUP BY request_id, candidate_run_id
) AS j ON r.request_id = j.request_id AND r.cand_run = j.candidate_run_id`, s.db, runCond, outputs, agree, pick, judgedOutcomes)
}

// pairRow is one request's pair figures (pairSQL).
type pairRow struct {
	RequestID      string  `json:"request_id"`
	Candidate      string  `json:"pair_candidate"`
	Candidates     int     `json:"pair_candidates"`
	Incumbent      string  `json:"pair_incumbent"`
	Paired         bool    `json:"paired"`
	CostDeltaUSD   float64 `json:"pair_cost_delta_usd"`
	LatencyKnown   bool    `json:"pair_latency_known"`
	LatencyDeltaMs float64 `json:"pair_latency_delta_ms"`
	Agreement      int8    `json:"pair_agreement"`
	Judgment       string  `json:"pair_judgment"`
	SortValue      float64 `json:"sort_value"` // the sort's value (sortedTraces only)
}

func (r pairRow) setOn(t *TraceSummary) {
	t.PairCandidate, t.PairCandidates, t.PairIncumbent, t.Paired = r.Candidate, r.Candidates, r.Incumbent, r.Paired
	t.PairCostDeltaUSD, t.PairLatencyKnown, t.PairLatencyDeltaMs = r.CostDeltaUSD, r.LatencyKnown, r.LatencyDeltaMs
	t.PairAgreement, t.PairJudgment, t.SortValue = r.Agreement, r.Judgment, r.SortValue
}

// fillPairs sets the pair figures of a page's summaries, candidate as in
// TraceSearch.Candidate.
func (s *sqlStore) fillPairs(ctx context.Context, page []TraceSummary, candidate string) error {
	if len(page) == 0 {
		return nil
	}
	ids := make([]string, len(page))
	for i, p := range page {
		ids[i] = p.RequestID
		page[i].PairAgreement = -1
	}
	p := Params{}.Strs("ids", ids)
	if candidate != "" {
		p.Str("candidate", candidate)
	}
	rows, err := queryRows[pairRow](ctx, s.t, s.pairSQL("request_id IN {ids:Array(String)}", candidate, true), p)
	if err != nil {
		return err
	}
	by := make(map[string]pairRow, len(rows))
	for _, r := range rows {
		by[r.RequestID] = r
	}
	for i := range page {
		if r, ok := by[page[i].RequestID]; ok {
			r.setOn(&page[i])
		}
	}
	return nil
}

// sortExpr is the SQL value a sort key orders by, and the condition a trace
// must meet to have it.
func sortExpr(key string) (value, has string) {
	switch key {
	case TraceSortCost:
		return "pair_cost_delta_usd", "paired"
	case TraceSortLatency:
		return "pair_latency_delta_ms", "pair_latency_known"
	case TraceSortAgreement:
		return "toFloat64(pair_agreement)", "pair_agreement >= 0"
	}
	return "toFloat64(multiIf(pair_judgment = 'loss', 0, pair_judgment = 'inconsistent', 1, pair_judgment = 'tie', 2, 3))", "pair_judgment != ''"
}

// sortedTraces is SearchTraces with q.Sort: the paired traces that have the
// sort's figure, ordered by it (then by request id, the same way), paged by
// keyset on (value, request id). The request filters of q select the
// requests first (searchCond), then their runs are paired.
func (s *sqlStore) sortedTraces(ctx context.Context, q TraceSearch) ([]TraceSummary, error) {
	cond, p := s.searchCond(q, time.Time{})
	runCond := "1"
	if cond != "" {
		runCond = fmt.Sprintf("request_id IN (SELECT request_id FROM %s.requests FINAL%s)", s.db, cond)
	}
	if q.Candidate != "" {
		p.Str("candidate", q.Candidate)
	}
	value, has := sortExpr(q.Sort)
	dir, cmp := "DESC", "<"
	if q.Asc {
		dir, cmp = "ASC", ">"
	}
	where := has
	if q.AfterID != "" {
		p.Str("after_id", q.AfterID)
		p["after_value"] = floatLiteral(q.AfterValue)
		where += fmt.Sprintf(" AND (%[1]s %[2]s {after_value:Float64} OR (%[1]s = {after_value:Float64} AND request_id %[2]s {after_id:String}))", value, cmp)
	}
	rows, err := queryRows[pairRow](ctx, s.t, fmt.Sprintf(`SELECT *, %[2]s AS sort_value FROM (%[1]s)
WHERE %[3]s
ORDER BY sort_value %[4]s, request_id %[4]s
LIMIT %[5]d`, s.pairSQL(runCond, q.Candidate, q.Sort == TraceSortAgreement), value, where, dir, ClampLimit(q.Limit)), p)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.RequestID
	}
	reqs, err := queryRows[TraceSummary](ctx, s.t, fmt.Sprintf(`SELECT
    request_id, received_at, source, app, category, language, has_table, has_code, length_bucket,
    %[2]s AS user_msgs,
    %[3]s AS input_preview
FROM %[1]s.requests FINAL
WHERE request_id IN {ids:Array(String)}`, s.db, userMsgsExpr, previewExpr), Params{}.Strs("ids", ids))
	if err != nil {
		return nil, err
	}
	by := make(map[string]TraceSummary, len(reqs))
	for _, r := range reqs {
		by[r.RequestID] = r
	}
	page := make([]TraceSummary, 0, len(rows))
	for _, r := range rows {
		t, ok := by[r.RequestID]
		if !ok {
			t = TraceSummary{RequestID: r.RequestID} // runs of a request whose row is missing
		}
		r.setOn(&t)
		page = append(page, t)
	}
	if q.Sort != TraceSortAgreement {
		// The agreement of the page's pairs (the sort left the answers out).
		agree, err := queryRows[pairRow](ctx, s.t, s.pairSQL("request_id IN {ids:Array(String)}", q.Candidate, true), p.Strs("ids", ids))
		if err != nil {
			return nil, err
		}
		a := make(map[string]int8, len(agree))
		for _, r := range agree {
			a[r.RequestID] = r.Agreement
		}
		for i := range page {
			page[i].PairAgreement = a[page[i].RequestID]
		}
	}
	return page, nil
}
