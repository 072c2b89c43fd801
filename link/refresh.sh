#!/usr/bin/env bash
# Regenerate link/symbol-order.txt: the functions a release `svc start` runs while it
# starts and serves its first requests, start-up first. build.rs hands the list to the
# linker (LLD's --symbol-ordering-file) for release builds, so that code sits together
# and an idle server maps a few MB of its executable instead of most of it
# (link/README.md has the why and the measurements).
#
# usage: link/refresh.sh [SVC_BINARY]     (default: target/release/svc, built if absent)
# needs: valgrind (Debian `valgrind`), curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SVC=${1:-$ROOT/target/release/svc}
[ -x "$SVC" ] || cargo build --release --bin svc
SVC=$(realpath "$SVC")
command -v valgrind >/dev/null || { echo "link/refresh.sh: needs valgrind" >&2; exit 2; }

WORK=$(mktemp -d /tmp/svc-link-order.XXXXXX)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cp benches/load/app.svc "$WORK/app.svc"
printf '[scale.auth]\nbcrypt_cost = 4\n' > "$WORK/svc.toml"
PORT=$((20000 + RANDOM % 10000))
BASE="http://127.0.0.1:$PORT"

# RUST_MIN_STACK set: svc start does not execute itself again (ARCHITECTURE.md, "Stack").
(cd "$WORK" && exec env RUST_MIN_STACK=$((512 << 20)) valgrind --tool=callgrind \
    --demangle=no --callgrind-out-file="$WORK/cg.%p" \
    "$SVC" start app.svc --host 127.0.0.1 --port "$PORT" >"$WORK/log" 2>&1) &
PID=$!
for _ in $(seq 1 120); do
    curl -sf -o /dev/null "$BASE/healthz" && break
    sleep 0.5
done
curl -sf -o /dev/null "$BASE/healthz" || { cat "$WORK/log" >&2; exit 1; }
sleep 1
# Phase 1 ends here: what start-up and the first /healthz ran.
callgrind_control -d >/dev/null

post() { curl -sf -o /dev/null -X POST "$BASE$1" -H 'content-type: application/json' ${3:+-H "authorization: Bearer $3"} -d "$2"; }
for _ in 1 2 3; do
    post /function/add_numbers '{"a":20,"b":22}'
    post /walker/create_item '{"name":"x"}'
    post /function/build_chain '{}'
    post /walker/walk_chain '{}'
done
post /user/register '{"identities":[{"type":"email","value":"order@example.com"}],"credential":{"type":"password","password":"order-pass-1"}}' || true
TOKEN=$(curl -sf -X POST "$BASE/user/login" -H 'content-type: application/json' \
    -d '{"identity":{"type":"email","value":"order@example.com"},"credential":{"type":"password","password":"order-pass-1"}}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["token"])')
post /walker/create_item '{"name":"y"}' "$TOKEN"
curl -sf -o /dev/null "$BASE/openapi.json"
curl -sf -o /dev/null "$BASE/metrics" || true
kill -INT "$PID"
wait "$PID" 2>/dev/null || true

# Phase 1's dump is the file with the suffix .1; the rest is in the final dump.
python3 - "$SVC" "$WORK" > link/symbol-order.txt <<'EOF'
import glob, re, subprocess, sys
svc, work = sys.argv[1], sys.argv[2]
def functions(path):
    """Names of the functions of the svc object that a callgrind dump lists."""
    obs, fns, out = {}, {}, set()
    cur = called = None
    for line in open(path, errors="replace"):
        m = re.match(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, i, name = m.groups()
        table = obs if kind.endswith("ob") else fns
        if name:
            table[i] = name
        if kind == "ob":
            cur = obs.get(i)
        elif kind == "cob":
            called = obs.get(i)
        else:
            owner = cur if kind == "fn" else called
            if owner == svc and fns.get(i):
                # callgrind marks recursion levels with a quote (`f'2`).
                out.add(re.sub(r"'\d+$", "", fns[i]))
    return out
dumps = sorted(glob.glob(f"{work}/cg.*"), key=lambda p: (not p.endswith(".1"), p))
# Only the binary's own symbols: callgrind also credits it with some of libc's, with
# code it has no symbol for (`0x...`) and with pseudo-functions (`(below main)`). So
# every name of a fresh list is in the build it was made from, and a missing one means
# the list is stale (benches/load/run.sh counts them).
nm = subprocess.run(["nm", svc], capture_output=True, text=True, check=True).stdout
have = {line.split()[-1] for line in nm.splitlines() if line.strip()}
seen = set()
for path in dumps:
    # Sorted within a phase: callgrind's order varies from run to run, and sorted
    # names keep a crate's functions together and a refreshed list's diff small.
    for name in sorted((functions(path) & have) - seen):
        seen.add(name)
        print(name)
EOF
echo "link/symbol-order.txt: $(wc -l < link/symbol-order.txt) functions"
