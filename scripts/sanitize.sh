#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/sanitize.sh: the sanitizer job of CI (.ci/run; docs/RELIABILITY.md). Builds tandem
# with clang, AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer (every
# finding aborts: -fno-sanitize-recover=all) in build-asan, and runs:
#   1. the test groups that read untrusted input: file formats (formats), tokenizers
#      (tokenizer), tandem.toml (config), the server's request bodies (server), the corpus
#      replays of the fuzz harnesses (fuzz), the CLI's bad-input and argument tests, and the
#      plugin loader's tests;
#   2. one end-to-end `tandem run` per model family and drafter: qwen3 (GGUF and HF
#      safetensors), qwen3 with a draft model, qwen3 with the n-gram drafters, qwen35 (hybrid)
#      and qwen35moe with their MTP heads, gemma4 (E2B-style GGUF and HF, 26B-style MoE) and
#      the E2B-style one with its synthesized assistant (GGUF and HF), GLM-OCR's text decoder
#      (GGUF and HF) with its MTP layer, llama (GGUF, and HF with llama3 rope scaling),
#      a JSON-schema-constrained run with n-gram and with MTP drafting, EAGLE-3 heads (GGUF
#      on qwen3, HF on llama-hf), a DFlash head on qwen3, draft trees grown by an MTP head, a
#      draft model and an n-gram drafter (greedy, and sampled), and a draft-tree bench round;
#   3. every fuzz harness for FUZZ_SECONDS (default 10; scripts/fuzz.sh on the same build).
#
#   scripts/sanitize.sh [--ci] [FUZZ_SECONDS]
#
# --ci (what .ci/run runs, to stay within CI's 30 minutes on 2 cores) leaves out step 1's
# gtest programs, which are neither built nor run; the parsers are still exercised under
# ASan+UBSan by the corpus replays and the fuzz runs. docs/perf-notes/ci-time.md has the timings.
#
# Leak reports are suppressed only for Mesa/LLVM internals (scripts/lsan.supp, each line
# justified there). Exit status non-zero on any failure or sanitizer report.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TANDEM_ASAN_BUILD_DIR:-$here/build-asan}"
mkdir -p "$build" && build="$(cd "$build" && pwd)"  # absolute: the runs below change directory
ci=0
if [ "${1:-}" = --ci ]; then ci=1; shift; fi
fuzz_seconds="${1:-10}"
jobs="$(nproc)"

# clang, its sanitizer and libFuzzer runtimes, llvm-symbolizer, lld (Debian's archive).
packages=(clang libclang-rt-dev llvm lld)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  echo "==> installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# lld: the sanitized programs are large; with GNU ld, linking took about 160 s of the build's
# 840 s of CPU.
linker=()
if command -v ld.lld >/dev/null; then
  linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
          -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
fi
echo "==> configuring $build (clang, address,undefined, libFuzzer harnesses)"
# -O0 and line tables only: enough for exact reports, and the quickest to build (the run time
# goes to lavapipe, which is not instrumented).
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-O0 -gline-tables-only" -DCMAKE_CXX_FLAGS_DEBUG="-O0 -gline-tables-only" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" "${linker[@]}" \
  -DTANDEM_SANITIZE=address,undefined -DTANDEM_FUZZ=ON -DTANDEM_PCH=ON >/dev/null
echo "==> building (only what the job runs)"
targets=(tandem tandem-plugin-gemma4 tandem-synth-gemma4 tandem-plugin-glm-ocr tandem-synth-glm-ocr
  tandem-plugin-llama tandem-synth-llama tandem-plugin-eagle3 tandem-synth-eagle3
  tandem-plugin-dflash tandem-synth-dflash fuzz_all)
if [ "$ci" = 0 ]; then targets+=(test_formats test_image test_tokenizer test_config test_cli test_plugin test_serve); fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

# shellcheck source=scripts/sanitizer_env.sh
source "$here/scripts/sanitizer_env.sh"
export TANDEM_VALIDATE=1
# lavapipe runs each dispatch's workgroups on the dispatching thread: for the tiny models here
# its worker threads cost more than they give (tests/CMakeLists.txt, TANDEM_TEST_LP_NUM_THREADS).
export LP_NUM_THREADS="${LP_NUM_THREADS-0}"

echo "==> test groups under ASan+UBSan, $jobs at a time"
# Each test program runs once with its group's filter, not once per test as ctest does: the
# tokenizer tests share the real Qwen3/Gemma 3 tokenizers, which take seconds to load under ASan.
# Each program is single-threaded, so they run side by side, longest first; the corpus replays
# of the fuzz harnesses are one more entry. Output goes to a log per entry, shown on failure.
logs="$build/sanitize-logs"
rm -rf "$logs"
mkdir -p "$logs"
groups=()
if [ "$ci" = 0 ]; then
  # NAME PROGRAM FILTER. The CLI's server tests (a minute and a half under ASan) are an entry
  # of their own, so that the other core takes the rest meanwhile.
  # The transport's hostile-client tests too, but for the one that measures the server's RSS
  # (ASan's quarantine and shadow make that number meaningless).
  groups+=("cli-serve test_cli Serve.*:ServeTransport.*-ServeTransport.a_chunked_body_past_the_limit_is_refused_while_it_arrives" "tokenizer test_tokenizer *" "cli-input test_cli CliBadInput.*:Args.*"
           "formats test_formats *" "plugin-loader test_plugin PluginLoader.*" "serve test_serve *"
           "image test_image *" "config test_config *")
