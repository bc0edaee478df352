#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sdk/examples/check-example.sh: builds the example plugin (lookup-drafter/) out of
# tree against an installed SDK, both ways (find_package(tandem) and pkg-config),
# and checks that a tandem binary loads it from --plugin-path, TANDEM_PLUGIN_PATH
# and the config's [plugins] paths, and that it drafts.
#
#   check-example.sh [--src DIR] --prefix PREFIX --tandem TANDEM --work DIR
#
# --src:  the example's sources (default: lookup-drafter/ beside this script; the
#         package test passes the copy libtandem-dev installs).
# PREFIX: where the SDK is installed (/usr for the Debian package; a staging prefix
#         from `cmake --install BUILD --component sdk --prefix DIR` for the ctest).
# TANDEM: the tandem executable to load the plugin with.
# DIR:    scratch directory (created; left for inspection, the caller removes it).
# Needs cmake, make, a C compiler, pkg-config, nm and a Vulkan device (lavapipe is fine).
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/lookup-drafter" && pwd)"
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
plugin=tandem-lookup-example.so

fail() { echo "check-example: FAIL: $*" >&2; exit 1; }
step() { echo "==> $*"; }

# An SDK under another prefix: point CMake and pkg-config at it.
cmake_args=() pc_env=() pc_cmd=(pkg-config)
if [ "$prefix" != /usr ]; then
  cmake_args=("-DCMAKE_PREFIX_PATH=$prefix")
  pc_dirs="$(find "$prefix" -type d -name pkgconfig | paste -sd: -)"
  pc_env=("PKG_CONFIG_PATH=$pc_dirs")
  pc_cmd=(pkg-config "--define-variable=prefix=$prefix")
fi

step "find_package(tandem): configure and build $src"
cmake -S "$src" -B "$work/cmake" "${cmake_args[@]}" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake configure"; }
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake build"; }
[ -f "$work/cmake/$plugin" ] || fail "find_package build did not produce $plugin"

step "pkg-config: make"
mkdir -p "$work/make"
cp "$src/lookup_drafter.c" "$src/Makefile" "$work/make/"
env "${pc_env[@]}" make -C "$work/make" PKG_CONFIG="${pc_cmd[*]}" >"$work/make.log" 2>&1 || { cat "$work/make.log"; fail "make"; }
[ -f "$work/make/$plugin" ] || fail "pkg-config build did not produce $plugin"
plugindir="$(env "${pc_env[@]}" "${pc_cmd[@]}" --variable=plugindir tandem-plugin)"
abi="$(env "${pc_env[@]}" "${pc_cmd[@]}" --variable=abi_version tandem-plugin)"
[ -n "$plugindir" ] && [ -n "$abi" ] || fail "tandem-plugin.pc lacks plugindir or abi_version"
echo "    plugindir=$plugindir abi_version=$abi"

step "each build exports only tdm_plugin_negotiate"
for so in "$work/cmake/$plugin" "$work/make/$plugin"; do
  syms="$(nm -D --defined-only "$so" | awk '{print $NF}' | sort | paste -sd' ' -)"
  [ "$syms" = tdm_plugin_negotiate ] || fail "$so exports: $syms"
done

# `tandem plugins` output for the example: "lookup-example 1.0  (ABI 2)  PATH" (it speaks
# 1..TDM_ABI_VERSION of the headers it was built with, so the host picks the headers' ABI).
expect_loaded() {  # expect_loaded DIR OUTPUT
  grep -q "^lookup-example 1.0  (ABI $abi)  $1/$plugin\$" <<<"$2" || { echo "$2"; fail "not loaded from $1"; }
  if grep -q FAILED <<<"$2"; then echo "$2"; fail "a plugin failed to load"; fi
}
step "loaded from --plugin-path"
expect_loaded "$work/cmake" "$("$tandem" plugins --plugin-path "$work/cmake")"
step "loaded from TANDEM_PLUGIN_PATH"
expect_loaded "$work/make" "$(TANDEM_PLUGIN_PATH="$work/make" "$tandem" plugins)"
step "loaded from the config's [plugins] paths"
printf '[plugins]\npaths = ["%s"]\n' "$work/make" >"$work/tandem.toml"
expect_loaded "$work/make" "$("$tandem" --config "$work/tandem.toml" plugins)"

step "it drafts: tandem run --spec-type lookup-example"
"$tandem" synth --preset tiny -o "$work/tiny.gguf" >"$work/synth.log" 2>&1 || { cat "$work/synth.log"; fail "tandem synth"; }
# A repetitive prompt: the 2-token key (5, 6) occurred before, so round one drafts.
out="$("$tandem" run -m "$work/tiny.gguf" --prompt-tokens 5,6,7,5,6,7,5,6 -n 8 --temp 0 \
        --spec-type lookup-example --plugin-path "$work/cmake" --output-format json)"
grep -q '"name": "lookup-example"' <<<"$out" || { echo "$out"; fail "lookup-example not among the drafters"; }
grep -Eq '"drafted_tokens": [1-9]' <<<"$out" || { echo "$out"; fail "lookup-example drafted nothing"; }
echo "    $(grep -E '"(drafted|accepted)_tokens"' <<<"$out" | tr -d ' \n')"
echo "check-example: OK"
