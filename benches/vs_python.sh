#!/usr/bin/env bash
# Compare svc with plain CPython 3.12 on the compute programs in benches/compute/.
#
#   benches/vs_python.sh [FILTER]
#
# Each program exists twice: X.svc (run with `svc run --no-store`, nothing persisted) and
# X.py (the same code as plain Python). Both run RUNS times (default 5), interleaved, in
# the same invocation; the table gives the median wall time of each and the ratio
# python/svc (higher = svc faster). The outputs of the two must be identical.
#
# With BASE_ARGS set (e.g. BASE_ARGS=--no-vm), the same svc binary also runs each program
# with those `svc run` flags, interleaved, as a baseline column (`base ms`). With BASE_SVC
# set (another svc binary, e.g. a copy from before a change), the baseline column runs
# that binary instead (with BASE_ARGS, if any).
#
# With CPU=1 each time is the process's CPU time (`perf stat -e task-clock`) instead of
# wall time: on a shared, loaded machine wall time mostly measures waiting for a core.
#
# Environment: SVC (a prebuilt svc binary; default: build release and use it),
# PYTHON (default: ~/.pyenv/versions/3.12*/bin/python, else python3.12), RUNS (default 5),
# CARGO_TARGET_DIR (default target).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-5}"
filter="${1:-}"

if [ -z "${PYTHON:-}" ]; then
  PYTHON="$(ls "$HOME"/.pyenv/versions/3.12*/bin/python 2>/dev/null | head -n1 || true)"
  [ -n "$PYTHON" ] || PYTHON="$(command -v python3.12 || true)"
fi
if [ -z "$PYTHON" ] || ! "$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 12)'; then
  echo "error: CPython 3.12 not found (set PYTHON=/path/to/python3.12)" >&2
  exit 1
fi

if [ -z "${SVC:-}" ]; then
  echo "building svc (release)..." >&2
  (cd "$root" && cargo build --release --quiet --bin svc)
  SVC="${CARGO_TARGET_DIR:-$root/target}/release/svc"
  case "$SVC" in /*) ;; *) SVC="$root/$SVC" ;; esac
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# time_ms OUT CMD...: run CMD once (stdout to OUT), print its wall (or CPU) time in ms.
time_ms() {
  local out="$1" start end
  shift
  if [ "${CPU:-}" = 1 ]; then
    if ! perf stat -x, -o "$scratch/perf" -e task-clock "$@" >"$out" 2>"$scratch/stderr"; then
      echo "failed: $*" >&2
      head -n 5 "$scratch/stderr" >&2
      echo fail
      return
    fi
    grep task-clock "$scratch/perf" | cut -d, -f1 | cut -d. -f1
    return
  fi
  start=$(date +%s%N)
  if ! "$@" >"$out" 2>"$scratch/stderr"; then
    echo "failed: $*" >&2
    head -n 5 "$scratch/stderr" >&2
    echo fail
    return
  fi
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

median() {
  printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

echo "svc: $SVC" >&2
echo "python: $PYTHON ($("$PYTHON" --version 2>&1))" >&2
BASE_ARGS="${BASE_ARGS:-}"
BASE_SVC="${BASE_SVC:-}"
[ -z "$BASE_SVC" ] || echo "base: $BASE_SVC $BASE_ARGS" >&2
if [ -n "$BASE_ARGS$BASE_SVC" ]; then
  printf '%-16s %10s %10s %12s %10s %10s\n' program "base ms" "svc ms" "CPython ms" "py/base" "py/svc"
else
  printf '%-16s %10s %12s %10s\n' program "svc ms" "CPython ms" "py/svc"
fi
for src in "$root"/benches/compute/*.svc; do
  prog="$(basename "$src" .svc)"
  case "$prog" in *"$filter"*) ;; *) continue ;; esac
  py="${src%.svc}.py"
  svc_times=() py_times=() base_times=()
  for ((i = 0; i < RUNS; i++)); do
    if [ -n "$BASE_ARGS$BASE_SVC" ]; then
      # shellcheck disable=SC2086 # BASE_ARGS is a list of flags
      base_times+=("$(cd "$scratch" && time_ms "$scratch/base.out" "${BASE_SVC:-$SVC}" run --no-store $BASE_ARGS "$src")")
    fi
    svc_times+=("$(cd "$scratch" && time_ms "$scratch/svc.out" "$SVC" run --no-store "$src")")
    py_times+=("$(cd "$scratch" && time_ms "$scratch/py.out" "$PYTHON" "$py")")
  done
  if ! cmp -s "$scratch/svc.out" "$scratch/py.out"; then
    echo "warning: $prog: svc and CPython printed different output" >&2
  fi
  svc_ms="$(median "${svc_times[@]}")"
  py_ms="$(median "${py_times[@]}")"
  ratio_of() {
    awk -v s="$1" -v p="$py_ms" 'BEGIN { if (s ~ /^[0-9]+$/ && p ~ /^[0-9]+$/ && s > 0) printf "%.2fx", p / s; else print "-" }'
  }
  if [ -n "$BASE_ARGS$BASE_SVC" ]; then
    if ! cmp -s "$scratch/svc.out" "$scratch/base.out"; then
      echo "warning: $prog: svc and the baseline printed different output" >&2
    fi
    base_ms="$(median "${base_times[@]}")"
    printf '%-16s %10s %10s %12s %10s %10s\n' "$prog" "$base_ms" "$svc_ms" "$py_ms" "$(ratio_of "$base_ms")" "$(ratio_of "$svc_ms")"
  else
    printf '%-16s %10s %12s %10s\n' "$prog" "$svc_ms" "$py_ms" "$(ratio_of "$svc_ms")"
  fi
done