fi
# run_entry NAME CMD...: CMD in the background; its output in $logs/NAME.log, and its exit
# status and seconds in $logs/NAME.rc.
run_entry() {
  local name="$1"
  shift
  ( start=$SECONDS; rc=0; "$@" >"$logs/$name.log" 2>&1 || rc=$?; echo "$rc $((SECONDS - start))" >"$logs/$name.rc" ) &
}
# entry_status NAME: "RC SECONDS" of a finished entry ("missing ?" if it left no status).
entry_status() { cat "$logs/$1.rc" 2>/dev/null || echo "missing ?"; }
names=(corpus-replays)
run_entry corpus-replays env -C "$build" ctest --output-on-failure --timeout 1200 -L '^fuzz$'
for t in "${groups[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  read -r name program filter <<<"$t"
  names+=("$name")
  run_entry "$name" "$build/tests/$program" --gtest_filter="$filter" --gtest_brief=1
done
wait
failed=()
for name in "${names[@]}"; do
  read -r rc secs < <(entry_status "$name")
  if [ "$rc" = 0 ]; then
    echo "    ok: $name (${secs}s; $(grep -E '^\[  PASSED  \]|tests passed' "$logs/$name.log" | tail -n 1))"
  else
    cat "$logs/$name.log"
    echo "    FAILED: $name (exit status $rc, ${secs}s; log: $logs/$name.log)"
    failed+=("$name")
  fi
done
[ "${#failed[@]}" = 0 ] || { echo "sanitize.sh: failed: ${failed[*]}" >&2; exit 1; }

echo "==> end-to-end runs under ASan+UBSan, $jobs at a time"
e2e="$build/sanitize-e2e"
rm -rf "$e2e"
mkdir -p "$e2e"
tandem="$build/bin/tandem"
# run_all NAME:ARGS...: `tandem ARGS` for each entry in $e2e (ARGS split at blanks, no
# globbing: file names are relative to $e2e, so its path may hold blanks), $jobs at a time
# (run_entry above), then the failed ones' logs; a run-* entry must also print tokens (a
# non-empty "tokens" array in its JSON). Exit status 1 if any failed.
run_all() {
  local entry name args names=() bad=0 rc secs
  for entry in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    name="${entry%%:*}"
    names+=("$name")
    read -r -a args <<<"${entry#*:}"
    run_entry "$name" env -C "$e2e" "$tandem" "${args[@]}"
  done
  wait
  for name in "${names[@]}"; do
    read -r rc secs < <(entry_status "$name")
    if [ "$rc" = 0 ] && { [[ "$name" != run-* ]] || grep -q '^  "tokens": \[$' "$logs/$name.log"; }; then
      echo "    ok: $name (${secs}s)"
    else
      cat "$logs/$name.log"
      echo "    FAILED: $name (exit status $rc, ${secs}s; log: $logs/$name.log)"
      bad=1
    fi
  done
  return $bad
}
run_all \
  "synth-qwen3:synth --arch qwen3 -o qwen3.gguf" \
  "synth-qwen3-hf:synth --arch qwen3 --format hf --type f32 -o qwen3-hf" \
  "synth-qwen3-draft:synth --arch qwen3 --layers 1 --draft-of-seed 1 -o qwen3-draft.gguf" \
  "synth-qwen3-5l:synth --arch qwen3 --layers 5 -o qwen3-5l.gguf" \
  "synth-qwen35:synth --arch qwen35 -o qwen35.gguf" \
  "synth-qwen35moe:synth --arch qwen35moe -o qwen35moe.gguf" \
  "synth-gemma4-e2b:synth --arch gemma4 --preset tiny-e2b -o gemma4-e2b.gguf" \
  "synth-gemma4-e2b-hf:synth --arch gemma4 --preset tiny-e2b --format hf -o gemma4-e2b-hf" \
  "synth-gemma4-26b:synth --arch gemma4 --preset tiny-26b -o gemma4-26b.gguf" \
  "synth-gemma4-e2b-assistant:synth --arch gemma4-assistant --preset tiny-e2b -o gemma4-e2b-assistant.gguf" \
  "synth-gemma4-e2b-assistant-hf:synth --arch gemma4-assistant --preset tiny-e2b --format hf -o gemma4-e2b-assistant-hf" \
  "synth-glm4:synth --arch glm4 -o glm4.gguf" \
  "synth-glm4-hf:synth --arch glm4 --format hf -o glm4-hf" \
  "synth-llama:synth --arch llama -o llama.gguf" \
  "synth-llama-hf:synth --arch llama --format hf --rope-scaling true -o llama-hf" ||
  { echo "sanitize.sh: a synthesizer failed" >&2; exit 1; }
