-- 0221 requests.not_shadowed (issue 20, coverage): why a recorded production
-- exchange was not shadowed, '' when it was sent to the candidates as usual.
-- The tap writes no such row yet (a shed copy leaves no row today); a proxy
-- that records every forwarded exchange writes its metadata row with the
-- reason here (for example 'queue_full', 'admission', 'sampled_out',
-- 'daily_cap'), and the live verdict's coverage check (store.LiveCoverage)
-- counts it per segment as offered but not shadowed.
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS not_shadowed LowCardinality(String) DEFAULT '' AFTER input_reduced;
