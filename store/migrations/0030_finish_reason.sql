-- Truncation is a result (issue 11): each step's finish reason as the API
-- reported it ("stop", "length", "content_filter", ... ; '' when not reported),
-- and per run the number of steps cut at their token cap and whether the final
-- answer itself was cut.
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS finish_reason LowCardinality(String) DEFAULT '' AFTER status;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS truncated Bool DEFAULT false AFTER simulated;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS truncated_steps Int32 DEFAULT 0 AFTER truncated;