# EAGLE-3 and DFlash heads are shaped from their target, so they follow it
run_all \
  "synth-eagle3-qwen3:synth --arch eagle3 --target qwen3.gguf -o eagle3-qwen3.gguf" \
  "synth-dflash-qwen3:synth --arch dflash --target qwen3-5l.gguf -o dflash-qwen3" \
  "synth-eagle3-llama-hf:synth --arch eagle3 --target llama-hf --format hf --rope-scaling true -o eagle3-llama-hf" ||
  { echo "sanitize.sh: a synthesizer failed" >&2; exit 1; }
printf "Hello there" >"$e2e/prompt.txt"
printf '%s' '{"type":"object","properties":{"name":{"type":"string","maxLength":6},"n":{"type":"integer","minimum":-5,"maximum":250},"tags":{"type":"array","items":{"enum":["a","b"]}}},"required":["name","n"]}' >"$e2e/schema.json"
run=(run -f prompt.txt -n 12 --temp 0 --ignore-eos --output-format json)
run_all \
  "run-qwen3:${run[*]} -m qwen3.gguf" \
  "run-qwen3-hf:${run[*]} -m qwen3-hf" \
  "run-qwen3-draft:${run[*]} -m qwen3.gguf -md qwen3-draft.gguf --spec-type draft" \
  "run-qwen3-ngram-simple:${run[*]} -m qwen3.gguf --spec-type ngram-simple" \
  "run-qwen3-ngram-mod:${run[*]} -m qwen3.gguf --spec-type ngram-mod" \
  "run-qwen35-mtp:${run[*]} -m qwen35.gguf --spec-type mtp" \
  "run-qwen35moe-mtp:${run[*]} -m qwen35moe.gguf --spec-type mtp" \
  "run-gemma4-e2b-ngram-simple:${run[*]} -m gemma4-e2b.gguf --spec-type ngram-simple" \
  "run-gemma4-e2b-hf:${run[*]} -m gemma4-e2b-hf" \
  "run-gemma4-e2b-assistant:${run[*]} -m gemma4-e2b.gguf -md gemma4-e2b-assistant.gguf" \
  "run-gemma4-e2b-hf-assistant-hf:${run[*]} -m gemma4-e2b-hf -md gemma4-e2b-assistant-hf" \
  "run-gemma4-26b-ngram-mod:${run[*]} -m gemma4-26b.gguf --spec-type ngram-mod" \
  "run-glm4-mtp:${run[*]} -m glm4.gguf --spec-type mtp" \
  "run-glm4-hf-mtp:${run[*]} -m glm4-hf --spec-type mtp" \
  "run-llama-ngram-simple:${run[*]} -m llama.gguf --spec-type ngram-simple" \
  "run-llama-hf:${run[*]} -m llama-hf" \
  "run-qwen3-json-schema-ngram:${run[*]} -m qwen3.gguf --spec-type ngram-simple --json-schema schema.json" \
  "run-qwen35-json-schema-mtp:${run[*]} -m qwen35.gguf --spec-type mtp --json-schema schema.json" \
  "run-qwen3-eagle3:${run[*]} -m qwen3.gguf -md eagle3-qwen3.gguf" \
  "run-llama-hf-eagle3-hf:${run[*]} -m llama-hf --spec-type draft-eagle3 -md eagle3-llama-hf" \
  "run-qwen3-dflash:${run[*]} -m qwen3-5l.gguf --spec-type dflash -md dflash-qwen3" \
  "run-glm4-mtp-tree:${run[*]} -m glm4.gguf --spec-type mtp --draft-tree 3,2,6 --spec-fixed" \
  "run-qwen3-draft-tree:${run[*]} -m qwen3.gguf -md qwen3-draft.gguf --spec-type draft --draft-tree 3,2,6 --spec-fixed" \
  "run-qwen3-ngram-simple-tree-sampled:${run[*]} -m qwen3.gguf --spec-type ngram-simple --draft-tree 4,2,8 --spec-fixed --temp 0.8 --seed 3" \
  "bench-qwen3-draft-tree:bench spec -m qwen3.gguf --force-acceptance 0.7 --spec-fixed --draft-max 3 --draft-tree 3,2,4 --prompts 1 --gen-tokens 12 -c 256 --json" ||
  { echo "sanitize.sh: an end-to-end run failed (or printed no tokens)" >&2; exit 1; }

echo "==> fuzzing each harness for ${fuzz_seconds}s"
"$here/scripts/fuzz.sh" --build-dir "$build" --no-build "$fuzz_seconds" "$jobs"
echo "==> sanitizer job: clean"
