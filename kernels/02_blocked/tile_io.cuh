// Lesson 02: moving 16-byte chunks of a tile between global memory, registers
// and shared memory, with the masks that make any M, N, K and any alignment
// work, and the masked output stores. Shared by the WMMA and mma.sync steps.
//
// Tails (any M, N, K >= 1, any alignment): a tile that lies wholly inside the
// matrices, whose rows start on 16-byte boundaries, is loaded with 16-byte loads
// and no checks; any other tile checks each 16-byte chunk: whole chunks inside
// (with aligned rows) in one load, partial ones one fp16 at a time, zeros
// outside. Stores are masked per element pair.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

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

}  // namespace wb::blocked
