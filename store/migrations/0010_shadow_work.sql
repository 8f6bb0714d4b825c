-- 0010 shadow work: the store-first work queue of the tap. When the tap accepts a
-- copy it writes the request, the incumbent run and one 'pending' row per candidate
-- (pipeline, pipeline_version) before answering 202; the candidate's run is stored
-- and the row is rewritten 'done'. A restart reads the rows still pending (and
-- without a stored candidate run other than a cancelled one) and shadows them
-- without the client sending them again. received_at is the request's, so the
-- backlog is read oldest first.
CREATE TABLE IF NOT EXISTS ${DB}.shadow_work
(
    request_id       String,
    pipeline         LowCardinality(String),
    pipeline_version String,
    status           LowCardinality(String),
    received_at      DateTime64(3, 'UTC'),
    inserted_at      DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (request_id, pipeline, pipeline_version);
