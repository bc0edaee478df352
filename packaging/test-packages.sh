#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# packaging/test-packages.sh: the Debian packages, end to end, on this machine.
#
#   packaging/test-packages.sh [--rev REV] [--keep]
#
#  1. clones this repository at REV (default HEAD: committed work only) into a
#     scratch directory and copies packaging/debian to debian/ there;
#  2. installs the missing Build-Depends (apt-get build-dep) and lintian;
#  3. builds source and binary packages with dpkg-buildpackage;
#  4. runs lintian on the result: any error fails the test (warnings are listed);
#  5. installs tandem and libtandem-dev with apt (Depends and Recommends from the
#     archive) and checks the install: files, conffile, man page, Depends/Recommends,
#     `tandem plugins` loads every packaged plugin (and synthesizer) from the default
#     directory, `tandem synth` writes every architecture a packaged synthesizer
#     offers, `tandem devices`, `tandem demo`;
#  6. builds the SDK example shipped in libtandem-dev out of tree against the
#     installed SDK, with CMake and with pkg-config, and checks that the installed
#     tandem loads it (--plugin-path, TANDEM_PLUGIN_PATH, the config) and drafts;
#  7. purges everything it installed (the packages and whatever apt pulled in for
#     them or for the build) and checks that no file of tandem's is left.
# Step 7 also runs when a step fails (trap). Run as root on Debian 12 with apt access
# to Debian's archive. Takes 7-13 minutes on 2 cores, most of it the package build;
# .ci/run runs it after the test suite (README.md, "Packages").
#
# --keep leaves the scratch directory (build tree, .debs, logs) for inspection; the
# packages are purged either way.
set -euo pipefail

rev=HEAD
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rev) rev="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--rev REV] [--keep]" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "$0: run as root (it installs and purges packages)" >&2
  exit 2
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d /tmp/tandem-pkgtest.XXXXXX)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o DPkg::Lock::Timeout=600)

t_start=$SECONDS
t_step=$SECONDS
step() {
  echo
  echo "==> [$((SECONDS - t_start))s] $*"
  t_step=$SECONDS
}
done_step() { echo "    ($((SECONDS - t_step))s)"; }
fail() { echo "test-packages: FAIL: $*" >&2; exit 1; }

# Packages this script installed (as package:arch), purged at exit.
installed_by_us=()
installed_now() {
  dpkg-query -W -f='${db:Status-Abbrev} ${Package}:${Architecture}\n' | awk '$1 == "ii" {print $2}' | sort
}
# track CMD...: runs an apt command and records the packages it newly installed.
track() {
  local before after
  before="$(installed_now)"
  "$@"
  after="$(installed_now)"
  mapfile -t -O "${#installed_by_us[@]}" installed_by_us < <(comm -13 <(echo "$before") <(echo "$after"))
}

cleanup() {
  local rc=$?
  trap - EXIT
  if [ "${#installed_by_us[@]}" -gt 0 ]; then
    echo
    echo "==> [$((SECONDS - t_start))s] purging what this test installed: ${installed_by_us[*]}"
    apt-get purge "${apt_opts[@]}" "${installed_by_us[@]}" >"$work/purge.log" 2>&1 ||
      { cat "$work/purge.log"; echo "test-packages: purge failed" >&2; rc=1; }
  fi
  if [ $rc -eq 0 ]; then
    # Nothing of tandem's may be left: no package state, no files, no directories.
    for p in tandem libtandem-dev; do
      if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -v '^un\|^$' >/dev/null; then
        echo "test-packages: FAIL: $p is still known to dpkg after the purge" >&2; rc=1
      fi
    done
    for path in /usr/bin/tandem /etc/tandem /usr/lib/"$multiarch"/tandem /usr/include/tandem \
                /usr/lib/"$multiarch"/cmake/tandem /usr/share/tandem /usr/share/doc/tandem \
                /usr/share/doc/libtandem-dev; do
      [ ! -e "$path" ] || { echo "test-packages: FAIL: $path left after the purge" >&2; rc=1; }
    done
    ls /usr/lib/"$multiarch"/libtandem.so* >/dev/null 2>&1 &&
      { echo "test-packages: FAIL: libtandem left after the purge" >&2; rc=1; }
  fi
  if [ $keep -eq 1 ] || [ $rc -ne 0 ]; then
    echo "scratch directory kept: $work"
  else
    rm -rf "$work"
  fi
  echo
  if [ $rc -eq 0 ]; then
    echo "test-packages: OK ($((SECONDS - t_start))s)"
  else
    echo "test-packages: FAILED ($((SECONDS - t_start))s)"
  fi
  exit $rc
}
trap cleanup EXIT

