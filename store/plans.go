package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// Scopes of a PlanQuery: whose runs are read.
const (
	// PlanScopeProduction: live traffic (tapped or replayed requests), paired
	// with the production incumbent's run of the same request.
	PlanScopeProduction = "production"
	// PlanScopeSuite: suite runs' cases, paired with the suite incumbent's run.
	PlanScopeSuite = "suite"
)

// PlanQuery selects one candidate conductor's runs for the plans page: of
// Pipeline (required), of Version when set (every version otherwise),
// started in [From, To), in Scope (default PlanScopeProduction), of App's
// requests when set.
type PlanQuery struct {
	Pipeline string
	Version  string
	From, To time.Time
	Scope    string
	App      string
	// MaxRuns bounds the candidate runs PlanAttribution reads (0:
	// MaxAttributionRuns).
	MaxRuns int
}

// Validate reports a missing pipeline, an empty or inverted window and an
// unknown scope.
func (q PlanQuery) Validate() error {
	var errs []error
	if strings.TrimSpace(q.Pipeline) == "" {
		errs = append(errs, errors.New("store: plans: name a candidate pipeline"))
	}
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		errs = append(errs, errors.New("store: plans: the window needs a start before its end"))
	}
	if q.Scope != "" && q.Scope != PlanScopeProduction && q.Scope != PlanScopeSuite {
		errs = append(errs, fmt.Errorf("store: plans: scope %q must be %q or %q", q.Scope, PlanScopeProduction, PlanScopeSuite))
	}
	return errors.Join(errs...)
}

// scopeCond is the runs condition of a scope.
func scopeCond(scope string) string {
	if scope == PlanScopeSuite {
		return "suite_run_id != ''"
	}
	return "suite_run_id = ''"
}

// candCond renders q's condition on runs (unaliased columns), binding its
// parameters in p: q.Version is bound as versionParam ("" leaves the version
// out: drift compares versions), withWindow false leaves the window out.
func (s *sqlStore) candCond(q PlanQuery, p Params, versionParam string, withWindow bool) string {
	c := []string{"mode = 'candidate'", "pipeline = {pipeline:String}", scopeCond(q.Scope)}
	p.Str("pipeline", q.Pipeline)
	if versionParam != "" && q.Version != "" {
		c = append(c, "pipeline_version = {"+versionParam+":String}")
		p.Str(versionParam, q.Version)
	}
	if withWindow {
		c = append(c, "started_at >= {from:DateTime64(3, 'UTC')}", "started_at < {to:DateTime64(3, 'UTC')}")
		p.Time("from", q.From).Time("to", q.To)
	}
	if q.App != "" {
		c = append(c, fmt.Sprintf("request_id IN (SELECT request_id FROM %s.requests WHERE app = {app:String})", s.db))
		p.Str("app", q.App)
	}
	return strings.Join(c, " AND ")
}

// PlanPipeline is one candidate version whose runs carry a plan: a conductor.
type PlanPipeline struct {
	Pipeline string    `json:"pipeline"`
	Version  string    `json:"version"`
	Runs     int64     `json:"runs"`  // runs with a plan
	First    time.Time `json:"first"` // first run's start, UTC
	Last     time.Time `json:"last"`  // last run's start, UTC
}

// PlanShapeStat is one plan shape of a candidate's runs with its figures:
// Share of the selected runs; cost per request and latency percentiles by
// store/figure over its runs; quality as the judged win rate
// (figure.WinRate over the pairs live judging or a suite judged, weighted by
// inclusion probability) and as agreement with the incumbent (the overview's
// definition: both answered ok, answers equal after NormalizeAnswer).
type PlanShapeStat struct {
	Shape             string  `json:"shape"` // PlanShape; "" for runs without a readable plan
	Steps             int64   `json:"steps"` // steps of the shape
	Runs              int64   `json:"runs"`
	Requests          int64   `json:"requests"`
	Share             float64 `json:"share"`  // of the selected runs, 0..1
	Errors            int64   `json:"errors"` // runs whose status is neither ok nor cancelled
	CostPerRequestUSD float64 `json:"cost_per_request_usd"`
	P50Ms             float64 `json:"p50_ms"`
	P95Ms             float64 `json:"p95_ms"`
	Judged            int64   `json:"judged"` // pairs judged win, tie, loss or inconsistent
	Wins              int64   `json:"wins"`
	WinRate           float64 `json:"win_rate"` // figure.WinRate, 0..1; meaningful when Judged > 0
	Pairs             int64   `json:"pairs"`    // runs with an ok answer beside an ok incumbent answer
	Agree             int64   `json:"agree"`
	// ExampleRequestID is one request of the shape, for a link to its trace.
	ExampleRequestID string `json:"example_request_id"`
}

