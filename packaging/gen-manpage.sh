#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# packaging/gen-manpage.sh: writes tandem(1) from the built binary's own help, so the
# man page cannot drift from `tandem --help` and `tandem COMMAND --help`.
#
#   packaging/gen-manpage.sh TANDEM VERSION OUTPUT
#
# help2man turns `tandem --help` into NAME, SYNOPSIS, DESCRIPTION and the global
# options; a COMMANDS section gets each command's own help (its option groups,
# without the repeated global ones), also through help2man; packaging/tandem.h2m adds
# ENVIRONMENT, FILES and SEE ALSO. The command list comes from the "commands:"
# block of `tandem --help`, so a new command appears without editing this script.
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 TANDEM VERSION OUTPUT" >&2
  exit 2
fi
tandem="$(realpath "$1")" version="$2" output="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# help2man runs a program with --help; these wrappers print what it should see.
# Top level: "usage:" capitalised so that help2man makes it the SYNOPSIS.
cat >"$tmp/tandem" <<EOF
#!/bin/sh
"$tandem" --help | sed 's/^usage: /Usage: /'
EOF
# One command: its help without the usage line (that becomes the subsection title)
# and without the global options and the closing hint (printed once at the top).
cat >"$tmp/tandem-command" <<EOF
#!/bin/sh
"$tandem" "\$TANDEM_MAN_COMMAND" --help | awk '/^usage:/ {next} /^global:\$/ || /^Run / {skip=1} !skip {print}'
EOF
chmod +x "$tmp/tandem" "$tmp/tandem-command"

h2m=(help2man --no-info --no-discard-stderr --version-string="$version")
commands="$("$tandem" --help | awk '/^commands:$/ {f=1; next} /^[^ ]/ {f=0} f && /^  [a-z]/ {print $1}')"
[ -n "$commands" ] || { echo "$0: no commands found in '$tandem --help'" >&2; exit 1; }

{
  cat "$here/tandem.h2m"
  echo "[COMMANDS]"
  for c in $commands; do
    usage="$("$tandem" "$c" --help | sed -n 's/^usage: //p' | head -n 1)"
    printf '.SS "%s"\n' "$usage"
    # The body of help2man's page for this command: everything after DESCRIPTION.
    # Its option groups ("model:") become bold paragraph labels inside the subsection.
    TANDEM_MAN_COMMAND="$c" "${h2m[@]}" --name="$c" "$tmp/tandem-command" |
      awk '/^\.SH DESCRIPTION/ {f=1; next} /^\.SH / {f=0} f' |
      sed 's/^\.SS "\(.*\):"$/.PP\n\\fB\1:\\fR/'
  done
} >"$tmp/include.h2m"

"${h2m[@]}" --name="Vulkan LLM inference runtime built around speculative decoding" \
  --include="$tmp/include.h2m" --output="$output" "$tmp/tandem"
grep -q '^\.SH COMMANDS' "$output" || { echo "$0: help2man produced no COMMANDS section" >&2; exit 1; }
