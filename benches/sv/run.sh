#!/usr/bin/env bash
# Service-to-service call throughput: sv calls/s consumer -> provider, with the provider
# called directly as the baseline, and (BEFORE=...) another build's client beside this
# one's in the same run. See benches/sv/README.md.
#
#   BEFORE=/tmp/svc-main benches/sv/run.sh
#
# Environment:
#   BEFORE            an svc binary to compare against (e.g. a release build of main, the
#                     fresh-connection client); its consumer runs beside this tree's
#   SVC_BIN           this tree's svc (default $CARGO_TARGET_DIR/release/svc, built unless
#                     SKIP_BUILD=1); it also serves the provider
#   DURATION          wrk duration per run (default 5s)
#   ROUNDS            interleaved rounds (default 3): every round measures each target at
#                     each connection count, in a rotating order; the table shows the median
#   CONNECTIONS       concurrent clients (default "1 16")
#   CONSUMER_WORKERS  run workers of each consumer (default 16: a worker waits while its
#                     sv call is out, so 16 clients need 16 to have 16 calls in flight)
#   CARGO_TARGET_DIR  (default target)
# Needs wrk and curl. Exit status 1 when a run saw errors or non-2xx answers.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
SVC="${SVC_BIN:-$TARGET_DIR/release/svc}"
BEFORE="${BEFORE:-}"
DURATION="${DURATION:-5s}"
ROUNDS="${ROUNDS:-3}"
CONNECTIONS="${CONNECTIONS:-1 16}"
CONSUMER_WORKERS="${CONSUMER_WORKERS:-16}"

die() { echo "run.sh: $*" >&2; exit 1; }
command -v wrk >/dev/null || die "wrk not found (Debian: sudo apt-get install -y wrk)"
command -v curl >/dev/null || die "curl not found"

if [[ "${SKIP_BUILD:-0}" != 1 && -z "${SVC_BIN:-}" ]]; then
    (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --bin svc)
fi
[[ -x "$SVC" ]] || die "missing $SVC"
[[ -z "$BEFORE" || -x "$BEFORE" ]] || die "BEFORE=$BEFORE is not an executable"

WORK="$(mktemp -d /tmp/svc-sv-bench.XXXXXX)"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# `svc start <entry>` of binary BIN in a fresh directory; prints "pid port" once it
# answers /healthz. Extra environment as NAME=VALUE arguments after the workers.
start() {
    local bin="$1" name="$2" entry="$3" workers="$4"
    shift 4
    local dir="$WORK/$name"
    mkdir -p "$dir"
    cp "$HERE/provider.svc" "$HERE/consumer.svc" "$dir/"
    (cd "$dir" && exec env "$@" "$bin" start "$entry" --host 127.0.0.1 --port 0 \
        --workers "$workers" >"$dir/stdout.log" 2>"$dir/stderr.log") &
    local pid=$! port=""
    PIDS+=("$pid")
    for _ in $(seq 600); do
        port=$(sed -n 's/.* at http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/stdout.log" | head -1)
        [[ -n "$port" ]] && curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
        kill -0 "$pid" 2>/dev/null || { cat "$dir/stderr.log" >&2; die "$name did not start"; }
        sleep 0.1
    done
    [[ -n "$port" ]] || die "$name did not start"
    echo "$pid $port"
}

check() { # url: the relay/add answer must be 42
    local out
    out=$(curl -sS -X POST -H 'Content-Type: application/json' -d '{"a":20,"b":22}' "$1") \
        || die "request to $1 failed"
    [[ "$out" == *'"result":42'* ]] || die "unexpected answer from $1: $out"
}

CORES=$(nproc)
read -r P_PID P_PORT < <(start "$SVC" provider provider.svc "$CORES")
PROVIDER_URL="http://127.0.0.1:$P_PORT"
TARGETS=("provider direct|$PROVIDER_URL/function/add")
read -r A_PID A_PORT < <(start "$SVC" after consumer.svc "$CONSUMER_WORKERS" \
    "SVC_SV_PROVIDER_URL=$PROVIDER_URL")
if [[ -n "$BEFORE" ]]; then
    read -r B_PID B_PORT < <(start "$BEFORE" before consumer.svc "$CONSUMER_WORKERS" \
        "SVC_SV_PROVIDER_URL=$PROVIDER_URL")
    TARGETS+=("sv call, before|http://127.0.0.1:$B_PORT/function/relay")
fi
TARGETS+=("sv call, after|http://127.0.0.1:$A_PORT/function/relay")
for t in "${TARGETS[@]}"; do check "${t#*|}"; done

echo "== svc $SVC${BEFORE:+, before $BEFORE}; $CORES cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $ROUNDS rounds of wrk $DURATION per target and client count, order rotating per round"

field() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" <<<"$1"; }
declare -A RPS P50
FAILED=0
n=${#TARGETS[@]}
for round in $(seq "$ROUNDS"); do
    for c in $CONNECTIONS; do
        for i in $(seq 0 $((n - 1))); do
            t="${TARGETS[$(((i + round) % n))]}"
            name="${t%%|*}" url="${t#*|}"
            threads=$((c < 2 ? c : 2))
            out=$(wrk -t"$threads" -c"$c" -d"$DURATION" --timeout 10s -s "$HERE/add.lua" "$url") \
                || die "wrk failed against $url"
            res=$(grep '^WRKRESULT ' <<<"$out") || die "no WRKRESULT line"
            for e in connect read write timeout status; do
                if [[ "$(field "$res" "$e")" != 0 ]]; then
                    echo "!! $name at $c clients: $e errors: $res" >&2
                    FAILED=1
                fi
            done
            RPS["$name|$c"]+="$(field "$res" rps) "
            P50["$name|$c"]+="$(field "$res" p50_us) "
            printf '   round %d  %-18s %3d clients  %10.0f calls/s  p50 %6.2f ms\n' "$round" "$name" "$c" \
                "$(field "$res" rps)" "$(awk -v u="$(field "$res" p50_us)" 'BEGIN { print u / 1000 }')"
        done
    done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'; }

echo
echo "== load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %7s %12s %15s %9s %12s\n' target clients "calls/s" "(range)" "p50 ms" "vs direct"
for c in $CONNECTIONS; do
    base=$(median <<<"${RPS["provider direct|$c"]}")
    for t in "${TARGETS[@]}"; do
        name="${t%%|*}"
        rps=$(median <<<"${RPS["$name|$c"]}")
        p50=$(median <<<"${P50["$name|$c"]}")
        printf '%-18s %7s %12.0f %15s %9.2f %12s\n' "$name" "$c" "$rps" "($(range <<<"${RPS["$name|$c"]}"))" \
            "$(awk -v u="$p50" 'BEGIN { print u / 1000 }')" \
            "$(awk -v a="$rps" -v b="$base" 'BEGIN { printf "%.2f", a / b }')"
    done
done
exit "$FAILED"
