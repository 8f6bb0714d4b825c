-- 0160 suite looks: one row per look of a group-sequential plan (eval/gate
-- LooksGate). Every suite run of a set for one incumbent, candidate version
-- and gate policy version is the next look of the plan the first such run
-- started; each row carries the plan (spending function, the plan's cases) and
-- the look's information fraction, so the next look's boundary is computed
-- from the looks before it. A look that decided nothing for lack of new cases
-- is not stored.
CREATE TABLE IF NOT EXISTS ${DB}.suite_looks
(
    set_name          String,
    incumbent         String,
    candidate         String,
    candidate_version String,
    policy_version    String,
    look              Int32,
    suite_run_id      String,
    cases             Int32,
    max_cases         Int32,
    fraction          Float64,
    boundary          Float64,
    confidence        Float64,
    spending          LowCardinality(String),
    verdict           LowCardinality(String),
    created_at        DateTime64(3, 'UTC'),
    inserted_at       DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (set_name, incumbent, candidate, candidate_version, policy_version, look);
