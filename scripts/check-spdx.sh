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
bad=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  case "$f" in
    tests/fixtures/*) continue ;;
    *.cpp|*.h|*.c|*.hpp|*.comp|*.glsl|*.sh|*.cmake|*.map|CMakeLists.txt|*/CMakeLists.txt|.ci/run|packaging/debian/rules|*/Makefile) ;;
    *) continue ;;
  esac
  want=Apache-2.0
  case "$f" in sdk/*) want=MIT ;; esac
  if ! head -n 3 "$f" | grep -q "SPDX-License-Identifier: $want\b"; then
    echo "check-spdx: $f lacks 'SPDX-License-Identifier: $want' in its first lines"
    bad=1
  fi
done < <(git ls-files)
exit $bad