// MaxPlanShapes caps the shapes PlanShapes returns (the most frequent).
const MaxPlanShapes = 100

// ShapeCount is how many runs had one shape in one time bucket and version.
type ShapeCount struct {
	Bucket  time.Time `json:"bucket"` // bucket start, UTC
	Version string    `json:"version"`
	Shape   string    `json:"shape"` // PlanShape, or ShapeOther for the shapes beyond the top
	Runs    int64     `json:"runs"`
}

// ShapeOther stands for every shape outside the top ones of PlanDrift.
const ShapeOther = "(other shapes)"

// ShapeTransition is how many requests two versions planned as From and To.
type ShapeTransition struct {
	From             string `json:"from_shape"`
	To               string `json:"to_shape"`
	Requests         int64  `json:"requests"`
	ExampleRequestID string `json:"example_request_id"`
}

// PlanVersion names one candidate version.
type PlanVersion struct {
	Pipeline string `json:"pipeline"`
	Version  string `json:"version"`
}

// String is "pipeline@version".
func (v PlanVersion) String() string { return v.Pipeline + "@" + v.Version }

// PlanDiff compares two candidate versions (of one conductor, or two
// conductors) on the requests both ran: Requests such requests, Changed those
// planned in another shape, and the transitions between shapes, most frequent
// first (at most MaxTransitions).
type PlanDiff struct {
	A, B              PlanVersion
	Requests, Changed int64
	Transitions       []ShapeTransition
}

// MaxTransitions caps PlanDiff.Transitions.
const MaxTransitions = 50

// AttributionRow is one plan step or worker's part of the difference between
// the candidate and the incumbent on paired requests.
type AttributionRow struct {
	Key string `json:"key"` // a worker ("gpt-5", "conductor-7b (planning)") or a plan step ("plan step 1")
	// Requests are the paired requests whose candidate run has such a step.
	Requests int64 `json:"requests"`
	// CostUSD and LatencyMs are the row's summed parts (USD, ms) over the
	// pairs; divided by Attribution.Pairs (LatencyPairs) they are its share of
	// the mean difference per request.
	CostUSD   float64 `json:"cost_usd"`
	LatencyMs float64 `json:"latency_ms"`
}

// Attribution decomposes the candidate's cost and latency difference from
// the incumbent over paired requests (a candidate run and the incumbent's
// run of the same request):
//
//   - cost: each step's part of a pair's difference is its cost less the
//     incumbent's cost spread over the candidate's steps by their share of
//     the candidate's cost, cost_s − inc · cost_s / cand (so a pair's parts
//     sum to cand − inc); cost of the run outside its steps is the row
//     AttributionNotInSteps, and a candidate run that cost nothing puts its
//     whole difference (−inc) there;
//   - latency: the candidate's wall time split along its critical path
//     (LatencyParts: each path step's own time, the waits between them,
//     the time outside the steps), each part less the incumbent's latency
//     spread by its share, part − inc · part / cand; pairs where either
//     latency is unknown (0) are left out.
//
// Every row set (ByWorker, ByStep) sums to the total difference: CostDeltaUSD
// over Pairs, LatencyDeltaMs over LatencyPairs (the mean difference per request
// is the total over the pairs).
type Attribution struct {
	Pairs          int64    `json:"pairs"`
	LatencyPairs   int64    `json:"latency_pairs"`
	CandidateUSD   float64  `json:"candidate_usd"`    // summed candidate cost of the pairs
	IncumbentUSD   float64  `json:"incumbent_usd"`    // summed incumbent cost of the pairs
	CostDeltaUSD   float64  `json:"cost_delta_usd"`   // CandidateUSD − IncumbentUSD
	LatencyDeltaMs float64  `json:"latency_delta_ms"` // summed latency difference over LatencyPairs
	CandidateMs    float64  `json:"candidate_ms"`     // summed candidate latency over LatencyPairs
	IncumbentMs    float64  `json:"incumbent_ms"`     // summed incumbent latency over LatencyPairs
	Incumbents     []string `json:"incumbents"`       // the incumbent pipelines of the pairs, sorted
	// SampledFrom is, when the window held more than MaxAttributionRuns
	// candidate runs, how many it held: the figures are then those of the
	// sample (MaxAttributionRuns); 0 when every run was read.
	SampledFrom int64            `json:"sampled_from"`
	ByWorker    []AttributionRow `json:"by_worker"` // by worker, largest cost part first
	ByStep      []AttributionRow `json:"by_step"`   // by plan step, largest cost part first
}