for p in tandem libtandem-dev; do
  if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep '^[ih]' >/dev/null; then
    echo "$0: $p is already installed; this test would replace and then purge it. Remove it first." >&2
    exit 2
  fi
done

# ---------------------------------------------------------------------------
step "clean clone of $repo at $rev"
src="$work/tandem"
git clone -q --no-hardlinks "$repo" "$src"
git -C "$src" checkout -q --detach "$rev"
echo "    $(git -C "$src" log -1 --format='%h %s' | cut -c1-100)"
rm -rf "$src/.git"
cp -r "$src/packaging/debian" "$src/debian"
version="$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)"
done_step

step "build dependencies and tools"
# Without the archive, the package lists at hand still do when nothing is missing.
apt-get update -q >"$work/apt-update.log" 2>&1 ||
  { cat "$work/apt-update.log"; echo "    warning: apt-get update failed; using the package lists at hand"; }
track apt-get build-dep "${apt_opts[@]}" --no-install-recommends "$src" >"$work/build-dep.log" 2>&1 ||
  { cat "$work/build-dep.log"; fail "apt-get build-dep"; }
track apt-get install "${apt_opts[@]}" --no-install-recommends lintian dpkg-dev >>"$work/build-dep.log" 2>&1 ||
  { cat "$work/build-dep.log"; fail "installing lintian"; }
echo "    installed for the build: ${installed_by_us[*]:-(nothing)}"
done_step

# ---------------------------------------------------------------------------
step "dpkg-buildpackage (tandem $version; log: $work/build.log)"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc) >"$work/build.log" 2>&1 ||
  { tail -n 60 "$work/build.log"; fail "dpkg-buildpackage"; }
