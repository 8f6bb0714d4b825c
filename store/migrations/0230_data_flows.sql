-- 0230 data flows: what each call that left the platform carried and where it
-- went, recorded at call time (the configuration can change later). A step's
-- endpoint_host is the host[:port] of the base URL its worker had when the
-- call was made ('' when no request was sent: refused by the budget or a
-- breaker, a tapped incumbent's copy, or stored before this migration);
-- sent_bytes and received_bytes are the HTTP bodies of every attempt. The
-- judge's calls are recorded the same way on its judgments (pairwise and
-- canaries) and on rubric scores (scores.judge_*; 0 and '' for every other
-- grader: a pairwise score's calls are on its judgment). Host names are
-- configuration, never exchange text.
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS endpoint_host LowCardinality(String) DEFAULT '' AFTER model;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS sent_bytes Int64 DEFAULT 0 AFTER endpoint_host;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS received_bytes Int64 DEFAULT 0 AFTER sent_bytes;
ALTER TABLE ${DB}.judgments ADD COLUMN IF NOT EXISTS judge_host LowCardinality(String) DEFAULT '' AFTER judge_worker;
ALTER TABLE ${DB}.judgments ADD COLUMN IF NOT EXISTS judge_calls Int32 DEFAULT 0 AFTER judge_host;
ALTER TABLE ${DB}.judgments ADD COLUMN IF NOT EXISTS judge_requests Int32 DEFAULT 0 AFTER judge_calls;
ALTER TABLE ${DB}.judgments ADD COLUMN IF NOT EXISTS sent_bytes Int64 DEFAULT 0 AFTER cost_usd;
ALTER TABLE ${DB}.judgments ADD COLUMN IF NOT EXISTS received_bytes Int64 DEFAULT 0 AFTER sent_bytes;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_worker LowCardinality(String) DEFAULT '' AFTER error;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_host LowCardinality(String) DEFAULT '' AFTER judge_worker;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_calls Int32 DEFAULT 0 AFTER judge_host;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_requests Int32 DEFAULT 0 AFTER judge_calls;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_tokens_in Int64 DEFAULT 0 AFTER judge_requests;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_tokens_out Int64 DEFAULT 0 AFTER judge_tokens_in;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_sent_bytes Int64 DEFAULT 0 AFTER judge_tokens_out;
ALTER TABLE ${DB}.scores ADD COLUMN IF NOT EXISTS judge_received_bytes Int64 DEFAULT 0 AFTER judge_sent_bytes;
