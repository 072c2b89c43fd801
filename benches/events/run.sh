#!/usr/bin/env bash
# Event-streaming benchmark: events/s publish -> handled and latency, in-memory and Redis
# streams, each beside a bare-broker baseline. Not part of CI. Needs redis-server for the
# Redis rows (started here on a free loopback port, killed by PID at exit).
# Usage: benches/events/run.sh [EVENTS]   (default 200000; Redis runs half as many)
# BEFORE=<events_bench binary of another tree> runs it too, right before this tree's, on
# the same redis-server (a before/after comparison under the same load).
# Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-200000}"
nice -n 19 cargo build --release --example events_bench
BIN="${CARGO_TARGET_DIR:-target}/release/examples/events_bench"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
REDIS_ARGS=()
if command -v redis-server >/dev/null; then
  redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no >/dev/null &
  REDIS_PID=$!
  trap 'kill "$REDIS_PID" 2>/dev/null || true' EXIT
  for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
  REDIS_ARGS=(--redis "redis://127.0.0.1:$PORT/")
else
  echo "redis-server not installed: Redis rows skipped" >&2
fi
export RUST_LOG="${RUST_LOG:-warn}"
if [[ -n "${BEFORE:-}" ]]; then
  echo "== before: $BEFORE"
  "$BEFORE" --events "$N" "${REDIS_ARGS[@]}"
  echo "== after: $BIN"
fi
"$BIN" --events "$N" "${REDIS_ARGS[@]}"
