-- 0060 request segments (issue 15): computed at ingest from the user messages
-- (ingest/segment): the prose's language (ISO 639-1, '' when undetermined),
-- whether the prompt holds a table or code, its length bucket in estimated
-- tokens, and its novelty (share of words absent from the vocabulary of the
-- regression sets in use, 0..1; -1 when no vocabulary was loaded or the row
-- predates segments).
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS language LowCardinality(String) DEFAULT '' AFTER category;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS has_table Bool DEFAULT false AFTER language;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS has_code Bool DEFAULT false AFTER has_table;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS length_bucket LowCardinality(String) DEFAULT '' AFTER has_code;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS novelty Float64 DEFAULT -1 AFTER length_bucket;
