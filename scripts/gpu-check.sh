#!/usr/bin/env bash
# The full GPU check, for a machine with an NVIDIA GPU (H100/H200 for the
# headline numbers). Stages run in order; each can also run alone:
#
#   scripts/gpu-check.sh                      build tests sanitize lessons ncu compare backward train chain splitk w4a16 sparse_ffn
#   scripts/gpu-check.sh lessons compare      only those stages (needs a build)
#
#   build     configure and build with ninja (the viewer's UI only where ImGui and GLFW are found)
#   tests     CPU tests, GPU tests (every variant vs cuBLAS and fp64; traces), the viewer's model
#             and its "run on this GPU" test
#   sanitize  compute-sanitizer memcheck and racecheck on small shapes, every lesson (lesson 06: synccheck
#             too, and skinny shapes whose blocks wait on each other)
#   lessons   every lesson at 4096^3 with results JSON; traces of chosen variants
#   ncu       lesson 03's orders under Nsight Compute (DRAM bytes, L2 hit rate) beside the L2 model
#   compare   workbook compare at the headline square shapes; lessons 03/04 at 1024 and 8192; lesson 03's
#             orders at 4096 x 65536 x 4096;
#             lesson 04's target variants at 2048, 4096 and 8192 (45 rounds, 900 launches each), Stream-K
#             where the last wave is mostly empty
#   backward  lesson 05's targets: relu and gelu layers at 4096^3, 8192^3 and the Llama-3-8B MLP shapes;
#             each product alone at 4096^3 and 8192^3
#   train     lesson 05's forward and backward together (--part train): relu and gelu layers at 4096^3,
#             8192^3 and the Llama-3-8B up projection
#   chain     lesson 05's backward from an MLP's output (--part chain: dZ = dY Vᵀ first, step 5 with
#             act' in that product's epilogue): relu and gelu at the backward stage's four shapes
#   splitk    lesson 06's targets: M = 1 and 16 at N = K = 4096, 8192, 16384 and the Llama-3-8B decode
#             projections; M from 1 to 64 at N = K = 4096 and 8192 (where data-parallel wins again)
#   w4a16     lesson 07's targets: M = 1 and 16 at N = K = 4096, 8192, 16384, group sizes 32 and 64,
#             the Llama-3-8B decode projections; M from 2 to 128 (where cuBLAS fp16 wins again)
#   sparse_ffn lesson 08's targets: Llama-2-7B (two matrices and SwiGLU) at M = 16 and 512, sparsity
#             0 to 0.9; GPT-2 at M = 2048
# On a device that runs one command for at most 10 minutes: "build tests lessons", "build sanitize"
# (about 450 s on an H100), "build ncu compare", "build backward", "build train", "build chain" and
# "build splitk w4a16 sparse_ffn", one call each. On a machine of two GPUs, scripts/gpu-check-pair.sh
# runs stages side by side, one list per card, and the microsecond ones alone after.
#
# GPU_CHECK_LESSONS="lesson07_w4a16 ..." limits the sanitize and lessons stages' lesson lists;
# GPU_CHECK_GTEST_FILTER="Lesson05*" the tests stage's GPU tests (gpu_tests only; the others then skip).
# WORKBOOK_COMMIT names the commit (a copy of the tree has no .git of its own, or the wrong one);
# without the build stage it must be the commit the build was configured at.
# Leaves under $OUT (default ./gpu-check-out): summary.txt and gpu-check.tar.gz
# (results/, traces/, logs/). Exit status: non-zero when a stage failed.
set -u -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-check-out}
build=${WORKBOOK_BUILD_DIR:-$root/build-gpu}
bin=$build/bin
work=$out/gpu-check
summary=$out/summary.txt
failed=0

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

say() { echo "$*" | tee -a "$summary"; }

