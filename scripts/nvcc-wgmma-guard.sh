#!/usr/bin/env bash
# The CUDA compiler launcher (CMAKE_CUDA_COMPILER_LAUNCHER): runs the compile it is given, and fails
# it when ptxas reports that it fenced or serialised wgmma instructions (its C75xx lines about
# wgmma, GMMA or warpgroup). Such a kernel is correct but loses the overlap of its tensor-core
# pipeline, which a profile shows only as a slower kernel: a runtime branch between the wgmmas of
# a stage cost lesson 05's products 3% (docs/notes/05_backward.md). A device-debug compile (-G)
# serialises them by design and is not checked.
#
#   nvcc-wgmma-guard.sh [LAUNCHER...] nvcc ARGS...   (what CMake runs; WORKBOOK_WGMMA_GUARD=OFF leaves it out)
set -u
[ $# -ge 1 ] || { echo "usage: nvcc-wgmma-guard.sh COMPILER ARGS... (the compile to run and check)" >&2; exit 2; }
out=$(mktemp) && err=$(mktemp) || exit 1
trap 'rm -f "$out" "$err"' EXIT
"$@" > "$out" 2> "$err"
rc=$?
cat "$out"
cat "$err" >&2
[ $rc -ne 0 ] && exit $rc
for arg in "$@"; do
  case $arg in -G | --device-debug) exit 0 ;; esac
done
hits=$(cat "$out" "$err" | grep -E '\(C75[0-9][0-9]\).*(wgmma|GMMA|warpgroup)')
[ -z "$hits" ] && exit 0
# The object must not look built: remove what -o (or --output-file) named.
prev=
for arg in "$@"; do
  case $prev in -o | --output-file) rm -f -- "$arg" ;; esac
  case $arg in -o=* | --output-file=*) rm -f -- "${arg#*=}" ;; esac
  prev=$arg
done
code=$(echo "$hits" | grep -oE 'C75[0-9][0-9]' | sort -u | tr '\n' ' ')
fn=$(echo "$hits" | head -n 1 | grep -oE "function '[^']+'" | head -n 1)
echo "error: ptxas fenced or serialised wgmma instructions (${code% }) in ${fn#function }; see its lines above (a branch, a call or a non-wgmma write to the accumulators between a stage's wgmmas)" >&2
exit 1