arch="$(dpkg-architecture -qDEB_HOST_ARCH)"
changes="$work/tandem_${version}_${arch}.changes"
[ -f "$changes" ] || fail "no $changes"
ls -l "$work"/*.deb "$work"/*.dsc | awk '{print "    " $5 "\t" $NF}'
done_step

step "lintian"
lintian --fail-on error --display-info "$changes" >"$work/lintian.log" 2>&1 || {
  cat "$work/lintian.log"
  fail "lintian reports errors"
}
echo "    errors: $(grep -c '^E:' "$work/lintian.log" || true), warnings: $(grep -c '^W:' "$work/lintian.log" || true)," \
     "info: $(grep -c '^I:' "$work/lintian.log" || true)"
sed 's/^/    /' "$work/lintian.log"
done_step

# ---------------------------------------------------------------------------
step "install tandem and libtandem-dev (apt, with Recommends)"
debs=("$work/tandem_${version}_${arch}.deb" "$work/libtandem-dev_${version}_${arch}.deb")
n_before=${#installed_by_us[@]}
track apt-get install "${apt_opts[@]}" "${debs[@]}" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "apt-get install"; }
echo "    installed: ${installed_by_us[*]:n_before}"
for p in tandem libtandem-dev; do
  echo "    $p: $(dpkg-query -W -f='Depends: ${Depends}; Recommends: ${Recommends}; Provides: ${Provides}' "$p")"
done
done_step

step "installed files"
for f in /usr/bin/tandem /usr/lib/"$multiarch"/libtandem.so.0 /etc/tandem/tandem.toml \
         /usr/share/man/man1/tandem.1.gz /usr/include/tandem/tandem.h /usr/include/tandem/synth.h \
         /usr/lib/"$multiarch"/tandem/plugins/synth/tandem-qwen-nextn-synth.so \
         /usr/lib/"$multiarch"/tandem/plugins/tandem-gemma4.so \
         /usr/lib/"$multiarch"/tandem/plugins/tandem-glm-ocr.so \
         /usr/lib/"$multiarch"/tandem/plugins/synth/tandem-glm-ocr-synth.so \
         /usr/lib/"$multiarch"/tandem/plugins/tandem-llama.so \
         /usr/lib/"$multiarch"/tandem/plugins/synth/tandem-llama-synth.so \
         /usr/lib/"$multiarch"/cmake/tandem/tandemConfig.cmake \
         /usr/include/tandem/ext/custom_op.h /usr/include/tandem/cpp/tandem.hpp \
         /usr/lib/"$multiarch"/pkgconfig/tandem-plugin.pc /usr/share/tandem/plugin.map \
         /usr/share/doc/libtandem-dev/examples/lookup-drafter/CMakeLists.txt \
         /usr/share/doc/libtandem-dev/examples/recent-copy/CMakeLists.txt; do
  [ -e "$f" ] || fail "$f is missing"
done
[ ! -e /usr/lib/"$multiarch"/libtandem.so ] || fail "the unversioned libtandem.so symlink is installed"
dpkg-query -W -f='${Conffiles}\n' tandem | grep '^ /etc/tandem/tandem.toml ' >/dev/null ||
  fail "/etc/tandem/tandem.toml is not a conffile"
if ldd /usr/bin/tandem | grep 'not found' >/dev/null; then ldd /usr/bin/tandem; fail "unresolved libraries"; fi
dpkg-query -W -f='${Depends}\n' tandem | grep 'libvulkan1' >/dev/null || fail "tandem does not depend on libvulkan1"
dpkg-query -W -f='${Recommends}\n' tandem | grep 'mesa-vulkan-drivers | vulkan-icd' >/dev/null ||
  fail "tandem does not recommend a Vulkan driver"
zcat /usr/share/man/man1/tandem.1.gz | grep '^\.SH COMMANDS' >/dev/null || fail "tandem(1) has no COMMANDS section"
unit=""
for d in /lib/systemd/system /usr/lib/systemd/system; do [ -e "$d/tandem.service" ] && unit="$d/tandem.service"; done
[ -n "$unit" ] || fail "the systemd unit tandem.service is not installed"
grep -q '^ExecStart=/usr/bin/tandem serve --config /etc/tandem/tandem.toml$' "$unit" || fail "$unit does not run tandem serve"
[ ! -e /etc/systemd/system/multi-user.target.wants/tandem.service ] || fail "tandem.service is enabled by default"
done_step

# A fresh user: no per-user config, so /etc/tandem/tandem.toml is the one read;
# caches (demo models, pipeline cache) stay in the scratch directory.
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache"
unset TANDEM_PLUGIN_PATH TANDEM_DEVICE
mkdir -p "$HOME"
cd "$work"

step "tandem plugins: every packaged plugin loads from the default directory"
tandem plugins | tee "$work/plugins.txt" | sed 's/^/    /'
if grep -q FAILED "$work/plugins.txt"; then fail "a plugin failed to load"; fi
grep -qx "  /usr/lib/$multiarch/tandem/plugins" "$work/plugins.txt" || fail "the plugin directory is not searched"
if grep -q "$work\|/build/\|obj-" "$work/plugins.txt"; then fail "the installed tandem searches a build directory"; fi
n_plugins=0
while read -r so; do
  grep -q "  (ABI [0-9]*)  $so\$" "$work/plugins.txt" || fail "$so (packaged) did not load"
  n_plugins=$((n_plugins + 1))
done < <(dpkg -L tandem | grep "^/usr/lib/$multiarch/tandem/plugins/tandem-.*\.so$")
[ "$n_plugins" -gt 0 ] || fail "tandem ships no plugins"
echo "    $n_plugins packaged plugin(s), all loaded"
done_step

step "tandem synth: every architecture of every packaged synthesizer, through its plugin"
# A plugin's synthesizer is installed as plugins/synth/tandem-NAME-synth.so (tandem/synth.h);
# `tandem plugins` lists what each one writes, and `tandem synth` finds it through the plugin.
# A draft head shaped from its target (EAGLE-3, DFlash) is written for a target synthesized
# here, after the others: the qwen3 one. DFlash heads are HF directories (no GGUF layout), so
# that one is checked by drafting with it instead of by `tandem info`.
n_archs=0
heads=()
synth_one() {  # ARCH [OPTION...]
  local a="$1"
  shift
  tandem synth --arch "$a" --type f16 "$@" -o "$work/synth-$a.gguf" 2>&1 | sed 's/^/    /' ||
    fail "tandem synth --arch $a"
  tandem info "$work/synth-$a.gguf" | grep -q "^architecture: *$a$" || fail "synth-$a.gguf is not an $a model"
  n_archs=$((n_archs + 1))
}
while read -r so; do
  line="$(grep "^  synthesizer $so (writes " "$work/plugins.txt")" || fail "$so (packaged) did not load"
  for a in $(sed 's/.*(writes \(.*\))$/\1/; s/,//g' <<<"$line"); do
    case "$a" in eagle3 | dflash) heads+=("$a") ;; *) synth_one "$a" ;; esac
  done
done < <(dpkg -L tandem | grep "^/usr/lib/$multiarch/tandem/plugins/synth/tandem-.*-synth\.so$")
for a in "${heads[@]}"; do
  [ -f "$work/synth-qwen3.gguf" ] || fail "no qwen3 model to shape the $a head from"
  if [ "$a" != dflash ]; then
    synth_one "$a" --target "$work/synth-qwen3.gguf"
    continue
  fi
  # a DFlash head reads several target layers: a 5-layer target (z-lab's default spread)
  tandem synth --arch qwen3 --layers 5 --type f16 -o "$work/synth-qwen3-5l.gguf" >/dev/null 2>&1 ||
    fail "tandem synth --arch qwen3 --layers 5"
  tandem synth --arch dflash --target "$work/synth-qwen3-5l.gguf" -o "$work/synth-dflash" 2>&1 | sed 's/^/    /' ||
    fail "tandem synth --arch dflash"
  tandem run -m "$work/synth-qwen3-5l.gguf" --spec-type dflash -md "$work/synth-dflash" -p "Hello" -n 4 --temp 0 \
    >/dev/null 2>"$work/dflash.log" || { cat "$work/dflash.log"; fail "drafting with the synthesized dflash head"; }
  n_archs=$((n_archs + 1))
done
[ "$n_archs" -gt 0 ] || fail "tandem ships no synthesizer"
echo "    $n_archs architecture(s) synthesized"
done_step

step "/etc/tandem/tandem.toml is the configuration read by default"
# Proof by a deliberate error: a bad key on top of the packaged file must be reported
# against that path. The packaged file is restored right after.
cp -p /etc/tandem/tandem.toml "$work/tandem.toml.orig"
{ echo 'not_a_key = 1'; cat "$work/tandem.toml.orig"; } >/etc/tandem/tandem.toml
rc=0
out="$(tandem plugins 2>&1)" || rc=$?
cp -p "$work/tandem.toml.orig" /etc/tandem/tandem.toml
if [ $rc -eq 0 ] || ! grep "/etc/tandem/tandem.toml: unknown key 'not_a_key'" <<<"$out" >/dev/null; then
  echo "$out"
  fail "tandem did not read /etc/tandem/tandem.toml"
fi
echo "    $(grep not_a_key <<<"$out")"
dpkg --verify tandem libtandem-dev || fail "installed files differ from the packages"
done_step

step "tandem devices"
tandem devices | sed 's/^/    /'
done_step

step "tandem demo"
tandem demo >"$work/demo.log" 2>&1 || { cat "$work/demo.log"; fail "tandem demo"; }
sed 's/^/    /' "$work/demo.log" | cut -c1-120
done_step

step "SDK example: out-of-tree build against the installed libtandem-dev, load, draft"
# The example as shipped (uncompressed sources), copied somewhere writable.
cp -r /usr/share/doc/libtandem-dev/examples/lookup-drafter "$work/example-src"
bash "$src/sdk/examples/check-example.sh" --src "$work/example-src" --prefix /usr --tandem /usr/bin/tandem \
  --work "$work/example" 2>&1 | sed 's/^/    /' || fail "SDK example"
done_step

step "SDK C++ example: out-of-tree build with the installed C++ helpers, load, draft"
cp -r /usr/share/doc/libtandem-dev/examples/recent-copy "$work/cpp-example-src"
bash "$src/sdk/examples/check-cpp-example.sh" --src "$work/cpp-example-src" --prefix /usr --tandem /usr/bin/tandem \
  --work "$work/cpp-example" 2>&1 | sed 's/^/    /' || fail "SDK C++ example"
done_step

# Step 7 (purge and leftover checks) runs in cleanup().