// MaxAttributionRuns bounds the candidate runs PlanAttribution reads: past
// it, the window's first MaxAttributionRuns runs by run id
// (Attribution.SampledFrom), so the page stays fast on a week of heavy
// traffic. The shadow side's run ids are hashes (shadow.RunID), so that is a
// uniform sample of the window's requests; the decomposition sums to the
// sample's difference, an estimate of the whole window's mean.
const MaxAttributionRuns = 20_000

// Attribution rows that are no step.
const (
	AttributionNotInSteps = "not in any step"       // cost of the run its steps do not hold
	AttributionWaiting    = "waiting between steps" // critical path time between a blocker's end and the next start
	AttributionOutside    = "outside the steps"     // run time before the first and after the last path step
)

// PlanReader is the plans page's read: a conductor's plan shapes, where its
// cost and latency difference from the incumbent comes from, how its shapes
// drift over time and versions, and how two versions plan the same requests.
// The SQL stores (embedded and server) implement it. Invalid queries return
// their Validate error.
type PlanReader interface {
	// PlanPipelines lists the candidate versions whose runs in scope carry a
	// plan, by pipeline then last run (newest first).
	PlanPipelines(ctx context.Context, scope string) ([]PlanPipeline, error)
	// PlanShapes returns q's runs grouped by PlanShape, most runs first, at
	// most MaxPlanShapes.
	PlanShapes(ctx context.Context, q PlanQuery) ([]PlanShapeStat, error)
	// PlanAttribution decomposes q's cost and latency difference from the
	// incumbent by worker and by plan step (Attribution).
	PlanAttribution(ctx context.Context, q PlanQuery) (Attribution, error)
	// PlanDrift counts q's runs (every version when q.Version is "") per
	// bucket of bucketSeconds (a divisor of a day, or 7 days), version and
	// shape, the shapes beyond the top most frequent ones counted as
	// ShapeOther; by bucket, version, then runs (most first).
	PlanDrift(ctx context.Context, q PlanQuery, bucketSeconds, top int) ([]ShapeCount, error)
	// PlanDiff compares candidate versions a and b on the requests both ran
	// in q's scope, b's run started in q's window and of q.App's requests
	// (q.Pipeline and q.Version are ignored).
	PlanDiff(ctx context.Context, q PlanQuery, a, b PlanVersion) (PlanDiff, error)
}

var _ PlanReader = (*sqlStore)(nil)

// PlanPipelines implements PlanReader.
func (s *sqlStore) PlanPipelines(ctx context.Context, scope string) ([]PlanPipeline, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: plan pipelines: %w", err)
	}
	if scope != "" && scope != PlanScopeProduction && scope != PlanScopeSuite {
		return nil, fmt.Errorf("store: plan pipelines: scope %q must be %q or %q", scope, PlanScopeProduction, PlanScopeSuite)
	}
	rows, err := queryRows[PlanPipeline](ctx, s.t, fmt.Sprintf(`SELECT pipeline, pipeline_version AS version, count() AS runs,
    min(started_at) AS first, max(started_at) AS last
FROM %s.runs
WHERE mode = 'candidate' AND notEmpty(plan) AND %s
GROUP BY pipeline, version
ORDER BY pipeline, last DESC, version`, s.db, scopeCond(scope)), Params{})
	if err != nil {
		return nil, fmt.Errorf("store: plan pipelines: %w", err)
	}
	return nilIfEmpty(rows), nil
}

