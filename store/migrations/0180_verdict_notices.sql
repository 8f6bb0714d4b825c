-- 0180 verdict notices: per sink (webhook, email) and verdict key (kind suite
-- or live, candidate pipeline, its version, regression set; "" for live) the
-- last verdict a notification was decided for. A change is written 'pending'
-- before it is sent and rewritten 'sent', 'failed' (retries exhausted) or
-- 'dropped' (the outbox was full) after, so a restart sends what is still
-- pending and never a sent one again. notice is the rendered notice (JSON:
-- headline, gates, link), so a pending one is sent after a restart as it was.
CREATE TABLE IF NOT EXISTS ${DB}.verdict_notices
(
    sink              LowCardinality(String),
    kind              LowCardinality(String),
    candidate         String,
    candidate_version String,
    set_name          String,
    verdict           LowCardinality(String),
    previous          LowCardinality(String),
    status            LowCardinality(String),
    notice            String,
    changed_at        DateTime64(3, 'UTC'),
    attempts          Int32,
    error             String,
    inserted_at       DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (sink, kind, candidate, candidate_version, set_name);
