-- 0001 init: the six tables of conductor-shadow.
-- ${DB} is replaced with the configured database name (quoted).
-- Every table is a ReplacingMergeTree ordered by its natural key with inserted_at
-- as the version: re-delivered records collapse to the last write, and reads use
-- FINAL so nothing is counted twice before background merges run.
-- Times are DateTime64(3, 'UTC'); money is Float64 USD; tokens are Int64 counts.

CREATE TABLE IF NOT EXISTS ${DB}.requests
(
    request_id   String,
    received_at  DateTime64(3, 'UTC'),
    source       LowCardinality(String),
    app          LowCardinality(String),
    input        String,
    input_hash   String,
    subject_hash String,
    category     LowCardinality(String),
    metadata     Map(String, String),
    inserted_at  DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY request_id;

CREATE TABLE IF NOT EXISTS ${DB}.runs
(
    run_id           String,
    request_id       String,
    suite_run_id     String,
    pipeline         LowCardinality(String),
    pipeline_version String,
    mode             LowCardinality(String),
    started_at       DateTime64(3, 'UTC'),
    latency_ms       Float64,
    status           LowCardinality(String),
    final_output     String,
    tokens_in        Int64,
    tokens_out       Int64,
    cost_usd         Float64,
    calls            Int32,
    plan_raw         String,
    plan             String,
    error            String,
    simulated        Bool,
    inserted_at      DateTime64(6, 'UTC') DEFAULT now64(6),
    INDEX idx_request_id request_id TYPE bloom_filter GRANULARITY 1
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY run_id;

CREATE TABLE IF NOT EXISTS ${DB}.steps
(
    run_id        String,
    `index`       Int32,
    parent        Int32,
    depth         Int32,
    role          LowCardinality(String),
    worker        LowCardinality(String),
    model         LowCardinality(String),
    subtask       String,
    access        String,
    messages      String,
    input_tokens  Int64,
    output_tokens Int64,
    cost_usd      Float64,
    started_at    DateTime64(3, 'UTC'),
    latency_ms    Float64,
    ttft_ms       Float64,
    status        LowCardinality(String),
    output        String,
    error         String,
    attempt       Int32,
    inserted_at   DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (run_id, `index`);

CREATE TABLE IF NOT EXISTS ${DB}.scores
(
    suite_run_id String,
    run_id       String,
    request_id   String,
    case_id      String,
    pipeline     LowCardinality(String),
    grader       LowCardinality(String),
    value        Float64,
    passed       Bool,
    explanation  String,
    error        String,
    created_at   DateTime64(3, 'UTC'),
    inserted_at  DateTime64(6, 'UTC') DEFAULT now64(6),
    INDEX idx_request_id request_id TYPE bloom_filter GRANULARITY 1
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (suite_run_id, run_id, grader);

CREATE TABLE IF NOT EXISTS ${DB}.suite_runs
(
    suite_run_id    String,
    set_name        String,
    set_version     String,
    incumbent       String,
    candidates      Array(String),
    started_at      DateTime64(3, 'UTC'),
    finished_at     DateTime64(3, 'UTC'),
    status          LowCardinality(String),
    cases           Int32,
    headline        String,
    report_markdown String,
    report_json     String,
    inserted_at     DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY suite_run_id;

CREATE TABLE IF NOT EXISTS ${DB}.cases
(
    suite_run_id String,
    set_name     String,
    set_version  String,
    case_id      String,
    category     LowCardinality(String),
    input        String,
    reference    String,
    choices      Array(String),
    grader       String,
    inserted_at  DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (suite_run_id, case_id);