// judgedCond and winCond select a judgment row's outcome for figure.WinRate.
const (
	judgedOutcomes = "('" + JudgmentWin + "', '" + JudgmentTie + "', '" + JudgmentLoss + "', '" + JudgmentInconsistent + "')"
)

// PlanShapes implements PlanReader with one statement: the runs, their
// incumbent's answer (for agreement) and their judgment (for the win rate).
func (s *sqlStore) PlanShapes(ctx context.Context, q PlanQuery) ([]PlanShapeStat, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: plan shapes: %w", err)
	}
	p := Params{}
	cond := s.candCond(q, p, "version", true)
	rows, err := queryRows[PlanShapeStat](ctx, s.t, fmt.Sprintf(`SELECT shape, any(n_steps) AS steps, count() AS runs,
    uniqExact(c.request_id) AS requests,
    count() / sum(count()) OVER () AS share,
    countIf(c.status NOT IN ('ok', 'cancelled')) AS errors,
    %[4]s AS cost_per_request_usd,
    %[5]s AS p50_ms,
    %[6]s AS p95_ms,
    countIf(j.judged = 1) AS judged,
    countIf(j.judged = 1 AND j.jo = '%[9]s') AS wins,
    %[7]s AS win_rate,
    countIf(c.status = 'ok' AND i.ok = 1) AS pairs,
    countIf(c.status = 'ok' AND i.ok = 1 AND if(c.final_output = i.inc, 1, %[8]s = %[10]s)) AS agree,
    any(c.request_id) AS example_request_id
FROM (
    SELECT run_id, request_id, cost_usd, latency_ms, status, final_output,
        plan_shape AS shape, if(empty(plan_shape), 0, countSubstrings(plan_shape, '%[3]s') + 1) AS n_steps
    FROM %[1]s.runs FINAL WHERE %[2]s
) AS c
LEFT JOIN (
    SELECT request_id, any(final_output) AS inc, 1 AS ok
    FROM %[1]s.runs FINAL
    WHERE mode = 'incumbent' AND status = 'ok' AND request_id IN (SELECT request_id FROM %[1]s.runs WHERE %[2]s)
    GROUP BY request_id
) AS i ON c.request_id = i.request_id
LEFT JOIN (
    SELECT candidate_run_id, argMax(outcome, judged_at) AS jo, argMax(inclusion_prob, judged_at) AS prob, 1 AS judged
    FROM %[1]s.judgments FINAL
    WHERE canary = '' AND pipeline = {pipeline:String} AND outcome IN %[11]s
    GROUP BY candidate_run_id
) AS j ON c.run_id = j.candidate_run_id
GROUP BY shape
ORDER BY runs DESC, shape
LIMIT %[12]d`, s.db, cond, PlanShapeSep,
		figure.CostPerRequestSQL("c.cost_usd", "c.request_id"), figure.LatencySQL("c.latency_ms", 50), figure.LatencySQL("c.latency_ms", 95),
		figure.WinRateSQL("j.jo = '"+JudgmentWin+"'", "j.judged = 1", "j.prob"),
		fmt.Sprintf(normalizeSQL, "c.final_output"), JudgmentWin, fmt.Sprintf(normalizeSQL, "i.inc"), judgedOutcomes, MaxPlanShapes), p)
	if err != nil {
		return nil, fmt.Errorf("store: plan shapes: %w", err)
	}
	return nilIfEmpty(rows), nil
}

