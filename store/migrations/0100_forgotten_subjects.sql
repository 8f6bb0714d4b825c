-- 0100 forgotten subjects: one row per erasure (`conductor-shadow forget`),
-- written before its deletions start. The shadow workers look a request's
-- subject_hash up here before they write its runs, steps or scores, and drop
-- them when the subject was forgotten after the request was received, so a
-- candidate run still going during the erasure does not bring the subject's
-- data back. Holds only the keyed hash, never the subject's value.
CREATE TABLE IF NOT EXISTS ${DB}.forgotten_subjects
(
    subject_hash String,
    forgotten_at DateTime64(3, 'UTC'),
    inserted_at  DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (subject_hash, forgotten_at);
