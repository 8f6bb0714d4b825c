-- 0220 live sequences (issue 20): when each candidate version's live sequence
-- started — the start of its shadowing, recorded when its first live run
-- (suite_run_id '', mode candidate) is stored (sqlStore.InsertRuns). The live
-- verdict reads every run of that version from this start on, whatever
-- window a page or a report looks at, so the anytime-valid tests it runs have
-- one fixed start and are never restarted. A writer records a row the first
-- time it stores a version's run and again only for a run that started
-- earlier than any it recorded (runs stored out of order); the start is the
-- smallest started_at over the rows (store.SequenceStarts). Nothing personal
-- is kept: names, versions, a run id and a time.
CREATE TABLE IF NOT EXISTS ${DB}.live_sequences
(
    pipeline         LowCardinality(String),
    pipeline_version String,
    started_at       DateTime64(3, 'UTC'),
    first_run_id     String,
    inserted_at      DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (pipeline, pipeline_version, started_at, first_run_id);
