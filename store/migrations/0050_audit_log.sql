-- 0050 audit log: one row per erasure (`conductor-shadow forget`) and other
-- operator actions on stored data. It never holds the subject's value: only
-- the keyed hash the tap stored (requests.subject_hash) and the row counts.
CREATE TABLE IF NOT EXISTS ${DB}.audit_log
(
    audit_id     String,
    at           DateTime64(3, 'UTC'),
    action       LowCardinality(String),
    actor        String,
    subject_hash String,
    requests     Int64,
    runs         Int64,
    steps        Int64,
    scores       Int64,
    detail       String,
    inserted_at  DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (at, audit_id);

-- Finding a subject's requests without a full scan.
ALTER TABLE ${DB}.requests ADD INDEX IF NOT EXISTS idx_subject_hash subject_hash TYPE bloom_filter GRANULARITY 1;
