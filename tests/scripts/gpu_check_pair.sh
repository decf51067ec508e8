#!/usr/bin/env bash
# scripts/gpu-check-pair.sh: bad input is refused in one line, exit 2, before
# anything runs; and, with a stand-in for gpu-check.sh and nvidia-smi (no GPU
# needed), the parts run where they should and come back as one summary and
# one archive, a failed stage failing the whole.
#   gpu_check_pair.sh REPOSITORY_ROOT
set -u
root=$1
script=$root/scripts/gpu-check-pair.sh
failed=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*"; failed=1; }

expect_refusal() {
  local what=$1
  shift
  local err rc
  err=$(OUT=${REFUSED_OUT:-$scratch/refused} "$script" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ $err != gpu-check-pair.sh:* ]]; then
    fail "$what: exit $rc, stderr: $err"
  else
    echo "ok: $what: $err"
  fi
}
expect_refusal "no arguments"
expect_refusal "one list" "tests"
expect_refusal "an unknown option" --bogus "tests" "sanitize"
expect_refusal "--alone without its list" --alone
expect_refusal "an unknown stage" "tests" "nothing"
expect_refusal "a pattern for a stage" "tests" "s.*"
expect_refusal "a stage named twice" "tests" "tests"
expect_refusal "a microsecond stage beside another card" "splitk" "tests"
expect_refusal "no stages at all" "" ""
expect_refusal "compare beside another card" "compare" "tests"
[ ! -e "$scratch/refused" ] || fail "a refused call left $scratch/refused behind"

# --help prints the header comment, and nothing of the code below it.
help=$("$script" --help)
[[ $help == "The GPU check on a machine of two GPUs"* ]] && [[ $help != *"set -u"* ]] && [[ $help == *"else 0." ]] ||
  fail "--help: $help"

# The stand-ins: a gpu-check.sh that records each stage (failing the one STUB_FAIL names),
# and an nvidia-smi that lists two GPUs.
mkdir -p "$scratch/repo/scripts" "$scratch/bin"
cp "$script" "$scratch/repo/scripts/"
cat > "$scratch/repo/scripts/gpu-check.sh" <<'EOF'
#!/usr/bin/env bash
stage_build() { :; }
stage_tests() { :; }
stage_sanitize() { :; }
stage_lessons() { :; }
stage_splitk() { :; }
w=$OUT/gpu-check
mkdir -p "$w/results" "$w/logs"
echo "stub check on card $CUDA_VISIBLE_DEVICES" > "$OUT/summary.txt"
rc=0
for s in "$@"; do
  echo "$s card $CUDA_VISIBLE_DEVICES" > "$w/logs/$s.log"
  echo "{\"stage\": \"$s\"}" > "$w/results/$s.json"
  if [ "$s" = "${STUB_FAIL:-}" ]; then echo "-- stage $s: FAIL" >> "$OUT/summary.txt"; rc=1
  else echo "-- stage $s: PASS" >> "$OUT/summary.txt"; fi
done
tar czf "$OUT/gpu-check.tar.gz" -C "$OUT" gpu-check && rm -rf "$w"
exit $rc
EOF
printf '#!/bin/sh\necho "GPU 0: stand-in"\necho "GPU 1: stand-in"\n' > "$scratch/bin/nvidia-smi"
chmod +x "$scratch/repo/scripts/"*.sh "$scratch/bin/nvidia-smi"

run_pair() {  # OUT_DIR [arguments...]
  local o=$1
  shift
  PATH=$scratch/bin:$PATH OUT=$o "$scratch/repo/scripts/gpu-check-pair.sh" "$@" > "$o.stdout" 2>&1
}

o=$scratch/out
run_pair "$o" --alone "lessons splitk" "build tests" "sanitize"
rc=$?
[ $rc -eq 0 ] || fail "a passing run exited $rc: $(cat "$o.stdout")"
grep -q "^gpu-check-pair: PASSED (parts: build card0 card1 alone)" "$o/summary.txt" || fail "summary: $(cat "$o/summary.txt")"
mkdir -p "$scratch/x" && tar xzf "$o/gpu-check.tar.gz" -C "$scratch/x" || fail "no archive"
for want in "build card 0" "tests card 0" "sanitize card 1" "lessons card 0" "splitk card 0"; do
  s=${want%% *}
  [ "$(cat "$scratch/x/gpu-check/logs/$s.log" 2>/dev/null)" = "$want" ] || fail "stage $s: not run as '$want'"
  [ -f "$scratch/x/gpu-check/results/$s.json" ] || fail "stage $s: its results are not in the archive"
done
[ $failed -eq 0 ] && echo "ok: a passing run: build, the two cards, then alone, in one summary and one archive"

touch "$scratch/a-file"
err=$(PATH=$scratch/bin:$PATH OUT=$scratch/a-file "$scratch/repo/scripts/gpu-check-pair.sh" "tests" "sanitize" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "OUT a file: exit $rc, stderr: $err"

# A pattern that matches a file where it runs is still a bad stage, not that file's name.
mkdir -p "$scratch/cwd" && touch "$scratch/cwd/tests"
err=$(cd "$scratch/cwd" && PATH=$scratch/bin:$PATH OUT=$scratch/out-glob "$scratch/repo/scripts/gpu-check-pair.sh" "t*" "sanitize" 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 2 ] && [ ! -e "$scratch/out-glob" ]; then echo "ok: a glob that matches a file here: $err"
else fail "a glob that matches a file here: exit $rc, $err"; fi

o=$scratch/out3
STUB_FAIL=build run_pair "$o" --alone "splitk" "build tests" "sanitize"
rc=$?
[ $rc -eq 1 ] || fail "a failed build: exit $rc, not 1"
grep -q "^the build failed: nothing else ran" "$o/summary.txt" || fail "a failed build: the summary does not say so"
[ ! -e "$o/part-card0" ] && [ ! -e "$o/part-alone" ] || fail "a failed build: other parts ran"
[ $rc -eq 1 ] && echo "ok: a failed build stops the rest, and the summary says so"

o=$scratch/out2
STUB_FAIL=tests run_pair "$o" --alone "splitk" "tests" "sanitize"
rc=$?
[ $rc -eq 1 ] || fail "a failed stage: exit $rc, not 1"
grep -q "^gpu-check-pair: FAILED" "$o/summary.txt" || fail "a failed stage: the summary does not say FAILED"
grep -q "^-- stage splitk: PASS" "$o/summary.txt" || fail "a failed stage beside: the alone part did not run"
[ $rc -eq 1 ] && echo "ok: a failed stage fails the whole, and the others still run"
exit $failed
