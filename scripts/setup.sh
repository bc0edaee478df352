#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/setup.sh: set up a fresh Debian 12 machine and build tandem.
#
#   scripts/setup.sh demo   install packages, build, run `tandem demo`
#   scripts/setup.sh test   install packages, build (warnings as errors), run the test suite
#
# Runs as root (apt-get) or with sudo available. Everything comes from Debian's
# archive; nothing is downloaded at build or test time. Re-running is cheap:
# apt skips installed packages and the build is incremental.
set -euo pipefail

mode="${1:-}"
case "$mode" in
  demo|test) ;;
  *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

packages=(
  build-essential cmake ninja-build pkg-config git
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslc
  libtomlplusplus-dev libspdlog-dev libfmt-dev libzstd-dev nlohmann-json3-dev libutf8proc-dev
  libgtest-dev libedit-dev libcpp-httplib-dev libpng-dev libjpeg62-turbo-dev libpoppler-cpp-dev curl
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs="$(nproc)"
if [ "$mode" = test ]; then
  build="build-test"
  # The official OpenAI Node client, for the server's client test (from the npm registry,
  # pinned). Debian's nodejs and npm unless a node is already installed.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "==> installing: nodejs npm"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  mkdir -p "$build/node"
  if [ ! -d "$build/node/node_modules/openai" ]; then
    echo "==> installing the openai Node client into $build/node"
    npm install --prefix "$build/node" --no-audit --no-fund --no-save --loglevel=error openai@6.49.0
  fi
  echo "==> configuring $build (warnings are errors)"
  # Line tables only (-g1): enough for backtraces, and a third less compile time than -g.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_WERROR=ON \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
  echo "==> building"
  cmake --build "$build" -j "$jobs"
  echo "==> running the test suite"
  cd "$build"
  # ctest prints its summary ("100% tests passed, 0 tests failed out of N"). One test per
  # core: most of a test's time is single-threaded (host code, shader compiles, small
  # dispatches); on 2 cores the suite took 236 s with -j 2 against 471 s of summed test times.
  ctest --output-on-failure --timeout 1200 -j "$jobs"
else
  build="build"
  echo "==> configuring $build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
  echo "==> building"
  cmake --build "$build" -j "$jobs"
  echo "==> tandem demo"
  "./$build/bin/tandem" demo
fi
