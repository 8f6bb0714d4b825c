-- 0290 the normalized final answer of every run, computed once when the row is
-- written instead of on every read of the overview's agreement:
--   runs.answer_normalized  NormalizeAnswer(final_output) (store/normalize.go), as
--                           normalizeSQL renders it (the same text: a test checks the
--                           expression below is fmt.Sprintf(normalizeSQL, "final_output")
--                           and that stored values equal NormalizeAnswer)
-- MATERIALIZED: the engine fills it on INSERT (writers never send it) and computes it
-- from final_output for parts written before this migration until MATERIALIZE COLUMN
-- has rewritten them, so a read never sees it empty or stale. A re-written run (same
-- run_id, newer inserted_at) gets its own value; forget's deletes take it with the row.
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS answer_normalized String MATERIALIZED replaceRegexpAll(replaceRegexpAll(replaceRegexpAll(multiIf(notEmpty(extractAll(lowerUTF8(final_output), '\\\\boxed\\{([^{}]*)\\}')), arrayElement(extractAll(lowerUTF8(final_output), '\\\\boxed\\{([^{}]*)\\}'), -1), notEmpty(extractAll(lowerUTF8(final_output), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)')), arrayElement(extractAll(lowerUTF8(final_output), 'answer(?: is)?\\s*[:=]?\\s*[($]*([a-z0-9.,/\\-]+)'), -1), lowerUTF8(final_output)), '[,$]', ''), '^\\s+|[\\s.]+$', ''), '\\s+', ' ') AFTER final_output;
ALTER TABLE ${DB}.runs MATERIALIZE COLUMN answer_normalized;
