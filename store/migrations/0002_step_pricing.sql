-- 0002 step pricing (issue 3): the price table each step's cost was computed
-- with, prompt tokens served from cache, and the extra usage a black-box
-- orchestrator API reports for its own planning (Fugu's orchestration_* fields).
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS price_version LowCardinality(String) DEFAULT '' AFTER cost_usd;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS cached_input_tokens Int64 DEFAULT 0 AFTER price_version;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS orchestration_input_tokens Int64 DEFAULT 0 AFTER cached_input_tokens;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS orchestration_input_cached_tokens Int64 DEFAULT 0 AFTER orchestration_input_tokens;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS orchestration_output_tokens Int64 DEFAULT 0 AFTER orchestration_input_cached_tokens;
