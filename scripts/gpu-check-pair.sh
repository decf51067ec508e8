#!/usr/bin/env bash
# The GPU check on a machine of two GPUs: two lists of stages run side by side,
# one list on each card, then the stages that time launches of microseconds run
# alone on card 0, the host to itself
# (docs/notes/measuring.md#stages-side-by-side-on-a-machine-of-several-gpus-h100-2026-11-28).
# Each part is one scripts/gpu-check.sh run; the parts' summaries and archives
# are put together into one summary.txt and one gpu-check.tar.gz, which
# scripts/import-gpu-check.sh files as it files a single card's.
#
#   scripts/gpu-check-pair.sh [--alone "STAGES"] "STAGES ON CARD 0" "STAGES ON CARD 1"
#
# "build", named in any list, runs first and alone. The stages that time short
# launches (lessons compare splitk w4a16 sparse_ffn) go in --alone, never beside
# another card. Each stage is named at most once. A device that runs one command
# for at most 10 minutes takes the full check in three calls (seconds on an H200;
# the build is kept while the machine stays warm). Each call starts by emptying
# $OUT's summary, archive and parts: import each call's archive before the next.
#   scripts/gpu-check-pair.sh "build tests" "sanitize"                              about 460 s
#   scripts/gpu-check-pair.sh "chain ncu" "backward train"                          about 300 s
#   scripts/gpu-check-pair.sh --alone "lessons compare splitk w4a16 sparse_ffn" "" ""  about 470 s
# Leaves under $OUT (default ./gpu-check-out): summary.txt and gpu-check.tar.gz, and
# each part's own in part-*/. Exit status: 2 for bad input (before anything runs),
# 1 when a part failed, else 0.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
me=$(basename "$0")
check=$here/gpu-check.sh
die() { echo "$me: $*" >&2; exit 2; }

alone=""
while [ $# -gt 0 ]; do
  case $1 in
    --alone) [ $# -ge 2 ] || die "--alone needs a list of stages in one word"; alone=$2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (see $me --help)" ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || die "usage: $me [--alone \"STAGES\"] \"STAGES ON CARD 0\" \"STAGES ON CARD 1\" (see $me --help)"
card0=$1 card1=$2

# Every stage is gpu-check.sh's, named once; the microsecond stages only alone; build first.
# The lists are split into words with globbing off: "t*" is a bad stage, not the files it matches.
set -f
build=0
seen=" "
for part in card0 card1 alone; do
  for s in ${!part}; do
    [[ $s =~ ^[a-z0-9_]+$ ]] && grep -qs "^stage_$s()" "$check" || die "unknown stage '$s' (scripts/gpu-check.sh lists its stages)"
    [[ $seen == *" $s "* ]] && die "stage '$s' is named twice"
    seen+="$s "
    if [ "$s" = build ]; then build=1; continue; fi
    case $s in
      lessons|compare|splitk|w4a16|sparse_ffn)
        [ $part = alone ] || die "stage '$s' times short launches: give it to --alone, not to a card beside another" ;;
    esac
  done
done
strip_build() { local s out=""; for s in $1; do [ "$s" = build ] || out+="$s "; done; echo "${out% }"; }
card0=$(strip_build "$card0") card1=$(strip_build "$card1") alone=$(strip_build "$alone")
set +f
[ $build = 1 ] || [ -n "$card0$card1$alone" ] || die "no stages named"

if ! command -v nvidia-smi >/dev/null 2>&1; then die "needs nvidia-smi and two NVIDIA GPUs"; fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "${gpus:-0}" -ge 2 ] || die "needs two GPUs; this machine has ${gpus:-0} (scripts/gpu-check.sh runs on one)"

out=${OUT:-$(cd "$here/.." && pwd)/gpu-check-out}
mkdir -p "$out" 2>/dev/null || die "cannot make the output folder $out"
rm -rf "$out"/part-* "$out/summary.txt" "$out/gpu-check.tar.gz"
failed=0
# run_part NAME CARD STAGES: one gpu-check.sh run on that card, its output in part-NAME/.
run_part() {
  local name=$1 card=$2 stages=$3
  mkdir -p "$out/part-$name"
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$card OUT=$out/part-$name "$check" $stages > "$out/part-$name/stdout.log" 2>&1
}
parts=()
if [ $build = 1 ]; then
  echo "$me: build"
  run_part build 0 build || { echo "$me: the build failed: $out/part-build/stdout.log"; failed=1; }
  parts+=(build)
fi
# As in one gpu-check.sh run, a failed stage does not stop the others; a failed build does.
built=$((1 - failed))
if [ $built = 1 ] && [ -n "$card0$card1" ]; then
  echo "$me: card 0: ${card0:-nothing}; card 1: ${card1:-nothing}"
  pids=() names=()
  if [ -n "$card0" ]; then run_part card0 0 "$card0" & pids+=($!); names+=(card0); fi
  if [ -n "$card1" ]; then run_part card1 1 "$card1" & pids+=($!); names+=(card1); fi
  for i in "${!pids[@]}"; do wait "${pids[i]}" || failed=1; parts+=("${names[i]}"); done
fi
if [ $built = 1 ] && [ -n "$alone" ]; then
  echo "$me: alone on card 0: $alone"
  run_part alone 0 "$alone" || failed=1
  parts+=(alone)
fi

# One summary and one archive from the parts, in the order they ran.
{
  echo "matmul-workbook GPU check on two cards of one host ($me): $( [ $build = 1 ] && echo "build first; ")card 0: ${card0:-nothing}; card 1: ${card1:-nothing}; then alone on card 0: ${alone:-nothing}"
  [ $built = 1 ] || echo "the build failed: nothing else ran"
  for p in "${parts[@]}"; do
    echo
    echo "== part $p"
    cat "$out/part-$p/summary.txt" 2>/dev/null || echo "(no summary: see part-$p/stdout.log)"
  done
  echo
  echo "gpu-check-pair: $([ $failed = 0 ] && echo PASSED || echo FAILED) (parts: ${parts[*]})"
} > "$out/summary.txt"
merged=$(mktemp -d)
trap 'rm -rf "$merged"' EXIT
mkdir -p "$merged/gpu-check/results" "$merged/gpu-check/traces" "$merged/gpu-check/logs"
for p in "${parts[@]}"; do
  a=$out/part-$p/gpu-check.tar.gz
  [ -f "$a" ] || continue
  tar xzf "$a" -C "$merged" || { echo "$me: part $p's archive could not be read: $a"; failed=1; }
done
tar czf "$out/gpu-check.tar.gz" -C "$merged" gpu-check || { echo "$me: the archive could not be written"; failed=1; }
if [ $failed = 1 ]; then sed -i 's/^gpu-check-pair: PASSED/gpu-check-pair: FAILED/' "$out/summary.txt"; fi
cat "$out/summary.txt"
exit $failed
