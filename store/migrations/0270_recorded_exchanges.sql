-- 0270 every forwarded exchange is recorded (issue 21): a request row exists
-- for every production exchange the tap took, shadowed or not; one the tap
-- did not shadow carries the reason in not_shadowed (0221), and one whose
-- text was not kept is a metadata row (its input '[]', no segments, the
-- incumbent run with status, latency, usage and model but no answer text).
--   requests.route          the API path the exchange came through
--                           ('/v1/chat/completions'; '' when the copy did not say)
--   requests.response_id    the provider's id of the answer ('chatcmpl-…',
--                           'msg_…', 'resp_…'): kept as it was answered and
--                           never a key (gateways answer cache hits with one id)
--   requests.request_bytes  size of the request body as production sent it (bytes)
--   requests.response_bytes size of the answer body as the incumbent sent it
--                           (bytes, encoded as it travelled)
--   requests.body_omitted   why the request and answer text are not stored
--                           ('' when they are): 'too_large', 'capture_busy',
--                           'record_budget', 'body_budget', 'unparsable', …
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS route LowCardinality(String) DEFAULT '' AFTER not_shadowed;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS response_id String DEFAULT '' AFTER route;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS request_bytes Int64 DEFAULT 0 AFTER response_id;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS response_bytes Int64 DEFAULT 0 AFTER request_bytes;
ALTER TABLE ${DB}.requests ADD COLUMN IF NOT EXISTS body_omitted LowCardinality(String) DEFAULT '' AFTER response_bytes;
