#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check-spdx.sh: every source file tracked by git (C, C++, GLSL, CMake, shell)
# names its license in an SPDX-License-Identifier line near its top: MIT under sdk/,
# Apache-2.0 elsewhere (LICENSE, sdk/LICENSE, packaging/debian/copyright). Run by ctest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-spdx: not a git checkout; nothing to check"
  exit 0
fi
files=()
while IFS= read -r f; do
  [ -f "$f" ] || continue
  case "$f" in
    tests/fixtures/*) continue ;;
    *.cpp|*.h|*.c|*.hpp|*.comp|*.glsl|*.sh|*.cmake|*.map|CMakeLists.txt|*/CMakeLists.txt|.ci/run|packaging/debian/rules|*/Makefile) files+=("$f") ;;
  esac
done < <(git ls-files)
# One head and one awk for all files (a head and a grep per file took 15 s beside a build).
# head -v prints "==> FILE <==" before the first lines of each file, empty files included.
printf '%s\0' "${files[@]}" | xargs -0 head -v -n 3 -- | awk '
  function verdict() {
    if (name != "" && !found) {
      printf "check-spdx: %s lacks '\''SPDX-License-Identifier: %s'\'' in its first lines\n", name, want
      bad = 1
    }
  }
  /^==> .* <==$/ {
    verdict()
    name = substr($0, 5, length($0) - 8)
    want = (name ~ /^sdk\//) ? "MIT" : "Apache-2.0"
    found = 0
    next
  }
  index($0, "SPDX-License-Identifier: " want) {
    rest = substr($0, index($0, "SPDX-License-Identifier: " want) + length("SPDX-License-Identifier: " want), 1)
    if (rest !~ /[A-Za-z0-9_.-]/) found = 1
  }
  END { verdict(); exit bad }
'
