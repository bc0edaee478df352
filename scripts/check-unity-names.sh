#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check-unity-names.sh BUILD_DIR: in a unity build (TANDEM_UNITY, the default)
# the sources of a target are compiled several to a translation unit, and all their
# anonymous namespaces become one. Two sources that define a type, constant or function
# of one signature under the same internal name break the build, which is loud. Two
# functions of one name with different signatures are worse: they become overloads, and
# a call in one source may silently pick the other source's helper. This lists every
# function name defined with internal linkage (in an anonymous namespace, or static) by
# more than one source of a target, from the sources named in BUILD_DIR's unity files.
# It also lists using-directives at file scope (other than `using namespace tdm;`), which
# in a unity file reach the sources after them. Run by ctest. A heuristic reader, not a
# C++ parser: it relies on this project's layout (namespace contents start in column 0,
# one declaration per line). Written for mawk and gawk alike: neither knows \b, so word
# ends are spelled ([^A-Za-z0-9_]|$).
set -euo pipefail
build="${1:?usage: check-unity-names.sh BUILD_DIR}"
mapfile -t unity_dirs < <(find "$build" -type d -name Unity -path '*/CMakeFiles/*.dir/Unity' | sort)
if [ "${#unity_dirs[@]}" -eq 0 ]; then
  echo "check-unity-names: no unity build in $build (TANDEM_UNITY=OFF); nothing to check"
  exit 0
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bad=0
for dir in "${unity_dirs[@]}"; do
  target="$(basename "$(dirname "$dir")" .dir)"
  # A target switched to UNITY_BUILD OFF leaves its old unity files behind: skip those
  # that the build no longer compiles.
  if [ -f "$build/build.ninja" ] && ! grep -qF "${dir#"$build"/}/unity_" "$build/build.ninja"; then continue; fi
  # The unity files hold lines like: #include "/abs/path/source.cpp"
  mapfile -t srcs < <(cat "$dir"/unity_*.c* 2>/dev/null | sed -n 's/^#include "\(\/.*\.c\(pp\|xx\)\?\)"$/\1/p' | sort -u)
  [ "${#srcs[@]}" -ge 2 ] || continue
  clashes="$(awk '
    # Functions with internal linkage defined at namespace scope, keyed by the
    # enclosing named namespaces.
    FNR == 1 { depth = 0; anon = 0; in_comment = 0; delete kind }
    {
      line = $0
      # drop comments and the insides of string and character literals
      if (in_comment) { p = index(line, "*/"); if (!p) next; line = substr(line, p + 2); in_comment = 0 }
      gsub(/\/\*[^*]*\*+([^\/*][^*]*\*+)*\//, "", line)
      if (match(line, /\/\*/)) { line = substr(line, 1, RSTART - 1); in_comment = 1 }
      gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
      gsub(/'\''([^'\''\\]|\\.)*'\''/, "0", line)
      sub(/\/\/.*/, "", line)
      # a using-directive at file scope reaches every source after this one
      if (depth == 0 && line ~ /^using[ \t]+namespace[ \t]/ && line !~ /^using[ \t]+namespace[ \t]+tdm[ \t]*;/) {
        u = line; sub(/[ \t]*;.*/, "", u)
        print "file-scope \"" u "\"\t" FILENAME
      }
      at_ns_scope = 1
      for (i = 1; i <= depth; i++) if (kind[i] == "other") at_ns_scope = 0
      if (at_ns_scope && line ~ /^[A-Za-z_]/ && line !~ /^(namespace|extern|template|public|private|protected|case|default)([^A-Za-z0-9_]|$)/ \
          && (anon > 0 || line ~ /^(static|inline static)([^A-Za-z0-9_]|$)/)) {
        name = ""
        if (line !~ /^(struct|class|union|enum|using|typedef|return)([^A-Za-z0-9_]|$)/ && match(line, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
          # the first identifier followed by "(" that is not a keyword: a function name
          rest = line
          while (match(rest, /[A-Za-z_][A-Za-z0-9_:]*[ \t]*\(/)) {
            cand = substr(rest, RSTART, RLENGTH); sub(/[ \t]*\($/, "", cand)
            if (cand !~ /^(decltype|alignas|sizeof|noexcept|operator|static_assert)$/ && cand !~ /::/) { name = cand; break }
            if (cand ~ /::/) break  # an out-of-line member definition: not internal
            rest = substr(rest, RSTART + RLENGTH)
          }
          # a variable initialised with a call ("const auto x = f(...)") is no function
          if (match(line, /^[^(]*[A-Za-z0-9_>\]][ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*(=|\{)/)) name = ""
          # all capitals: a macro such as TEST_F(...), not a function of this file
          if (name ~ /^[A-Z0-9_]+$/) name = ""
        }
        if (name != "" && name !~ /^(operator|main)$/) {
          ns = ""
          for (i = 1; i <= depth; i++) if (kind[i] ~ /^ns:/) ns = ns substr(kind[i], 4) "::"
          print ns name "\t" FILENAME
        }
      }
      # braces: remember which ones open a namespace
      n = length(line)
      for (c = 1; c <= n; c++) {
        ch = substr(line, c, 1)
        if (ch == "{") {
          pre = substr(line, 1, c - 1)
          depth++
          if (pre ~ /(^|[^A-Za-z0-9_])namespace[ \t]*$/) { kind[depth] = "anon"; anon++ }
          else if (match(pre, /(^|[^A-Za-z0-9_])namespace[ \t]+[A-Za-z_][A-Za-z0-9_:]*[ \t]*$/)) {
            nm = substr(pre, RSTART, RLENGTH); sub(/^.*namespace[ \t]+/, "", nm); sub(/[ \t]*$/, "", nm)
            kind[depth] = "ns:" nm
          } else if (pre ~ /extern[ \t]+""[ \t]*$/) kind[depth] = "extern"  # extern "C": no scope
          else kind[depth] = "other"
        } else if (ch == "}" && depth > 0) {
          if (kind[depth] == "anon") anon--
          delete kind[depth]; depth--
        }
      }
    }
  ' "${srcs[@]}" | sort -u | awk -F'\t' '
    { f = $2; if (index(f, root "/") == 1) f = substr(f, length(root) + 2); files[$1] = files[$1] " " f; count[$1]++ }
    END { for (k in count) if (count[k] > 1 || k ~ /^file-scope /) print k ":" files[k] }
  ' root="$root" | sort)"
  if [ -n "$clashes" ]; then
    while IFS= read -r c; do echo "check-unity-names: $target: $c"; done <<<"$clashes"
    bad=1
  fi
done
if [ "$bad" -ne 0 ]; then
  echo "check-unity-names: rename one of each (or give a shared helper one home in a header);"
  echo "check-unity-names: compile a source with a file-scope using-directive on its own (SKIP_UNITY_BUILD_INCLUSION)"
fi
exit $bad
