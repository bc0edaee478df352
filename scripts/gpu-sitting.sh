#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-sitting.sh: everything a GPU machine must measure, in one command, ending in a
# Markdown summary with ratios (OUT/summary.md, written by scripts/gpu-sitting-summary.py).
# GPU time is rare and short: run this first, as one command, whenever a GPU is lent.
#
#   scripts/gpu-sitting.sh [--quick] [--part P] [--tandem BIN] [--llama-bench PATH] [--models DIR] OUT
#   scripts/gpu-sitting.sh --bundle DIR [--tandem BIN]
#
# OUT              directory for one JSON and one log per step, steps.tsv and summary.md.
# --part P         main (the default: kernels, decode, speculation, tuning, llama.cpp),
#                  controller (the goodput controller's rows: speculation by default against
#                  plain decoding, issue 40), or all. A sitting runs main first; controller
#                  is a second call into another OUT when device time is left (a few minutes).
# --models DIR     where the synthesized models go (default OUT/models; several GB without
#                  --quick); models already there are reused.
# --tandem BIN     the tandem executable (default: build/bin/tandem, else build-test/bin/tandem).
# --llama-bench P  also run llama.cpp's `llama-bench -ngl 99 -p 0 -n 128` on the same GGUF files,
#                  for the side-by-side ratios (benchmarking only; never part of tandem).
# --quick          tiny models and small matrices: minutes on lavapipe, to know the script
#                  works before it meets a GPU.
# --bundle DIR     instead of measuring: copy BIN, libtandem, the plugins, the synthesizers and
#                  every shared library they load that is not the C library or the Vulkan
#                  loader into DIR, with DIR/run-tandem, a wrapper that uses them. A machine
#                  without tandem's Debian packages (a lent GPU machine) then runs the sitting
#                  with `--tandem DIR/run-tandem`.
#
# The steps, each with its own time limit so that one hang does not spend the sitting:
#   version and devices; models (Qwen3-0.6B shape in Q8_0 and Q4_K, Gemma 4 E2B shape in Q8_0);
#   bench ops on 31B-sized matrices (21504x5376 and 5376x21504; Q8_0, Q4_K; batch 1 and 4) with
#   device timestamps, and the device copy bandwidth, then again with the older "ks" matmul
#   layout forced (a GPU's default is "mv"); bench decode at 64 and 4096 tokens of
#   context, and once with --profile and --profile-json; bench spec at forced acceptance 0.7 and 1.0, k = 3,
#   with the model's own drafter and with synthesized EAGLE-3 and DFlash heads;
#   `tandem tune` (when the build has it) and the benchmarks again with its table; llama-bench on the same files.
# controller: `tandem demo`; bench spec with the defaults only (no --draft-max), bracketed,
#   on the Qwen3.5-0.8B shape with its MTP head and on Gemma 4 E2B with its assistant, at
#   acceptance 0 (random weights) and forced 0.3 and 0.7, and fixed k = 1, 2, 3 at 0.7;
#   bench serve with the MTP head at 1, 4, 8 and 16 streams against plain.
# Timings only; nothing here is a test.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
quick=0
part=main
tandem=""
llama=""
bundle=""
models=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --part) part="$2"; shift 2 ;;
    --tandem) tandem="$2"; shift 2 ;;
    --llama-bench) llama="$2"; shift 2 ;;
    --bundle) bundle="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    -h|--help) sed -n '3,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "gpu-sitting: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
case "$part" in
  main|controller|all) ;;
  *) echo "gpu-sitting: --part is main, controller or all, not '$part'" >&2; exit 2 ;;
esac
if [ -z "$tandem" ]; then
  for b in "$here/build/bin/tandem" "$here/build-test/bin/tandem"; do
    [ -x "$b" ] && { tandem="$b"; break; }
  done
fi
if [ -z "$tandem" ] || [ ! -x "$tandem" ]; then
  echo "gpu-sitting: no tandem executable (build first, or --tandem BIN)" >&2
  exit 2
fi
tandem="$(realpath "$tandem")"

