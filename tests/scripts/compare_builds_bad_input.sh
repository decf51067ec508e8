#!/usr/bin/env bash
# scripts/compare-builds.sh refuses bad input with one line on stderr and exit
# status 2, before it builds anything (no GPU needed).
#   compare_builds_bad_input.sh REPOSITORY_ROOT
set -u
root=$1
script=$root/scripts/compare-builds.sh
failed=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
expect_refusal() {
  local what=$1
  shift
  local err rc
  err=$(WORKBOOK_COMPARE_DIR=$scratch "$script" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ $err != compare-builds.sh:* ]]; then
    echo "FAIL: $what: exit $rc, stderr: $err"
    failed=1
  else
    echo "ok: $what: $err"
  fi
}
expect_refusal "no arguments"
expect_refusal "two arguments" . .
expect_refusal "an unknown option" --bogus . . lesson07_w4a16
expect_refusal "--passes 0" --passes 0 . . lesson07_w4a16
expect_refusal "--passes not a number" --passes x . . lesson07_w4a16
expect_refusal "--shape without its arguments" --shape
expect_refusal "not a lesson id" . . w4a16
expect_refusal "an unknown lesson" . . lesson99_nothing
expect_refusal "an unknown revision" no-such-revision . lesson07_w4a16
expect_refusal "a missing directory" . /no/such/directory lesson07_w4a16
exit $failed
