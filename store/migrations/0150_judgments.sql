-- 0150 judgments: one row per pairwise judgment of a candidate's answer
-- against the incumbent's on one request, asked of an LLM judge in both
-- orders (order 1: the incumbent's answer shown first; order 2: the
-- candidate's). Suite runs write one per judged case and per canary (a check
-- of the judge itself: identical answers, a padded answer, the labels
-- swapped); live judging writes the same rows with suite_run_id '' and the
-- inclusion probability of its sample. outcome is from the candidate's side:
-- win, tie, loss, inconsistent (the orders disagree) or error. The raw
-- replies are clipped (eval.MaxJudgeReply). A judgment written twice counts
-- once (ReplacingMergeTree on its key, read with FINAL).
CREATE TABLE IF NOT EXISTS ${DB}.judgments
(
    request_id         String,
    suite_run_id       String,
    case_id            String,
    pipeline           LowCardinality(String),
    pipeline_version   String,
    candidate_run_id   String,
    incumbent_pipeline LowCardinality(String),
    incumbent_run_id   String,
    judge              LowCardinality(String),
    judge_worker       LowCardinality(String),
    prompt_version     LowCardinality(String),
    canary             LowCardinality(String),
    canary_passed      Bool,
    labels             String,
    judged_at          DateTime64(3, 'UTC'),
    outcome            LowCardinality(String),
    verdict_1          LowCardinality(String),
    raw_1              String,
    verdict_2          LowCardinality(String),
    raw_2              String,
    inclusion_prob     Float64,
    tokens_in          Int64,
    tokens_out         Int64,
    cost_usd           Float64,
    error              String,
    inserted_at        DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (request_id, pipeline, candidate_run_id, judge, canary);

-- A suite run's judgments without a full scan.
ALTER TABLE ${DB}.judgments ADD INDEX IF NOT EXISTS idx_suite_run suite_run_id TYPE bloom_filter GRANULARITY 1;
