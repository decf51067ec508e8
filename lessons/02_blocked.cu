// Lesson 02 - blocked: shared-memory tiles first, then tensor cores.
//
// What is new since lesson 01 (one thread per output, reading a whole row of A
// and a column of B from global memory), two ideas:
//
// 1. Blocks of outputs share their inputs (the "better matmul" notebook).
//    A block computes a BLOCK_M x BLOCK_N tile of C, stepping through K in
//    BLOCK_K slices that it stages in shared memory. Each staged element of A is
//    used by BLOCK_N outputs and each element of B by BLOCK_M outputs, so global
//    traffic falls by the tile size. `smem_16x16x32` is the notebook's kernel
//    with the notebook's tile sizes: one FMA per thread per k, as in lesson 01,
//    but fed from shared memory.
//
// 2. Tensor cores, fed by register blocking.
//    One mma.sync.m16n8k16 is a 16x8x16 multiply-add for the whole warp: 2048
//    FMAs, 64 times a warp-wide FMA instruction (WMMA's 16x16x16 is two of
//    them). To keep the tensor cores busy each warp owns a large sub-tile of C
//    in registers, loads a few A and B fragments per 16-deep step and combines
//    every A fragment with every B fragment. The steps:
//      wmma_64x64x32             WMMA API, each warp 2x2 fragments (32x32 outputs)
//      mma_128x128               mma.sync + ldmatrix, 8 warps of 64x32, padded smem
//      mma_128x128_w64x64        4 warps of 64x64: each fragment feeds twice as
//                                  many mma, but half the warps hide latency
//      mma_128x128_prefetch      8 warps of 64x32, and the next k-slice is loaded
//                                  into registers while the tensor cores work on
//                                  this one (64x64 warps + prefetch would need
//                                  more than 255 registers a thread)
//    What is left for lesson 03: the loads still pass through registers
//    (cp.async skips them and allows a deeper pipeline), the tile order is
//    fixed (row-major), and the stores are 4 bytes wide.
//
// What to look for: smem_16x16x32 against lesson 01 (same FMAs, 16x fewer
// requests to memory), then each tensor-core step against it and against cuBLAS
// in the same run.
//
// Run:  build/bin/lesson02_blocked                            (4096^3, all variants)
//       build/bin/lesson02_blocked --m 127 --n 257 --k 129    (tails: the masked paths)
// Measured: docs/lessons/02_blocked.md.

#include "02_blocked/mma_blocked.cuh"
#include "02_blocked/smem_tiled.cuh"
#include "02_blocked/wmma_blocked.cuh"
#include "harness/gemm_problem.cuh"

namespace {

using namespace wb;
using blocked::MmaBlockedShape;

// (BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, PREFETCH)
using Mma128 = MmaBlockedShape<128, 128, 32, 2, 4, false>;          // 8 warps of 64x32
using Mma128Warp64 = MmaBlockedShape<128, 128, 32, 2, 2, false>;    // 4 warps of 64x64
using Mma128Prefetch = MmaBlockedShape<128, 128, 32, 2, 4, true>;   // 8 warps of 64x32, register prefetch

std::vector<GemmVariant> variants() {
  return {
      {.name = "smem_16x16x32",
       .what = "the notebook's block algorithm: 16x16 tile, 32-deep smem slices, one FMA output per thread",
       .min_cc = 75,
       .config = smem_tiled::smem_tiled_config,
       .launch = smem_tiled::launch_smem_tiled},
      {.name = "wmma_64x64x32",
       .what = "tensor cores through WMMA: 64x64 tile, 4 warps of 2x2 16x16x16 fragments",
       .min_cc = 75,
       .config = blocked::wmma_blocked_config,
       .launch = blocked::launch_wmma_blocked},
      {.name = "mma_128x128",
       .what = "mma.sync + ldmatrix: 128x128 tile, 8 warps of 64x32 in registers, padded smem",
       .min_cc = 80,
       .config = blocked::mma_blocked_config<Mma128>,
       .launch = blocked::launch_mma_blocked<Mma128>},
      {.name = "mma_128x128_w64x64",
       .what = "as above with 4 warps of 64x64: each fragment reused twice as often",
       .min_cc = 80,
       .config = blocked::mma_blocked_config<Mma128Warp64>,
       .launch = blocked::launch_mma_blocked<Mma128Warp64>},
      {.name = "mma_128x128_prefetch",
       .what = "8 warps of 64x32, next k-slice loaded to registers during the math, 2 smem buffers",
       .min_cc = 80,
       .config = blocked::mma_blocked_config<Mma128Prefetch>,
       .launch = blocked::launch_mma_blocked<Mma128Prefetch>},
  };
}

}  // namespace

int main(int argc, char** argv) {
  return wb::run_lesson(wb::gemm_lesson("lesson02_blocked", variants()), argc, argv);
}
