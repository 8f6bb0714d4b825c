#!/usr/bin/env bash
# `make run`: the whole main job on real input, offline.
#  1. the simulated worker pool (bin/simllm) on 127.0.0.1:9090,
#  2. the server (tap + shadow workers + web UI + API) on 127.0.0.1:8080, store in ./data,
#  3. replays 350 real exchanges through the tap (150 GSM8K questions with GPT-4-1106's
#     recorded answers, 200 real user prompts answered by the simulated incumbent),
#  4. waits until every exchange is stored with its incumbent and candidate run,
#  5. runs one suite: the conductor (candidate) vs gpt-5 alone (incumbent) on GSM8K,
#  6. prints the report's headline and the URLs, and keeps serving until interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."

ADDR=${CONDUCTOR_SHADOW_ADDR:-127.0.0.1:8080}
POOL_ADDR=${SIMLLM_ADDR:-127.0.0.1:9090}
# Simulated latencies are scaled down so the whole job takes minutes, not an hour;
# every latency figure it shows is the simulated one times this factor.
LATENCY_SCALE=${SIMLLM_LATENCY_SCALE:-0.2}
REPLAY=${REPLAY_FILE:-regression-sets/replay/production-350.jsonl}
SET=${SUITE_SET:-regression-sets/gsm8k-150.jsonl}
export CONDUCTOR_SHADOW_ADDR=$ADDR CONDUCTOR_SHADOW_POOL_URL="http://$POOL_ADDR/v1"
mkdir -p logs
if [ -n "${CONDUCTOR_SHADOW_CONFIG:-}" ]; then
  CONFIG=$CONDUCTOR_SHADOW_CONFIG
else
  # The example configuration, with the admission's CPU signal off: this run has no
  # production on the machine to protect, and the simulated pool and the embedded
  # engine share its CPU, so a busy machine would hold the shadow side to one run
  # at a time (shed_cpu) for nothing. Added latency and scheduler delay still count.
  CONFIG=logs/run-config.yaml
  sed -E 's/^(    max_cpu:) 0\.9( +#)/\1 0  \2/' conductor-shadow.example.yaml >"$CONFIG"
  grep -qE '^    max_cpu: 0 ' "$CONFIG" || { echo "run: could not turn admission.max_cpu off in $CONFIG" >&2; exit 1; }
fi

pids=()
cleanup() {
  # The server first, and the pool only once it has stopped: runs still going while
  # the server drains keep their workers, so a stop never stores a run as an error.
  for ((k = ${#pids[@]} - 1; k >= 0; k--)); do
    kill -TERM "${pids[k]}" 2>/dev/null || true
    wait "${pids[k]}" 2>/dev/null || true
  done
  # The server's drain summary: how many copies were stored or dropped.
  grep -E 'msg=(shutting down|stopped)' logs/serve.log 2>/dev/null | tail -n 2 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_http() { # url seconds
  for _ in $(seq 1 "$(( $2 * 10 ))"); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "run: $1 did not answer within $2 s (see logs/)" >&2
  return 1
}

echo "run: starting the simulated worker pool on $POOL_ADDR (latency x$LATENCY_SCALE)"
# Its own session, so a Ctrl-C in the terminal reaches the server only; cleanup stops it.
setsid bin/simllm --addr "$POOL_ADDR" --latency-scale "$LATENCY_SCALE" --sets regression-sets >logs/simllm.log 2>&1 &
pids+=($!)
wait_http "http://$POOL_ADDR/v1/models" 30

echo "run: starting the server on $ADDR (logs/serve.log)"
bin/conductor-shadow --config "$CONFIG" serve >logs/serve.log 2>&1 &
pids+=($!)
wait_http "http://$ADDR/healthz" 60

bin/conductor-shadow --config "$CONFIG" replay "$REPLAY"
want=$(grep -c . "$REPLAY")
echo "run: waiting until all $want replayed requests have an incumbent and a candidate run stored"
q="SELECT count() FROM (SELECT request_id FROM shadow.runs FINAL WHERE request_id IN (SELECT request_id FROM shadow.requests FINAL WHERE source = 'replay') GROUP BY request_id HAVING countIf(mode = 'incumbent') >= 1 AND countIf(mode = 'candidate') >= 1)"
for i in $(seq 1 600); do
  kill -0 "${pids[1]}" 2>/dev/null || { echo "run: the server stopped (see logs/serve.log)" >&2; exit 1; }
  # Its store line (stderr) goes to the log, not once a second to the terminal.
  got=$(bin/conductor-shadow --config "$CONFIG" query "$q" 2>>logs/run-query.log | tail -n 1)
  [ "$got" -ge "$want" ] && break
  (( i % 10 == 0 )) && echo "run: $got / $want stored"
  sleep 1
done
echo "run: $got / $want replayed requests stored with both runs"

echo "run: suite run: candidate conductor vs incumbent on $SET"
bin/conductor-shadow --config "$CONFIG" suite run --set "$SET"

cat <<MSG

serving (SIMULATED worker pool, latencies x$LATENCY_SCALE):
  overview    http://$ADDR/overview
  traces      http://$ADDR/traces
  workers     http://$ADDR/workers
  suite runs  http://$ADDR/suite-runs
  SQL         bin/conductor-shadow query "SELECT pipeline, count(), round(avg(cost_usd), 5) FROM shadow.runs FINAL GROUP BY pipeline"
press Ctrl-C to stop
MSG
wait "${pids[1]}"
