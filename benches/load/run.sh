#!/usr/bin/env bash
# Load benchmark for `svc start` — see benches/load/README.md.
#
#   benches/load/run.sh                 # build, then measure everything (~6 min)
#   DURATION=30s benches/load/run.sh    # longer wrk runs
#
# Environment:
#   DURATION      wrk duration per run (default 10s)
#   BCRYPT_DURATION  wrk duration per run of the bcrypt-bound /user/login and /user/register
#                 (default 20s; no warm-up, wrk --timeout 60s, and the server is left to go
#                 idle after each run so requests still hashing do not spill into the next)
#   BCRYPT_COST   bcrypt cost for the server under test (written to its svc.toml
#                 [scale.auth] bcrypt_cost; default: the server's default, 12)
#   WARMUP        wrk warm-up per target before measuring, at 16 connections (default 2s; 0 = none)
#   CONNECTIONS   connection counts (default "1 16 64")
#   THREADS       wrk threads (default 2; capped at the connection count)
#   LAUNCHES      launches for the start-time median (default 5)
#   SKIP_BUILD=1  use the binaries already in $CARGO_TARGET_DIR
#   SVC_BIN       the svc binary to measure (default $CARGO_TARGET_DIR/release/svc), e.g. a
#                 build of the tree before a change, for a side-by-side run
#   BCRYPT=0      skip the bcrypt-bound login/register table
#   SIBLINGS      children added to root between the two create_item runs of the siblings
#                 measurement (default 100000; 0 = skip it)
#   CARGO_TARGET_DIR  (default /tmp/target-load)
#
# Needs wrk (Debian: `sudo apt-get install -y wrk`), curl, bash >= 5.
# Exit status: 0 when every run answered with 2xx and no socket errors, 1 otherwise.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/target-load}"
DURATION="${DURATION:-10s}"
WARMUP="${WARMUP:-2s}"
CONNECTIONS="${CONNECTIONS:-1 16 64}"
THREADS="${THREADS:-2}"
LAUNCHES="${LAUNCHES:-5}"
BCRYPT_DURATION="${BCRYPT_DURATION:-20s}"
# The server's default bcrypt cost, as documented in svc.toml.example (src/config.rs).
DEFAULT_BCRYPT_COST=$(sed -n 's/^# bcrypt_cost = \([0-9]*\).*/\1/p' "$REPO/svc.toml.example")
BCRYPT_COST="${BCRYPT_COST:-}"
COST_IN_USE="${BCRYPT_COST:-${DEFAULT_BCRYPT_COST:-12}}"
BENCH_EMAIL="bench@bench.local"
BENCH_PASSWORD="bench-password"
SVC="${SVC_BIN:-$TARGET_DIR/release/svc}"
BCRYPT="${BCRYPT:-1}"
SIBLINGS="${SIBLINGS:-100000}"
BARE="$TARGET_DIR/release/examples/bare_server"

# The Python original (jac-scale) on the same 2-core machine, at 64 connections.
PY_FUNCTION_RPS=197
PY_CREATE_RPS=17
PY_WALK_RPS=12
PY_IDLE_RSS_MB=168
PY_START_MS_LOW=3000
PY_START_MS_HIGH=4000

die() { echo "run.sh: $*" >&2; exit 1; }

command -v wrk >/dev/null || die "wrk not found; install it with: sudo apt-get install -y wrk"
command -v curl >/dev/null || die "curl not found; install it with: sudo apt-get install -y curl"
((BASH_VERSINFO[0] >= 5)) || die "needs bash >= 5 (for \$EPOCHREALTIME)"

# ---------------------------------------------------------------- build
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    echo "== building svc and bare_server (release, CARGO_TARGET_DIR=$TARGET_DIR)"
    # Two builds, not one: building the example with the binary unifies the
    # dev-dependencies' features into the shared crates, which renames their symbols, so
    # that svc would not be the binary `cargo build --release` gives a user, nor the one
    # link/symbol-order.txt was made from (link/README.md).
    (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --example bare_server)
    (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --bin svc)
fi
[[ -x "$SVC" ]] || die "missing $SVC"
[[ -x "$BARE" ]] || die "missing $BARE"