# ---------------------------------------------------------------------------
# --bundle: the build and its libraries in one folder
# ---------------------------------------------------------------------------
if [ -n "$bundle" ]; then
  [ $# -eq 0 ] || { echo "gpu-sitting: --bundle takes no OUT" >&2; exit 2; }
  build="$(dirname "$(dirname "$tandem")")"  # BUILD/bin/tandem
  mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/plugins/synth"
  cp "$tandem" "$bundle/bin/"
  cp -P "$build"/host/libtandem.so* "$bundle/lib/"
  cp "$build"/plugins/tandem-*.so "$bundle/plugins/"
  cp "$build"/plugins/synth/tandem-*-synth.so "$bundle/plugins/synth/"
  # Shared libraries: everything ldd resolves except the C library, the dynamic loader and
  # the Vulkan loader (the GPU machine's own driver stack must be used).
  find "$bundle" -type f | while read -r f; do ldd "$f" 2>/dev/null || true; done |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
      case "$(basename "$lib")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libvulkan.so*|libtandem.so*) continue ;;
      esac
      cp -L "$lib" "$bundle/lib/"
    done
  # line tables are of no use there and would cost a third of what may travel
  if command -v strip > /dev/null; then
    find "$bundle" -type f -name '*.so*' -exec strip --strip-debug {} +
    strip --strip-debug "$bundle/bin/tandem"
  fi
  cat > "$bundle/run-tandem" <<'EOF'
#!/bin/sh
# Runs the bundled tandem with the bundled libraries (scripts/gpu-sitting.sh --bundle).
d="$(cd "$(dirname "$0")" && pwd)"
export TANDEM_PLUGIN_PATH="$d/plugins"
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/tandem" "$@"
EOF
  chmod +x "$bundle/run-tandem"
  echo "gpu-sitting: bundle in $bundle ($(du -sh "$bundle" | cut -f1)); run the sitting with --tandem $bundle/run-tandem" >&2
  exit 0
fi

if [ $# -ne 1 ]; then
  echo "usage: scripts/gpu-sitting.sh [--quick] [--part P] [--tandem BIN] [--llama-bench PATH] [--models DIR] OUT" >&2
  exit 2
fi
out="$1"
models="${models:-$out/models}"
mkdir -p "$models" "$out/logs"
started=$(date +%s)
: > "$out/steps.tsv"  # name, exit status, seconds, command

# STEP NAME LIMIT_S COMMAND...: runs COMMAND with its stdout in OUT/NAME.json (or .txt) and
# its stderr in OUT/logs/NAME.err, records status and time, and never stops the sitting.
step() {
  local name="$1" limit="$2"; shift 2
  local t0 rc=0 dest="$out/$name.json"
  case "$name" in *.txt) dest="$out/$name"; name="${name%.txt}" ;; esac
  t0=$(date +%s)
  echo "$(date +%T) $name" >&2
  timeout --kill-after=10 "$limit" "$@" > "$dest" 2> "$out/logs/$name.err" || rc=$?
  [ "$rc" = 0 ] || echo "gpu-sitting: $name exited $rc (see $out/logs/$name.err)" >&2
  local cmd="$*"
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "${cmd//"$models"\//MODELS/}" >> "$out/steps.tsv"
}

synth() {  # FILE LIMIT tandem-synth-arguments...
  local file="$models/$1" limit="$2"; shift 2
  local base="${file##*/}"
  [ -s "$file" ] && return 0
  step "synth-${base%.gguf}" "$limit" "$tandem" synth "$@" -o "$file.part"
  [ -s "$file.part" ] && mv "$file.part" "$file"
  return 0
}

main=0; controller=0
[ "$part" = controller ] || main=1
[ "$part" = main ] || controller=1
if [ "$quick" = 1 ]; then
  q8="$models/qwen3-tiny-q8_0.gguf"; q4="$models/qwen3-tiny-q4_K.gguf"; g4="$models/gemma4-tiny-e2b-q8_0.gguf"
  q35="$models/qwen35-tiny-q8_0.gguf"; g4a="$models/gemma4-assistant-tiny-e2b.gguf"
  q8_preset=tiny; g4_preset=tiny-e2b; q35_preset=tiny
  matrices=(1024x1024 1024x2048)
  short_ctx=64; long_ctx=256; gen=16; spec_gen=16; ctrl_gen=16; limit=300
else
  q8="$models/qwen3-0.6b-q8_0.gguf"; q4="$models/qwen3-0.6b-q4_K.gguf"; g4="$models/gemma4-e2b-q8_0.gguf"
  q35="$models/qwen35-0.8b-q8_0.gguf"; g4a="$models/gemma4-assistant-e2b.gguf"
  q8_preset=0.6b; g4_preset=e2b; q35_preset=0.8b
  matrices=(21504x5376 5376x21504)
  short_ctx=64; long_ctx=4096; gen=128; spec_gen=64; ctrl_gen=32; limit=240
fi
if [ "$main" = 1 ]; then
  synth "$(basename "$q8")" 300 --preset "$q8_preset" --type q8_0
  synth "$(basename "$q4")" 300 --preset "$q8_preset" --type q4_K
fi
synth "$(basename "$g4")" 420 --arch gemma4 --preset "$g4_preset" --type q8_0
if [ "$controller" = 1 ]; then
  synth "$(basename "$q35")" 300 --arch qwen35 --preset "$q35_preset" --type q8_0
  synth "$(basename "$g4a")" 120 --arch gemma4-assistant --preset "$g4_preset"
fi

step version.txt 30 "$tandem" --version
step devices 60 "$tandem" devices --output-format json

if [ "$main" = 1 ]; then
  # Matrices as stand-ins for large models (31B: 5376 hidden, 21504 FFN); --profile gives each
  # row the kernel's own time from device timestamps, next to the device copy bandwidth.
  for m in "${matrices[@]}"; do
    step "ops-$m" "$limit" "$tandem" bench ops --profile --matrix "$m" --types q8_0,q4_K --batches 1,4 --json
  done
  # The same rows with the "ks" matmul layout forced ("+ks"): on a GPU the rows above run "mv",
  # the mat-vec kernel (docs/TUNING.md, "Matmul layouts"), so the two stand side by side.
  for m in "${matrices[@]}"; do
    step "ops-$m+ks" "$limit" env TANDEM_MATMUL_LAYOUT=ks "$tandem" bench ops --profile --matrix "$m" --types q8_0,q4_K \
      --batches 1,4 --json
  done

  for f in "$q8" "$q4" "$g4"; do
    [ -s "$f" ] || continue
    name="$(basename "$f" .gguf)"
    # --no-tune: the default work splits first; the tuned ones are measured after `tandem tune`
    step "decode-$name-ctx$short_ctx" "$limit" "$tandem" bench decode -m "$f" --prompt-len "$short_ctx" \
      --gen-tokens "$gen" -c $(( short_ctx + gen + 64 )) --no-tune --json
    step "decode-$name-ctx$long_ctx" "$limit" "$tandem" bench decode -m "$f" --prompt-len "$long_ctx" \
      --gen-tokens "$gen" -c $(( long_ctx + gen + 64 )) --no-tune --json
  done
  # The attention layout GPUs had before split-KV became their default (docs/TUNING.md,
  # "Attention layouts"): the same decode rows with "ks" forced (`+ks` rows), so what split
  # costs at 64 keys and saves at 4096 stands beside the default.
  for f in "$q8" "$g4"; do
    [ -s "$f" ] || continue
    name="$(basename "$f" .gguf)"
    for c in "$short_ctx" "$long_ctx"; do
      step "decode-$name+ks-ctx$c" "$limit" env TANDEM_ATTENTION_LAYOUT=ks "$tandem" bench decode -m "$f" \
        --prompt-len "$c" --gen-tokens "$gen" -c $(( c + gen + 64 )) --no-tune --json
    done
  done
  if [ -s "$q8" ]; then
    # the per-op table goes to stderr (logs/decode-profile.err), every pass node by node to
    # decode-profile.jsonl (a few steps: a line of the 0.6B shape is about 150 KB)
    step "decode-profile" "$limit" "$tandem" bench decode -m "$q8" --prompt-len "$short_ctx" --gen-tokens 8 \
      -c $(( short_ctx + 8 + 64 )) --profile --profile-json "$out/decode-profile.jsonl" --no-tune --json
    for a in 0.7 1.0; do
      step "spec-a$a-k3" "$limit" "$tandem" bench spec -m "$q8" --force-acceptance "$a" --draft-max 3 --prompts 2 \
        --gen-tokens "$spec_gen" --prompt-len 32 -c 512 --no-tune --json
    done
    # a tree of 8 nodes against the chain of 7 drafts (the same verify rows), forced per node
    step "spec-a0.5-chain7" "$limit" "$tandem" bench spec -m "$q8" --force-acceptance 0.5 --spec-fixed --draft-max 7 \
      --prompts 2 --gen-tokens "$spec_gen" --prompt-len 32 -c 512 --no-tune --json
    step "spec-a0.5-tree7,2,8" "$limit" "$tandem" bench spec -m "$q8" --force-acceptance 0.5 --spec-fixed --draft-max 7 \
      --draft-tree 7,2,8 --prompts 2 --gen-tokens "$spec_gen" --prompt-len 32 -c 512 --no-tune --json
    # EAGLE-3 (a published head's 32K draft vocabulary; the tiny target's is smaller) and DFlash
    # heads shaped for the target: what a draft step and a block pass cost against a target step
    # (issue 41's goals: at most 0.10 per drafted token, 0.3 per block pass)
    e3="$models/$(basename "$q8" .gguf)-eagle3.gguf"; df="$models/$(basename "$q8" .gguf)-dflash.gguf"
    if [ "$quick" = 1 ]; then  # the tiny target: its half vocabulary, and too few layers for DFlash
      synth "$(basename "$e3")" "$limit" --arch eagle3 --target "$q8"
    else
      synth "$(basename "$e3")" "$limit" --arch eagle3 --target "$q8" --draft-vocab 32000
      synth "$(basename "$df")" "$limit" --arch dflash --target "$q8" --format gguf
    fi
    for a in 0.7 1.0; do
      for head in "$e3" "$df"; do
        [ -s "$head" ] || continue
        kind="${head##*-}"
        step "spec-${kind%.gguf}-a$a-k3" "$limit" "$tandem" bench spec -m "$q8" -md "$head" --force-acceptance "$a" \
          --spec-fixed --draft-max 3 --prompts 2 --gen-tokens "$spec_gen" --prompt-len 32 -c 512 --no-tune --json
      done
    done
  fi

  # Per-device tuning (`tandem tune`, docs/TUNING.md) when this build has it: the fastest work
  # split of the stand-in matrices and of each model's shapes (kernel times from device
  # timestamps), then the same benchmarks again with the table: "+tuned" rows.
  if "$tandem" tune --help > /dev/null 2>&1; then
    splits=()
    [ "$quick" = 1 ] && splits=(--splits "8x1,4x1")  # lavapipe compiles every candidate slowly
    step tune-matrices "$limit" "$tandem" tune --matrix "$(IFS=,; echo "${matrices[*]}")" --types q8_0,q4_K \
      --profile "${splits[@]}" --json
    for f in "$q8" "$q4" "$g4"; do
      [ -s "$f" ] || continue
      step "tune-$(basename "$f" .gguf)" "$limit" "$tandem" tune -m "$f" --profile "${splits[@]}" --json
    done
    for m in "${matrices[@]}"; do
      step "ops-$m+tuned" "$limit" "$tandem" bench ops --profile --matrix "$m" --types q8_0,q4_K --batches 1,4 --json
    done
    for f in "$q8" "$q4" "$g4"; do
      [ -s "$f" ] || continue
      name="$(basename "$f" .gguf)"
      step "decode-$name+tuned-ctx$short_ctx" "$limit" "$tandem" bench decode -m "$f" --prompt-len "$short_ctx" \
        --gen-tokens "$gen" -c $(( short_ctx + gen + 64 )) --json
    done
  fi

  if [ -n "$llama" ]; then
    for f in "$q8" "$q4" "$g4"; do
      [ -s "$f" ] || continue
      step "llama-$(basename "$f" .gguf)" "$limit" "$llama" -m "$f" -ngl 99 -p 0 -n 128 -r 3 -o json
    done
  fi
fi

# The goodput controller's rows (issue 40), with the defaults only: no --draft-max, so the
# controller chooses each round's length; each prompt's plain decode runs before and after its
# speculative one (--bracket); 4 prompts of 32 tokens, as the lavapipe rows in BENCHMARKS.md.
# Fixed k = 1, 2, 3 at 0.7 give the best fixed length to compare with; the heads' weights are
# random, so without --force-acceptance they agree with nothing (acceptance 0).
if [ "$controller" = 1 ]; then
  step ctrl-demo "$limit" "$tandem" demo --json
  ctrl_spec=(--prompts 4 --gen-tokens "$ctrl_gen" --prompt-len 16 -c 512 --bracket --no-tune --json)
  for drafter in mtp gemma; do
    if [ "$drafter" = mtp ]; then
      [ -s "$q35" ] || continue
      use=(-m "$q35" --spec-type mtp)
    else
      [ -s "$g4" ] && [ -s "$g4a" ] || continue
      use=(-m "$g4" -md "$g4a")
    fi
    step "ctrl-$drafter-a0" "$limit" "$tandem" bench spec "${use[@]}" "${ctrl_spec[@]}"
    for a in 0.3 0.7; do
      step "ctrl-$drafter-a$a" "$limit" "$tandem" bench spec "${use[@]}" --force-acceptance "$a" "${ctrl_spec[@]}"
    done
    for k in 1 2 3; do
      step "ctrl-$drafter-a0.7-k$k" "$limit" "$tandem" bench spec "${use[@]}" --force-acceptance 0.7 --spec-fixed \
        --draft-max "$k" "${ctrl_spec[@]}"
    done
  done
  if [ -s "$q35" ]; then
    step ctrl-serve-mtp "$limit" "$tandem" bench serve -m "$q35" --spec-type mtp --concurrency 1,4,8,16 \
      --gen-tokens 32 --prompt-len 16 -c 512 --vs-plain --pairs 3 --no-tune --json
  fi
fi

echo "gpu-sitting: measured in $(( $(date +%s) - started )) s" >&2
python3 "$here/scripts/gpu-sitting-summary.py" "$out" > "$out/summary.md"
echo "gpu-sitting: $out/summary.md" >&2
