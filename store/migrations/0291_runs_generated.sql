-- 0291 whether a run is of a generated load-test request, on the run itself:
--   runs.generated  true on the runs of `loadtest generate` (their requests have
--                   source 'generated'); false on every other run
-- The overview tells production runs from generated ones by this column instead of
-- looking each run's request up in a set of every generated request id, which it
-- built on every read (500,000 ids at 1M runs: about 60 ms of a 240 ms overview
-- statement on two cores). Generate writes it true; the Go writers write
-- Run.Generated, false on every run they make. The UPDATE marks the generated runs
-- written before this migration (a store without generated requests has none to
-- mark); the migration waits for it on every replica (mutations_sync = 2), so no
-- read sees the column unmarked.
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS generated Bool DEFAULT false;
ALTER TABLE ${DB}.runs UPDATE generated = true WHERE NOT generated AND request_id IN (SELECT request_id FROM ${DB}.requests WHERE source = 'generated') SETTINGS mutations_sync = 2, allow_nondeterministic_mutations = 1;