// criticalPartsSQL computes, from st (a run's steps as an array of tuples
// (index, start ms, end ms, …) sorted by index), the tuple (own, wait,
// outside) of LatencyParts: own an array aligned with st, runStart and
// latency the run's start (ms, on the steps' clock: ms since their first
// start, so that Float64 keeps sub-ms latencies exact) and latency (ms). It
// is CriticalPath and LatencyParts in SQL.
func criticalPartsSQL(st, runStart, latency string) string {
	slack := floatLiteral(CriticalSlackMs)
	// S(j), E(j), I(j) of the 1-based step j.
	S := func(j string) string { return st + "[" + j + "].2" }
	E := func(j string) string { return st + "[" + j + "].3" }
	I := func(j string) string { return st + "[" + j + "].1" }
	blocker := fmt.Sprintf(`arrayMap(i -> toUInt64(arrayFirst(j -> 1,
        arrayReverseSort(j -> (%[2]s, %[3]s), arrayFilter(j -> j != i AND %[2]s <= %[4]s + %[5]s AND %[2]s < %[6]s, arrayEnumerate(%[1]s))))), arrayEnumerate(%[1]s))`,
		st, E("j"), I("j"), S("i"), slack, E("i"))
	last := fmt.Sprintf(`toUInt64(arrayFirst(j -> 1, arrayReverseSort(j -> (%[2]s, %[3]s), arrayEnumerate(%[1]s))))`, st, E("j"), I("j"))
	// The walk from the last-finishing step back through the blockers, then
	// reversed into time order. The blockers are computed once per run and
	// handed to the walk as a lambda argument (inside the fold's lambda the
	// expression would be computed again at every step of the walk).
	path := fmt.Sprintf(`arrayMap(blk -> arrayReverse(arrayFold((acc, k) -> if(acc.1 = 0, acc, (blk[acc.1], arrayPushBack(acc.2, acc.1))),
        range(length(%[2]s)), (%[3]s, CAST([], 'Array(UInt64)'))).2), [%[1]s])[1]`, blocker, st, last)
	// prevEnd of path position k: the run's start, else the previous path step's end.
	return fmt.Sprintf(`arrayMap(path -> (
        arrayMap(j -> if(indexOf(path, j) = 0, 0.,
            %[2]s - greatest(%[3]s, if(indexOf(path, j) = 1, %[4]s, %[1]s[path[indexOf(path, j) - 1]].3))), arrayEnumerate(%[1]s)),
        arraySum(arrayMap((j, k) -> greatest(%[1]s[j].2, if(k = 1, %[4]s, %[1]s[path[k - 1]].3)) - if(k = 1, %[4]s, %[1]s[path[k - 1]].3), path, arrayEnumerate(path))),
        %[5]s - (if(empty(path), %[4]s, %[1]s[path[-1]].3) - %[4]s)
    ), [%[6]s])[1]`, st, E("j"), S("j"), runStart, latency, path)
}

// stepTimelineSQL selects per run_id of the steps where cond holds: base,
// the first step's start (ms since the epoch), and steps, the steps sorted by
// index as tuples (index, start, end, extra...) with start and end in ms
// since base (the clock criticalPartsSQL reads), extra the columns named.
func stepTimelineSQL(db, cond, extra string) string {
	var get strings.Builder
	for k := range strings.Split(extra, ",") {
		fmt.Fprintf(&get, ", x.4.%d", k+1)
	}
	return fmt.Sprintf(`SELECT run_id, base, arrayMap(x -> tuple(x.1, toFloat64(x.2 - base), toFloat64(x.2 - base) + x.3%[4]s), raw) AS steps
FROM (
    SELECT run_id, min(toUnixTimestamp64Milli(started_at)) AS base,
        arraySort(x -> x.1, groupArray((`+"`index`"+`, toUnixTimestamp64Milli(started_at), greatest(latency_ms, 0), tuple(%[3]s)))) AS raw
    FROM %[1]s.steps FINAL
    WHERE %[2]s
    GROUP BY run_id
)`, db, cond, extra, get.String())
}

