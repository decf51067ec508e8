#!/usr/bin/env bash
# A short fuzz run for the tests: FUZZER for RUNS executions, starting from the
# committed seed corpus SEEDS (read only; new inputs go to a scratch folder).
# A crash, a sanitizer report or a timeout fails the test and leaves the input
# that caused it under ARTIFACTS (default: the scratch folder), to be added to
# SEEDS as a regression case once fixed.
#
#   run_fuzz.sh FUZZER SEEDS RUNS [ARTIFACTS]
set -u
fuzzer=$1 seeds=$2 runs=$3
scratch=$(mktemp -d)
artifacts=${4:-$scratch}
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/corpus" "$artifacts"
"$fuzzer" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$scratch/corpus" "$seeds" 2>&1 | tail -n 40
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ] && [ "$artifacts" = "$scratch" ]; then
  for f in "$scratch"/crash-* "$scratch"/timeout-* "$scratch"/oom-* "$scratch"/leak-*; do
    [ -f "$f" ] && { echo "input that failed ($f), base64:"; base64 -w0 "$f"; echo; }
  done
fi
exit "$status"
