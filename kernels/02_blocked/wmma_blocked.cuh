// Lesson 02, step 2: the block algorithm of smem_tiled.cuh with the multiply-adds
// on tensor cores through WMMA, the C++ tensor-core API: a warp multiplies
// 16x16x16 fragments; each warp owns 2 x 2 fragments (32 x 32 outputs), the
// block 64 x 64. Shared memory is padded by 8 halves (16 bytes) per row, so the
// rows a fragment load reads fall in different bank groups.
#pragma once

#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "02_blocked/tile_io.cuh"
#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/trace.cuh"
#include "schedule/tile_order.hpp"

namespace wb::blocked {

// ---------------------------------------------------------------- step 2: WMMA
struct WmmaBlockedShape {
  static constexpr int BLOCK_M = 64;  // <- output rows per block
  static constexpr int BLOCK_N = 64;  // <- output columns per block
  static constexpr int BLOCK_K = 32;  // <- k depth staged per step
  static constexpr int WARPS_M = 2;   // <- warps down the block tile
  static constexpr int WARPS_N = 2;   // <- warps across it
  static constexpr int FRAG = 16;     // WMMA fp16 fragments are 16 x 16 x 16
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WARP_M = BLOCK_M / WARPS_M;  // 32
  static constexpr int WARP_N = BLOCK_N / WARPS_N;  // 32
  static constexpr int FRAGS_M = WARP_M / FRAG;     // 2
  static constexpr int FRAGS_N = WARP_N / FRAG;     // 2
  static constexpr int A_LD = BLOCK_K + 8;          // padded shared row, halves
  static constexpr int B_LD = BLOCK_N + 8;
  static constexpr int C_LD = BLOCK_N + 4;          // fp32 staging row for the epilogue
};

static_assert(WmmaBlockedShape::WARP_M % WmmaBlockedShape::FRAG == 0 &&
                  WmmaBlockedShape::WARP_N % WmmaBlockedShape::FRAG == 0,
              "a warp tile must be a whole number of 16x16 WMMA fragments");
static_assert(WmmaBlockedShape::BLOCK_K % WmmaBlockedShape::FRAG == 0,
              "BLOCK_K must be a whole number of 16-deep WMMA steps");

// 1-D launch, one block per tile, row-major tile order as in step 1.
__global__ void __launch_bounds__(WmmaBlockedShape::THREADS)
    wmma_blocked_gemm_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c, int m,
                             int n, int k, TraceRecord* trace) {
  using S = WmmaBlockedShape;
  namespace wmma = nvcuda::wmma;
  __shared__ alignas(128) __half a_smem[S::BLOCK_M * S::A_LD];  // (BLOCK_M, BLOCK_K), padded
  __shared__ alignas(128) __half b_smem[S::BLOCK_K * S::B_LD];  // (BLOCK_K, BLOCK_N), padded
  __shared__ alignas(128) float c_smem[S::BLOCK_M * S::C_LD];   // (BLOCK_M, BLOCK_N): the fragment layout is
                                                                // opaque, so masked stores go through here

  const uint64_t t0 = trace_start(trace);
  const TileCoord tile = row_major_tile(int(blockIdx.x), ceil_div(m, S::BLOCK_M), ceil_div(n, S::BLOCK_N));
  const int m0 = tile.m * S::BLOCK_M, n0 = tile.n * S::BLOCK_N;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp / S::WARPS_N, warp_n = warp % S::WARPS_N;
  const bool a_rows_aligned = rows_16byte_aligned(a, k);
  const bool b_rows_aligned = rows_16byte_aligned(b, n);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[S::FRAGS_M][S::FRAGS_N];
#pragma unroll
  for (int i = 0; i < S::FRAGS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::FRAGS_N; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  TileChunksInRegisters<S::BLOCK_M, S::BLOCK_K, S::THREADS> a_chunks;
  TileChunksInRegisters<S::BLOCK_K, S::BLOCK_N, S::THREADS> b_chunks;
  for (int k0 = 0; k0 < k; k0 += S::BLOCK_K) {
    const bool k_inside = k0 + S::BLOCK_K <= k;
    a_chunks.load(a, k, m0, k0, m, k, a_rows_aligned && k_inside && m0 + S::BLOCK_M <= m, a_rows_aligned);
    b_chunks.load(b, n, k0, n0, k, n, b_rows_aligned && k_inside && n0 + S::BLOCK_N <= n, b_rows_aligned);
    a_chunks.store<S::A_LD>(a_smem);
    b_chunks.store<S::B_LD>(b_smem);
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < S::BLOCK_K; kk += S::FRAG) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_frag[S::FRAGS_M];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b_frag[S::FRAGS_N];
#pragma unroll
      for (int i = 0; i < S::FRAGS_M; ++i)
        wmma::load_matrix_sync(a_frag[i], a_smem + (warp_m * S::WARP_M + i * S::FRAG) * S::A_LD + kk, S::A_LD);
#pragma unroll
      for (int j = 0; j < S::FRAGS_N; ++j)
        wmma::load_matrix_sync(b_frag[j], b_smem + kk * S::B_LD + warp_n * S::WARP_N + j * S::FRAG, S::B_LD);
#pragma unroll
      for (int i = 0; i < S::FRAGS_M; ++i)
#pragma unroll
        for (int j = 0; j < S::FRAGS_N; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }
    __syncthreads();
  }

  // Epilogue: fragments -> fp32 staging tile -> masked fp16 stores.
#pragma unroll
  for (int i = 0; i < S::FRAGS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::FRAGS_N; ++j)
      wmma::store_matrix_sync(c_smem + (warp_m * S::WARP_M + i * S::FRAG) * S::C_LD + warp_n * S::WARP_N + j * S::FRAG,
                              acc[i][j], S::C_LD, wmma::mem_row_major);
  __syncthreads();
  const bool pairs_aligned = (reinterpret_cast<uintptr_t>(c) % 4 == 0) && (n % 2 == 0);
  for (int e = threadIdx.x; e < S::BLOCK_M * S::BLOCK_N / 2; e += S::THREADS) {
    const int r = e / (S::BLOCK_N / 2), cc = (e % (S::BLOCK_N / 2)) * 2;
    store_output_pair(c, m, n, m0 + r, n0 + cc, c_smem[r * S::C_LD + cc], c_smem[r * S::C_LD + cc + 1],
                      pairs_aligned);
  }

  trace_end(trace, int(blockIdx.x), tile.m, tile.n, 0, k, t0);
}

inline void launch_wmma_blocked(const GemmArgs& g, cudaStream_t stream) {
  using S = WmmaBlockedShape;
  const int64_t tiles = int64_t(ceil_div(g.m, S::BLOCK_M)) * ceil_div(g.n, S::BLOCK_N);
  wmma_blocked_gemm_kernel<<<dim3(unsigned(tiles)), S::THREADS, 0, stream>>>(g.a, g.b, g.c, g.m, g.n, g.k, g.trace);
  CUDA_CHECK_LAUNCH();
}

inline KernelConfig wmma_blocked_config(const GemmShape& s) {
  using S = WmmaBlockedShape;
  return tile_grid_config(s, S::BLOCK_M, S::BLOCK_N, S::BLOCK_K, S::THREADS,
                          reinterpret_cast<const void*>(&wmma_blocked_gemm_kernel));
}

}  // namespace wb::blocked