# run_stage NAME: runs stage_NAME, logs it, records PASS/FAIL and its duration.
run_stage() {
  local name=$1 start rc
  start=$(date +%s)
  echo "== stage $name" | tee -a "$summary"
  "stage_$name" > >(tee "$work/logs/$name.log") 2>&1
  rc=$?
  say "-- stage $name: $([ $rc -eq 0 ] && echo PASS || echo "FAIL (exit $rc)") in $(( $(date +%s) - start )) s"
  [ $rc -eq 0 ] || failed=1
}

# have BINARY: built, and (for a lesson) selected by GPU_CHECK_LESSONS when that is set.
have() {
  [ -x "$bin/$1" ] || return 1
  [ -z "${GPU_CHECK_LESSONS:-}" ] || [[ $1 != lesson* ]] || [[ " $GPU_CHECK_LESSONS " == *" $1 "* ]]
}

# The lessons, in order: lessons/catalog.json, as the build's workbook lists them; only those named
# in GPU_CHECK_LESSONS (space-separated) when it is set, for a check of one lesson's changes.
lesson_ids() {
  local l
  for l in $("$bin/workbook" list --ids); do
    if [ -z "${GPU_CHECK_LESSONS:-}" ] || [[ " $GPU_CHECK_LESSONS " == *" $l "* ]]; then echo "$l"; fi
  done
}

stage_build() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  [ -f "$build/CMakeCache.txt" ] && gen=()
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DWORKBOOK_CUDA_ARCHITECTURES="${WORKBOOK_CUDA_ARCHITECTURES:-90a-real}" &&
    cmake --build "$build" -j "$(nproc)"
}

stage_tests() {
  local rc=0
  "$bin/cpu_tests" --gtest_brief=1 || rc=1
  if [ -n "${GPU_CHECK_GTEST_FILTER:-}" ]; then
    echo "GPU tests: only gpu_tests --gtest_filter=$GPU_CHECK_GTEST_FILTER (GPU_CHECK_GTEST_FILTER)"
    # A filter that names no test would pass having run nothing.
    if ! "$bin/gpu_tests" --gtest_list_tests --gtest_filter="$GPU_CHECK_GTEST_FILTER" | grep -q '^  '; then
      echo "GPU_CHECK_GTEST_FILTER='$GPU_CHECK_GTEST_FILTER' names no test of gpu_tests (gpu_tests --gtest_list_tests lists them)"
      return 1
    fi
    "$bin/gpu_tests" --gtest_brief=1 --gtest_filter="$GPU_CHECK_GTEST_FILTER" || rc=1
    return $rc
  fi
  "$bin/gpu_tests" --gtest_brief=1 || rc=1
  "$bin/activation_gpu_tests" --gtest_brief=1 || rc=1
  "$bin/q4_gpu_tests" --gtest_brief=1 || rc=1
  "$bin/wgmma_gpu_tests" --gtest_brief=1 || rc=1
  # The viewer's model, and its "run on this GPU" (the UI itself needs ImGui/GLFW, often absent here).
  if [ -x "$bin/viewer_model_tests" ]; then "$bin/viewer_model_tests" --gtest_brief=1 || rc=1; fi
  if [ -x "$bin/viewer_gpu_tests" ]; then "$bin/viewer_gpu_tests" --gtest_brief=1 || rc=1; fi
  return $rc
}

