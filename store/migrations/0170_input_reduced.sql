-- 0170 input fidelity of candidate runs, and what more a step's call returned.
--   runs.input_reduced          the run answered without part of the request's input:
--                               a media part (image, audio, file) no call of the run
--                               received (no worker it called takes that modality), or
--                               a conversation the tap could not rebuild (a Responses
--                               API previous_response_id it never saw)
--   runs.input_reduced_reason   what was missing, e.g. "image image/png, 146,000 bytes,
--                               sha256 3f9a1c2b4d5e reached no call (text-only workers)"
--   steps.cache_write_1h_input_tokens  of cache_write_input_tokens, those written to a
--                               1-hour prompt cache (Anthropic's
--                               cache_creation.ephemeral_1h_input_tokens), priced at
--                               2x input (anthropic.com/pricing)
--   steps.tool_calls            the call's tool calls as JSON ('' when it answered in text)
--   requests.tools              the request's tool definitions as JSON ('' when none)
--   requests.input_reduced      what production sent that input lacks ('' when whole)
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS input_reduced Bool DEFAULT false AFTER truncated_steps;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS input_reduced_reason String DEFAULT '' AFTER input_reduced;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS cache_write_1h_input_tokens Int64 DEFAULT 0 AFTER cache_write_input_tokens;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS tool_calls String DEFAULT '' AFTER output;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS tools String DEFAULT '' AFTER metadata;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS input_reduced String DEFAULT '' AFTER tools;
