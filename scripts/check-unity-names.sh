#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check-unity-names.sh BUILD_DIR: in a unity build (TANDEM_UNITY, the default)
# the sources of a target are compiled several to a translation unit, and all their
# anonymous namespaces become one. Two sources that define a type, constant or function
# of one signature under the same internal name break the build, which is loud. Two
# functions of one name with different signatures are worse: they become overloads, and
# a call in one source may silently pick the other source's helper. This lists every
# function name defined with internal linkage (in an anonymous namespace, or static) by
# more than one source of a target's unity batches, or of one unity group
# (tandem_unity_groups, cmake/unity.cmake), from the sources named in BUILD_DIR's unity files.
# It also lists using-directives at file scope (other than `using namespace tdm;`) that not
# every source of the batches or group has: in a unity file they reach the sources after
# them. Run by ctest. A heuristic reader, not a C++ parser: it relies on this project's
# layout (namespace contents start in column 0, one declaration per line). Written for mawk and gawk alike: neither knows \b, so word
# ends are spelled ([^A-Za-z0-9_]|$).
set -euo pipefail
build="${1:?usage: check-unity-names.sh BUILD_DIR}"
build="${build%/}"  # build.ninja names unity files relative to it
mapfile -t unity_dirs < <(find "$build" -type d -name Unity -path '*/CMakeFiles/*.dir/Unity' | sort)
if [ "${#unity_dirs[@]}" -eq 0 ]; then
  echo "check-unity-names: no unity build in $build (TANDEM_UNITY=OFF); nothing to check"
  exit 0
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bad=0
# unity_sets DIR: one line per set of unity files whose sources must not clash, the files
# separated by tabs. Batches (unity_0_cxx.cxx, unity_1_...) form one set: which batch a
# source lands in shifts as sources come and go. Each group file (unity_<group>_cxx.cxx, from
# tandem_unity_groups) is a set of its own. Files the build no longer compiles (left behind
# when a target changed mode or was switched off) are skipped.
declare -A compiled=()
if [ -f "$build/build.ninja" ]; then
  while read -r f; do compiled["$f"]=1; done < <(grep -o '[^ ]*/Unity/unity_[^ :]*\.c[a-z]*' "$build/build.ninja" | sort -u)
fi
unity_sets() {
  local f batches=() groups=()
  for f in "$1"/unity_*_c*.c*; do
    case "$f" in *.o | *.d) continue ;; esac
    if [ "${#compiled[@]}" -gt 0 ] && [ -z "${compiled["${f#"$build"/}"]:-}" ] && [ -z "${compiled["$f"]:-}" ]; then
      continue
    fi
    if [[ "$(basename "$f")" =~ ^unity_[0-9]+_ ]]; then batches+=("$f"); else groups+=("$f"); fi
  done
  local IFS=$'\t'
  if [ "${#batches[@]}" -gt 0 ]; then echo "${batches[*]}"; fi
  if [ "${#groups[@]}" -gt 0 ]; then printf '%s\n' "${groups[@]}"; fi
}
for dir in "${unity_dirs[@]}"; do
  target="$(basename "$(dirname "$dir")" .dir)"
  while IFS=$'\t' read -r -a files; do
    # The unity files hold lines like: #include "/abs/path/source.cpp"
    mapfile -t srcs < <(cat "${files[@]}" | sed -n 's/^#include "\(\/.*\.c\(pp\|xx\)\?\)"$/\1/p' | sort -u)
    [ "${#srcs[@]}" -ge 2 ] || continue
    clashes="$(awk '
      # strip(s): s without comments (a block comment may span lines: in_comment) and with
      # string and character literals emptied, read left to right as the compiler does.
      function strip(s,   out, i, n, c, q) {
        out = ""; n = length(s); i = 1
        while (i <= n) {
          c = substr(s, i, 1)
          if (in_comment) {
            if (c == "*" && substr(s, i + 1, 1) == "/") { in_comment = 0; i += 2 } else i++
            continue
          }
          if (c == "/" && substr(s, i + 1, 1) == "/") break
          if (c == "/" && substr(s, i + 1, 1) == "*") { in_comment = 1; i += 2; continue }
          # a digit separator (100'\''000, 0x6173'\''7369) opens no literal
          if (c == "'\''" && digits_before(s, i)) { out = out c; i++; continue }
          if (c == "\"" || c == "'\''") {
            q = c
            for (i++; i <= n; i++) {
              c = substr(s, i, 1)
              if (c == "\\") i++
              else if (c == q) break
            }
            out = out (q == "\"" ? "\"\"" : "0"); i++
            continue
          }
          out = out c; i++
        }
        return out
      }
      # digits_before(s, i): whether s[i] is inside a number (the word before it starts with a digit)
      function digits_before(s, i,   j) {
        for (j = i - 1; j >= 1 && substr(s, j, 1) ~ /[0-9A-Za-z_.'\'']/; j--) {}
        return j < i - 1 && substr(s, j + 1, 1) ~ /[0-9]/
      }
      # Functions with internal linkage defined at namespace scope, keyed by the
      # enclosing named namespaces.
      FNR == 1 { depth = 0; anon = 0; in_comment = 0; delete kind }
      {
        # comments and the insides of string and character literals, left to right
        line = strip($0)
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
      END {
        for (k in count)
          if ((k !~ /^file-scope / && count[k] > 1) || (k ~ /^file-scope / && count[k] < n)) print k ":" files[k]
      }
    ' root="$root" n="${#srcs[@]}" | sort)"
    if [ -n "$clashes" ]; then
      while IFS= read -r c; do echo "check-unity-names: $target: $c"; done <<<"$clashes"
      bad=1
    fi
  done < <(unity_sets "$dir")
done
if [ "$bad" -ne 0 ]; then
  echo "check-unity-names: rename one of each (or give a shared helper one home in a header);"
  echo "check-unity-names: put the sources with a file-scope using-directive in a unity group of their own"
fi
exit $bad
