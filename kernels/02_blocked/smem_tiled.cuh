// Lesson 02, step 1: the "better matmul" notebook's block algorithm in CUDA.
//
//   for each output tile (BLOCK_M x BLOCK_N), in parallel:      <- one thread block
//     acc = 0                                                    <- fp32, one value per thread
//     for k0 in range(0, K, BLOCK_K):
//       stage A[m0:m0+BLOCK_M, k0:k0+BLOCK_K] and B[k0:k0+BLOCK_K, n0:n0+BLOCK_N] in shared memory
//       acc += dot(a_tile, b_tile)
//     C[m0:m0+BLOCK_M, n0:n0+BLOCK_N] = acc  (as fp16)
//
// Tile sizes are the notebook's: 16 x 16 outputs, 32 deep in k. The block has one
// thread per output (256 threads). Every element of A and B that a block stages is
// read from shared memory 16 times (by the 16 threads of a row or column), so
// global memory sees BLOCK_N = 16 times less traffic for A and BLOCK_M = 16 times
// less for B than in lesson 01, where each thread read its own row and column.
//
// Tails: loads outside the matrix read zero, stores outside are skipped, so any
// M, N, K >= 1 works. No alignment is assumed (loads are one fp16 at a time).
#pragma once

#include <cuda_fp16.h>

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/trace.cuh"
#include "schedule/tile_order.hpp"

namespace wb::smem_tiled {

constexpr int BLOCK_M = 16;                  // <- output rows per block (the notebook's BLOCK_SIZE_X)
constexpr int BLOCK_N = 16;                  // <- output columns per block (BLOCK_SIZE_Y)
constexpr int BLOCK_K = 32;                  // <- depth of one staged slice of A and B (BLOCK_SIZE_K)
constexpr int THREADS = BLOCK_M * BLOCK_N;   // one thread per output element

// Preconditions: every thread stages the same number of A and B elements.
static_assert((BLOCK_M * BLOCK_K) % THREADS == 0, "the A tile (BLOCK_M x BLOCK_K) must split evenly over the threads");
static_assert((BLOCK_K * BLOCK_N) % THREADS == 0, "the B tile (BLOCK_K x BLOCK_N) must split evenly over the threads");

// 1-D launch, one block per tile, tiles in row-major order (as in lesson 01).
__global__ void __launch_bounds__(THREADS)
    smem_tiled_gemm_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c, int m,
                           int n, int k, TraceRecord* trace) {
  // Staged as fp32: converted once on the way in, not 16 times in the inner loop.
  __shared__ float a_tile[BLOCK_M][BLOCK_K];  // (BLOCK_M, BLOCK_K)
  __shared__ float b_tile[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N)

  const uint64_t t0 = trace_start(trace);
  const TileCoord tile = row_major_tile(int(blockIdx.x), ceil_div(m, BLOCK_M), ceil_div(n, BLOCK_N));
  const int m0 = tile.m * BLOCK_M;
  const int n0 = tile.n * BLOCK_N;
  const int thread = int(threadIdx.x);
  const int tr = thread / BLOCK_N, tc = thread % BLOCK_N;  // the output element this thread owns, in the tile
  const int row = m0 + tr, col = n0 + tc;

  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += BLOCK_K) {
    // Stage the tiles. Consecutive threads take consecutive columns, so each
    // warp reads whole row segments (coalesced). Outside the matrix: zero.
#pragma unroll
    for (int e = thread; e < BLOCK_M * BLOCK_K; e += THREADS) {
      const int r = e / BLOCK_K, kk = e % BLOCK_K;
      const int gr = m0 + r, gk = k0 + kk;
      a_tile[r][kk] = (gr < m && gk < k) ? __half2float(a[int64_t(gr) * k + gk]) : 0.0f;
    }
#pragma unroll
    for (int e = thread; e < BLOCK_K * BLOCK_N; e += THREADS) {
      const int kk = e / BLOCK_N, cc = e % BLOCK_N;
      const int gk = k0 + kk, gc = n0 + cc;
      b_tile[kk][cc] = (gk < k && gc < n) ? __half2float(b[int64_t(gk) * n + gc]) : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them

    // acc += dot(a_tile, b_tile) for this thread's element. In a warp, a_tile
    // reads are broadcasts (two rows) and b_tile reads hit 16 distinct banks.
#pragma unroll
    for (int kk = 0; kk < BLOCK_K; ++kk) acc = fmaf(a_tile[tr][kk], b_tile[kk][tc], acc);
    __syncthreads();  // everyone is done reading before the next slice overwrites the tiles
  }

  if (row < m && col < n) c[int64_t(row) * n + col] = __float2half_rn(acc);

  trace_end(trace, int(blockIdx.x), tile.m, tile.n, 0, k, t0);
}

inline void launch_smem_tiled(const GemmArgs& g, cudaStream_t stream) {
  const int64_t tiles = int64_t(ceil_div(g.m, BLOCK_M)) * ceil_div(g.n, BLOCK_N);
  smem_tiled_gemm_kernel<<<dim3(unsigned(tiles)), THREADS, 0, stream>>>(g.a, g.b, g.c, g.m, g.n, g.k, g.trace);
  CUDA_CHECK_LAUNCH();
}

inline KernelConfig smem_tiled_config(const GemmShape& s) {
  return tile_grid_config(s, BLOCK_M, BLOCK_N, BLOCK_K, THREADS, reinterpret_cast<const void*>(&smem_tiled_gemm_kernel));
}

}  // namespace wb::smem_tiled