// PlanAttribution implements PlanReader with one statement: the candidate
// runs paired with the incumbent's run of their request, each pair's steps
// cut into parts (Attribution), summed by worker and by plan step.
func (s *sqlStore) PlanAttribution(ctx context.Context, q PlanQuery) (Attribution, error) {
	var out Attribution
	if err := q.Validate(); err != nil {
		return out, err
	}
	if err := s.check(ctx); err != nil {
		return out, fmt.Errorf("store: plan attribution: %w", err)
	}
	p := Params{}
	cond := s.candCond(q, p, "version", true)
	type count struct {
		N int64 `json:"n"`
	}
	n, err := queryRows[count](ctx, s.t, fmt.Sprintf("SELECT count() AS n FROM %s.runs WHERE %s", s.db, cond), p)
	if err != nil {
		return out, fmt.Errorf("store: plan attribution: count: %w", err)
	}
	maxRuns := int64(cmp.Or(q.MaxRuns, MaxAttributionRuns))
	stepsCond := ""
	if len(n) == 1 && n[0].N > maxRuns {
		// The sample: the window's first maxRuns runs by run id (the table's
		// order, so runs and steps read only its granules).
		type cut struct {
			RunID string `json:"run_id"`
		}
		c, err := queryRows[cut](ctx, s.t, fmt.Sprintf("SELECT run_id FROM %s.runs WHERE %s ORDER BY run_id LIMIT 1 OFFSET %d", s.db, cond, maxRuns-1), p)
		if err != nil {
			return out, fmt.Errorf("store: plan attribution: sample: %w", err)
		}
		if len(c) == 1 {
			out.SampledFrom = n[0].N
			p.Str("cut", c[0].RunID)
			cond += " AND run_id <= {cut:String}"
			stepsCond = "run_id <= {cut:String} AND "
		}
	}
	type row struct {
		Set       string   `json:"set"` // "worker", "step" or "total"
		Key       string   `json:"key"`
		Requests  int64    `json:"requests"`
		CostUSD   float64  `json:"cost_usd"`
		LatencyMs float64  `json:"latency_ms"`
		Pairs     int64    `json:"pairs"`
		LatPairs  int64    `json:"lat_pairs"`
		CandUSD   float64  `json:"cand_usd"`
		IncUSD    float64  `json:"inc_usd"`
		CandMs    float64  `json:"cand_ms"`
		IncMs     float64  `json:"inc_ms"`
		Incs      []string `json:"incs"`
	}
	// Per pair: parts (worker key, step key, cost part, latency part); the
	// first part is the run itself (cost outside its steps, latency outside
	// the steps), the second the waits, then one per step.
	rows, err := queryRows[row](ctx, s.t, fmt.Sprintf(`SELECT
    multiIf(grouping(wkey) = 0, 'worker', grouping(skey) = 0, 'step', 'total') AS set,
    if(grouping(wkey) = 0, wkey, if(grouping(skey) = 0, skey, '')) AS key,
    if(grouping(wkey) = 0, countIf(part.5 AND wfirst), countIf(part.5 AND sfirst)) AS requests,
    sum(part.3) AS cost_usd,
    sum(part.4) AS latency_ms,
    countIf(k = 1) AS pairs,
    countIf(k = 1 AND lat_known) AS lat_pairs,
    sumIf(cc, k = 1) AS cand_usd, sumIf(ic, k = 1) AS inc_usd,
    sumIf(cl, k = 1 AND lat_known) AS cand_ms, sumIf(il, k = 1 AND lat_known) AS inc_ms,
    arraySort(groupUniqArray(inc_pipeline)) AS incs
FROM (
    SELECT request_id, cc, ic, cl, il, inc_pipeline, lat_known, part, k, part.1 AS wkey, part.2 AS skey,
        wuniq[k] = 1 AS wfirst, suniq[k] = 1 AS sfirst
    FROM (
        SELECT c.request_id AS request_id, c.cost_usd AS cc, i.cost AS ic, c.latency_ms AS cl, i.lat AS il, i.pipeline AS inc_pipeline,
            c.latency_ms > 0 AND i.lat > 0 AS lat_known,
            if(cc > 0, 1 - ic / cc, 0) AS f,
            if(lat_known, 1 - il / cl, 0) AS g,
            st.steps AS steps,
            arrayMap((x, j) -> if(x.4 = 'worker' AND x.5 = 0, arrayCount(y -> y.4 = 'worker' AND y.5 = 0, arraySlice(steps, 1, j - 1)), -1),
                steps, arrayEnumerate(steps)) AS pos,
            -- lp, the critical path's parts, is computed once per pair and
            -- handed in as a lambda argument (the lambda over the steps below
            -- would compute the expression again for every step).
            arrayMap(lp -> arrayConcat(
                [('%[4]s', '%[4]s', if(cc > 0, (cc - arraySum(x -> x.7, steps)) * f, cc - ic), 0., false),
                 ('%[5]s', '%[5]s', 0., lp.2 * g, false),
                 ('%[6]s', '%[6]s', 0., lp.3 * g, false)],
                arrayMap((x, j) -> (
                    multiIf(x.4 = 'conductor', concat(x.6, ' (planning)'), x.4 = 'fallback', concat(x.6, ' (fallback)'), x.6),
                    multiIf(x.4 = 'conductor' AND x.5 = 0, 'planning (conductor)', x.4 = 'worker' AND x.5 = 0, concat('plan step ', toString(pos[j])),
                        x.5 > 0, 'nested workflow', x.4),
                    if(cc > 0, x.7 * f, 0.), lp.1[j] * g, true), steps, arrayEnumerate(steps))
            ), [%[3]s])[1] AS parts,
            arrayEnumerateUniq(arrayMap(x -> x.1, parts)) AS wuniq,
            arrayEnumerateUniq(arrayMap(x -> x.2, parts)) AS suniq
        FROM (SELECT run_id, request_id, cost_usd, latency_ms, toUnixTimestamp64Milli(started_at) AS start_ms
            FROM %[1]s.runs FINAL WHERE %[2]s) AS c
        INNER JOIN (
            SELECT request_id, any(cost_usd) AS cost, any(latency_ms) AS lat, any(pipeline) AS pipeline
            FROM %[1]s.runs FINAL
            WHERE mode = 'incumbent' AND request_id IN (SELECT request_id FROM %[1]s.runs WHERE %[2]s)
            GROUP BY request_id
        ) AS i ON c.request_id = i.request_id
        LEFT JOIN (%[7]s) AS st ON c.run_id = st.run_id
    )
    ARRAY JOIN parts AS part, arrayEnumerate(parts) AS k
)
GROUP BY GROUPING SETS ((wkey), (skey), ())
ORDER BY set, abs(cost_usd) DESC, key`, s.db, cond,
		criticalPartsSQL("steps", "toFloat64(c.start_ms - st.base)", "c.latency_ms"), AttributionNotInSteps, AttributionWaiting, AttributionOutside,
		stepTimelineSQL(s.db, fmt.Sprintf("%srun_id IN (SELECT run_id FROM %s.runs WHERE %s)", stepsCond, s.db, cond), "role, depth, worker, cost_usd")), p)
	if err != nil {
		return out, fmt.Errorf("store: plan attribution: %w", err)
	}
	for _, r := range rows {
		ar := AttributionRow{Key: r.Key, Requests: r.Requests, CostUSD: r.CostUSD, LatencyMs: r.LatencyMs}
		switch r.Set {
		case "worker":
			out.ByWorker = append(out.ByWorker, ar)
		case "step":
			out.ByStep = append(out.ByStep, ar)
		default:
			out.Pairs, out.LatencyPairs = r.Pairs, r.LatPairs
			out.CandidateUSD, out.IncumbentUSD, out.CostDeltaUSD = r.CandUSD, r.IncUSD, r.CostUSD
			out.CandidateMs, out.IncumbentMs, out.LatencyDeltaMs = r.CandMs, r.IncMs, r.LatencyMs
			out.Incumbents = r.Incs
		}
	}
	// The waits and the outside time are latency only, the run's own cost
	// cost only: rows that are all zero say nothing.
	keep := func(rs []AttributionRow) []AttributionRow {
		return slices.DeleteFunc(rs, func(r AttributionRow) bool { return r.CostUSD == 0 && r.LatencyMs == 0 })
	}
	out.ByWorker, out.ByStep = keep(out.ByWorker), keep(out.ByStep)
	return out, nil
}

