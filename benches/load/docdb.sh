#!/usr/bin/env bash
# Load benchmark for the document-database tier — see benches/load/README.md,
# "The document-database tier".
#
#   benches/load/docdb.sh                        # build, then measure (a few minutes)
#   DURATION=5s SKIP_BUILD=1 benches/load/docdb.sh  # shorter runs, binary already built
#
# Measures /walker/walk_chain and /walker/create_item of app.svc on these configurations:
#   embedded     one `svc start`, graph in its own embedded store (no DOCDB_URI)
#   docdb x1     one `svc start` with DOCDB_URI pointing at SecantusDB
#   docdb x3     three `svc start` replicas sharing one SecantusDB database; three wrk at
#                once (one per replica, connections split evenly), req/s summed
#   docdb+L2 x1, x3   the same with CACHE_URL pointing at a redis-server: the L2 cache
#   (baseline)   with BASELINE=/path/to/older/svc, docdb x1 and x3 also run on that
#                binary, each right before the same configuration on the new one
#
# Environment:
#   DURATION      wrk duration per run (default 10s)
#   WARMUP        warm-up per configuration and target before measuring, at 16 connections
#                 in all (default 2s; 0 = none)
#   CONNECTIONS   connections per run, in all (default 64; split across replicas)
#   THREADS       wrk threads in all (default 2; split across the replicas' wrk, at least
#                 1 each, and capped at each one's connections)
#   WRK_TIMEOUT   wrk --timeout (default 60s: document-tier walks queue for seconds at 64)
#   SKIP_BUILD=1  use the binary already in $CARGO_TARGET_DIR
#   BASELINE      an older svc binary to compare the document tier with (default none)
#   L2=0          skip the docdb+L2 configurations (they need redis-server)
#   CARGO_TARGET_DIR  (default /tmp/target-load)
#
# Needs wrk (`sudo apt-get install -y wrk`), curl, bash >= 5, SecantusDB, a Mongo-wire
# server in Python (`pip install --pre secantusdb`, which installs `secantusd-py`), and
# for the L2 rows redis-server (`sudo apt-get install -y redis-server`).
# Exit status: 0 when every run answered with 2xx and no socket errors, 1 otherwise.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/target-load}"
DURATION="${DURATION:-10s}"
WARMUP="${WARMUP:-2s}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"
WRK_TIMEOUT="${WRK_TIMEOUT:-60s}"
SVC="$TARGET_DIR/release/svc"
BASELINE="${BASELINE:-}"
L2="${L2:-1}"
BENCH_JWT_SECRET="docdb-bench-secret-0123456789abcdef"   # shared by the replicas

# The Python original (jac-scale) on the same 2-core machine, at 64 connections (run.sh).
PY_CREATE_RPS=17
PY_WALK_RPS=12

die() { echo "docdb.sh: $*" >&2; exit 1; }

command -v wrk >/dev/null || die "wrk not found; install it with: sudo apt-get install -y wrk"
command -v curl >/dev/null || die "curl not found; install it with: sudo apt-get install -y curl"
command -v secantusd-py >/dev/null \
    || die "secantusd-py not found; install SecantusDB with: pip install --pre secantusdb"
((BASH_VERSINFO[0] >= 5)) || die "needs bash >= 5"
[[ "$L2" == 0 ]] || command -v redis-server >/dev/null \
    || die "redis-server not found (needed for the L2 rows; L2=0 skips them): sudo apt-get install -y redis-server"
[[ -z "$BASELINE" || -x "$BASELINE" ]] || die "BASELINE=$BASELINE is not an executable"
[[ "$CONNECTIONS" =~ ^[0-9]+$ ]] && ((CONNECTIONS >= 3)) \
    || die "CONNECTIONS must be one number >= 3 (it is split across three replicas)"

# ---------------------------------------------------------------- build
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    echo "== building svc (release, CARGO_TARGET_DIR=$TARGET_DIR)"
    (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --bin svc)
