-- boot: database and schema_migrations

CREATE DATABASE IF NOT EXISTS `shadow` ON CLUSTER `shadow_cluster`;

CREATE TABLE IF NOT EXISTS `shadow`.schema_migrations_local ON CLUSTER `shadow_cluster`
(
    version    UInt32,
    name       String,
    applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/schema_migrations_local', '{replica}', applied_at)
ORDER BY version;

CREATE TABLE IF NOT EXISTS `shadow`.schema_migrations ON CLUSTER `shadow_cluster` AS `shadow`.schema_migrations_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'schema_migrations_local', version);

-- migration 0001_init

CREATE TABLE IF NOT EXISTS `shadow`.requests_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/requests_local', '{replica}', inserted_at)
ORDER BY request_id;

CREATE TABLE IF NOT EXISTS `shadow`.requests ON CLUSTER `shadow_cluster` AS `shadow`.requests_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'requests_local', cityHash64(request_id));

CREATE TABLE IF NOT EXISTS `shadow`.runs_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/runs_local', '{replica}', inserted_at)
ORDER BY run_id;

CREATE TABLE IF NOT EXISTS `shadow`.runs ON CLUSTER `shadow_cluster` AS `shadow`.runs_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'runs_local', cityHash64(request_id));

CREATE TABLE IF NOT EXISTS `shadow`.steps_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/steps_local', '{replica}', inserted_at)
ORDER BY (run_id, `index`);

CREATE TABLE IF NOT EXISTS `shadow`.steps ON CLUSTER `shadow_cluster` AS `shadow`.steps_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'steps_local', cityHash64(run_id));

CREATE TABLE IF NOT EXISTS `shadow`.scores_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/scores_local', '{replica}', inserted_at)
ORDER BY (suite_run_id, run_id, grader);

CREATE TABLE IF NOT EXISTS `shadow`.scores ON CLUSTER `shadow_cluster` AS `shadow`.scores_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'scores_local', cityHash64(request_id));

CREATE TABLE IF NOT EXISTS `shadow`.suite_runs_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/suite_runs_local', '{replica}', inserted_at)
ORDER BY suite_run_id;

CREATE TABLE IF NOT EXISTS `shadow`.suite_runs ON CLUSTER `shadow_cluster` AS `shadow`.suite_runs_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'suite_runs_local', cityHash64(suite_run_id));

CREATE TABLE IF NOT EXISTS `shadow`.cases_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/cases_local', '{replica}', inserted_at)
ORDER BY (suite_run_id, case_id);

CREATE TABLE IF NOT EXISTS `shadow`.cases ON CLUSTER `shadow_cluster` AS `shadow`.cases_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'cases_local', cityHash64(suite_run_id));

-- migration 0002_step_pricing

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS price_version LowCardinality(String) DEFAULT '' AFTER cost_usd;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS price_version LowCardinality(String) DEFAULT '' AFTER cost_usd;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS cached_input_tokens Int64 DEFAULT 0 AFTER price_version;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS cached_input_tokens Int64 DEFAULT 0 AFTER price_version;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS orchestration_input_tokens Int64 DEFAULT 0 AFTER cached_input_tokens;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS orchestration_input_tokens Int64 DEFAULT 0 AFTER cached_input_tokens;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS orchestration_input_cached_tokens Int64 DEFAULT 0 AFTER orchestration_input_tokens;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS orchestration_input_cached_tokens Int64 DEFAULT 0 AFTER orchestration_input_tokens;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS orchestration_output_tokens Int64 DEFAULT 0 AFTER orchestration_input_cached_tokens;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS orchestration_output_tokens Int64 DEFAULT 0 AFTER orchestration_input_cached_tokens;

-- migration 0004_eval_verdicts

ALTER TABLE `shadow`.suite_runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS verdict LowCardinality(String) DEFAULT '' AFTER headline;

ALTER TABLE `shadow`.suite_runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS verdict LowCardinality(String) DEFAULT '' AFTER headline;

ALTER TABLE `shadow`.suite_runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS gate_policy_version String DEFAULT '' AFTER verdict;

ALTER TABLE `shadow`.suite_runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS gate_policy_version String DEFAULT '' AFTER verdict;

ALTER TABLE `shadow`.suite_runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS report_html String DEFAULT '' AFTER report_json;

ALTER TABLE `shadow`.suite_runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS report_html String DEFAULT '' AFTER report_json;

ALTER TABLE `shadow`.cases_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS extra String DEFAULT '' AFTER grader;

