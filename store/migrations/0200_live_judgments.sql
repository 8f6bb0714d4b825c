-- 0200 live judgments (issue 19): live judging writes one judgments row per
-- sampled live pair (suite_run_id ''): a judgment, a loss decided without the
-- judge (the candidate run has no answer), or outcome 'unjudged' (sampled but
-- not judged: the daily judge budget, a full judging queue or a stop; the
-- reason in note). note says why a row was decided or left without asking
-- the judge ('' for a judged pair). The day's live judge spend is read back at
-- start by judged_at (idx_judged_at skips other days' parts).
ALTER TABLE ${DB}.judgments ADD COLUMN IF NOT EXISTS note String DEFAULT '' AFTER error;
ALTER TABLE ${DB}.judgments ADD INDEX IF NOT EXISTS idx_judged_at judged_at TYPE minmax GRANULARITY 1;
