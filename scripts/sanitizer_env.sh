# SPDX-License-Identifier: Apache-2.0
# scripts/sanitizer_env.sh: the environment scripts/sanitize.sh and scripts/fuzz.sh run
# sanitized binaries in (sourced, not run). docs/RELIABILITY.md explains each setting.

# Every ASan/UBSan report is fatal; leaks are checked at exit.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:verify_asan_link_order=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$(dirname "${BASH_SOURCE[0]}")/lsan.supp:print_suppressions=0"
symbolizer="$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | tail -1 || true)"
if [ -n "$symbolizer" ]; then export ASAN_SYMBOLIZER_PATH="$symbolizer"; fi

# lavapipe stays loaded for the whole process. The Vulkan loader unloads the driver at
# vkDestroyInstance; what Mesa and its LLVM still hold in their globals then looks leaked to
# LeakSanitizer (no module left to name in the report) although it is driver-owned memory
# that stays reachable while the driver is loaded. Preloading pins the library, so those
# globals stay roots. The driver is preloaded ahead of the shared sanitizer runtime, which
# ASan would refuse without verify_asan_link_order=0 above; the driver defines no allocator,
# so ASan's malloc and free still take precedence.
for icd in /usr/share/vulkan/icd.d/lvp_icd.*.json; do
  [ -f "$icd" ] || continue
  lvp="$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$icd")"
  if [ -f "$lvp" ]; then export LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$lvp"; fi
done