ALTER TABLE `shadow`.cases ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS extra String DEFAULT '' AFTER grader;

-- migration 0010_shadow_work

CREATE TABLE IF NOT EXISTS `shadow`.shadow_work_local ON CLUSTER `shadow_cluster`
(
    request_id       String,
    pipeline         LowCardinality(String),
    pipeline_version String,
    status           LowCardinality(String),
    received_at      DateTime64(3, 'UTC'),
    inserted_at      DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/shadow_work_local', '{replica}', inserted_at)
ORDER BY (request_id, pipeline, pipeline_version);

CREATE TABLE IF NOT EXISTS `shadow`.shadow_work ON CLUSTER `shadow_cluster` AS `shadow`.shadow_work_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'shadow_work_local', cityHash64(request_id));

-- migration 0030_finish_reason

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS finish_reason LowCardinality(String) DEFAULT '' AFTER status;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS finish_reason LowCardinality(String) DEFAULT '' AFTER status;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS truncated Bool DEFAULT false AFTER simulated;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS truncated Bool DEFAULT false AFTER simulated;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS truncated_steps Int32 DEFAULT 0 AFTER truncated;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS truncated_steps Int32 DEFAULT 0 AFTER truncated;

-- migration 0040_exchange_fidelity

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS reasoning String DEFAULT '' AFTER final_output;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS reasoning String DEFAULT '' AFTER final_output;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS choices String DEFAULT '' AFTER reasoning;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS choices String DEFAULT '' AFTER reasoning;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS tool_calls String DEFAULT '' AFTER choices;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS tool_calls String DEFAULT '' AFTER choices;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS http_status Int32 DEFAULT 0 AFTER status;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS http_status Int32 DEFAULT 0 AFTER status;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS response_headers Map(String, String) DEFAULT map() AFTER http_status;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS response_headers Map(String, String) DEFAULT map() AFTER http_status;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS partial Bool DEFAULT false AFTER response_headers;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS partial Bool DEFAULT false AFTER response_headers;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS reasoning String DEFAULT '' AFTER output;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS reasoning String DEFAULT '' AFTER output;

-- migration 0050_audit_log

CREATE TABLE IF NOT EXISTS `shadow`.audit_log_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/audit_log_local', '{replica}', inserted_at)
ORDER BY (at, audit_id);

CREATE TABLE IF NOT EXISTS `shadow`.audit_log ON CLUSTER `shadow_cluster` AS `shadow`.audit_log_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'audit_log_local', cityHash64(audit_id));

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD INDEX IF NOT EXISTS idx_subject_hash subject_hash TYPE bloom_filter GRANULARITY 1;

-- migration 0060_request_segments

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS language LowCardinality(String) DEFAULT '' AFTER category;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS language LowCardinality(String) DEFAULT '' AFTER category;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS has_table Bool DEFAULT false AFTER language;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS has_table Bool DEFAULT false AFTER language;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS has_code Bool DEFAULT false AFTER has_table;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS has_code Bool DEFAULT false AFTER has_table;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS length_bucket LowCardinality(String) DEFAULT '' AFTER has_code;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS length_bucket LowCardinality(String) DEFAULT '' AFTER has_code;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS novelty Float64 DEFAULT -1 AFTER length_bucket;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS novelty Float64 DEFAULT -1 AFTER length_bucket;

-- migration 0080_step_cache_writes

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS cache_write_input_tokens Int64 DEFAULT 0 AFTER cached_input_tokens;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS cache_write_input_tokens Int64 DEFAULT 0 AFTER cached_input_tokens;

-- migration 0100_forgotten_subjects

CREATE TABLE IF NOT EXISTS `shadow`.forgotten_subjects_local ON CLUSTER `shadow_cluster`
(
    subject_hash String,
    forgotten_at DateTime64(3, 'UTC'),
    inserted_at  DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/forgotten_subjects_local', '{replica}', inserted_at)
ORDER BY (subject_hash, forgotten_at);

CREATE TABLE IF NOT EXISTS `shadow`.forgotten_subjects ON CLUSTER `shadow_cluster` AS `shadow`.forgotten_subjects_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'forgotten_subjects_local', cityHash64(subject_hash));

-- migration 0130_forget_on_disk

