#!/usr/bin/env bash
# WebSocket load benchmark for `svc start` — see benches/ws/README.md.
#
#   benches/ws/run.sh                  # build svc and ws-load (release), measure (~1 min)
#   SKIP_BUILD=1 benches/ws/run.sh     # reuse the binaries in $CARGO_TARGET_DIR
#   SVC=/path/to/svc benches/ws/run.sh # measure another svc binary (svc is then not built)
#
# The same load runs first against the baseline, the stock actix-web WebSocket server
# (`benches/ws/bare_ws.rs`, example `bare_ws`: the same routes and reply frames, no
# interpreter or store), then against `svc start`; after both tables a side-by-side one
# gives each rate and the server's CPU per message for both.
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
#   BARE=0             skip the baseline (default 1: measure $CARGO_TARGET_DIR/release/examples/bare_ws)
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
BARE="${BARE:-1}"
BARE_WS="$TARGET_DIR/release/examples/bare_ws"

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
    if [[ "$BARE" == 1 ]]; then
        echo "== building bare_ws (release, CARGO_TARGET_DIR=$TARGET_DIR)"
        (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --example bare_ws)
    fi
    echo "== building ws-load (release, CARGO_TARGET_DIR=$TARGET_DIR)"
    CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --manifest-path "$HERE/Cargo.toml"
fi
[[ -x "$SVC" ]] || die "missing $SVC"
[[ -x "$WS_LOAD" ]] || die "missing $WS_LOAD"
[[ "$BARE" != 1 || -x "$BARE_WS" ]] || die "missing $BARE_WS (or set BARE=0)"

# ---------------------------------------------------------------- servers
WORK="$(mktemp -d /tmp/svc-ws-load.XXXXXX)"
SERVER_PID=""
stop_server() {
    if [[ -n "$SERVER_PID" ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    stop_server
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

wait_healthy() {
    local name="$1" port="$2" deadline
    deadline=$((${EPOCHREALTIME/./} + 60000000))
    until healthz_once "$port"; do
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/$name.stderr.log" >&2; die "$name exited"; }
        ((${EPOCHREALTIME/./} < deadline)) || die "$name not healthy after 60 s"
        sleep 0.01
    done
}

# measure NAME PORT: ws-load against the server on PORT (pid $SERVER_PID); its table
# goes to stdout and to $WORK/NAME.table.
measure() {
    local name="$1" port="$2" status=0
    "$WS_LOAD" --url-base "ws://127.0.0.1:$port" --server-pid "$SERVER_PID" --label "$name" \
        --echo-walker echo --broadcast-walker shout \
        --duration "$DURATION" --warmup "$WARMUP" \
        --echo-clients "$ECHO_CLIENTS" --broadcast-clients "$BROADCAST_CLIENTS" \
        --idle "$IDLE" --senders "$SENDERS" --window "$WINDOW" | tee "$WORK/$name.table" || status=$?
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "run.sh: $name died during the run; its log (access lines left out):" >&2
        grep -v 'svc::access' "$WORK/$name.stderr.log" | tail -n 50 >&2 || true
        return 1
    fi
    if ((status != 0)); then
        echo "run.sh: ws-load failed against $name (exit $status); last lines of its log (access lines left out):" >&2
        grep -v 'svc::access' "$WORK/$name.stderr.log" | tail -n 20 >&2 || true
    fi
    return "$status"
}

status=0

# The baseline: the stock actix-web WebSocket server, same routes, same frames.
if [[ "$BARE" == 1 ]]; then
    PORT="$(free_port)"
    "$BARE_WS" --host 127.0.0.1 --port "$PORT" >"$WORK/bare.stdout.log" 2>"$WORK/bare.stderr.log" &
    SERVER_PID=$!
    wait_healthy bare "$PORT"
    echo "== bare_ws pid $SERVER_PID on 127.0.0.1:$PORT ($BARE_WS)"
    measure bare "$PORT" || status=1
    stop_server
fi

cp "$HERE/app.svc" "$WORK/app.svc"
# Room for the idle sockets plus the benchmark's own (the default is 16384).
printf '[scale.websocket]\nmax_connections = %d\n' "$((IDLE + 2048))" >"$WORK/svc.toml"
PORT="$(free_port)"
(cd "$WORK" && exec "$SVC" start app.svc --host 127.0.0.1 --port "$PORT" \
    >"$WORK/svc.stdout.log" 2>"$WORK/svc.stderr.log") &
SERVER_PID=$!
wait_healthy svc "$PORT"
echo "== svc start pid $SERVER_PID on 127.0.0.1:$PORT ($SVC)"
measure svc "$PORT" || status=1
stop_server

# ---------------------------------------------------------------- side by side
# From each table row: the rate (first number of the result), the server's share of the
# cores (first number of the "cores busy" cell) and so its CPU per message; the idle row
# gives memory.
if [[ "$BARE" == 1 && -s "$WORK/bare.table" && -s "$WORK/svc.table" ]]; then
    echo
    echo "Side by side (same run; server CPU per message = server cores busy / rate)"
    echo
    echo "| measurement | bare actix-ws | svc | svc / bare |"
    echo "|---|---:|---:|---:|"
    awk -F'|' '
        function num(s) { gsub(/,/, "", s); if (match(s, /[0-9]+(\.[0-9]+)?/)) return substr(s, RSTART, RLENGTH) + 0; return -1 }
        function cell(rate, cores, idle) {
            if (idle) return sprintf("%.1f MB", rate)
            if (cores > 0 && rate > 0) return sprintf("%s/s, %.1f µs", fmt(rate), cores / rate * 1e6)
            return sprintf("%s/s", fmt(rate))
        }
        function fmt(v,   s, r) { s = sprintf("%d", v + 0.5); r = ""; while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) } return s r }
        FNR == 1 { file++ }
        /^\| (echo|broadcast|server RSS)/ {
            name = $2; gsub(/^ +| +$/, "", name)
            if (!(name in seen)) { seen[name] = 1; order[++n] = name }
            rate[file, name] = num($3); cores[file, name] = num($6)
            idle[name] = (name ~ /^server RSS/)
        }
        END {
            for (i = 1; i <= n; i++) {
                m = order[i]
                if (!((1, m) in rate) || !((2, m) in rate)) continue
                ratio = rate[1, m] > 0 ? sprintf("%.2f", rate[2, m] / rate[1, m]) : "–"
                printf "| %s | %s | %s | %s |\n", m, cell(rate[1, m], cores[1, m], idle[m]), cell(rate[2, m], cores[2, m], idle[m]), ratio
            }
        }' "$WORK/bare.table" "$WORK/svc.table"
fi
exit "$status"
