#!/usr/bin/env bash
# ctest Step6NoSpills: lesson 05 step 6's kernels compile without spills (ptxas -v): the pass warps'
# registers (setmaxnreg) leave their loop in registers.   check.sh NVCC SOURCE_DIR WORK_DIR
set -u
[ $# -eq 3 ] || { echo "usage: check.sh NVCC SOURCE_DIR WORK_DIR" >&2; exit 2; }
nvcc=$1 src=$2 work=$3
mkdir -p "$work"
out=$("$nvcc" -std=c++20 --expt-relaxed-constexpr -arch=sm_90a -O3 -DNDEBUG -I"$src/kernels" -Xptxas -v \
        -c "$src/tests/spill_guard/step6_kernels.cu" -o "$work/step6_kernels.o" 2>&1) ||
  { echo "FAIL: the compile failed:"; echo "$out"; exit 1; }
# One line a kernel: its name, then what ptxas says of its stack and spills.
report=$(awk '/Compiling entry function/ { name = $0 } /bytes spill stores/ { print name " :: " $0 }' <<< "$out")
kernels=$(grep -c "layout_gemm_kernel" <<< "$report")
[ "$kernels" -ge 3 ] || { echo "FAIL: expected step 6's three kernels in ptxas's report, found $kernels:"; echo "$out"; exit 1; }
spilling=$(grep -v " 0 bytes spill stores, 0 bytes spill loads" <<< "$report")
if [ -n "$spilling" ]; then
  echo "FAIL: spills:"; echo "$spilling"; exit 1
fi
echo "no spills in the $kernels kernels of kernels/05_backward/layout_gemm.cuh that step6_kernels.cu instantiates (step 6's three among them)"
