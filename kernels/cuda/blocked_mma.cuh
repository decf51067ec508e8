// Lesson 02, steps 2 and on: the same block algorithm as smem_tiled.cuh, with the
// multiply-adds moved onto tensor cores and each thread owning many outputs.
//
//   step 2  WMMA (the C++ tensor-core API): a warp multiplies 16x16x16 fragments;
//           each warp owns 2 x 2 fragments (32 x 32 outputs), the block 64 x 64.
//   step 3  mma.sync + ldmatrix (inline PTX, mma_primitives.cuh): the fragment
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
//
// Tails (any M, N, K >= 1, any alignment): a tile that lies wholly inside the
// matrices, whose rows start on 16-byte boundaries, is loaded with 16-byte loads
// and no checks; any other tile checks each 16-byte chunk: whole chunks inside
// (with aligned rows) in one load, partial ones one fp16 at a time, zeros
// outside. Stores are masked per element pair.
#pragma once

#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/mma_primitives.cuh"
#include "harness/harness.cuh"
#include "schedule/tile_order.hpp"

namespace wb::blocked {

// ---------------------------------------------------------------- tile loads
// A thread's share of one (ROWS, COLS) fp16 tile of a row-major matrix, as
// 16-byte chunks of 8 halves held in registers between the global load and the
// shared store (that gap is what the prefetching kernel puts the math into).
template <int ROWS, int COLS, int THREADS>
struct TileChunksInRegisters {
  static constexpr int CHUNKS_PER_ROW = COLS / 8;
  static constexpr int CHUNKS_PER_THREAD = ROWS * CHUNKS_PER_ROW / THREADS;
  static_assert(COLS % 8 == 0, "a tile row must be a whole number of 16-byte chunks (COLS a multiple of 8)");
  static_assert((ROWS * CHUNKS_PER_ROW) % THREADS == 0,
                "the tile's 16-byte chunks must split evenly over the block's threads");

  uint4 chunk[CHUNKS_PER_THREAD];

  // Loads rows row0.., columns col0.. of `src` (rows x cols, leading dimension ld).
  // `vector_ok`: the whole tile is inside the matrix and rows are 16-byte aligned.
  __device__ __forceinline__ void load(const __half* __restrict__ src, int64_t ld, int row0, int col0, int rows,
                                       int cols, bool vector_ok, bool rows_aligned) {
#pragma unroll
    for (int i = 0; i < CHUNKS_PER_THREAD; ++i) {
      const int index = int(threadIdx.x) + i * THREADS;
      const int r = row0 + index / CHUNKS_PER_ROW;
      const int c = col0 + (index % CHUNKS_PER_ROW) * 8;
      const __half* p = src + r * ld + c;
      if (vector_ok) {
        chunk[i] = *reinterpret_cast<const uint4*>(p);
      } else {
        chunk[i] = load_masked(p, r < rows, cols - c, rows_aligned);
      }
    }
  }

  // Writes the chunks to a (ROWS, SMEM_LD) shared tile.
  template <int SMEM_LD>
  __device__ __forceinline__ void store(__half* smem) const {
    static_assert(SMEM_LD % 8 == 0, "shared rows must stay 16-byte aligned (SMEM_LD a multiple of 8)");
#pragma unroll
    for (int i = 0; i < CHUNKS_PER_THREAD; ++i) {
      const int index = int(threadIdx.x) + i * THREADS;
      const int r = index / CHUNKS_PER_ROW;
      const int c = (index % CHUNKS_PER_ROW) * 8;
      *reinterpret_cast<uint4*>(smem + r * SMEM_LD + c) = chunk[i];
    }
  }

  // 8 halves starting at p, of which the first `cols_left` exist (row_valid false:
  // none). Zeros elsewhere.
  __device__ static __forceinline__ uint4 load_masked(const __half* p, bool row_valid, int cols_left,
                                                      bool rows_aligned) {
    if (!row_valid || cols_left <= 0) return make_uint4(0, 0, 0, 0);
    if (rows_aligned && cols_left >= 8) return *reinterpret_cast<const uint4*>(p);
    union {
      uint4 v;
      __half h[8];
    } out;
#pragma unroll
    for (int j = 0; j < 8; ++j) out.h[j] = j < cols_left ? p[j] : __float2half(0.0f);
    return out.v;
  }
};

// Rows of a matrix can be read with 16-byte loads when the base is 16-byte
// aligned and the leading dimension is a multiple of 8 halves.
__device__ __forceinline__ bool rows_16byte_aligned(const void* base, int64_t ld) {
  return (reinterpret_cast<uintptr_t>(base) % 16 == 0) && (ld % 8 == 0);
}

// Stores two adjacent outputs (row, col) and (row, col+1), masked.
__device__ __forceinline__ void store_output_pair(__half* __restrict__ c, int m, int n, int row, int col, float v0,
                                                  float v1, bool pairs_aligned) {
  if (row >= m) return;
  __half* p = c + int64_t(row) * n + col;
  if (pairs_aligned && col + 1 < n) {
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(v0, v1);
  } else {
    if (col < n) p[0] = __float2half_rn(v0);
    if (col + 1 < n) p[1] = __float2half_rn(v1);
  }
}

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
