#!/usr/bin/env bash
# scripts/gpu-check.sh holds the commit a call names against the one its build
# was configured at (build/workbook-commit.txt, which the lessons write into
# their results): without the build stage, another commit is refused in one
# line, exit 2, with no summary written; the same commit runs, and the summary
# names it. Stand-ins for the build's test binaries; no GPU needed.
#   gpu_check_commit.sh REPOSITORY_ROOT
set -u
root=$1
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

out=$scratch/other
err=$(WORKBOOK_BUILD_DIR=$build WORKBOOK_COMMIT=bbbbbbbbbbbb OUT=$out "$root/scripts/gpu-check.sh" tests 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ $err != "gpu-check: the build in $build is of commit aaaaaaaaaaaa, not bbbbbbbbbbbb"* ]]; then
  fail "another commit: exit $rc, stderr: $err"
else
  echo "ok: another commit: $err"
fi
[ ! -e "$out/summary.txt" ] || fail "a refused call wrote $out/summary.txt"

out=$scratch/same
WORKBOOK_BUILD_DIR=$build WORKBOOK_COMMIT=aaaaaaaaaaaa OUT=$out "$root/scripts/gpu-check.sh" tests > "$scratch/same.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "commit aaaaaaaaaaaa$" "$out/summary.txt" || ! grep -q -- "-- stage tests: PASS" "$out/summary.txt"; then
  fail "the same commit: exit $rc: $(cat "$scratch/same.log")"
else
  echo "ok: the same commit runs, and the summary names it"
fi
exit $failed
