#!/usr/bin/env bash
# Two versions of a lesson taking turns on this GPU, in one run: how the notes'
# "old and new builds taking turns in one call" comparisons are made
# (docs/notes/measuring.md#comparing-two-versions-of-a-kernel). Each version is
# built for the one lesson, then, pass after pass and shape after shape, the
# two builds run the lesson in turn with the same arguments, and each variant's
# median time and its ratio to cuBLAS in that run are printed side by side.
# Between two runs of different calls the GPU moves by a few per cent; within
# one call, taking turns, a 1-2% difference shows.
#
#   scripts/compare-builds.sh [options] A B LESSON [lesson arguments...]
#
#   A, B              a git revision of this repository, a source directory, or "." (the working tree)
#   LESSON            a lesson's id, as `workbook list --ids` prints it (lesson07_w4a16)
#   --shape "ARGS"    one set of lesson arguments per shape (repeat it); without it, the arguments
#                     after LESSON are the one shape
#   --passes P        passes over the shapes (default 2)
#   --flags-a F, --flags-b F
#                     extra nvcc flags for A's or B's build (the same source built two ways: -DX=1)
#
# Example: the working tree against main, lesson 07's narrow kernel at two shapes:
#   scripts/compare-builds.sh --shape "--m 1 --n 4096 --k 4096" --shape "--m 16 --n 8192 --k 8192" \
#       main . lesson07_w4a16 --variant narrow --rounds 5 --reps 20
# Builds go to build-compare/ (WORKBOOK_COMPARE_DIR); the architecture is this GPU's unless
# WORKBOOK_CUDA_ARCHITECTURES names one. Needs nvcc, cmake, python3 and a CUDA GPU. A revision
# needs the repository's history (git archive); on a copy of the tree without it, give directories.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
me=$(basename "$0")
die() { echo "$me: $*" >&2; exit 2; }

passes=2 flags_a="" flags_b=""
shapes=()
while [ $# -gt 0 ]; do
  case $1 in
    --passes) [ $# -ge 2 ] || die "--passes needs a number"; passes=$2; shift 2 ;;
    --shape) [ $# -ge 2 ] || die "--shape needs the lesson's arguments in one word"; shapes+=("$2"); shift 2 ;;
    --flags-a) [ $# -ge 2 ] || die "--flags-a needs nvcc flags"; flags_a=$2; shift 2 ;;
    --flags-b) [ $# -ge 2 ] || die "--flags-b needs nvcc flags"; flags_b=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (see $me --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] || die "usage: $me [options] A B LESSON [lesson arguments...] (see $me --help)"
a=$1 b=$2 lesson=$3
shift 3
[[ $passes =~ ^[1-9][0-9]*$ ]] || die "--passes must be a whole number from 1 (got '$passes')"
[[ $lesson =~ ^lesson[0-9][0-9]_[a-z0-9_]+$ ]] || die "'$lesson' is not a lesson id (workbook list --ids)"
[ -f "$root/lessons/${lesson#lesson}.cu" ] || die "no lesson '$lesson' in this repository (workbook list --ids)"
if [ ${#shapes[@]} -eq 0 ]; then shapes=("$*"); elif [ $# -gt 0 ]; then
  for i in "${!shapes[@]}"; do shapes[i]="${shapes[i]} $*"; done
fi
for tool in cmake python3; do command -v $tool >/dev/null || die "needs $tool"; done
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
command -v nvcc >/dev/null || die "needs nvcc (CUDA 12.8 or newer)"

for spec in "$a" "$b"; do
  [ "$spec" = . ] || [ -d "$spec" ] || git -C "$root" rev-parse --verify --quiet "$spec^{commit}" >/dev/null ||
    die "'$spec' is neither a directory nor a revision of this repository"
done
have_gpu() { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }

work=${WORKBOOK_COMPARE_DIR:-$root/build-compare}
mkdir -p "$work"
arch=${WORKBOOK_CUDA_ARCHITECTURES:-}
if [ -z "$arch" ]; then
  have_gpu || die "needs a CUDA GPU (nvidia-smi -L finds none); WORKBOOK_CUDA_ARCHITECTURES=90a-real builds without one"
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
  arch="${cc}-real"
  [ "$cc" = 90 ] && arch="90a-real"
fi

# source LABEL SPEC: the directory to build SPEC from.
source_of() {
  local label=$1 spec=$2
  if [ "$spec" = . ]; then echo "$root"; return; fi
  if [ -d "$spec" ]; then (cd "$spec" && pwd); return; fi
  local dir=$work/src-$label
  rm -rf "$dir" && mkdir -p "$dir"
  git -C "$root" archive "$spec" | tar -x -C "$dir"
  echo "$dir"
}
src_a=$(source_of a "$a") || exit 2
src_b=$(source_of b "$b") || exit 2

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
build() {
  local label=$1 src=$2 flags=$3 dir=$work/build-$1
  [ -f "$dir/CMakeCache.txt" ] && gen=()
  if ! { cmake -S "$src" -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DWORKBOOK_CUDA_ARCHITECTURES="$arch" \
           -DWORKBOOK_WITH_VIEWER=OFF -DWORKBOOK_WITH_TESTS=OFF "-DCMAKE_CUDA_FLAGS=$flags" >"$dir.log" 2>&1 &&
         cmake --build "$dir" -j "$(nproc)" --target "$lesson" >>"$dir.log" 2>&1; }; then
    echo "$me: building $label failed; the end of $dir.log:" >&2
    tail -n 20 "$dir.log" >&2
    return 1
  fi
}
echo "building $lesson for $arch: A = $a${flags_a:+ ($flags_a)}, B = $b${flags_b:+ ($flags_b)}"
build a "$src_a" "$flags_a" & pa=$!
build b "$src_b" "$flags_b" & pb=$!
ra=0 rb=0
wait $pa || ra=$?
wait $pb || rb=$?
[ $ra -eq 0 ] && [ $rb -eq 0 ] || exit 1
have_gpu || die "built in $work; running needs a CUDA GPU (nvidia-smi -L finds none)"

nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
printf '%-6s %-40s %-4s %s\n' pass shape side "variant: median ms (x cuBLAS in that run)"
for pass in $(seq "$passes"); do
  for shape in "${shapes[@]}"; do
    for side in a b; do
      json=$work/run-$side.json
      rm -f "$json"
      # shellcheck disable=SC2086  # the shape is the lesson's arguments, split on spaces
      "$work/build-$side/bin/$lesson" $shape --json "$json" >"$work/run-$side.log" 2>&1 ||
        { echo "$me: $lesson $shape failed with build $side; its output:" >&2; tail -n 20 "$work/run-$side.log" >&2; exit 1; }
      row=$(python3 - "$json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
cells = []
for v in r["variants"]:
    if v.get("skipped") or v.get("median_ms") is None:
        continue
    # a run with --no-check checks nothing: its variants are "not checked", not failed
    fail = " not checked" if not v.get("checked", True) else "" if v.get("passed", True) else " FAILED"
    ratio = "" if v.get("reference") or not v.get("vs_cublas") else " (%.3fx)" % v["vs_cublas"]
    cells.append("%s %.4f%s%s" % (v["name"], v["median_ms"], ratio, fail))
print(" | ".join(cells))
EOF
)
      printf '%-6s %-40s %-4s %s\n' "$pass" "${shape:0:40}" "$(echo $side | tr ab AB)" "$row"
    done
  done
done