// PlanDrift implements PlanReader with one statement.
func (s *sqlStore) PlanDrift(ctx context.Context, q PlanQuery, bucketSeconds, top int) ([]ShapeCount, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if bucketSeconds <= 0 || (86400%bucketSeconds != 0 && bucketSeconds != 7*86400) {
		return nil, fmt.Errorf("store: plan drift: bucket of %d s must divide a day or be a week", bucketSeconds)
	}
	if top <= 0 {
		return nil, fmt.Errorf("store: plan drift: top must be positive, got %d", top)
	}
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: plan drift: %w", err)
	}
	p := Params{}
	cond := s.candCond(q, p, "version", true)
	bucket := fmt.Sprintf("toStartOfInterval(started_at, INTERVAL %d SECOND)", bucketSeconds)
	if bucketSeconds == 7*86400 {
		bucket = "toStartOfWeek(started_at, 1)" // ISO weeks, starting Monday
	}
	rows, err := queryRows[ShapeCount](ctx, s.t, fmt.Sprintf(`SELECT toDateTime64(%[3]s, 3, 'UTC') AS bucket, pipeline_version AS version,
    if(plan_shape IN (SELECT plan_shape FROM %[1]s.runs FINAL WHERE %[2]s GROUP BY plan_shape ORDER BY count() DESC, plan_shape LIMIT %[4]d),
        plan_shape, '%[5]s') AS shape,
    count() AS runs
FROM %[1]s.runs FINAL WHERE %[2]s
GROUP BY bucket, version, shape
ORDER BY bucket, version, runs DESC, shape`, s.db, cond, bucket, top, ShapeOther), p)
	if err != nil {
		return nil, fmt.Errorf("store: plan drift: %w", err)
	}
	return nilIfEmpty(rows), nil
}