CREATE TABLE IF NOT EXISTS `shadow`.forget_keys_local ON CLUSTER `shadow_cluster`
(
    erasure_id String,
    kind       LowCardinality(String),
    id         String
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/shadow/forget_keys_local', '{replica}')
ORDER BY (erasure_id, kind, id)
SETTINGS old_parts_lifetime = 1;

CREATE TABLE IF NOT EXISTS `shadow`.forget_keys ON CLUSTER `shadow_cluster` AS `shadow`.forget_keys_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'forget_keys_local', cityHash64(erasure_id));

-- migration 0150_judgments

CREATE TABLE IF NOT EXISTS `shadow`.judgments_local ON CLUSTER `shadow_cluster`
(
    request_id         String,
    suite_run_id       String,
    case_id            String,
    pipeline           LowCardinality(String),
    pipeline_version   String,
    candidate_run_id   String,
    incumbent_pipeline LowCardinality(String),
    incumbent_run_id   String,
    judge              LowCardinality(String),
    judge_worker       LowCardinality(String),
    prompt_version     LowCardinality(String),
    canary             LowCardinality(String),
    canary_passed      Bool,
    labels             String,
    judged_at          DateTime64(3, 'UTC'),
    outcome            LowCardinality(String),
    verdict_1          LowCardinality(String),
    raw_1              String,
    verdict_2          LowCardinality(String),
    raw_2              String,
    inclusion_prob     Float64,
    tokens_in          Int64,
    tokens_out         Int64,
    cost_usd           Float64,
    error              String,
    inserted_at        DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/judgments_local', '{replica}', inserted_at)
ORDER BY (request_id, pipeline, candidate_run_id, judge, canary);

CREATE TABLE IF NOT EXISTS `shadow`.judgments ON CLUSTER `shadow_cluster` AS `shadow`.judgments_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'judgments_local', cityHash64(request_id));

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD INDEX IF NOT EXISTS idx_suite_run suite_run_id TYPE bloom_filter GRANULARITY 1;

-- migration 0160_suite_looks

CREATE TABLE IF NOT EXISTS `shadow`.suite_looks_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/suite_looks_local', '{replica}', inserted_at)
ORDER BY (set_name, incumbent, candidate, candidate_version, policy_version, look);

CREATE TABLE IF NOT EXISTS `shadow`.suite_looks ON CLUSTER `shadow_cluster` AS `shadow`.suite_looks_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'suite_looks_local', cityHash64(set_name, candidate));

-- migration 0170_input_reduced

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS input_reduced Bool DEFAULT false AFTER truncated_steps;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS input_reduced Bool DEFAULT false AFTER truncated_steps;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS input_reduced_reason String DEFAULT '' AFTER input_reduced;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS input_reduced_reason String DEFAULT '' AFTER input_reduced;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS cache_write_1h_input_tokens Int64 DEFAULT 0 AFTER cache_write_input_tokens;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS cache_write_1h_input_tokens Int64 DEFAULT 0 AFTER cache_write_input_tokens;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS tool_calls String DEFAULT '' AFTER output;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS tool_calls String DEFAULT '' AFTER output;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS tools String DEFAULT '' AFTER metadata;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS tools String DEFAULT '' AFTER metadata;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS input_reduced String DEFAULT '' AFTER tools;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS input_reduced String DEFAULT '' AFTER tools;

-- migration 0180_verdict_notices

CREATE TABLE IF NOT EXISTS `shadow`.verdict_notices_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/verdict_notices_local', '{replica}', inserted_at)
ORDER BY (sink, kind, candidate, candidate_version, set_name);

CREATE TABLE IF NOT EXISTS `shadow`.verdict_notices ON CLUSTER `shadow_cluster` AS `shadow`.verdict_notices_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'verdict_notices_local', cityHash64(sink, kind, candidate, candidate_version, set_name));

-- migration 0200_live_judgments

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS note String DEFAULT '' AFTER error;

ALTER TABLE `shadow`.judgments ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS note String DEFAULT '' AFTER error;

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD INDEX IF NOT EXISTS idx_judged_at judged_at TYPE minmax GRANULARITY 1;

-- migration 0210_reviews

CREATE TABLE IF NOT EXISTS `shadow`.reviews_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/reviews_local', '{replica}', inserted_at)
ORDER BY (request_id, pipeline, candidate_run_id, reviewer);

CREATE TABLE IF NOT EXISTS `shadow`.reviews ON CLUSTER `shadow_cluster` AS `shadow`.reviews_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'reviews_local', cityHash64(request_id));

-- migration 0220_live_sequences