stage_sanitize() {
  local rc=0 l tool shape log
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found"; return 1; }
  for l in $(lesson_ids); do
    have "$l" || continue
    local tools=(memcheck racecheck)
    [ "$l" = lesson06_splitk ] || [ "$l" = lesson07_w4a16 ] || [ "$l" = lesson08_sparse_ffn ] && tools+=(synccheck)
    # Small shapes with tails; lesson 04 also at 144 tiles, where Stream-K splits 12 of them 4 ways;
    # lesson 06 at skinny shapes, split 4 to 16 (semaphores, Stream-K owners waiting), and the cluster kernel
    # at M = 16 and split 3 (sums sent into other blocks' shared memory).
    local shapes=("130 136 72")
    [ "$l" = lesson04_hopper ] && shapes+=("1100 4000 200")
    [ "$l" = lesson05_backward ] && shapes+=("130 136 72 --part train --act gelu" "130 136 72 --part train" "130 136 72 --part chain --act gelu" "130 136 72 --part chain --act silu --bias no")
    [ "$l" = lesson06_splitk ] && shapes+=("1 4104 1000" "17 1000 2056" "16 1000 2056" "9 520 1000 --split-k 3")
    # Lesson 07: K a multiple of the group size; odd N, G = 32, splits forced (the semaphores and the
    # last-block counters), M above 32 (two m tiles of the shuffled kernel), K that leaves the last 128-deep slice half empty,
    # clusters of 16 blocks reading each other's shared memory, and warp_ring's blocks of 16 warps (one an SM,
    # swapped in clusters of 2 at 1 x 4096 x 4096, 16 tokens a block at 16 x 8192 x 2048; the small shapes take blocks of 8).
    [ "$l" = lesson07_w4a16 ] && shapes=("3 136 256" "17 1001 2048 --group-size 32" "1 4104 1024 --split-k 7" "9 2000 2080 --group-size 32" "8 520 1984 --group-size 64"
                                         "70 520 512 --group-size 64 --split-k 3" "5 1000 4096 --split-k 16"
                                         "1 4096 4096" "16 8192 2048")
    # Lesson 08 (sizes from --model: the entries are its arguments): tails of every tile height, SwiGLU,
    # split-K's last-block counters (M = 3 at s = 0.9), nothing active, and both products on the
    # warp-specialised Stream-K kernel (M = 256: one band of its 256 x 128 tile, tiles shared along k).
    [ "$l" = lesson08_sparse_ffn ] && shapes=("--model gpt2 --m 17 --sparsity 0.75" "--model gpt2 --m 130 --sparsity 0.5"
                                              "--model llama2-7b-swiglu --m 3 --sparsity 0.9"
                                              "--model gpt2 --m 5 --sparsity 1"
                                              "--model llama2-7b --m 256 --sparsity 0.5 --variant split_k")
    # racecheck fails inside the tool on lesson 08's Stream-K kernel ("Internal Sanitizer Error: The
    # Sanitizer failed to handle a hardware exception"; memcheck and synccheck are clean on it): it is
    # left out of racecheck, and said (docs/notes/08_sparse_ffn.md).
    local exclude=()
    for tool in "${tools[@]}"; do
      exclude=()
      if [ "$tool" = racecheck ] && [ "$l" = lesson08_sparse_ffn ]; then
        exclude=(--kernel-name-exclude kns=gather_streamk)
        echo "racecheck $l: gather_streamk_kernel left out (the tool fails on it; memcheck and synccheck cover it)"
      fi
      log=$work/logs/sanitize-$tool-$l.log
      : > "$log"
      local failed_here=0
      for shape in "${shapes[@]}"; do
        set -- $shape
        local args=("$@")
        [[ $1 == --* ]] || args=(--m "$1" --n "$2" --k "$3" "${@:4}")
        if compute-sanitizer --tool "$tool" --error-exitcode 99 "${exclude[@]}" \
             "$bin/$l" "${args[@]}" --reps 1 --rounds 1 > "$log.part" 2>&1; then
          :
        elif [ "$tool" = racecheck ] && grep -q "Race reported" "$log.part" &&
             ! grep -E "^========= +(Error|and )" "$log.part" | grep -qv "nvjet" &&
             ! grep -q "Internal Sanitizer Error\|FAILED verification\|CUDA error" "$log.part"; then
          # Every hazard reported lies inside cuBLAS's own kernels (nvjet_*, the reference, at some
          # skinny shapes): NVIDIA's code, not the workbook's. Said, and not counted against it.
          echo "racecheck $l at ${args[*]}: hazards reported only inside cuBLAS's kernels" \
               "($(grep -m1 -o 'nvjet[A-Za-z0-9_]*' "$log.part")); none in the workbook's"
        else
          failed_here=1
        fi
        cat "$log.part" >> "$log"
        rm -f "$log.part"
      done
      if [ $failed_here = 0 ]; then
        echo "$tool $l: clean ($(grep -c . "$log") lines of output)"
      else
        echo "$tool $l: FAILED"; tail -n 30 "$log"; rc=1
      fi
      grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$log" | sed "s/^/  /"
    done
  done
  return $rc
}

