-- 0080 step cache writes: prompt tokens a call wrote to the provider's prompt
-- cache (Anthropic's usage.cache_creation_input_tokens), of input_tokens; they
-- are priced at the model's cache-write rate (1.25x input for Anthropic's
-- 5-minute cache, anthropic.com/pricing), so a step's cost can be checked.
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS cache_write_input_tokens Int64 DEFAULT 0 AFTER cached_input_tokens;
