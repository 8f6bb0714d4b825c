-- 0271 tap_offered (issue 21, coverage): how many production exchanges the
-- tap was offered per minute, route and app, whatever became of them, so that
-- coverage (offered → recorded → shadowed → judged) is a stored figure.
-- One row per (minute, tap life, source, route, app) holding that minute's
-- running count: each tap process (tap_id, drawn at start) writes its own
-- rows and rewrites them as the minute's count grows (ReplacingMergeTree on
-- the key: the last write counts; read with FINAL and summed over tap_id).
--   source          'proxy' (the mirroring proxy) or 'tap' (POST /v1/tap)
--   offered         exchanges offered in the minute (proxy: every exchange
--                   forwarded on a mirrored route)
--   record_dropped  of them, those whose record the tap could not hand to the
--                   store (its record buffers full, or a stop): no request row
CREATE TABLE IF NOT EXISTS ${DB}.tap_offered
(
    window_start   DateTime64(3, 'UTC'),
    tap_id         String,
    source         LowCardinality(String),
    route          LowCardinality(String),
    app            LowCardinality(String),
    offered        Int64,
    record_dropped Int64,
    inserted_at    DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (window_start, tap_id, source, route, app);