CREATE TABLE IF NOT EXISTS `shadow`.live_sequences_local ON CLUSTER `shadow_cluster`
(
    pipeline         LowCardinality(String),
    pipeline_version String,
    started_at       DateTime64(3, 'UTC'),
    first_run_id     String,
    inserted_at      DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/live_sequences_local', '{replica}', inserted_at)
ORDER BY (pipeline, pipeline_version, started_at, first_run_id);

CREATE TABLE IF NOT EXISTS `shadow`.live_sequences ON CLUSTER `shadow_cluster` AS `shadow`.live_sequences_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'live_sequences_local', cityHash64(pipeline, pipeline_version));

-- migration 0221_requests_not_shadowed

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS not_shadowed LowCardinality(String) DEFAULT '' AFTER input_reduced;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS not_shadowed LowCardinality(String) DEFAULT '' AFTER input_reduced;

-- migration 0230_data_flows

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS endpoint_host LowCardinality(String) DEFAULT '' AFTER model;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS endpoint_host LowCardinality(String) DEFAULT '' AFTER model;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS sent_bytes Int64 DEFAULT 0 AFTER endpoint_host;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS sent_bytes Int64 DEFAULT 0 AFTER endpoint_host;

ALTER TABLE `shadow`.steps_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS received_bytes Int64 DEFAULT 0 AFTER sent_bytes;

ALTER TABLE `shadow`.steps ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS received_bytes Int64 DEFAULT 0 AFTER sent_bytes;

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_host LowCardinality(String) DEFAULT '' AFTER judge_worker;

ALTER TABLE `shadow`.judgments ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_host LowCardinality(String) DEFAULT '' AFTER judge_worker;

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_calls Int32 DEFAULT 0 AFTER judge_host;

ALTER TABLE `shadow`.judgments ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_calls Int32 DEFAULT 0 AFTER judge_host;

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_requests Int32 DEFAULT 0 AFTER judge_calls;

ALTER TABLE `shadow`.judgments ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_requests Int32 DEFAULT 0 AFTER judge_calls;

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS sent_bytes Int64 DEFAULT 0 AFTER cost_usd;

ALTER TABLE `shadow`.judgments ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS sent_bytes Int64 DEFAULT 0 AFTER cost_usd;

ALTER TABLE `shadow`.judgments_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS received_bytes Int64 DEFAULT 0 AFTER sent_bytes;

ALTER TABLE `shadow`.judgments ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS received_bytes Int64 DEFAULT 0 AFTER sent_bytes;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_worker LowCardinality(String) DEFAULT '' AFTER error;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_worker LowCardinality(String) DEFAULT '' AFTER error;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_host LowCardinality(String) DEFAULT '' AFTER judge_worker;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_host LowCardinality(String) DEFAULT '' AFTER judge_worker;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_calls Int32 DEFAULT 0 AFTER judge_host;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_calls Int32 DEFAULT 0 AFTER judge_host;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_requests Int32 DEFAULT 0 AFTER judge_calls;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_requests Int32 DEFAULT 0 AFTER judge_calls;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_tokens_in Int64 DEFAULT 0 AFTER judge_requests;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_tokens_in Int64 DEFAULT 0 AFTER judge_requests;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_tokens_out Int64 DEFAULT 0 AFTER judge_tokens_in;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_tokens_out Int64 DEFAULT 0 AFTER judge_tokens_in;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_sent_bytes Int64 DEFAULT 0 AFTER judge_tokens_out;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_sent_bytes Int64 DEFAULT 0 AFTER judge_tokens_out;

ALTER TABLE `shadow`.scores_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_received_bytes Int64 DEFAULT 0 AFTER judge_sent_bytes;

ALTER TABLE `shadow`.scores ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS judge_received_bytes Int64 DEFAULT 0 AFTER judge_sent_bytes;

-- migration 0231_flow_exports

CREATE TABLE IF NOT EXISTS `shadow`.flow_exports_local ON CLUSTER `shadow_cluster`
(
    window_start  DateTime64(3, 'UTC'),
    process_id    String,
    kind          LowCardinality(String),
    recipient     String,
    host          String,
    pii_kind      LowCardinality(String),
    items         Int64,
    content_items Int64,
    requests      Int64,
    sent_bytes    Int64,
    failed_items  Int64,
    updated_at    DateTime64(3, 'UTC'),
    inserted_at   DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/flow_exports_local', '{replica}', inserted_at)
ORDER BY (window_start, kind, recipient, host, process_id, pii_kind);

CREATE TABLE IF NOT EXISTS `shadow`.flow_exports ON CLUSTER `shadow_cluster` AS `shadow`.flow_exports_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'flow_exports_local', cityHash64(kind, recipient, host));