# ---------------------------------------------------------------- process bookkeeping
WORK="$(mktemp -d /tmp/svc-load.XXXXXX)"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A 1 ms sleep without forking: `read -t` on a FIFO nobody writes to.
mkfifo "$WORK/tick"
exec 9<>"$WORK/tick"
sleep_1ms() { read -r -t 0.001 -u 9 _ || true; }

# Microseconds since the epoch into $NOW_US (no subshell, so it can run in the 1 ms poll loop).
now_us() { NOW_US="${EPOCHREALTIME/./}"; NOW_US=$((10#$NOW_US)); }

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

# One GET /healthz over /dev/tcp; succeeds on a 200 status line.
healthz_once() {
    local port="$1" line
    { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
    printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 || { exec 3>&-; return 1; }
    read -r -t 2 -u 3 line || true
    exec 3>&-
    [[ "$line" == "HTTP/1."?" 200"* ]]
}

# Poll /healthz every 1 ms until it answers 200 (timeout 60 s); fails if PID died.
wait_healthy() {
    local port="$1" pid="$2" deadline
    now_us
    deadline=$((NOW_US + 60000000))
    until healthz_once "$port"; do
        kill -0 "$pid" 2>/dev/null || return 1
        now_us
        ((NOW_US < deadline)) || return 1
        sleep_1ms
    done
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# CPU time (user + system, in clock ticks) of PID; comm is `svc`, so fields are fixed.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Wait until PID uses less than 2 ticks of CPU in 250 ms (at most 120 s): the bcrypt
# work of requests wrk abandoned at the end of a run is done.
wait_idle() {
    local pid="$1" a b
    for _ in $(seq 480); do
        a=$(cpu_ticks "$pid")
        sleep 0.25
        b=$(cpu_ticks "$pid")
        ((b - a < 2)) && return 0
    done
    echo "!! pid $pid still busy after 120 s" >&2
}

# Start `svc start app.svc` in a fresh directory on loopback; sets SVC_PID, SVC_PORT, SVC_DIR
# and LAUNCH_US (the time just before the fork).
launch_svc() {
    SVC_DIR="$(mktemp -d "$WORK/svc.XXXXXX")"
    cp "$HERE/app.svc" "$SVC_DIR/app.svc"
    # Every request comes from one loopback address: lift the per-address registration
    # limit (a real deployment keeps it), or register.lua would measure 429s.
    printf '[scale.auth]\nregister_max_per_address = 1000000\n' >"$SVC_DIR/svc.toml"
    if [[ -n "$BCRYPT_COST" ]]; then
        printf 'bcrypt_cost = %d\n' "$BCRYPT_COST" >>"$SVC_DIR/svc.toml"
    fi
    SVC_PORT="$(free_port)"
    now_us
    LAUNCH_US=$NOW_US
    (cd "$SVC_DIR" && exec "$SVC" start app.svc --host 127.0.0.1 --port "$SVC_PORT" \
        >"$SVC_DIR/stdout.log" 2>"$SVC_DIR/stderr.log") &
    SVC_PID=$!
    PIDS+=("$SVC_PID")
}

stop() {
    local pid="$1"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---------------------------------------------------------------- start time and idle RSS
echo "== start time: $LAUNCHES launches of svc start, each in a fresh directory (new store)"
START_MS=()
IDLE_RSS=()
for i in $(seq "$LAUNCHES"); do
    launch_svc
    wait_healthy "$SVC_PORT" "$SVC_PID" || { cat "$SVC_DIR/stderr.log" >&2; die "svc start did not become healthy"; }
    now_us
    t0=$LAUNCH_US t1=$NOW_US
    rss=$(rss_kb "$SVC_PID")
    ms=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1000 }')
    START_MS+=("$ms")
    IDLE_RSS+=("$rss")
    echo "   launch $i: first 200 from /healthz after $ms ms; VmRSS $((rss / 1024)) MB ($rss kB)"
    stop "$SVC_PID"
done
START_MEDIAN=$(printf '%s\n' "${START_MS[@]}" | median)
RSS_MEDIAN_KB=$(printf '%s\n' "${IDLE_RSS[@]}" | median)

# ---------------------------------------------------------------- servers under test
BARE_PORT="$(free_port)"
"$BARE" --host 127.0.0.1 --port "$BARE_PORT" 2>"$WORK/bare.log" &
BARE_PID=$!
PIDS+=("$BARE_PID")
wait_healthy "$BARE_PORT" "$BARE_PID" || { cat "$WORK/bare.log" >&2; die "bare_server did not start"; }

launch_svc
wait_healthy "$SVC_PORT" "$SVC_PID" || { cat "$SVC_DIR/stderr.log" >&2; die "svc start did not become healthy"; }
BENCH_IDLE_RSS_KB=$(rss_kb "$SVC_PID")
echo "== bare_server pid $BARE_PID on :$BARE_PORT; svc start pid $SVC_PID on :$SVC_PORT" \
     "(idle VmRSS $((BENCH_IDLE_RSS_KB / 1024)) MB; log $SVC_DIR/stderr.log)"

# One request before measuring: the endpoint must answer STATUS (default 200) with the
# expected payload.
check() {
    local url="$1" body="$2" expect="$3" status="${4:-200}" out
    out=$(curl -sS -o - -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' -d "$body" "$url") \
        || die "request to $url failed"
    [[ "${out##*$'\n'}" == "$status" && "$out" == *"$expect"* ]] \
        || die "unexpected answer from $url: $out (wanted $status and $expect)"
}
check "http://127.0.0.1:$SVC_PORT/function/build_chain" '{}' '"result":100'
check "http://127.0.0.1:$SVC_PORT/function/build_chain" '{}' '"result":100'
check "http://127.0.0.1:$BARE_PORT/function/add_numbers" '{"a":20,"b":22}' '"result":42'
check "http://127.0.0.1:$SVC_PORT/function/add_numbers" '{"a":20,"b":22}' '"result":42'
check "http://127.0.0.1:$SVC_PORT/walker/walk_chain" '{}' '"reports":[100]'
check "http://127.0.0.1:$SVC_PORT/walker/create_item" '{"name":"bench"}' '"reports":["ok"]'
# The user login.lua logs in as; register.lua's identities are made per request.
CREDENTIAL="\"credential\":{\"type\":\"password\",\"password\":\"$BENCH_PASSWORD\"}"
check "http://127.0.0.1:$SVC_PORT/user/register" \
    "{\"identities\":[{\"type\":\"email\",\"value\":\"$BENCH_EMAIL\"}],$CREDENTIAL}" '"user_id"' 201
check "http://127.0.0.1:$SVC_PORT/user/login" \
    "{\"identity\":{\"type\":\"email\",\"value\":\"$BENCH_EMAIL\"},$CREDENTIAL}" '"token"'

# ---------------------------------------------------------------- wrk runs
# Targets: name|url|lua script|python req/s at 64 connections (empty = none)|bcrypt.
# walk_chain runs before create_item: root's edge list grows by one per create_item
# call, and walk_chain's first hop filters root's edges for the chain head.
# bcrypt-bound targets (last field `bcrypt`) go to their own table.
TARGETS=(
    "bare add_numbers|http://127.0.0.1:$BARE_PORT/function/add_numbers|add_numbers.lua||"
    "svc /function/add_numbers|http://127.0.0.1:$SVC_PORT/function/add_numbers|add_numbers.lua|$PY_FUNCTION_RPS|"
    "svc /walker/walk_chain|http://127.0.0.1:$SVC_PORT/walker/walk_chain|walk_chain.lua|$PY_WALK_RPS|"
    "svc /walker/create_item|http://127.0.0.1:$SVC_PORT/walker/create_item|create_item.lua|$PY_CREATE_RPS|"
    "svc /user/login|http://127.0.0.1:$SVC_PORT/user/login|login.lua||bcrypt"
    "svc /user/register|http://127.0.0.1:$SVC_PORT/user/register|register.lua||bcrypt"
)

declare -A BARE_RPS
ROWS=()
BCRYPT_ROWS=()
FAILED=0
CORES=$(nproc)

run_wrk() { # conns duration url script [timeout] -> the WRKRESULT line
    local conns="$1" duration="$2" url="$3" script="$4" timeout="${5:-10s}" threads="$THREADS" out
    ((threads > conns)) && threads="$conns"
    # run_wrk runs in a command substitution (a subshell): a counter would not survive,
    # so the run tag is the clock.
    out=$(BENCH_RUN="${EPOCHREALTIME/./}" wrk -t"$threads" -c"$conns" -d"$duration" --timeout "$timeout" \
        -s "$HERE/$script" "$url") \
        || { echo "$out" >&2; die "wrk failed against $url"; }
    grep '^WRKRESULT ' <<<"$out" || { echo "$out" >&2; die "no WRKRESULT line from wrk"; }
}

field() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" <<<"$1"; }

for target in "${TARGETS[@]}"; do
    IFS='|' read -r name url script py kind <<<"$target"
    if [[ "$kind" == bcrypt ]]; then
        [[ "$BCRYPT" == 0 ]] && continue
        duration="$BCRYPT_DURATION" timeout=60s
        wait_idle "$SVC_PID"
    else
        duration="$DURATION" timeout=10s
        if [[ "$WARMUP" != 0 && "$WARMUP" != 0s ]]; then
            echo "== $name: warm-up $WARMUP"
            run_wrk 16 "$WARMUP" "$url" "$script" >/dev/null
        fi
    fi
    for c in $CONNECTIONS; do
        res=$(run_wrk "$c" "$duration" "$url" "$script" "$timeout")
        rps=$(field "$res" rps)
        p50=$(awk -v u="$(field "$res" p50_us)" 'BEGIN { printf "%.2f", u / 1000 }')
        p99=$(awk -v u="$(field "$res" p99_us)" 'BEGIN { printf "%.2f", u / 1000 }')
        errors=""
        for e in connect read write timeout status; do
            n=$(field "$res" "$e")
            ((n == 0)) || errors+=" $e=$n"
        done
        if [[ -n "$errors" ]]; then
            echo "!! FAIL $name at $c connections: wrk reported errors:$errors (status = responses >= 400)" >&2
            FAILED=1
        fi
        if [[ "$kind" == bcrypt ]]; then
            # Closed loop: every connection always has one request in flight, so the rate
            # is conns / mean latency (Little's law). Unlike completed/duration it is not
            # skewed when many slow requests finish together just after the run ends.
            little=$(awk -v c="$c" -v m="$(field "$res" mean_us)" 'BEGIN { printf "%.2f", (m > 0 ? c * 1e6 / m : 0) }')
            # Cores busy: one per connection, at most all of them.
            per_core=$(awk -v r="$little" -v c="$c" -v n="$CORES" 'BEGIN { printf "%.2f", r / (c < n ? c : n) }')
            row=$(printf '%-26s %5s %10.1f %10.1f %9s %9.2f %9.2f%s' "$name" "$c" "$rps" "$little" \
                "$per_core" "$p50" "$p99" "${errors:+  FAIL:$errors}")
            echo "$row"
            BCRYPT_ROWS+=("$row")
            kill -0 "$SVC_PID" 2>/dev/null || die "svc start died during $name (log: $SVC_DIR/stderr.log)"
            wait_idle "$SVC_PID"
            continue
        fi
        if [[ "$name" == bare* ]]; then
            BARE_RPS[$c]="$rps"
            vs_bare="1.00"
        elif [[ "$name" == *function* && -n "${BARE_RPS[$c]:-}" ]]; then
            vs_bare=$(awk -v a="$rps" -v b="${BARE_RPS[$c]}" 'BEGIN { printf "%.2f", a / b }')
        else
            vs_bare="-"
        fi
        vs_py="-"
        if [[ -n "$py" && "$c" == 64 ]]; then
            vs_py=$(awk -v a="$rps" -v b="$py" 'BEGIN { printf "%.0fx (py %d)", a / b, b }')
        fi
        [[ -n "$errors" ]] && vs_py+=" FAIL:$errors"
        row=$(printf '%-26s %5s %12.0f %9s %9s %8s  %s' "$name" "$c" "$rps" "$p50" "$p99" "$vs_bare" "$vs_py")
        echo "$row"
        ROWS+=("$row")
        kill -0 "$SVC_PID" 2>/dev/null || die "svc start died during $name (log: $SVC_DIR/stderr.log)"
    done
done
# ---------------------------------------------------------------- siblings
# create_item adds one edge to root per call: its rate must not fall as root's edge list
# grows. Measured at 64 connections before and after $SIBLINGS more children of root
# (added by /function/add_siblings, 10,000 per call).
SIB_ROW=""
if ((SIBLINGS > 0)); then
    sib_url="http://127.0.0.1:$SVC_PORT/walker/create_item"
    sib_before=$(field "$(run_wrk 64 "$DURATION" "$sib_url" create_item.lua)" rps)
    left=$SIBLINGS
    while ((left > 0)); do
        n=$((left < 10000 ? left : 10000))
        check "http://127.0.0.1:$SVC_PORT/function/add_siblings" "{\"n\":$n}" "\"result\":$n"
        left=$((left - n))
    done
    sib_after=$(field "$(run_wrk 64 "$DURATION" "$sib_url" create_item.lua)" rps)
    SIB_ROW=$(awk -v a="$sib_before" -v b="$sib_after" -v n="$SIBLINGS" \
        'BEGIN { printf "create_item @64 before %.0f req/s, after %d more siblings of root %.0f req/s: slowdown %.1f%%", a, n, b, (a - b) * 100 / a }')
    echo "$SIB_ROW"
fi

LOADED_RSS_KB=$(rss_kb "$SVC_PID")
ITEMS=$(curl -sS -X POST -H 'Content-Type: application/json' -d '{}' \
    "http://127.0.0.1:$SVC_PORT/walker/walk_chain" | sed -n 's/.*"reports":\(\[[^]]*\]\).*/\1/p')

# ---------------------------------------------------------------- summary
echo
echo "== svc start load benchmark ($(nproc) cores, shared by wrk and the server; wrk -t$THREADS -d$DURATION)"
printf '%-26s %5s %12s %9s %9s %8s  %s\n' target conns "req/s" "p50 ms" "p99 ms" "vs bare" "vs Python @64"
printf '%s\n' "${ROWS[@]}"
echo
awk -v ours="$START_MEDIAN" -v lo="$PY_START_MS_LOW" -v hi="$PY_START_MS_HIGH" -v n="$LAUNCHES" \
    'BEGIN { printf "start (launch -> first 200 from /healthz, median of %d): %s ms   Python %d-%d ms  (%.0f-%.0fx faster)\n", n, ours, lo, hi, lo / ours, hi / ours }'
awk -v kb="$RSS_MEDIAN_KB" -v bench="$BENCH_IDLE_RSS_KB" -v py="$PY_IDLE_RSS_MB" \
    'BEGIN { printf "idle RSS right after /healthz: %.1f MB (median of launches; %.1f MB for the benchmarked instance)   Python %d MB  (%.0fx smaller)\n", kb / 1024, bench / 1024, py, py * 1024 / kb }'
echo "RSS after the load runs: $((LOADED_RSS_KB / 1024)) MB; walk_chain still reports $ITEMS"
# The idle figure depends on the link-time symbol order (link/README.md): say how much of
# the list this binary still has; a stale list maps more of the executable.
ORDER="$HERE/../../link/symbol-order.txt"
if [[ -f "$ORDER" ]] && command -v nm >/dev/null; then
    found=$(nm "$SVC" 2>/dev/null | awk 'NR == FNR { have[$NF] = 1; next } ($1 in have) { n++ } END { print n + 0 }' - "$ORDER")
    echo "link order: $found of $(wc -l < "$ORDER") listed functions are in this binary" \
         "(a fresh list has all; each missing one is hot code outside the ordered block:" \
         "run link/refresh.sh and rebuild)"
fi
[[ -n "$SIB_ROW" ]] && echo "siblings: $SIB_ROW"
if [[ "$BCRYPT" != 0 ]]; then
echo
echo "== bcrypt-bound identity endpoints: bcrypt cost $COST_IN_USE, $CORES cores, wrk -t$THREADS -d$BCRYPT_DURATION" \
     "(login: correct password, 1 verify/request; register: new e-mail per request, 1 hash/request)"
printf '%-26s %5s %10s %10s %9s %9s %9s\n' target conns "req/s" "conns/lat" "per core" "p50 ms" "p99 ms"
printf '%s\n' "${BCRYPT_ROWS[@]}"
echo "(req/s = completed / duration; conns/lat = connections / mean latency, the closed-loop"
echo " rate; per core = conns/lat / min(conns, $CORES), the cores a run can keep busy)"
fi

if ((FAILED)); then
    echo "FAILED: some runs had non-2xx responses or socket errors (see !! lines above)" >&2
    exit 1
fi
