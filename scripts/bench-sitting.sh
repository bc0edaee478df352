#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/bench-sitting.sh: the decode, prefill and speculative rows of docs/BENCHMARKS.md
# for two builds of tandem in one sitting, alternating run by run, then a table of medians
# (scripts/bench-summary.py). The CPU machines drift by tens of percent within an hour, so
# only runs interleaved like this say whether a change made tandem faster or slower.
#
#   scripts/bench-sitting.sh [--reps N] [--quick] BEFORE AFTER OUT
#
# BEFORE, AFTER  tandem executables of the two builds (each loads its own libtandem.so and
#                plugins, so two build directories side by side work).
# OUT            directory for the models, one JSON and one stderr log per run, and
#                summary.md. Models missing from OUT/models are synthesized once with AFTER:
#                Qwen3-0.6B's shape in Q8_0, Q4_K and F16, and Qwen3.5-0.8B's in Q8_0 with
#                its MTP head (about 3 GB in all).
# --reps N       runs per row and build (default 3).
# --quick        only the Q8_0 decode and the forced A = 1, k = 3 rows.
#
# Every command is written into summary.md next to its numbers. Timings only; nothing here
# is a test.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
reps=3
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "bench-sitting: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 3 ]; then
  echo "usage: scripts/bench-sitting.sh [--reps N] [--quick] BEFORE AFTER OUT" >&2
  exit 2
fi
before="$(realpath "$1")"
after="$(realpath "$2")"
out="$3"
for bin in "$before" "$after"; do
  [ -x "$bin" ] || { echo "bench-sitting: $bin is not an executable" >&2; exit 2; }
done
case "$reps" in ''|*[!0-9]*|0) echo "bench-sitting: --reps needs a positive number" >&2; exit 2 ;; esac
mkdir -p "$out/models"
models="$out/models"

synth() {  # FILE tandem-synth-arguments...
  local file="$models/$1"; shift
  [ -s "$file" ] && return 0
  echo "synthesizing $file" >&2
  "$after" synth "$@" -o "$file.part" >&2
  mv "$file.part" "$file"
}
synth q8_0.gguf --preset 0.6b --type q8_0
if [ "$quick" = 0 ]; then
  synth q4_K.gguf --preset 0.6b --type q4_K
  synth f16.gguf --preset 0.6b --type f16
  synth qwen35-q8_0.gguf --arch qwen35 --preset 0.8b --type q8_0
fi

# ROW tandem-arguments...: REPS runs of each build, alternating; the command goes beside
# the JSON so the summary can print it.
row() {
  local name="$1"; shift
  printf '%s\n' "tandem $*" | sed "s|$models/|MODELS/|g" > "$out/$name.cmd"
  for rep in $(seq 1 "$reps"); do
    for side in before after; do
      local bin="$before"
      [ "$side" = after ] && bin="$after"
      echo "$(date +%T) $name $side $rep" >&2
      if ! "$bin" "$@" --json > "$out/$name.$side.$rep.json" 2> "$out/$name.$side.$rep.err"; then
        echo "bench-sitting: $name ($side, run $rep) failed; see $out/$name.$side.$rep.err" >&2
        rm -f "$out/$name.$side.$rep.json"
      fi
    done
  done
}

spec="bench spec --prompts 2 --gen-tokens 32 --prompt-len 32 -c 512"
# shellcheck disable=SC2086  # $spec is a list of arguments
{
  row decode_q8_0 bench decode -m "$models/q8_0.gguf" --gen-tokens 32 -c 512
  row spec_q8_0_A1.0_k3 $spec -m "$models/q8_0.gguf" --force-acceptance 1.0 --draft-max 3
  if [ "$quick" = 0 ]; then
    row decode_q4_K bench decode -m "$models/q4_K.gguf" --gen-tokens 32 -c 512
    row decode_f16 bench decode -m "$models/f16.gguf" --gen-tokens 32 -c 512
    row decode_qwen35 bench decode -m "$models/qwen35-q8_0.gguf" --gen-tokens 32 -c 512
    row prefill512_q8_0 bench decode -m "$models/q8_0.gguf" --gen-tokens 4 --prompt-len 512 -c 1024
    for ak in "1.0 1" "1.0 2" "1.0 4" "1.0 6" "0.5 1" "0.5 3" "0.0 1"; do
      set -- $ak
      row "spec_q8_0_A$1_k$2" $spec -m "$models/q8_0.gguf" --force-acceptance "$1" --draft-max "$2"
    done
    row spec_qwen35_mtp_k3 $spec -m "$models/qwen35-q8_0.gguf" --spec-type mtp --force-acceptance 1.0 --draft-max 3 \
      --draft-vocab all
    row spec_qwen35_mtp_k3_v32768 $spec -m "$models/qwen35-q8_0.gguf" --spec-type mtp --force-acceptance 1.0 \
      --draft-max 3 --draft-vocab 32768
  fi
}

python3 "$here/scripts/bench-summary.py" "$out" "$before" "$after" > "$out/summary.md"
cat "$out/summary.md"