# trace LESSON VARIANT [SIZE]: a traced run of one variant at SIZE^3 (default 4096);
# the file is LESSON.VARIANT.json, or LESSON.VARIANT.SIZE.json for another size.
trace() {
  local l=$1 v=$2 s=${3:-4096} name
  have "$l" || return 0
  name=$l.$v; [ "$s" = 4096 ] || name=$name.$s
  "$bin/$l" --variant "$v" --reps 9 --rounds 3 --m "$s" --n "$s" --k "$s" --trace "$work/traces/$name.json.gz"
}

stage_lessons() {
  local rc=0 l
  for l in $(lesson_ids); do
    have "$l" || { echo "$l: not built or not selected"; continue; }
    "$bin/$l" --json "$work/results/$l.json" || rc=1
  done
  # Traces the viewer replays: the largest (naive, 65,536 blocks), row-major vs grouped, persistent.
  trace lesson01_naive coalesced || rc=1
  trace lesson02_blocked "$("$bin/lesson02_blocked" --list | tail -n 1 | cut -d' ' -f1)" || rc=1
  trace lesson03_grouped row_major || rc=1
  trace lesson03_grouped grouped8 || rc=1
  trace lesson03_grouped row_major 8192 || rc=1
  trace lesson03_grouped grouped8 8192 || rc=1
  trace lesson04_hopper persistent || rc=1
  # Step 5 against step 9 at 4096^3: 116 blocks of 4 tiles and 16 of 3, against 128 of 4.
  trace lesson04_hopper tma_store || rc=1
  trace lesson04_hopper balanced || rc=1
  # Lesson 05: both products in two launches, in one (dX tiles, then dW tiles, on one grid),
  # with act' fused (dX, then dWᵀ), and with the act' pass inside the launch (tiles that waited
  # for their chunk of dP start late).
  trace lesson05_backward tma_layouts || rc=1
  trace lesson05_backward one_launch || rc=1
  trace lesson05_backward fused || rc=1
  trace lesson05_backward pass_inside || rc=1
  if have lesson05_backward; then
    "$bin/lesson05_backward" --act gelu --json "$work/results/lesson05_backward-gelu.json" || rc=1
  fi
  # Lesson 06 at M = 1, N = K = 4096: the idle SMs of the data-parallel grid, and the k ranges of
  # each way of splitting.
  if have lesson06_splitk; then
    for v in data_parallel small_tiles atomic serial streamk streaming cluster; do
      "$bin/lesson06_splitk" --variant $v --reps 9 --rounds 3 --m 1 --n 4096 --k 4096 \
          --trace "$work/traces/lesson06_splitk.$v.json.gz" || rc=1
    done
  fi
  # Lesson 07 at M = 1, N = K = 4096: each kernel's split and k ranges; and step 7 at
  # 16 x 16384 x 16384: 256 strips on 132 SMs, two blocks an SM, the older one first.
  if have lesson07_w4a16; then
    for v in paper lop3 shuffled serial in_order cluster direct warp_ring narrow; do
      "$bin/lesson07_w4a16" --variant $v --reps 9 --rounds 3 --m 1 --n 4096 --k 4096 \
          --trace "$work/traces/lesson07_w4a16.$v.json.gz" || rc=1
    done
    "$bin/lesson07_w4a16" --variant warp_ring --reps 9 --rounds 3 --m 16 --n 16384 --k 16384 \
        --trace "$work/traces/lesson07_w4a16.warp_ring.m16-16384.json.gz" || rc=1
  fi
  # Lesson 08 at its default (Llama-2-7B, M = 16, s = 0.75): the neurons each unit gathered;
  # and split_k at M = 512, s = 0.5: the Stream-K kernel's blocks sharing the gathered tiles.
  if have lesson08_sparse_ffn; then
    for v in fused gathered neuron_major split_k split_k_atomic; do
      "$bin/lesson08_sparse_ffn" --variant $v --reps 9 --rounds 3 \
          --trace "$work/traces/lesson08_sparse_ffn.$v.json.gz" || rc=1
    done
    "$bin/lesson08_sparse_ffn" --variant split_k --m 512 --sparsity 0.5 --reps 9 --rounds 3 \
        --trace "$work/traces/lesson08_sparse_ffn.split_k.m512-s0.5.json.gz" || rc=1
  fi
  # Step 5 against Stream-K and step 9 where the last wave is 18% full: the idle SMs, the shared
  # run, and 96 blocks of 3 tiles.
  if have lesson04_hopper; then
    for v in tma_store streamk balanced; do
      "$bin/lesson04_hopper" --variant $v --m 3072 --n 3072 --k 4096 --reps 9 --rounds 3 \
          --trace "$work/traces/lesson04_hopper.$v.3072x3072x4096.json.gz" || rc=1
    done
  fi
  return $rc
}

