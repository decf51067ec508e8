#!/usr/bin/env bash
# ctest WgmmaGuard: the build's guard (scripts/nvcc-wgmma-guard.sh) fails the compile of a kernel
# whose wgmmas ptxas fences, with one line naming it, and passes the same loop written once per
# layout.   check.sh NVCC SOURCE_DIR WORK_DIR
set -u
[ $# -eq 3 ] || { echo "usage: check.sh NVCC SOURCE_DIR WORK_DIR" >&2; exit 2; }
nvcc=$1 src=$2 work=$3
mkdir -p "$work"
compile() { "$src/scripts/nvcc-wgmma-guard.sh" "$nvcc" -std=c++20 --expt-relaxed-constexpr -arch=sm_90a \
              -I"$src/kernels" -O3 -c "$src/tests/wgmma_guard/$1.cu" -o "$work/$1.o" 2>&1; }
out=$(compile branch_between_wgmmas); rc=$?
if [ $rc -eq 0 ] || ! grep -q "^error: ptxas fenced or serialised wgmma instructions (C75" <<< "$out"; then
  echo "FAIL: the guard let branch_between_wgmmas.cu through (exit $rc):"; echo "$out"; exit 1
fi
[ -e "$work/branch_between_wgmmas.o" ] && { echo "FAIL: the refused compile left its object"; exit 1; }
echo "refused: $(grep '^error:' <<< "$out")"
out=$(compile one_loop_per_layout) || { echo "FAIL: the guard refused one_loop_per_layout.cu:"; echo "$out"; exit 1; }
echo "passed: one_loop_per_layout.cu"
