-- 0260 plan shapes (issue 22): runs.plan_shape is the canonical shape of the
-- run's parsed workflow, store.PlanShape: each step's worker and its access
-- list ("" for [], "[all]", "[0,2]") joined by ' → ', e.g.
-- 'qwen3-32b → gpt-5[all] → claude-sonnet-4[1]'; '' for a run without a
-- readable plan. The engine computes it from plan on insert (a DEFAULT the
-- writers never set) and, for parts written before this migration, on read,
-- so the plans page groups by a column instead of parsing every plan's JSON.
-- TestPlanShapeSQLMatchesGo holds it equal to store.PlanShape.
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS plan_shape LowCardinality(String) DEFAULT arrayStringConcat(arrayMap(s -> concat(
        if(JSONExtractString(s, 'worker') = '', concat('model ', toString(JSONExtractInt(s, 'model_id'))), JSONExtractString(s, 'worker')),
        multiIf(JSONType(s, 'access') = 'String', concat('[', JSONExtractString(s, 'access'), ']'),
            JSONType(s, 'access') = 'Array' AND JSONLength(s, 'access') > 0,
            concat('[', arrayStringConcat(arrayMap(x -> toString(x), JSONExtract(s, 'access', 'Array(Int64)')), ','), ']'), '')),
    JSONExtractArrayRaw(plan, 'steps')), ' → ') AFTER plan;
-- Rows written before: the shape is written to their parts in the background
-- (a mutation, not waited for), read computed from plan until then.
ALTER TABLE ${DB}.runs MATERIALIZE COLUMN plan_shape;