# Nsight Compute beside the L2 model: lesson 03's --ncu mode measures the DRAM bytes
# read and the L2 hit rate of each order (one profiled launch each, clocks left as they
# are) and prints them under the model's predictions.
stage_ncu() {
  local rc=0 s
  command -v ncu >/dev/null || { echo "ncu not found: skipping the measured side of the L2 model"; return 0; }
  have lesson03_grouped || return 0
  for s in 4096 8192; do
    echo "-- lesson03_grouped at ${s}^3"
    "$bin/lesson03_grouped" --ncu --variant row_major,column_major,grouped8 --m $s --n $s --k $s --reps 3 \
        --rounds 1 --no-check | sed -n '/^model predictions/,$p' || rc=1
  done
  return $rc
}

stage_compare() {
  local rc=0 s l
  for s in 2048 4096; do
    "$bin/workbook" compare --m $s --n $s --k $s --json "$work/results/compare-$s.json" || rc=1
  done
  # Lesson 03 where the L2 model says the order decides the time on an H100 (its report says
  # whether it does on this GPU, and where it would).
  if have lesson03_grouped; then
    echo "-- lesson03_grouped orders at 4096x65536x4096"
    "$bin/lesson03_grouped" --m 4096 --n 65536 --k 4096 --variant row_major,column_major,grouped8,grouped32 \
        --rounds 5 --json "$work/results/lesson03_grouped-4096x65536x4096.json" || rc=1
  fi
  # The fast lessons alone at 8192^3 and 1024^3 (the naive kernels would take minutes at 8192^3).
  for l in lesson03_grouped lesson04_hopper; do
    have "$l" || continue
    for s in 1024 8192; do "$bin/$l" --m $s --n $s --k $s --json "$work/results/$l-$s.json" || rc=1; done
  done
  # Lesson 04's targets (>= 1.00x cuBLAS at 4096^3 and 8192^3, >= 0.90x at 2048^3, the fused
  # epilogue < 2%): its fastest kernels with and without the activations, and Stream-K. 45
  # interleaved rounds of 20 launches each: one 2048^3 launch takes 28 us and single launches
  # scatter by a few percent, so 9 rounds of 3 put the fused GELU's cost anywhere in 0-2.8%
  # from run to run; 900 launches per variant settle it within a few tenths (docs/notes/measuring.md).
  if have lesson04_hopper; then
    for s in 2048 4096 8192; do
      echo "-- lesson04_hopper targets at ${s}^3"
      "$bin/lesson04_hopper" --rounds 45 --reps 900 --m $s --n $s --k $s \
          --variant tma_store,tma_store_gelu,tma_store_relu,streamk,balanced,balanced_gelu,balanced_relu,cublaslt,cublaslt_gelu \
          --json "$work/results/lesson04_hopper-targets-$s.json" || rc=1
    done
    # Where Stream-K shares the last wave (18% and 45% full), against the balanced grid.
    for shape in "3072 3072 4096" "2304 4608 4096"; do
      set -- $shape
      echo "-- lesson04_hopper Stream-K at ${1}x${2}x${3}"
      "$bin/lesson04_hopper" --variant tma_store,streamk,streamk_gelu,balanced --rounds 9 --m $1 --n $2 --k $3 \
          --json "$work/results/lesson04_hopper-streamk-${1}x${2}x${3}.json" || rc=1
    done
  fi
  return $rc
}

