-- 0210 reviews: human labels of judged pairs, from the review page. One row
-- per (pair, reviewer): the pair is a real (not canary) judged pair of
-- judgments (request, candidate pipeline, candidate run); reviewer is a
-- pseudonym (hex HMAC-SHA256 of the reviewer's identity with the PII key).
-- The reviewer saw the two answers as A and B in a shuffled order:
-- shown_first says whose answer was A, choice the key pressed (A, B, T, S)
-- and label the choice from the candidate's side (candidate, incumbent, tie,
-- skip). inclusion_prob is the probability the pair was in the review sample
-- (the judged sample's inclusion probability × sample_share), so agreement
-- figures weight each review by its inverse (Horvitz–Thompson). A pair is
-- reviewed at most once per reviewer (ReplacingMergeTree on the key, read
-- with FINAL).
CREATE TABLE IF NOT EXISTS ${DB}.reviews
(
    request_id       String,
    pipeline         LowCardinality(String),
    candidate_run_id String,
    incumbent_run_id String,
    suite_run_id     String,
    reviewer         String,
    shown_first      LowCardinality(String),
    choice           LowCardinality(String),
    label            LowCardinality(String),
    inclusion_prob   Float64,
    sample_share     Float64,
    reviewed_at      DateTime64(3, 'UTC'),
    inserted_at      DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (request_id, pipeline, candidate_run_id, reviewer);
