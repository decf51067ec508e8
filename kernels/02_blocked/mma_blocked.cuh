// Lesson 02, steps 3 and 4: the same block algorithm with mma.sync and
// register blocking.
//
//   step 3  mma.sync + ldmatrix (inline PTX, common/mma.cuh): the fragment
//           layout is now ours, so the accumulators stay in registers through the
//           epilogue, and each warp owns a 64 x 32 (or 64 x 64) sub-tile of a
//           128 x 128 block tile. Register blocking: one A fragment is reused by
//           every B fragment of the warp tile and vice versa, so shared-memory
//           traffic per multiply-add drops with the warp tile's size.
//   step 4  register prefetch: the next k-slice is read from global memory into
//           registers before the math on the current slice, and written to a
//           second shared buffer after it, so the load latency hides behind the
//           math. The loads themselves are still ordinary (synchronous) ones;
//           lesson 03 replaces them with cp.async.
//
// Shared memory is padded by 8 halves (16 bytes) per row: the 8 rows an ldmatrix
// phase reads then fall in 8 different 16-byte bank groups (no bank conflicts).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "02_blocked/tile_io.cuh"
#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/mma.cuh"
#include "common/trace.cuh"
#include "schedule/tile_order.hpp"

namespace wb::blocked {

// ---------------------------------------------------------------- steps 3, 4: mma.sync
template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARPS_M_, int WARPS_N_, bool PREFETCH_>
struct MmaBlockedShape {
  static constexpr int BLOCK_M = BLOCK_M_;  // <- output rows per block
  static constexpr int BLOCK_N = BLOCK_N_;  // <- output columns per block
  static constexpr int BLOCK_K = BLOCK_K_;  // <- k depth staged per step
  static constexpr int WARPS_M = WARPS_M_;  // <- warps down the block tile
  static constexpr int WARPS_N = WARPS_N_;  // <- warps across it
  static constexpr bool PREFETCH = PREFETCH_;  // <- load slice k+1 into registers during the math on slice k
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WARP_M = BLOCK_M / WARPS_M;  // the warp tile, (WARP_M, WARP_N)
  static constexpr int WARP_N = BLOCK_N / WARPS_N;
  static constexpr int MMAS_M = WARP_M / 16;        // m16n8k16 tiles per warp tile
  static constexpr int MMAS_N = WARP_N / 8;
  static constexpr int STAGES = PREFETCH ? 2 : 1;   // shared buffers
  static constexpr int A_LD = BLOCK_K + 8;          // padded shared rows (halves): conflict-free ldmatrix
  static constexpr int B_LD = BLOCK_N + 8;
  static constexpr int SMEM_BYTES = STAGES * (BLOCK_M * A_LD + BLOCK_K * B_LD) * 2;