// PlanDiff implements PlanReader with two statements: the totals and the top
// transitions.
func (s *sqlStore) PlanDiff(ctx context.Context, q PlanQuery, a, b PlanVersion) (PlanDiff, error) {
	out := PlanDiff{A: a, B: b}
	if err := q.Validate(); err != nil {
		return out, err
	}
	if a.Pipeline == "" || b.Pipeline == "" || a == b {
		return out, fmt.Errorf("store: plan diff: name two different candidate versions, got %v and %v", a, b)
	}
	if err := s.check(ctx); err != nil {
		return out, fmt.Errorf("store: plan diff: %w", err)
	}
	qb := q
	qb.Pipeline, qb.Version = b.Pipeline, b.Version
	p := Params{}
	condB := s.candCond(qb, p, "version", true)
	// A's runs: any time (the same requests may have been shadowed before).
	p.Str("pipeline_a", a.Pipeline).Str("version_a", a.Version)
	condA := "mode = 'candidate' AND pipeline = {pipeline_a:String} AND pipeline_version = {version_a:String} AND " + scopeCond(q.Scope)
	pairs := fmt.Sprintf(`FROM (SELECT request_id, any(plan_shape) AS shape FROM %[1]s.runs FINAL WHERE %[2]s GROUP BY request_id) AS a
INNER JOIN (SELECT request_id, any(plan_shape) AS shape FROM %[1]s.runs FINAL WHERE %[3]s GROUP BY request_id) AS b ON a.request_id = b.request_id`,
		s.db, condA, condB)
	type totals struct {
		Requests int64 `json:"requests"`
		Changed  int64 `json:"changed"`
	}
	tot, err := queryRows[totals](ctx, s.t, "SELECT count() AS requests, countIf(a.shape != b.shape) AS changed\n"+pairs, p)
	if err != nil {
		return out, fmt.Errorf("store: plan diff: %w", err)
	}
	if len(tot) == 1 {
		out.Requests, out.Changed = tot[0].Requests, tot[0].Changed
	}
	if out.Transitions, err = queryRows[ShapeTransition](ctx, s.t, fmt.Sprintf(`SELECT a.shape AS from_shape, b.shape AS to_shape,
    count() AS requests, min(b.request_id) AS example_request_id
%s
GROUP BY from_shape, to_shape
ORDER BY requests DESC, from_shape, to_shape
LIMIT %d`, pairs, MaxTransitions), p); err != nil {
		return out, fmt.Errorf("store: plan diff: transitions: %w", err)
	}
	return out, nil
}
