#!/usr/bin/env bash
# WebSocket load benchmark for `svc start` — see benches/ws/README.md.
#
#   benches/ws/run.sh                  # build svc and ws-load (release), measure (~1 min)
#   SKIP_BUILD=1 benches/ws/run.sh     # reuse the binaries in $CARGO_TARGET_DIR
#   SVC=/path/to/svc benches/ws/run.sh # measure another svc binary (svc is then not built)
#
# Environment:
#   DURATION           measured seconds per run (default 5)
#   WARMUP             unmeasured seconds before each run (default 1)
#   ECHO_CLIENTS       echo client counts, comma-separated (default 16,256; empty = skip)
#   BROADCAST_CLIENTS  broadcast client counts, comma-separated (default 100,1000;
#                      empty = skip)
#   IDLE               idle sockets for the RSS row (default 10000; 0 = skip)
#   SENDERS            broadcast senders among the clients (default 6)
#   WINDOW             per sender, broadcasts in flight (default 40; SENDERS x WINDOW must
#                      stay below the server's 256-frame outbox, or clients are closed with 1013)
#   SKIP_BUILD=1       build nothing; use $SVC and $CARGO_TARGET_DIR/release/ws-load
#   SVC                svc binary to measure (default $CARGO_TARGET_DIR/release/svc, built)
#   CARGO_TARGET_DIR   (default /tmp/target-load, shared with benches/load)
#
# Needs bash >= 5 and a hard open-file limit above IDLE + 1000 (the client and the server
# each hold one descriptor per socket).
# Exit status: ws-load's — 0 when every reply was a success frame and every connection
# and broadcast went through, 1 otherwise; 1 too if the server died.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/target-load}"
DURATION="${DURATION:-5}"
WARMUP="${WARMUP:-1}"
ECHO_CLIENTS="${ECHO_CLIENTS-16,256}"
BROADCAST_CLIENTS="${BROADCAST_CLIENTS-100,1000}"
IDLE="${IDLE:-10000}"
SENDERS="${SENDERS:-6}"
WINDOW="${WINDOW:-40}"
BUILD_SVC=1
[[ -n "${SVC:-}" ]] && BUILD_SVC=0
SVC="${SVC:-$TARGET_DIR/release/svc}"
WS_LOAD="$TARGET_DIR/release/ws-load"

die() { echo "run.sh: $*" >&2; exit 1; }

((BASH_VERSINFO[0] >= 5)) || die "needs bash >= 5 (for \$EPOCHREALTIME)"

# ---------------------------------------------------------------- open-file limit
need=$((IDLE + 1000))
hard=$(ulimit -Hn)
if [[ "$hard" != unlimited ]] && ((hard < need)); then
    die "the hard open-file limit is $hard; $need needed for IDLE=$IDLE (raise it, or lower IDLE)"
fi
# The server inherits the raised limit.
if [[ "$hard" == unlimited ]]; then ulimit -n "$need"; else ulimit -n "$hard"; fi

# ---------------------------------------------------------------- build
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    if ((BUILD_SVC)); then
        echo "== building svc (release, CARGO_TARGET_DIR=$TARGET_DIR)"
        (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --bin svc)
    fi
    echo "== building ws-load (release, CARGO_TARGET_DIR=$TARGET_DIR)"
    CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --manifest-path "$HERE/Cargo.toml"
fi
[[ -x "$SVC" ]] || die "missing $SVC"
[[ -x "$WS_LOAD" ]] || die "missing $WS_LOAD"

# ---------------------------------------------------------------- server
WORK="$(mktemp -d /tmp/svc-ws-load.XXXXXX)"
SVC_PID=""
cleanup() {
    if [[ -n "$SVC_PID" ]]; then
        kill "$SVC_PID" 2>/dev/null || true
        wait "$SVC_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A loopback port nobody listens on (bash /dev/tcp, no extra tools).
free_port() {
    local port
    for _ in $(seq 200); do
        port=$((20000 + RANDOM % 12000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
    die "no free port found"
}

# One GET /healthz over /dev/tcp; succeeds on a 200 status line.
healthz_once() {
    local port="$1" line
    { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
    printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 || { exec 3>&-; return 1; }
    read -r -t 2 -u 3 line || true
    exec 3>&-
    [[ "$line" == "HTTP/1."?" 200"* ]]
}

cp "$HERE/app.svc" "$WORK/app.svc"
# Room for the idle sockets plus the benchmark's own (the default is 16384).
printf '[scale.websocket]\nmax_connections = %d\n' "$((IDLE + 2048))" >"$WORK/svc.toml"
PORT="$(free_port)"
(cd "$WORK" && exec "$SVC" start app.svc --host 127.0.0.1 --port "$PORT" \
    >"$WORK/stdout.log" 2>"$WORK/stderr.log") &
SVC_PID=$!
deadline=$((${EPOCHREALTIME/./} + 60000000))
until healthz_once "$PORT"; do
    kill -0 "$SVC_PID" 2>/dev/null || { cat "$WORK/stderr.log" >&2; die "svc start exited"; }
    ((${EPOCHREALTIME/./} < deadline)) || die "svc start not healthy after 60 s"
    sleep 0.01
done
echo "== svc start pid $SVC_PID on 127.0.0.1:$PORT ($SVC)"

# ---------------------------------------------------------------- client
status=0
"$WS_LOAD" --url-base "ws://127.0.0.1:$PORT" --server-pid "$SVC_PID" \
    --echo-walker echo --broadcast-walker shout \
    --duration "$DURATION" --warmup "$WARMUP" \
    --echo-clients "$ECHO_CLIENTS" --broadcast-clients "$BROADCAST_CLIENTS" \
    --idle "$IDLE" --senders "$SENDERS" --window "$WINDOW" || status=$?
if ! kill -0 "$SVC_PID" 2>/dev/null; then
    echo "run.sh: svc start died during the run; its log (access lines left out):" >&2
    grep -v 'svc::access' "$WORK/stderr.log" | tail -n 50 >&2 || true
    exit 1
fi
if ((status != 0)); then
    echo "run.sh: ws-load failed (exit $status); last lines of the server log (access lines left out):" >&2
    grep -v 'svc::access' "$WORK/stderr.log" | tail -n 20 >&2 || true
fi
exit "$status"
