#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/fuzz.sh: build the libFuzzer harnesses (tests/fuzz) with clang, ASan and UBSan, run
# each for SECONDS, and print a table of executions and findings (docs/RELIABILITY.md).
#
#   scripts/fuzz.sh [options] SECONDS [JOBS]
#     SECONDS             how long each harness runs
#     JOBS                harnesses run at once (default: the number of CPUs)
#     --build-dir DIR     the build directory (default build-fuzz); configured with
#                         TANDEM_FUZZ=ON and TANDEM_SANITIZE=address,undefined if it is new
#     --no-build          use DIR as it is (a prebuilt tree, e.g. scripts/sanitize.sh's)
#     --only H1,H2        run only these harnesses
#     --workers W         libFuzzer processes per harness, sharing its corpus (default 1);
#                         JOBS x W processes run at once
#   FUZZ_FLAGS (environment): further libFuzzer options for every process, e.g.
#   FUZZ_FLAGS=-entropic=0 (the entropic schedule spends over half the time of the
#   file-format harnesses on its own bookkeeping, because they link the whole host)
#
# Per harness, under DIR/fuzz-work/<harness>/: corpus/ (inputs libFuzzer found, kept between
# runs), log-<worker>.txt, and artifacts/ (crash-*, leak-*, timeout-*, oom-*: inputs to turn into
# regression tests, see docs/RELIABILITY.md). Seeds: DIR/fuzz-corpus/<harness>/ (written by
# fuzz_seeds) and tests/fuzz/corpus/ and tests/fuzz/regressions/. Exit status 1 if any harness
# found anything, 2 on a usage or build error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build-fuzz"
do_build=1
only=""
workers=1
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$(realpath -m "$2")"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --only) only="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    -h|--help) sed -n '3,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ "${#args[@]}" -lt 1 ] || [ "${#args[@]}" -gt 2 ]; then
  echo "usage: $0 [--build-dir DIR] [--no-build] [--only H1,H2] [--workers W] SECONDS [JOBS]" >&2
  exit 2
fi
seconds="${args[0]}"
jobs="${args[1]:-$(nproc)}"
case "$seconds$jobs$workers" in *[!0-9]*) echo "fuzz.sh: SECONDS and JOBS are whole numbers" >&2; exit 2 ;; esac

if [ "$do_build" = 1 ]; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    launcher=()
    if command -v ccache >/dev/null; then
      launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
      -DTANDEM_FUZZ=ON -DTANDEM_SANITIZE=address,undefined >/dev/null
  fi
  cmake --build "$build" --target fuzz_all -j "$(nproc)"
fi
list="$build/fuzz/harnesses.txt"
[ -f "$list" ] || { echo "fuzz.sh: $list not found: is $build a TANDEM_FUZZ=ON build?" >&2; exit 2; }

# ASan/UBSan/LSan settings and lavapipe pinned in memory (scripts/sanitizer_env.sh).
# shellcheck source=scripts/sanitizer_env.sh
source "$here/scripts/sanitizer_env.sh"

# Seeds from the synthetic model writers (a few seconds).
"$build/fuzz/fuzz_seeds" "$build/fuzz-corpus" >/dev/null

run_one() {  # harness name, corpus dirs (';'-separated)
  local name="$1" dirs="$2" work="$build/fuzz-work/$1"
  mkdir -p "$work/corpus" "$work/artifacts"
  local seeds=()
  IFS=';' read -r -a all <<<"$dirs"
  for d in "${all[@]}"; do [ -d "$d" ] && seeds+=("$d"); done
  rm -f "$work"/log-*.txt
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: an input needing 2 GiB is a
  # memory blow-up (both are findings). -max_len 64 KiB: room for the model seeds' headers.
  # Workers share corpus/ (each picks up the others' new inputs: -reload).
  for ((w = 1; w <= workers; ++w)); do
    "$build/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -reload=1 -artifact_prefix="$work/artifacts/" ${FUZZ_FLAGS:-} \
      "$work/corpus" "${seeds[@]}" >"$work/log-$w.txt" 2>&1 &
  done
  wait || true
}
export -f run_one
export build seconds workers

selected=()
while IFS=$'\t' read -r name dirs; do
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
  [ -x "$build/fuzz/fuzz_$name" ] || { echo "fuzz.sh: $build/fuzz/fuzz_$name not built" >&2; exit 2; }
  rm -rf "$build/fuzz-work/$name/artifacts"
  selected+=("$name"$'\t'"$dirs")
done <"$list"
[ "${#selected[@]}" -gt 0 ] || { echo "fuzz.sh: no harness selected" >&2; exit 2; }

echo "==> fuzzing ${#selected[@]} harnesses for ${seconds}s each, $jobs at a time, $workers process(es) each"
for entry in "${selected[@]}"; do printf '%s\0%s\0' "${entry%%$'\t'*}" "${entry#*$'\t'}"; done |
  xargs -0 -n 2 -P "$jobs" bash -c 'run_one "$1" "$2"' run_one

stat() {  # libFuzzer's final stats line "stat::NAME: VALUE", summed over the workers' logs
  local name="$1" work="$2" total=0 died=0
  for ((w = 1; w <= workers; ++w)); do
    v="$(sed -n "s/^stat::$name: *//p" "$work/log-$w.txt" 2>/dev/null | tail -1)"
    if [ -z "$v" ]; then died=$((died + 1)); else total=$((total + v)); fi
  done
  echo "$total $died"
}
found=0
printf '%-16s %14s %10s %8s %6s %9s %5s %10s\n' harness execs exec/s crashes leaks timeouts ooms corpus
for entry in "${selected[@]}"; do
  name="${entry%%$'\t'*}"
  work="$build/fuzz-work/$name"
  read -r execs died < <(stat number_of_executed_units "$work")
  read -r rate _ < <(stat average_exec_per_sec "$work")
  count() { find "$work/artifacts" -maxdepth 1 -name "$1-*" | wc -l; }
  crashes="$(count crash)"; leaks="$(count leak)"; timeouts="$(count timeout)"; ooms="$(count oom)"
  # A worker that died without libFuzzer's stats (e.g. in its initialization, or on a
  # finding) is counted as a crash unless its artifact says otherwise.
  unexplained=$((died - crashes - leaks - timeouts - ooms))
  if [ "$unexplained" -gt 0 ]; then crashes=$((crashes + unexplained)); fi
  corpus="$(find "$work/corpus" -type f | wc -l)"
  printf '%-16s %14s %10s %8s %6s %9s %5s %10s\n' "$name" "$execs" "$rate" "$crashes" "$leaks" "$timeouts" "$ooms" "$corpus"
  if [ $((crashes + leaks + timeouts + ooms)) -gt 0 ]; then
    found=1
    echo "    $name: see $work/log-*.txt; inputs in $work/artifacts/" >&2
  fi
done
exit "$found"