# Lesson 05's targets (a stage of its own: with compare it would pass the device's 10 minutes).
stage_backward() {
  local rc=0 shape act size part
  have lesson05_backward || { echo "lesson05_backward: not built or not selected"; return 0; }
  # Lesson 05's targets: the backward of relu and gelu layers at 4096^3, 8192^3 and the Llama-3-8B
  # MLP's up (K 4096, N 14336) and down (K 14336, N 4096) projections, 4096 tokens.
  for shape in "4096 4096 4096" "8192 8192 8192" "4096 14336 4096" "4096 4096 14336"; do
    set -- $shape
    for act in relu gelu; do
      echo "-- lesson05_backward $act at ${1}x${2}x${3}"
      "$bin/lesson05_backward" --act $act --rounds 9 --m $1 --n $2 --k $3 \
          --json "$work/results/lesson05_backward-$act-${1}x${2}x${3}.json" || rc=1
    done
  done
  # Each product alone, given dP, against cuBLAS's same-layout GEMM.
  for size in 4096 8192; do
    for part in dx dw; do
      echo "-- lesson05_backward --part $part at ${size}^3"
      "$bin/lesson05_backward" --part $part --rounds 9 --m $size --n $size --k $size \
          --json "$work/results/lesson05_backward-$part-${size}.json" || rc=1
    done
  done
  return $rc
}

# lesson05_part PART "M N K" ...: lesson 05 with --part PART, relu and gelu at each shape (9 rounds),
# its results as lesson05_backward-PART-ACT-MxNxK.json.
lesson05_part() {
  local rc=0 part=$1 shape act
  shift
  have lesson05_backward || { echo "lesson05_backward: not built or not selected"; return 0; }
  for shape in "$@"; do
    set -- $shape
    for act in relu gelu; do
      echo "-- lesson05_backward --part $part $act at ${1}x${2}x${3}"
      "$bin/lesson05_backward" --part $part --act $act --rounds 9 --m $1 --n $2 --k $3 \
          --json "$work/results/lesson05_backward-$part-$act-${1}x${2}x${3}.json" || rc=1
    done
  done
  return $rc
}

# Lesson 05's forward and backward together (--part train): each step's forward, then its backward,
# against the framework's sequence (cuBLASLt addmm, the activation's pass, the backward's sequence).
stage_train() { lesson05_part train "4096 4096 4096" "8192 8192 8192" "4096 14336 4096"; }

# Lesson 05's backward from an MLP's output (--part chain): every step first makes dZ = dY Vᵀ (step 5
# makes dP there, act' in the product's epilogue; cuBLASLt, for GELU, with its DGELU epilogue), against
# the sequence (cublasGemmEx for dZ, then the backward's sequence).
stage_chain() { lesson05_part chain "4096 4096 4096" "8192 8192 8192" "4096 14336 4096" "4096 4096 14336"; }

# Lesson 06's targets: M = 1 and 16 at N = K = 4096, 8192, 16384 (>= 1.2x, 1.1x, 0.98x cuBLAS; >= 85%
# of the copy at 16384) and at the Llama-3-8B decode projections (N x K); then M from 1 to 64 at
# N = K = 4096 and 8192, for the M where the data-parallel grid wins again.
stage_splitk() {
  local rc=0 m nk
  have lesson06_splitk || { echo "lesson06_splitk: not built or not selected"; return 0; }
  for m in 1 16; do
    for nk in "4096 4096" "8192 8192" "16384 16384" "6144 4096" "14336 4096" "4096 14336"; do
      set -- $nk
      echo "-- lesson06_splitk at ${m}x${1}x${2}"
      "$bin/lesson06_splitk" --rounds 9 --reps 270 --m $m --n $1 --k $2 \
          --json "$work/results/lesson06_splitk-${m}x${1}x${2}.json" || rc=1
    done
  done
  for nk in 4096 8192; do
    for m in 2 4 8 32 48 64; do
      echo "-- lesson06_splitk at ${m}x${nk}x${nk}"
      "$bin/lesson06_splitk" --rounds 5 --reps 100 --m $m --n $nk --k $nk \
          --json "$work/results/lesson06_splitk-${m}x${nk}x${nk}.json" || rc=1
    done
  done
  return $rc
}

