#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sdk/examples/check-cpp-example.sh: builds the C++ example plugin
# (recent-copy/, the one sdk/WRITING_A_PLUGIN.md walks through) out of tree
# against an installed SDK with find_package(tandem), checks that it exports
# only tdm_plugin_negotiate, that a tandem binary loads it at ABI 2 and that it
# drafts.
#
#   check-cpp-example.sh [--src DIR] --prefix PREFIX --tandem TANDEM --work DIR
#
# Arguments as check-example.sh's. Needs cmake, a C++17 compiler, nm and a
# Vulkan device (lavapipe is fine).
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/recent-copy" && pwd)"
prefix="" tandem="" work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src="$(cd "$2" && pwd)"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    --tandem) tandem="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    *) echo "usage: $0 [--src DIR] --prefix PREFIX --tandem TANDEM --work DIR" >&2; exit 2 ;;
  esac
done
if [ -z "$prefix" ] || [ -z "$tandem" ] || [ -z "$work" ]; then
  echo "usage: $0 [--src DIR] --prefix PREFIX --tandem TANDEM --work DIR" >&2
  exit 2
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"
plugin=tandem-recent-copy.so

fail() { echo "check-cpp-example: FAIL: $*" >&2; exit 1; }
step() { echo "==> $*"; }

cmake_args=()
[ "$prefix" = /usr ] || cmake_args=("-DCMAKE_PREFIX_PATH=$prefix")

step "find_package(tandem): configure and build $src"
cmake -S "$src" -B "$work/build" "${cmake_args[@]}" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake configure"; }
cmake --build "$work/build" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake build"; }
so="$work/build/$plugin"
[ -f "$so" ] || fail "the build did not produce $plugin"

step "it exports only tdm_plugin_negotiate"
syms="$(nm -D --defined-only "$so" | awk '{print $NF}' | sort | paste -sd' ' -)"
[ "$syms" = tdm_plugin_negotiate ] || fail "$so exports: $syms"

step "loaded at ABI 2 from --plugin-path"
out="$("$tandem" plugins --plugin-path "$work/build")"
grep -q "^recent-copy 1.0  (ABI 2)  $so\$" <<<"$out" || { echo "$out"; fail "not loaded from $work/build"; }
grep -q "provides drafter recent-copy" <<<"$out" || { echo "$out"; fail "the drafter is not registered"; }

step "it drafts: tandem run --spec-type recent-copy"
"$tandem" synth --preset tiny -o "$work/tiny.gguf" >"$work/synth.log" 2>&1 || { cat "$work/synth.log"; fail "tandem synth"; }
# The last token (6) occurred before, followed by 7 5 6: round one drafts.
out="$("$tandem" run -m "$work/tiny.gguf" --prompt-tokens 5,6,7,5,6,7,5,6 -n 8 --temp 0 \
        --spec-type recent-copy --plugin-path "$work/build" --output-format json)"
grep -q '"name": "recent-copy"' <<<"$out" || { echo "$out"; fail "recent-copy not among the drafters"; }
grep -Eq '"drafted_tokens": [1-9]' <<<"$out" || { echo "$out"; fail "recent-copy drafted nothing"; }
echo "    $(grep -E '"(drafted|accepted)_tokens"' <<<"$out" | tr -d ' \n')"
echo "check-cpp-example: OK"
