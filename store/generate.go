package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// GenerateSpec sizes a synthetic data set for load measurements: Requests tapped
// requests received evenly over [From, To), each with one incumbent run (one
// step) and one conductor run (a planning call and eight workflow steps), so
// runs = 2·Requests and steps = 10·Requests.
type GenerateSpec struct {
	Requests int
	From, To time.Time
	// Prefix starts every generated id (default "gen-"), so a second
	// generation with another prefix adds to the first. Every generated
	// request has source SourceGenerated, never taken for production.
	Prefix string
	// Chunk is the most requests inserted per statement round, with their
	// runs and steps (0: GenerateChunk); the data does not depend on it.
	Chunk int
	// Progress, when set, is called after each chunk is stored, with the
	// requests stored so far.
	Progress func(requests int64)
}

// GenerateChunk is GenerateSpec.Chunk's default: 50,000 requests, 100,000
// runs and 500,000 steps per statement round.
const GenerateChunk = 50_000

// GenerateResult counts what Generate inserted and how long each table took.
type GenerateResult struct {
	Requests, Runs, Steps int64
	Took                  map[string]time.Duration // table → wall time of its INSERT … SELECT
}

// generateWorkers is the worker pool of generated conductor steps, as an SQL array.
const generateWorkers = `['qwen3-32b', 'gpt-5', 'claude-sonnet-4', 'gemini-2.5-pro', 'llama-4']`

// ErrGenerateUnsupported: Generate needs a SQL store (embedded or server).
var ErrGenerateUnsupported = errors.New("store: generate: only the SQL stores can generate data")

