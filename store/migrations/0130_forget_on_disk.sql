-- 0130 forget leaves nothing on disk. forget_keys holds, while one erasure
-- runs, the ids of the requests and runs it deletes: the deletions select
-- their rows by these keys (named by the erasure's random id), so the mutation
-- log (system.mutations, each table's mutation_*.txt) keeps no subject hash,
-- and the erasure deletes its keys when it ends. A deletion rewrites the parts
-- holding the rows; the old parts stay on disk until the engine's cleanup
-- removes them (every cleanup_delay_period, 30-40 s, once older than
-- old_parts_lifetime, 8 min on a ClickHouse server). Opening the store sets
-- old_parts_lifetime = 1 on every table forget deletes from (store/forget.go
-- applyForgetSettings: whatever migration created it); forget wakes the
-- cleanup (SYSTEM START CLEANUP) and waits until the old parts are gone.
CREATE TABLE IF NOT EXISTS ${DB}.forget_keys
(
    erasure_id String,
    kind       LowCardinality(String),
    id         String
)
ENGINE = MergeTree()
ORDER BY (erasure_id, kind, id)
SETTINGS old_parts_lifetime = 1;