  // Preconditions
  static_assert(BLOCK_M % WARPS_M == 0 && BLOCK_N % WARPS_N == 0, "warps must tile the block tile evenly");
  static_assert(WARP_M % 16 == 0, "a warp tile's height must be a whole number of 16-row mma tiles");
  static_assert(WARP_N % 16 == 0, "a warp tile's width must be a whole number of 16-column ldmatrix.x4.trans loads");
  static_assert(BLOCK_K % 16 == 0, "BLOCK_K must be a whole number of 16-deep mma steps");
  static_assert(SMEM_BYTES <= 48 * 1024, "the shared tiles are static, so they must fit in 48 KiB");
};

template <class S>
__global__ void __launch_bounds__(S::THREADS)
    mma_blocked_gemm_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c, int m,
                            int n, int k, TraceRecord* trace) {
  __shared__ alignas(128) __half a_smem[S::STAGES][S::BLOCK_M * S::A_LD];  // (BLOCK_M, BLOCK_K), padded
  __shared__ alignas(128) __half b_smem[S::STAGES][S::BLOCK_K * S::B_LD];  // (BLOCK_K, BLOCK_N), padded

  const uint64_t t0 = trace_start(trace);
  const TileCoord tile = row_major_tile(int(blockIdx.x), ceil_div(m, S::BLOCK_M), ceil_div(n, S::BLOCK_N));
  const int m0 = tile.m * S::BLOCK_M, n0 = tile.n * S::BLOCK_N;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warp_row0 = (warp / S::WARPS_N) * S::WARP_M;  // the warp tile's origin inside the block tile
  const int warp_col0 = (warp % S::WARPS_N) * S::WARP_N;
  const bool a_rows_aligned = rows_16byte_aligned(a, k);
  const bool b_rows_aligned = rows_16byte_aligned(b, n);
  const bool m_inside = m0 + S::BLOCK_M <= m;
  const bool n_inside = n0 + S::BLOCK_N <= n;

  float acc[S::MMAS_M][S::MMAS_N][4];  // (WARP_M, WARP_N) in mma C-fragment layout
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  TileChunksInRegisters<S::BLOCK_M, S::BLOCK_K, S::THREADS> a_chunks;
  TileChunksInRegisters<S::BLOCK_K, S::BLOCK_N, S::THREADS> b_chunks;
  auto load_slice = [&](int k0) {
    const bool k_inside = k0 + S::BLOCK_K <= k;
    a_chunks.load(a, k, m0, k0, m, k, a_rows_aligned && k_inside && m_inside, a_rows_aligned);
    b_chunks.load(b, n, k0, n0, k, n, b_rows_aligned && k_inside && n_inside, b_rows_aligned);
  };
  auto store_slice = [&](int stage) {
    a_chunks.template store<S::A_LD>(a_smem[stage]);
    b_chunks.template store<S::B_LD>(b_smem[stage]);
  };

  // acc += a_smem[stage] * b_smem[stage] for this warp's tile.
  auto multiply_slice = [&](int stage) {
    const uint32_t a_base = shared_address(a_smem[stage]);
    const uint32_t b_base = shared_address(b_smem[stage]);
#pragma unroll
    for (int kk = 0; kk < S::BLOCK_K; kk += 16) {
      uint32_t a_frag[S::MMAS_M][4];
      uint32_t b_frag[S::MMAS_N][2];
      // A: lanes 0-15 address rows 0-15 at k..k+7, lanes 16-31 the same rows at k+8..k+15.
#pragma unroll
      for (int i = 0; i < S::MMAS_M; ++i) {
        const int row = warp_row0 + i * 16 + (lane % 16);
        const int col = kk + (lane / 16) * 8;
        ldmatrix_x4(a_frag[i], a_base + (row * S::A_LD + col) * 2);
      }
      // B: lanes 0-15 address k rows 0-15 at columns n..n+7, lanes 16-31 at n+8..n+15;
      // .trans turns each 8x8 into the "col" operand: two n8 tiles per load.
#pragma unroll
      for (int j = 0; j < S::MMAS_N; j += 2) {
        const int row = kk + (lane % 16);
        const int col = warp_col0 + j * 8 + (lane / 16) * 8;
        uint32_t r[4];
        ldmatrix_x4_trans(r, b_base + (row * S::B_LD + col) * 2);
        b_frag[j][0] = r[0];
        b_frag[j][1] = r[1];
        b_frag[j + 1][0] = r[2];
        b_frag[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
        for (int j = 0; j < S::MMAS_N; ++j) mma_m16n8k16_f32(acc[i][j], a_frag[i], b_frag[j]);
    }
  };

  if constexpr (!S::PREFETCH) {
    // Load, wait, multiply, wait: the SM idles on global memory once per slice
    // unless other blocks on it have math to do.
    for (int k0 = 0; k0 < k; k0 += S::BLOCK_K) {
      load_slice(k0);
      store_slice(0);
      __syncthreads();
      multiply_slice(0);
      __syncthreads();
    }
  } else {
    // The loads for slice k+1 are issued before the math on slice k and only
    // consumed (stored to the other buffer) after it.
    load_slice(0);
    store_slice(0);
    __syncthreads();
    int stage = 0;
    for (int k0 = 0; k0 < k; k0 += S::BLOCK_K) {
      const bool has_next = k0 + S::BLOCK_K < k;
      if (has_next) load_slice(k0 + S::BLOCK_K);
      multiply_slice(stage);
      // The other buffer was last read in the previous iteration, before the
      // barrier that ended it, so it is free to overwrite.
      if (has_next) store_slice(stage ^ 1);
      __syncthreads();
      stage ^= 1;
    }
  }

  // Epilogue: each lane holds pairs of adjacent outputs: rows group and group+8.
  const bool pairs_aligned = (reinterpret_cast<uintptr_t>(c) % 4 == 0) && (n % 2 == 0);
  const int group = lane / 4, pair = lane % 4;
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i) {
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j) {
      const int row = m0 + warp_row0 + i * 16 + group;
      const int col = n0 + warp_col0 + j * 8 + pair * 2;
      store_output_pair(c, m, n, row, col, acc[i][j][0], acc[i][j][1], pairs_aligned);
      store_output_pair(c, m, n, row + 8, col, acc[i][j][2], acc[i][j][3], pairs_aligned);
    }
  }

  trace_end(trace, int(blockIdx.x), tile.m, tile.n, 0, k, t0);
}

template <class S>
void launch_mma_blocked(const GemmArgs& g, cudaStream_t stream) {
  const int64_t tiles = int64_t(ceil_div(g.m, S::BLOCK_M)) * ceil_div(g.n, S::BLOCK_N);
  mma_blocked_gemm_kernel<S><<<dim3(unsigned(tiles)), S::THREADS, 0, stream>>>(g.a, g.b, g.c, g.m, g.n, g.k, g.trace);
  CUDA_CHECK_LAUNCH();
}

template <class S>
KernelConfig mma_blocked_config(const GemmShape& s) {
  return tile_grid_config(s, S::BLOCK_M, S::BLOCK_N, S::BLOCK_K, S::THREADS,
                          reinterpret_cast<const void*>(&mma_blocked_gemm_kernel<S>), 0, S::STAGES);
}

}  // namespace wb::blocked
