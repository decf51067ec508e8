// Lesson 01: one thread per output element.
//
// A block of 16 x 16 threads computes one 16 x 16 tile of C; each thread loops
// over K for its element. The two kernels differ only in which thread takes
// which element of the tile:
//   coalesced:   consecutive threads (threadIdx.x) take consecutive COLUMNS, so a
//                warp reads 16 neighbouring elements of a row of B and writes 16
//                neighbouring elements of C: one 32-byte sector each;
//   uncoalesced: consecutive threads take consecutive ROWS, so a warp reads 16
//                different rows of A and writes 16 different rows of C: 16 sectors
//                per instruction for the same work.
#pragma once

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/trace.cuh"
#include "schedule/tile_order.hpp"

namespace wb::naive {

constexpr int kTile = 16;                 // <- output tile edge (one thread per element)
constexpr int kThreads = kTile * kTile;   // <- threads per block

enum class ThreadMap { coalesced, uncoalesced };

template <ThreadMap kMap>
__global__ void __launch_bounds__(kThreads) naive_gemm_kernel(const __half* __restrict__ a,
                                                              const __half* __restrict__ b, __half* __restrict__ c,
                                                              int m, int n, int k, TraceRecord* trace) {
  const uint64_t t0 = trace_start(trace);
  const int tiles_n = ceil_div(n, kTile);
  const TileCoord tile = row_major_tile(int(blockIdx.x), ceil_div(m, kTile), tiles_n);
  // The only difference between the two variants:
  const int fast = int(threadIdx.x) % kTile, slow = int(threadIdx.x) / kTile;
  const int row = tile.m * kTile + (kMap == ThreadMap::coalesced ? slow : fast);
  const int col = tile.n * kTile + (kMap == ThreadMap::coalesced ? fast : slow);
  if (row < m && col < n) {
    const __half* a_row = a + int64_t(row) * k;  // 64-bit offsets: M*K may exceed 2^31
    const __half* b_col = b + col;
    float acc = 0.0f;
    for (int kk = 0; kk < k; ++kk) acc += __half2float(a_row[kk]) * __half2float(b_col[int64_t(kk) * n]);
    c[int64_t(row) * n + col] = __float2half(acc);
  }
  trace_end(trace, int(blockIdx.x), tile.m, tile.n, 0, k, t0);
}

template <ThreadMap kMap>
void launch_naive(const GemmArgs& g, cudaStream_t stream) {
  const int64_t tiles = int64_t(ceil_div(g.m, kTile)) * ceil_div(g.n, kTile);
  naive_gemm_kernel<kMap><<<dim3(unsigned(tiles)), kThreads, 0, stream>>>(g.a, g.b, g.c, g.m, g.n, g.k, g.trace);
  CUDA_CHECK_LAUNCH();
}

template <ThreadMap kMap>
KernelConfig naive_config(const GemmShape& s) {
  return tile_grid_config(s, kTile, kTile, 1, kThreads, reinterpret_cast<const void*>(&naive_gemm_kernel<kMap>));
}

// Bytes the threads ask for: every output reads a row of A and a column of B.
inline double naive_requested_bytes(const GemmShape& s) {
  return 2.0 * (2.0 * double(s.m) * s.n * s.k + double(s.m) * s.n);
}

}  // namespace wb::naive