fi
[[ -x "$SVC" ]] || die "missing $SVC"

# ---------------------------------------------------------------- process bookkeeping
WORK="$(mktemp -d /tmp/svc-docdb-load.XXXXXX)"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Stop PID and drop it from PIDS (so the trap never signals a recycled PID).
stop() {
    local pid="$1" keep=() p
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for p in "${PIDS[@]}"; do [[ "$p" == "$pid" ]] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

# A loopback port nobody listens on (bash /dev/tcp, no extra tools).
free_port() {
    local port
    for _ in $(seq 200); do
        port=$((20000 + RANDOM % 20000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
    die "no free port found"
}

# Poll every 50 ms (at most 60 s) until PORT accepts a connection (or, with a path, answers
# 200 to GET PATH); fails if PID died.
wait_listening() {
    local port="$1" pid="$2" path="${3:-}" line
    for _ in $(seq 1200); do
        kill -0 "$pid" 2>/dev/null || return 1
        if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
            [[ -z "$path" ]] && { exec 3>&-; return 0; }
            line=""
            printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$path" >&3 2>/dev/null \
                && read -r -t 2 -u 3 line || true
            exec 3>&-
            [[ "$line" == "HTTP/1."?" 200"* ]] && return 0
        fi
        sleep 0.05
    done
    return 1
}

# CPU time (user + system, clock ticks) of the PIDs together (comm has no spaces: fields fixed).
cpu_ticks() { local p; for p in "$@"; do cat "/proc/$p/stat"; done | awk '{ t += $14 + $15 } END { print t }'; }

# Wait until the PIDs together use less than 2 ticks of CPU in 250 ms (at most 120 s): the
# calls wrk abandoned at the end of a run (svc finishes them; on the document tier they
# can take seconds) are done before the next run starts.
wait_idle() {
    local a b
    for _ in $(seq 480); do
        a=$(cpu_ticks "$@")
        sleep 0.25
        b=$(cpu_ticks "$@")
        ((b - a < 2)) && return 0
    done
    echo "!! pids $* still busy after 120 s" >&2
}

# One request before measuring: PORT+PATH must answer 200 with EXPECT in the body.
check() {
    local url="http://127.0.0.1:$1$2" body="$3" expect="$4" out
    out=$(curl -sS -o - -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' -d "$body" "$url") \
        || die "request to $url failed"
    [[ "${out##*$'\n'}" == 200 && "$out" == *"$expect"* ]] \
        || die "unexpected answer from $url: $out (wanted 200 and $expect)"
}

# ---------------------------------------------------------------- SecantusDB
DB_PORT="$(free_port)"
# ':memory:' is a temporary directory that SIGTERM leaves behind: TMPDIR puts it in $WORK.
TMPDIR="$WORK" secantusd-py --host 127.0.0.1 --port "$DB_PORT" --storage-path ':memory:' \
    --log-level WARNING >"$WORK/secantusd.log" 2>&1 &
DB_PID=$!
PIDS+=("$DB_PID")
wait_listening "$DB_PORT" "$DB_PID" || { cat "$WORK/secantusd.log" >&2; die "secantusd-py did not start"; }
DB_VERSION=$(python3 -c 'import importlib.metadata as m; print(m.version("secantusdb"))' 2>/dev/null || echo unknown)
echo "== SecantusDB $DB_VERSION, pid $DB_PID on :$DB_PORT"

# ---------------------------------------------------------------- redis-server (L2 rows)
CACHE=""
if [[ "$L2" != 0 ]]; then
    REDIS_PORT="$(free_port)"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
        >"$WORK/redis.log" 2>&1 &
    REDIS_PID=$!
    PIDS+=("$REDIS_PID")
    wait_listening "$REDIS_PORT" "$REDIS_PID" || { cat "$WORK/redis.log" >&2; die "redis-server did not start"; }
    CACHE="redis://127.0.0.1:$REDIS_PORT/"
    echo "== $(redis-server --version | cut -d' ' -f1-3), pid $REDIS_PID on :$REDIS_PORT"
fi

# ---------------------------------------------------------------- replicas
# launch_replicas N URI CACHE BIN: N `svc start` of BIN (URI empty = embedded tier; CACHE
# non-empty = CACHE_URL, the L2 cache), each in its own temp dir with a copy of app.svc
# and run.sh's svc.toml; sets REPLICA_PIDS, REPLICA_PORTS.
launch_replicas() {
    local n="$1" uri="$2" cache="$3" bin="$4" dir port pid i
    REPLICA_PIDS=() REPLICA_PORTS=() REPLICA_DIRS=()
    for ((i = 0; i < n; i++)); do
        dir="$(mktemp -d "$WORK/svc.XXXXXX")"
        cp "$HERE/app.svc" "$dir/app.svc"
        printf '[scale.auth]\nregister_max_per_address = 1000000\n' >"$dir/svc.toml"
        port="$(free_port)"
        if [[ -n "$uri" && -n "$cache" ]]; then
            (cd "$dir" && JWT_SECRET="$BENCH_JWT_SECRET" DOCDB_URI="$uri" CACHE_URL="$cache" exec "$bin" \
                start app.svc --workers 2 --host 127.0.0.1 --port "$port" >"$dir/stdout.log" 2>"$dir/stderr.log") &
        elif [[ -n "$uri" ]]; then
            (cd "$dir" && JWT_SECRET="$BENCH_JWT_SECRET" DOCDB_URI="$uri" exec env -u CACHE_URL "$bin" \
                start app.svc --workers 2 --host 127.0.0.1 --port "$port" >"$dir/stdout.log" 2>"$dir/stderr.log") &
        else
            (cd "$dir" && JWT_SECRET="$BENCH_JWT_SECRET" exec env -u DOCDB_URI -u CACHE_URL "$bin" \
                start app.svc --workers 2 --host 127.0.0.1 --port "$port" >"$dir/stdout.log" 2>"$dir/stderr.log") &
        fi
        pid=$!
        PIDS+=("$pid")
        REPLICA_PIDS+=("$pid") REPLICA_PORTS+=("$port") REPLICA_DIRS+=("$dir")
    done
    for ((i = 0; i < n; i++)); do
        wait_listening "${REPLICA_PORTS[i]}" "${REPLICA_PIDS[i]}" /healthz \
            || { cat "${REPLICA_DIRS[i]}/stderr.log" >&2; die "svc start did not become healthy"; }
        # The startup line names the store: make sure the tier under test is the one in use.
        if [[ -n "$uri" ]]; then
            grep -q 'store: document database at' "${REPLICA_DIRS[i]}/stdout.log" \
                || { cat "${REPLICA_DIRS[i]}/stdout.log" >&2; die "replica is not on the document tier"; }
        elif grep -q 'store: document database' "${REPLICA_DIRS[i]}/stdout.log"; then
            die "embedded run is on the document tier (DOCDB_URI in svc.toml?)"
        fi
        if [[ -n "$cache" ]]; then
            grep -q 'L2 cache: on' "${REPLICA_DIRS[i]}/stderr.log" \
                || { cat "${REPLICA_DIRS[i]}/stderr.log" >&2; die "replica has no L2 cache"; }
        fi
    done
}

# ---------------------------------------------------------------- wrk
# run_wrk_split CONNS DURATION PATH SCRIPT: one wrk per replica in REPLICA_PORTS at once,
# CONNS split evenly. Sets RES_RPS (sum), RES_P99_US (the largest p99: an upper bound on
# the p99 of all requests together), RES_REQUESTS (completed, all wrk together) and
# RES_ERRORS (" name=count" for non-zero counters). Then waits until svc and the database
# are idle.
run_wrk_split() {
    local conns="$1" duration="$2" path="$3" script="$4"
    local n=${#REPLICA_PORTS[@]} i c t pids=() line e
    local threads_each=$((THREADS / n > 0 ? THREADS / n : 1))
    declare -A err=()
    for ((i = 0; i < n; i++)); do
        c=$((conns / n + (i < conns % n ? 1 : 0)))
        t=$((threads_each < c ? threads_each : c))
        wrk -t"$t" -c"$c" -d"$duration" --timeout "$WRK_TIMEOUT" -s "$HERE/$script" \
            "http://127.0.0.1:${REPLICA_PORTS[i]}$path" >"$WORK/wrk.$i.out" 2>&1 &
        pids+=($!)
    done
    PIDS+=("${pids[@]}")
    for ((i = 0; i < n; i++)); do
        wait "${pids[i]}" || { cat "$WORK/wrk.$i.out" >&2; die "wrk failed against :${REPLICA_PORTS[i]}$path"; }
    done
    for ((i = 0; i < n; i++)); do stop "${pids[i]}"; done
    wait_idle "${REPLICA_PIDS[@]}" "$DB_PID"
    RES_RPS=0 RES_P99_US=0 RES_ERRORS="" RES_REQUESTS=0
    for ((i = 0; i < n; i++)); do
        line=$(grep '^WRKRESULT ' "$WORK/wrk.$i.out") || { cat "$WORK/wrk.$i.out" >&2; die "no WRKRESULT line"; }
        RES_REQUESTS=$((RES_REQUESTS + $(field "$line" requests)))
        RES_RPS=$(awk -v a="$RES_RPS" -v b="$(field "$line" rps)" 'BEGIN { printf "%.2f", a + b }')
        RES_P99_US=$(($(field "$line" p99_us) > RES_P99_US ? $(field "$line" p99_us) : RES_P99_US))
        for e in connect read write timeout status; do
            err[$e]=$((${err[$e]:-0} + $(field "$line" "$e")))
        done
    done
    for e in connect read write timeout status; do
        ((err[$e] == 0)) || RES_ERRORS+=" $e=${err[$e]}"
    done
}

field() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" <<<"$1"; }

# ---------------------------------------------------------------- measure
# Configurations: label|replicas|database (empty = embedded tier)|L2 (1 = CACHE_URL)|
# binary. A fresh database each (so a fresh L2 space too). The baseline runs right before
# the same configuration on the new binary, so both see about the same machine load.
STAMP="$(date +%s)"
CONFIGS=("embedded|1||0|$SVC")
for n in 1 3; do
    replicas="$n replica"
    if ((n > 1)); then replicas+="s"; fi
    if [[ -n "$BASELINE" ]]; then
        CONFIGS+=("docdb, $replicas (baseline)|$n|svcbench_b${n}_$STAMP|0|$BASELINE")
    fi
    CONFIGS+=("docdb, $replicas|$n|svcbench_r${n}_$STAMP|0|$SVC")
    if [[ "$L2" != 0 ]]; then
        CONFIGS+=("docdb+L2, $replicas|$n|svcbench_c${n}_$STAMP|1|$SVC")
    fi
done
# walk_chain before create_item: each create_item call adds an edge to root, and
# walk_chain's first hop filters root's edges for the chain head (as in run.sh).
TARGETS=(
    "/walker/walk_chain|walk_chain.lua|$PY_WALK_RPS"
    "/walker/create_item|create_item.lua|$PY_CREATE_RPS"
)
ROWS=()
FAILED=0

for config in "${CONFIGS[@]}"; do
    IFS='|' read -r tier n db l2 bin <<<"$config"
    uri="" cache=""
    [[ -n "$db" ]] && uri="mongodb://127.0.0.1:$DB_PORT/$db"
    [[ "$l2" == 1 ]] && cache="$CACHE"
    launch_replicas "$n" "$uri" "$cache" "$bin"
    echo "== $tier: $bin, pid(s) ${REPLICA_PIDS[*]} on :${REPLICA_PORTS[*]}${uri:+, DOCDB_URI=$uri}${cache:+, CACHE_URL=$cache}"
    # Seed once (the replicas share the database), then every replica must see the chain.
    check "${REPLICA_PORTS[0]}" /function/build_chain '{}' '"result":100'
    check "${REPLICA_PORTS[0]}" /function/build_chain '{}' '"result":100'
    for port in "${REPLICA_PORTS[@]}"; do
        check "$port" /walker/walk_chain '{}' '"reports":[100]'
        check "$port" /walker/create_item '{"name":"bench"}' '"reports":["ok"]'
    done

    for target in "${TARGETS[@]}"; do
        IFS='|' read -r path script py <<<"$target"
        if [[ "$WARMUP" != 0 && "$WARMUP" != 0s ]]; then
            run_wrk_split 16 "$WARMUP" "$path" "$script"
        fi
        run_wrk_split "$CONNECTIONS" "$DURATION" "$path" "$script"
        echo "   $tier $path: $RES_REQUESTS requests completed in $DURATION"
        p99=$(awk -v u="$RES_P99_US" 'BEGIN { printf "%.1f", u / 1000 }')
        if ((CONNECTIONS == 64)); then
            vs_py=$(awk -v a="$RES_RPS" -v b="$py" 'BEGIN { printf "%.1f× (py %d)", a / b, b }')
        else
            vs_py="- (py measured at 64)"
        fi
        if [[ -n "$RES_ERRORS" ]]; then
            echo "!! FAIL $tier $path: wrk reported errors:$RES_ERRORS (status = responses >= 400)" >&2
            # Which statuses, and why, from the replicas' access and warning logs.
            for i in "${!REPLICA_DIRS[@]}"; do
                grep -h "path=$path status=[45]" "${REPLICA_DIRS[i]}/stderr.log" \
                    | sed -n 's/.* \(status=[0-9]*\) .*/\1/p'
            done | sort | uniq -c | sed 's/^/!!    /' >&2
            cat "${REPLICA_DIRS[@]/%//stderr.log}" | grep -h ' WARN ' | sed 's/^[^ ]* *//' \
                | sort | uniq -c | sort -rn | head -5 | sed 's/^/!!    /' >&2 || true
            vs_py+=" FAIL:$RES_ERRORS"
            FAILED=1
        fi
        row=$(printf '| %s | %s | %.1f | %s | %s |' "$tier" "$path" "$RES_RPS" "$p99" "$vs_py")
        echo "$row"
        ROWS+=("$row")
        for i in "${!REPLICA_PIDS[@]}"; do
            kill -0 "${REPLICA_PIDS[i]}" 2>/dev/null \
                || die "svc start died during $tier $path (log: ${REPLICA_DIRS[i]}/stderr.log)"
        done
    done
    # The chain is intact after the load, on every replica.
    for port in "${REPLICA_PORTS[@]}"; do
        check "$port" /walker/walk_chain '{}' '"reports":[100]'
    done
    for pid in "${REPLICA_PIDS[@]}"; do stop "$pid"; done
done

# ---------------------------------------------------------------- summary
echo
echo "== document-database tier load benchmark: $(nproc) cores shared by wrk, svc and SecantusDB;" \
     "wrk -d$DURATION, $CONNECTIONS connections in all, --timeout $WRK_TIMEOUT; svc start --workers 2"
echo
echo "| tier | endpoint | req/s | p99 ms | × Python original |"
echo "|---|---|---:|---:|---|"
printf '%s\n' "${ROWS[@]}"
echo
echo "(docdb, 3 replicas: one wrk per replica at once, connections split evenly; req/s is the"
echo " sum, p99 the largest of the three)"

if ((FAILED)); then
    echo "FAILED: some runs had non-2xx responses or socket errors (see !! lines above)" >&2
    exit 1
fi