-- migration 0260_plan_shape

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS plan_shape LowCardinality(String) DEFAULT arrayStringConcat(arrayMap(s -> concat(
        if(JSONExtractString(s, 'worker') = '', concat('model ', toString(JSONExtractInt(s, 'model_id'))), JSONExtractString(s, 'worker')),
        multiIf(JSONType(s, 'access') = 'String', concat('[', JSONExtractString(s, 'access'), ']'),
            JSONType(s, 'access') = 'Array' AND JSONLength(s, 'access') > 0,
            concat('[', arrayStringConcat(arrayMap(x -> toString(x), JSONExtract(s, 'access', 'Array(Int64)')), ','), ']'), '')),
    JSONExtractArrayRaw(plan, 'steps')), ' → ') AFTER plan;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS plan_shape LowCardinality(String) DEFAULT arrayStringConcat(arrayMap(s -> concat(
        if(JSONExtractString(s, 'worker') = '', concat('model ', toString(JSONExtractInt(s, 'model_id'))), JSONExtractString(s, 'worker')),
        multiIf(JSONType(s, 'access') = 'String', concat('[', JSONExtractString(s, 'access'), ']'),
            JSONType(s, 'access') = 'Array' AND JSONLength(s, 'access') > 0,
            concat('[', arrayStringConcat(arrayMap(x -> toString(x), JSONExtract(s, 'access', 'Array(Int64)')), ','), ']'), '')),
    JSONExtractArrayRaw(plan, 'steps')), ' → ') AFTER plan;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` MATERIALIZE COLUMN plan_shape;

-- migration 0270_recorded_exchanges

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS route LowCardinality(String) DEFAULT '' AFTER not_shadowed;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS route LowCardinality(String) DEFAULT '' AFTER not_shadowed;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS response_id String DEFAULT '' AFTER route;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS response_id String DEFAULT '' AFTER route;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS request_bytes Int64 DEFAULT 0 AFTER response_id;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS request_bytes Int64 DEFAULT 0 AFTER response_id;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS response_bytes Int64 DEFAULT 0 AFTER request_bytes;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS response_bytes Int64 DEFAULT 0 AFTER request_bytes;

ALTER TABLE `shadow`.requests_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS body_omitted LowCardinality(String) DEFAULT '' AFTER response_bytes;

ALTER TABLE `shadow`.requests ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS body_omitted LowCardinality(String) DEFAULT '' AFTER response_bytes;

-- migration 0271_tap_offered

CREATE TABLE IF NOT EXISTS `shadow`.tap_offered_local ON CLUSTER `shadow_cluster`
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shadow/tap_offered_local', '{replica}', inserted_at)
ORDER BY (window_start, tap_id, source, route, app);

CREATE TABLE IF NOT EXISTS `shadow`.tap_offered ON CLUSTER `shadow_cluster` AS `shadow`.tap_offered_local
ENGINE = Distributed('shadow_cluster', 'shadow', 'tap_offered_local', cityHash64(tap_id));

-- migration 0290_runs_answer_normalized

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS answer_normalized String MATERIALIZED replaceRegexpAll(replaceRegexpAll(replaceRegexpAll(multiIf(notEmpty(extractAll(lowerUTF8(final_output), '\\\\boxed\\{([^{}]*)\\}')), arrayElement(extractAll(lowerUTF8(final_output), '\\\\boxed\\{([^{}]*)\\}'), -1), notEmpty(extractAll(lowerUTF8(final_output), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)')), arrayElement(extractAll(lowerUTF8(final_output), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)'), -1), lowerUTF8(final_output)), '[,$]', ''), '^\\s+|[\\s.]+$', ''), '\\s+', ' ') AFTER final_output;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS answer_normalized String MATERIALIZED replaceRegexpAll(replaceRegexpAll(replaceRegexpAll(multiIf(notEmpty(extractAll(lowerUTF8(final_output), '\\\\boxed\\{([^{}]*)\\}')), arrayElement(extractAll(lowerUTF8(final_output), '\\\\boxed\\{([^{}]*)\\}'), -1), notEmpty(extractAll(lowerUTF8(final_output), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)')), arrayElement(extractAll(lowerUTF8(final_output), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)'), -1), lowerUTF8(final_output)), '[,$]', ''), '^\\s+|[\\s.]+$', ''), '\\s+', ' ') AFTER final_output;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` MATERIALIZE COLUMN answer_normalized;