# Lesson 07's targets: M = 1 and 16 at N = K = 4096, 8192, 16384 (>= 2.0x, 2.5x, 3.0x cuBLAS fp16;
# >= 85% of the copy at 16384), group sizes 32 and 64 at 8192, the Llama-3-8B decode projections;
# then M from 2 to 128 at N = K = 4096 and 8192, for the M where cuBLAS fp16 wins again.
stage_w4a16() {
  local rc=0 m nk
  have lesson07_w4a16 || { echo "lesson07_w4a16: not built or not selected"; return 0; }
  for m in 1 16; do
    for nk in "4096 4096" "8192 8192" "16384 16384" "14336 4096" "4096 14336"; do
      set -- $nk
      echo "-- lesson07_w4a16 at ${m}x${1}x${2}"
      "$bin/lesson07_w4a16" --rounds 9 --reps 270 --m $m --n $1 --k $2 \
          --json "$work/results/lesson07_w4a16-${m}x${1}x${2}.json" || rc=1
    done
    for g in 32 64; do
      echo "-- lesson07_w4a16 at ${m}x8192x8192, group size $g"
      "$bin/lesson07_w4a16" --rounds 9 --reps 270 --m $m --n 8192 --k 8192 --group-size $g \
          --json "$work/results/lesson07_w4a16-${m}x8192x8192-g${g}.json" || rc=1
    done
  done
  for nk in 4096 8192; do
    for m in 2 4 8 32 64 128; do
      echo "-- lesson07_w4a16 at ${m}x${nk}x${nk}"
      "$bin/lesson07_w4a16" --rounds 5 --reps 100 --m $m --n $nk --k $nk \
          --json "$work/results/lesson07_w4a16-${m}x${nk}x${nk}.json" || rc=1
    done
  done
  return $rc
}

