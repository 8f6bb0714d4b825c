-- Eval verdicts (issue 5): the gate verdict and the policy version that
-- produced it, the self-contained HTML report, and each case's extra keys.
ALTER TABLE ${DB}.suite_runs ADD COLUMN IF NOT EXISTS verdict LowCardinality(String) DEFAULT '' AFTER headline;
ALTER TABLE ${DB}.suite_runs ADD COLUMN IF NOT EXISTS gate_policy_version String DEFAULT '' AFTER verdict;
ALTER TABLE ${DB}.suite_runs ADD COLUMN IF NOT EXISTS report_html String DEFAULT '' AFTER report_json;
ALTER TABLE ${DB}.cases ADD COLUMN IF NOT EXISTS extra String DEFAULT '' AFTER grader;
