#!/usr/bin/env bash
# The test command: set up, build, run every test (GPU tests skip, saying why,
# without a device); then the host code again under AddressSanitizer and
# UndefinedBehaviorSanitizer, with short fuzz runs of every file reader (any
# report fails). WORKBOOK_CUDA_ARCHITECTURES picks the architectures built (CI:
# 90a-real); WORKBOOK_SANITIZE_TESTS=0 skips the sanitizer build. Arguments go
# to ctest (e.g. -R Records).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WORKBOOK_BUILD_DIR:-$root/build}
if [ "${WORKBOOK_SANITIZE_TESTS:-1}" = 0 ]; then
  "$root/scripts/setup.sh"
else
  "$root/scripts/setup.sh" --sanitize
fi
# One line per reason tests were skipped for ("43 tests skipped: no CUDA device: ..."),
# read from ctest's log: ctest itself counts skips as passes and keeps the reasons to -V.
skip_summary() {
  local log=$1/Testing/Temporary/LastTest.log
  [ -f "$log" ] || return 0
  awk '/: Skipped$/ { getline why; n[why]++ } END { for (w in n) printf "%d %s skipped: %s\n", n[w], n[w] == 1 ? "test" : "tests", w }' "$log"
}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
skip_summary "$build"
if [ "${WORKBOOK_SANITIZE_TESTS:-1}" != 0 ]; then
  echo "== the host code under AddressSanitizer and UndefinedBehaviorSanitizer, and short fuzz runs"
  ctest --test-dir "$build-sanitize" --output-on-failure -j "$(nproc)" "$@"
  skip_summary "$build-sanitize"
fi