-- migration 0291_runs_generated

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS generated Bool DEFAULT false;

ALTER TABLE `shadow`.runs ON CLUSTER `shadow_cluster` ADD COLUMN IF NOT EXISTS generated Bool DEFAULT false;

ALTER TABLE `shadow`.runs_local ON CLUSTER `shadow_cluster` UPDATE generated = true WHERE NOT generated AND request_id IN (SELECT request_id FROM `shadow`.requests WHERE source = 'generated') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

-- retention: requests 90 days, bodies 30 days

ALTER TABLE `shadow`.`requests_local` ON CLUSTER `shadow_cluster` MODIFY TTL toDateTime(received_at) + toIntervalSecond(7776000);

ALTER TABLE `shadow`.`requests_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `input` TTL toDateTime(received_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `final_output` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `reasoning` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `choices` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `tool_calls` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `plan_raw` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `plan` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`steps_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `subtask` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`steps_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `messages` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`steps_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `output` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`steps_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `tool_calls` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`steps_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `reasoning` TTL toDateTime(started_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`scores_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `explanation` TTL toDateTime(created_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`judgments_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `raw_1` TTL toDateTime(judged_at) + toIntervalSecond(2592000);

ALTER TABLE `shadow`.`judgments_local` ON CLUSTER `shadow_cluster` MODIFY COLUMN `raw_2` TTL toDateTime(judged_at) + toIntervalSecond(2592000);

OPTIMIZE TABLE `shadow`.`shadow_work_local` ON CLUSTER `shadow_cluster` FINAL;

ALTER TABLE `shadow`.`shadow_work_local` ON CLUSTER `shadow_cluster` MODIFY TTL toDateTime(received_at) + toIntervalSecond(7776000) WHERE status = 'pending';

ALTER TABLE `shadow`.`tap_offered_local` ON CLUSTER `shadow_cluster` MODIFY TTL toDateTime(window_start) + toIntervalSecond(7776000);

-- forget: old_parts_lifetime of the tables it deletes from, set at open

ALTER TABLE `shadow`.`forget_keys_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

ALTER TABLE `shadow`.`scores_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

ALTER TABLE `shadow`.`judgments_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

ALTER TABLE `shadow`.`reviews_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

ALTER TABLE `shadow`.`steps_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

ALTER TABLE `shadow`.`shadow_work_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

ALTER TABLE `shadow`.`requests_local` ON CLUSTER `shadow_cluster` MODIFY SETTING old_parts_lifetime = 1;

-- forget: the erasure's keys (hash and erasure id bound), then its deletions

INSERT INTO `shadow`.forget_keys (erasure_id, kind, id) SETTINGS insert_distributed_sync = 1 SELECT {erasure:String}, 'request', request_id FROM `shadow`.requests WHERE subject_hash = {subject:String};

INSERT INTO `shadow`.forget_keys (erasure_id, kind, id) SETTINGS insert_distributed_sync = 1 SELECT {erasure:String}, 'run', run_id FROM `shadow`.runs WHERE request_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = {erasure:String} AND kind = 'request');

ALTER TABLE `shadow`.`scores_local` ON CLUSTER `shadow_cluster` DELETE WHERE request_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = 'e-0f1e2d3c' AND kind = 'request') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

ALTER TABLE `shadow`.`judgments_local` ON CLUSTER `shadow_cluster` DELETE WHERE request_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = 'e-0f1e2d3c' AND kind = 'request') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

ALTER TABLE `shadow`.`reviews_local` ON CLUSTER `shadow_cluster` DELETE WHERE request_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = 'e-0f1e2d3c' AND kind = 'request') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

ALTER TABLE `shadow`.`steps_local` ON CLUSTER `shadow_cluster` DELETE WHERE run_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = 'e-0f1e2d3c' AND kind = 'run') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

ALTER TABLE `shadow`.`runs_local` ON CLUSTER `shadow_cluster` DELETE WHERE request_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = 'e-0f1e2d3c' AND kind = 'request') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

ALTER TABLE `shadow`.`shadow_work_local` ON CLUSTER `shadow_cluster` DELETE WHERE request_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = 'e-0f1e2d3c' AND kind = 'request') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

ALTER TABLE `shadow`.`requests_local` ON CLUSTER `shadow_cluster` DELETE WHERE request_id IN (SELECT id FROM `shadow`.forget_keys WHERE erasure_id = 'e-0f1e2d3c' AND kind = 'request') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;

