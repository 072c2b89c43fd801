#!/usr/bin/env bash
# Compare svc with the real jac on the bench programs in benches/programs/.
#
#   benches/jac_ratio.sh [FILTER]
#
# Builds svc in release, then runs every program (or those whose name contains FILTER)
# RUNS times (default 3) with `svc run` and with `jac run` (both persisting their graph), each run in a fresh
# temporary directory (jac persists its graph under .jac/), and prints the median wall
# time of each plus the ratio jac/svc (higher = svc faster). Uses hyperfine when it is
# installed, else bash's clock.
#
# Environment: JAC (default /tmp/jacvenv/bin/jac), RUNS (default 3),
# CARGO_TARGET_DIR (default target).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
JAC="${JAC:-/tmp/jacvenv/bin/jac}"
RUNS="${RUNS:-3}"
filter="${1:-}"

if [ ! -x "$JAC" ]; then
  echo "error: jac not found at $JAC" >&2
  echo "install jaclang 0.16.7 (Python >= 3.12) in a venv, e.g." >&2
  echo "  python3.12 -m venv /tmp/jacvenv && /tmp/jacvenv/bin/pip install jaclang==0.16.7" >&2
  echo "or point JAC=/path/to/jac at an existing one" >&2
  exit 1
fi

echo "building svc (release)..." >&2
(cd "$root" && cargo build --release --quiet --bin svc)
SVC="${CARGO_TARGET_DIR:-$root/target}/release/svc"
case "$SVC" in /*) ;; *) SVC="$root/$SVC" ;; esac

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# median_ms CMD FILE: run CMD on a fresh copy of FILE RUNS times, print the median in ms.
median_ms() {
  local tool="$1" src="$2" name="main.svc"
  [ "$tool" = jac ] && name="main.jac"
  if command -v hyperfine >/dev/null 2>&1; then
    local dir="$scratch/hf" json="$scratch/hf.json" cmd
    if [ "$tool" = jac ]; then cmd="$JAC run $name"; else cmd="$SVC run $name"; fi
    mkdir -p "$dir"
    if ! (cd "$dir" && NO_COLOR=1 NO_EMOJI=1 hyperfine --runs "$RUNS" --style none \
      --prepare "rm -rf .jac .svc && cp '$src' $name" --export-json "$json" "$cmd" >/dev/null); then
      echo fail
      rm -rf "$dir"
      return
    fi
    # "median": <seconds>
    grep -o '"median": *[0-9.e+-]*' "$json" | head -n1 | awk '{ printf "%d", $2 * 1000 }'
    rm -rf "$dir"
    return
  fi
  local times=() i dir start end
  for ((i = 0; i < RUNS; i++)); do
    dir="$scratch/run$i"
    mkdir -p "$dir"
    cp "$src" "$dir/$name"
    start=$(date +%s%N)
    local cmd=("$SVC" run "$name")
    [ "$tool" = jac ] && cmd=("$JAC" run "$name")
    if ! (cd "$dir" && NO_COLOR=1 NO_EMOJI=1 "${cmd[@]}" >/dev/null 2>"$scratch/stderr"); then
      echo "$tool failed on $(basename "$src"):" >&2
      head -n 5 "$scratch/stderr" >&2
      echo fail
      rm -rf "$dir"
      return
    fi
    end=$(date +%s%N)
    times+=($(((end - start) / 1000000)))
    rm -rf "$dir"
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

printf '%-16s %10s %10s %8s\n' program "svc ms" "jac ms" "jac/svc"
for src in "$root"/benches/programs/*.svc; do
  prog="$(basename "$src" .svc)"
  case "$prog" in *"$filter"*) ;; *) continue ;; esac
  svc_ms="$(median_ms svc "$src")"
  jac_ms="$(median_ms jac "$src")"
  ratio="$(awk -v s="$svc_ms" -v j="$jac_ms" 'BEGIN { if (s ~ /^[0-9]+$/ && j ~ /^[0-9]+$/ && s > 0) printf "%.1fx", j / s; else print "-" }')"
  printf '%-16s %10s %10s %8s\n' "$prog" "$svc_ms" "$jac_ms" "$ratio"
done