// Generate fills st with the synthetic data set of spec using INSERT … SELECT
// FROM numbers() (the rows never pass through Go), spec.Chunk requests at a
// time. Every request has source SourceGenerated. Values are derived from
// sipHash64 of the row number, so a spec always produces the same data: apps
// support-bot/search/billing, categories math/qa/code/chat, 2% of runs in error,
// about 80% of conductor answers equal to the incumbent's, latencies 800–2800 ms
// (incumbent) and 1500–5500 ms (conductor), costs around 0.002–0.006 USD.
func Generate(ctx context.Context, st Store, spec GenerateSpec) (GenerateResult, error) {
	res := GenerateResult{Took: map[string]time.Duration{}}
	s, ok := st.(*sqlStore)
	if !ok {
		return res, ErrGenerateUnsupported
	}
	if spec.Requests <= 0 || spec.From.IsZero() || !spec.To.After(spec.From) {
		return res, errors.New("store: generate: need requests > 0 and a window with From before To")
	}
	if spec.Prefix == "" {
		spec.Prefix = "gen-"
	}
	if err := s.check(ctx); err != nil {
		return res, fmt.Errorf("store: generate: %w", err)
	}
	n := int64(spec.Requests)
	fromMs, spanMs := spec.From.UnixMilli(), spec.To.Sub(spec.From).Milliseconds()
	params := Params{}.Str("prefix", spec.Prefix)
	const p = "{prefix:String}"
	// reqID and receivedAt of request number r (an SQL expression).
	reqID := func(r string) string { return fmt.Sprintf("concat(%s, leftPad(toString(%s), 9, '0'))", p, r) }
	receivedAt := func(r string) string {
		return fmt.Sprintf("fromUnixTimestamp64Milli(toInt64(%d + intDiv(%s * %d, %d)), 'UTC')", fromMs, r, spanMs, n)
	}
	// The conductor run's plan names the workers and access lists its eight
	// workflow steps ran with (the steps INSERT below), so plan shapes vary
	// with the request: five rotations of the worker pool.
	plan := fmt.Sprintf(`concat('{"steps":[', arrayStringConcat(arrayMap(j -> concat('{"worker":"', %[1]s[(r + j) %% 5 + 1],
        '","subtask":"subtask ', toString(j), '","access":', if(j %% 3 = 0, '"all"', '[]'), '}'), range(2, 10)), ','), ']}')`, generateWorkers)
	// stmts inserts requests [r0, r0+rn) with their runs and steps.
	stmts := func(r0, rn int64) []struct{ table, sql string } {
		return []struct{ table, sql string }{
			{"requests", fmt.Sprintf(`INSERT INTO %[1]s.requests (request_id, received_at, source, app, input, input_hash, subject_hash, category, metadata)
SELECT %[2]s, %[3]s, 'generated', ['support-bot', 'search', 'billing'][number %% 3 + 1],
    concat('[{"role":"user","content":"generated question ', toString(number), ' about ', ['trains', 'weather', 'refunds', 'sql'][number %% 4 + 1], '"}]'),
    hex(sipHash64(number)), '', ['math', 'qa', 'code', 'chat'][number %% 4 + 1], map()
FROM numbers(%[4]s)`, s.db, reqID("number"), receivedAt("number"), fmt.Sprintf("%d, %d", r0, rn))},
			{"runs", fmt.Sprintf(`INSERT INTO %[1]s.runs (run_id, request_id, suite_run_id, pipeline, pipeline_version, mode, started_at,
    latency_ms, status, final_output, tokens_in, tokens_out, cost_usd, calls, plan_raw, plan, error, simulated, generated)
SELECT concat(%[2]s, if(k = 0, '/inc', '/cond')), %[2]s, '', if(k = 0, 'incumbent:gpt-5', 'conductor'), 'v1',
    if(k = 0, 'incumbent', 'candidate'), %[3]s + toIntervalMillisecond(5),
    if(k = 0, 800 + h %% 2000, 1500 + h %% 4000), if(h %% 50 = 0, 'error', 'ok'),
    if(k = 1 AND h %% 5 = 0, concat('answer ', toString(h %% 97)), concat('answer ', toString(r %% 7))),
    100 + h %% 400, 20 + h %% 300, if(k = 0, 0.002, 0.003) + (h %% 3000) / 1000000, if(k = 0, 1, 9),
    if(k = 0, '', 'generated plan'), if(k = 0, '', %[5]s), if(h %% 50 = 0, 'generated error', ''), true, true
FROM (SELECT number, intDiv(number, 2) AS r, number %% 2 AS k, sipHash64(number, 7) AS h FROM numbers(%[4]s))`,
				s.db, reqID("r"), receivedAt("r"), fmt.Sprintf("%d, %d", 2*r0, 2*rn), plan)},
			{"steps", fmt.Sprintf(`INSERT INTO %[1]s.steps (run_id, `+"`index`"+`, parent, depth, role, worker, model, subtask, access, messages,
    input_tokens, output_tokens, cost_usd, started_at, latency_ms, ttft_ms, status, output, error, attempt)
SELECT concat(%[2]s, if(k = 0, '/inc', '/cond')), toInt32(if(k = 0, 0, k - 1)), -1, 0,
    multiIf(k = 0, 'incumbent', k = 1, 'conductor', 'worker'),
    multiIf(k = 0, 'gpt-5', k = 1, 'conductor-7b', %[5]s[(r + k) %% 5 + 1]),
    'model', concat('subtask ', toString(k)), if(k <= 1, '', if(k %% 3 = 0, '"all"', '[]')), '[{"role":"user","content":"generated"}]',
    50 + h %% 200, 10 + h %% 100, (h %% 1000) / 2000000, %[3]s + toIntervalMillisecond(5 + if(k <= 1, 0, 300 + intDiv(k - 2, 2) * 400)),
    100 + h %% 500, 20 + h %% 80, if(h %% 100 = 0, 'error', 'ok'), concat('generated output ', toString(number)), '', toInt32(1 + (h %% 20 = 0))
FROM (SELECT number, intDiv(number, 10) AS r, number %% 10 AS k, sipHash64(number, 11) AS h FROM numbers(%[4]s))`,
				s.db, reqID("r"), receivedAt("r"), fmt.Sprintf("%d, %d", 10*r0, 10*rn), generateWorkers)},
		}
	}
	chunk := int64(GenerateChunk)
	if spec.Chunk > 0 {
		chunk = int64(spec.Chunk)
	}
	for r0 := int64(0); r0 < n; r0 += chunk {
		rn := min(chunk, n-r0)
		for _, st := range stmts(r0, rn) {
			start := time.Now()
			if err := s.t.exec(ctx, st.sql, params); err != nil {
				return res, fmt.Errorf("store: generate %s: %w", st.table, err)
			}
			res.Took[st.table] += time.Since(start)
		}
		res.Requests, res.Runs, res.Steps = r0+rn, 2*(r0+rn), 10*(r0+rn)
		if spec.Progress != nil {
			spec.Progress(res.Requests)
		}
	}
	return res, nil
}
