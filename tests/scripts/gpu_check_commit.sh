#!/usr/bin/env bash
# scripts/gpu-check.sh holds the commit a call names against the one its build
# was configured at (build/workbook-commit.txt, which the lessons write into
# their results): unless the build stage comes first, another commit (named,
# or git's) is refused in one line, exit 2, with nothing written; the same
# commit runs, and the summary names it; a build with no recorded commit runs.
# Stand-ins for the build's test binaries; no GPU needed.
#   gpu_check_commit.sh REPOSITORY_ROOT
set -u
root=$1
unset GPU_CHECK_GTEST_FILTER GPU_CHECK_LESSONS WORKBOOK_BUILD_DIR WORKBOOK_COMMIT
failed=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*"; failed=1; }

build=$scratch/build
mkdir -p "$build/bin"
echo "aaaaaaaaaaaa" > "$build/workbook-commit.txt"
for b in workbook cpu_tests gpu_tests activation_gpu_tests q4_gpu_tests wgmma_gpu_tests; do
  printf '#!/bin/sh\nexit 0\n' > "$build/bin/$b"
  chmod +x "$build/bin/$b"
done

# A refusal in one line, exit 2, no summary and not even the output folder: refused "WHAT" ARGS...
refused() {
  local what=$1 o=$scratch/refused-$RANDOM
  shift
  local err rc
  err=$(env WORKBOOK_BUILD_DIR="$build" OUT="$o" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ $err != "gpu-check: the build in $build is of commit aaaaaaaaaaaa, not "* ]]; then
    fail "$what: exit $rc, stderr: $err"
  else
    echo "ok: $what: $err"
  fi
  [ ! -e "$o" ] || fail "$what: the refused call made $o"
}
refused "another commit" WORKBOOK_COMMIT=bbbbbbbbbbbb "$root/scripts/gpu-check.sh" tests
# The build stage after another: that one would still run on the old build.
refused "build listed second" WORKBOOK_COMMIT=bbbbbbbbbbbb "$root/scripts/gpu-check.sh" tests build
# No WORKBOOK_COMMIT: the commit is git's (or unknown without a .git), not the build's.
refused "the commit from git" "$root/scripts/gpu-check.sh" tests

out=$scratch/same
WORKBOOK_BUILD_DIR=$build WORKBOOK_COMMIT=aaaaaaaaaaaa OUT=$out "$root/scripts/gpu-check.sh" tests > "$scratch/same.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "commit aaaaaaaaaaaa$" "$out/summary.txt" || ! grep -q -- "-- stage tests: PASS" "$out/summary.txt"; then
  fail "the same commit: exit $rc: $(cat "$scratch/same.log")"
else
  echo "ok: the same commit runs, and the summary names it"
fi
# A build configured before workbook-commit.txt existed is not held to any commit.
rm "$build/workbook-commit.txt"
out=$scratch/unrecorded
WORKBOOK_BUILD_DIR=$build WORKBOOK_COMMIT=cccccccccccc OUT=$out "$root/scripts/gpu-check.sh" tests > "$scratch/unrecorded.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "commit cccccccccccc$" "$out/summary.txt"; then
  fail "no recorded commit: exit $rc: $(cat "$scratch/unrecorded.log")"
else
  echo "ok: a build with no recorded commit runs"
fi
exit $failed
