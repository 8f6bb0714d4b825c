-- 0040 exchange fidelity: what a run's answer held beyond its final text, and how
-- the exchange ended.
--   reasoning        the reasoning text (delta.reasoning / reasoning_content, the
--                    Responses API's reasoning summary), kept apart from the answer
--   choices          every choice as JSON ([{"index":0,"content":..,"reasoning":..,
--                    "finish_reason":..,"tool_calls":[..]}]) when there is more than
--                    one choice or any tool call; '' otherwise
--   tool_calls       every tool call of every choice as JSON ([{"choice":0,"index":0,
--                    "id":..,"type":"function","name":..,"arguments":..}]); '' when none
--   http_status      the HTTP status the incumbent answered with; 0 when not known
--   response_headers the incumbent's rate-limit and retry headers (Retry-After,
--                    x-ratelimit-*, ...) when it answered non-2xx
--   partial          the answer was cut off (client hung up or incumbent broke off)
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS reasoning String DEFAULT '' AFTER final_output;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS choices String DEFAULT '' AFTER reasoning;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS tool_calls String DEFAULT '' AFTER choices;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS http_status Int32 DEFAULT 0 AFTER status;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS response_headers Map(String, String) DEFAULT map() AFTER http_status;
ALTER TABLE ${DB}.runs ADD COLUMN IF NOT EXISTS partial Bool DEFAULT false AFTER response_headers;
ALTER TABLE ${DB}.steps ADD COLUMN IF NOT EXISTS reasoning String DEFAULT '' AFTER output;
