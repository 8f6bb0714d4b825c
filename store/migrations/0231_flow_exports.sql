-- 0231 flow exports: what the exporters the store does not otherwise see sent
-- to parties outside the platform — OTLP spans, Kafka messages, verdict
-- notifications (webhook, e-mail) — counted per UTC hour by each process.
-- A process rewrites its cumulative counts of an hour (ReplacingMergeTree on
-- the key, read with FINAL), so a flush written twice counts once; processes
-- never overwrite each other (process_id, random per start) and readers sum
-- over them. pii_kind '' holds the counts; a row with a pii_kind holds in
-- items how many of the hour's items carried text in which that PII kind was
-- pseudonymized. Holds no exchange text and no subject: forget leaves it.
CREATE TABLE IF NOT EXISTS ${DB}.flow_exports
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
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY (window_start, kind, recipient, host, process_id, pii_kind);