stage_sparse_ffn() {
  local rc=0 model m s
  have lesson08_sparse_ffn || { echo "lesson08_sparse_ffn: not built or not selected"; return 0; }
  for model in llama2-7b llama2-7b-swiglu; do
    for m in 16 512; do
      for s in 0 0.5 0.75 0.9; do
        echo "-- lesson08_sparse_ffn $model M=$m s=$s"
        "$bin/lesson08_sparse_ffn" --model $model --m $m --sparsity $s --rounds 5 --reps 50 \
            --json "$work/results/lesson08_sparse_ffn-$model-m$m-s$s.json" || rc=1
      done
    done
  done
  for s in 0.5 0.75 0.9; do
    echo "-- lesson08_sparse_ffn gpt2 M=2048 s=$s"
    "$bin/lesson08_sparse_ffn" --model gpt2 --m 2048 --sparsity $s --rounds 5 --reps 50 \
        --json "$work/results/lesson08_sparse_ffn-gpt2-m2048-s$s.json" || rc=1
  done
  return $rc
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(build tests sanitize lessons ncu compare backward train chain splitk w4a16 sparse_ffn)
for s in "${stages[@]}"; do
  declare -F "stage_$s" >/dev/null || { echo "gpu-check: unknown stage '$s' (build tests sanitize lessons ncu compare backward train chain splitk w4a16 sparse_ffn)"; exit 2; }
done
# The lessons write the commit their build was configured at into their results: stages run
# before (or without) the build stage on a build of another commit would file them under the
# wrong one. (A build configured before workbook-commit.txt existed is not checked.)
commit=${WORKBOOK_COMMIT:-$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
if [ "${stages[0]}" != build ] && [ -f "$build/workbook-commit.txt" ]; then
  built=$(head -n 1 "$build/workbook-commit.txt")
  built=${built:-unknown}
  [ "$built" = "$commit" ] ||
    { echo "gpu-check: the build in $build is of commit $built, not $commit: run the build stage first (or WORKBOOK_COMMIT=$built)" >&2; exit 2; }
fi
mkdir -p "$work/results" "$work/traces" "$work/logs"
{
  echo "matmul-workbook GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $commit"
  # The GPU the stages run on: the one CUDA_VISIBLE_DEVICES names on a machine of several, else all.
  gpu_sel=()
  [[ ${CUDA_VISIBLE_DEVICES:-} =~ ^[0-9]+$ ]] && gpu_sel=(-i "$CUDA_VISIBLE_DEVICES")
  nvidia-smi "${gpu_sel[@]}" --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
  nvcc --version 2>/dev/null | tail -n 1
} | tee "$summary"
for s in "${stages[@]}"; do
  if [ "$s" != build ] && [ ! -x "$bin/workbook" ]; then say "-- stage $s: FAIL (no build in $build)"; failed=1; continue; fi
  run_stage "$s"
done

# The lesson reports, for the summary.
if [ -f "$work/logs/lessons.log" ]; then
  say ""; say "== lesson tables (stage lessons)"
  grep -E "^(GPU|shape|variant|-{20}|[a-z0-9_]+ +[0-9.]+ +[0-9.]+|.*skipped:|note:|trace:|WARNING)" "$work/logs/lessons.log" >> "$summary"
fi
if [ -f "$work/logs/ncu.log" ]; then
  say ""; say "== L2 model vs Nsight Compute (stage ncu)"
  cat "$work/logs/ncu.log" >> "$summary"
fi
if [ -f "$work/logs/compare.log" ]; then
  say ""; say "== compare (stage compare)"
  grep -vE "^running " "$work/logs/compare.log" | grep -vE "^  (idea|new|faster|look)" >> "$summary"
fi
for s in backward train chain; do
  [ -f "$work/logs/$s.log" ] || continue
  say ""; say "== lesson 05 (stage $s)"
  grep -E "^-- lesson05|^[a-z0-9_]+ +[0-9.]+ +[0-9.]+ +[0-9.]+|FAIL|^WARNING" "$work/logs/$s.log" >> "$summary"
done
if [ -f "$work/logs/splitk.log" ]; then
  say ""; say "== lesson 06 targets (stage splitk)"
  grep -E "^-- lesson06|^fastest here|^note:|FAIL|^WARNING" "$work/logs/splitk.log" >> "$summary"
fi
if [ -f "$work/logs/w4a16.log" ]; then
  say ""; say "== lesson 07 targets (stage w4a16)"
  grep -E "^-- lesson07|^fastest here|^quantization error|^note:|FAIL|^WARNING" "$work/logs/w4a16.log" >> "$summary"
fi
if [ -f "$work/logs/sparse_ffn.log" ]; then
  say ""; say "== lesson 08 targets (stage sparse_ffn)"
  grep -E "^-- lesson08|^ideal|^  [a-z_]+ +[0-9.]+x the dense|^note:|FAIL|^WARNING" "$work/logs/sparse_ffn.log" >> "$summary"
fi
disturbed=$(cd "$work/logs" && cat lessons.log compare.log backward.log train.log chain.log splitk.log w4a16.log sparse_ffn.log 2>/dev/null |
            grep -c "^WARNING: rounds were disturbed" || true)
[ "${disturbed:-0}" -eq 0 ] || { say ""; say "note: $disturbed run(s) had disturbed rounds (the WARNING lines above): their ratios are not results; run those shapes again"; }
say ""; say "gpu-check: $([ $failed -eq 0 ] && echo PASSED || echo FAILED) (stages: ${stages[*]})"
tar czf "$out/gpu-check.tar.gz" -C "$out" gpu-check && rm -rf "$work"
exit $failed
