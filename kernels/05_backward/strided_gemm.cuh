// Lesson 05, step 1's GEMMs: the forward kernel run on transposed views, as
// the notebook does with its Triton kernel. Lesson 02's mma.sync kernel
// (128 x 128 tiles, 8 warps of 64 x 32, register prefetch) with each operand
// read in the orientation it has in memory:
//   A stored (M x K) row-major ("K-major")  or as its transpose (K x M): Xᵀ
//   B stored (K x N) row-major ("N-major")  or as its transpose (N x K): Wᵀ
// A slice of each operand is copied to shared memory as it lies in global
// memory (rows of 16-byte chunks, coalesced, any tail masked), and the
// transpose happens in the fragment load: ldmatrix gives the tensor core
// rows, ldmatrix.trans gives it columns. So on tensor cores a transposed
// operand costs nothing extra in the math; what it changes is which way the
// tiles are walked in memory.
//
// Any M, N, K >= 1 and any alignment: this kernel is also the fallback of the
// TMA steps when a row stride is not a multiple of 16 bytes.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "02_blocked/tile_io.cuh"
#include "05_backward/backward.cuh"
#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/mma.cuh"
#include "common/trace.cuh"
#include "schedule/activation.hpp"
#include "schedule/tile_order.hpp"

namespace wb::backward {

// How an operand lies in memory (row-major in both cases).
enum class Stored { as_is, transposed };

// C (m x n, row-major) = op(A) op(B). `a` is (m x k) or, transposed, (k x m);
// `b` is (k x n) or, transposed, (n x k). Leading dimensions follow the shapes.
struct StridedGemm {
  const __half* a;
  const __half* b;
  __half* c;
  int m, n, k;
  TraceRecord* trace;
  // Where the trace records go: block b writes record trace_first_unit + b,
  // its tile row offset by trace_first_row (a second product stacks below the first).
  int trace_first_unit = 0, trace_first_row = 0;
  ForwardEpilogue forward = {};  // a training forward's bias, activation and saved P (act none: C as is)
};

constexpr int kStridedBM = 128, kStridedBN = 128, kStridedBK = 32;
constexpr int kStridedWarpsM = 2, kStridedWarpsN = 4;
constexpr int kStridedThreads = 32 * kStridedWarpsM * kStridedWarpsN;
constexpr int kStridedWarpM = kStridedBM / kStridedWarpsM;  // 64
constexpr int kStridedWarpN = kStridedBN / kStridedWarpsN;  // 32
constexpr int kStridedPad = 8;  // halves per shared row: 8 rows of an ldmatrix hit 8 bank groups

// A shared tile of (rows x cols) halves, as it lies in memory, padded.
template <int ROWS, int COLS>
struct SharedTile {
  static constexpr int LD = COLS + kStridedPad;
  static constexpr int ELEMS = ROWS * LD;
};

template <Stored kA, Stored kB>
__global__ void __launch_bounds__(kStridedThreads)
    strided_gemm_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c, int m,
                        int n, int k, TraceRecord* trace, int trace_first_unit, int trace_first_row,
                        ForwardEpilogue forward) {
  using namespace blocked;
  constexpr bool kAT = kA == Stored::transposed, kBT = kB == Stored::transposed;
  // A's slice: (BM x BK) as is, (BK x BM) transposed; B's: (BK x BN) as is, (BN x BK) transposed.
  using ATile = SharedTile<kAT ? kStridedBK : kStridedBM, kAT ? kStridedBM : kStridedBK>;
  using BTile = SharedTile<kBT ? kStridedBN : kStridedBK, kBT ? kStridedBK : kStridedBN>;
  __shared__ alignas(128) __half a_smem[2][ATile::ELEMS];
  __shared__ alignas(128) __half b_smem[2][BTile::ELEMS];

  const uint64_t t0 = trace_start(trace);
  const TileCoord tile = row_major_tile(int(blockIdx.x), ceil_div(m, kStridedBM), ceil_div(n, kStridedBN));
  const int m0 = tile.m * kStridedBM, n0 = tile.n * kStridedBN;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm0 = (warp / kStridedWarpsN) * kStridedWarpM, wn0 = (warp % kStridedWarpsN) * kStridedWarpN;
  // Leading dimensions and the extents of the stored matrices.
  const int a_ld = kAT ? m : k, a_rows = kAT ? k : m;
  const int b_ld = kBT ? k : n, b_rows = kBT ? n : k;
  const bool a_aligned = rows_16byte_aligned(a, a_ld), b_aligned = rows_16byte_aligned(b, b_ld);

  constexpr int MMAS_M = kStridedWarpM / 16, MMAS_N = kStridedWarpN / 8;
  float acc[MMAS_M][MMAS_N][4] = {};

  TileChunksInRegisters<kAT ? kStridedBK : kStridedBM, kAT ? kStridedBM : kStridedBK, kStridedThreads> a_chunks;
  TileChunksInRegisters<kBT ? kStridedBN : kStridedBK, kBT ? kStridedBK : kStridedBN, kStridedThreads> b_chunks;
  auto load_slice = [&](int k0) {
    // (row0, col0) of the slice in the stored matrix, and whether it lies wholly inside.
    const int ar = kAT ? k0 : m0, ac = kAT ? m0 : k0;
    const int br = kBT ? n0 : k0, bc = kBT ? k0 : n0;
    const bool a_in = ar + (kAT ? kStridedBK : kStridedBM) <= a_rows && ac + (kAT ? kStridedBM : kStridedBK) <= a_ld;
    const bool b_in = br + (kBT ? kStridedBN : kStridedBK) <= b_rows && bc + (kBT ? kStridedBK : kStridedBN) <= b_ld;
    a_chunks.load(a, a_ld, ar, ac, a_rows, a_ld, a_aligned && a_in, a_aligned);
    b_chunks.load(b, b_ld, br, bc, b_rows, b_ld, b_aligned && b_in, b_aligned);
  };
  auto store_slice = [&](int stage) {
    a_chunks.template store<ATile::LD>(a_smem[stage]);
    b_chunks.template store<BTile::LD>(b_smem[stage]);
  };

  auto multiply_slice = [&](int stage) {
    const uint32_t a_base = shared_address(a_smem[stage]);
    const uint32_t b_base = shared_address(b_smem[stage]);
#pragma unroll
    for (int kk = 0; kk < kStridedBK; kk += 16) {
      uint32_t a_frag[MMAS_M][4];
      uint32_t b_frag[MMAS_N][2];
#pragma unroll
      for (int i = 0; i < MMAS_M; ++i) {
        if constexpr (!kAT) {
          // Rows of A: lanes 0-15 rows 0-15 at k..k+7, lanes 16-31 at k+8..k+15.
          const int row = wm0 + i * 16 + lane % 16, col = kk + (lane / 16) * 8;
          ldmatrix_x4(a_frag[i], a_base + (row * ATile::LD + col) * 2);
        } else {
          // Lines of k, m along them: matrix q = lane / 8 is (m rows 8 (q % 2) .., k 8 (q / 2) ..).
          const int kline = kk + lane % 8 + (lane / 16) * 8, col = wm0 + i * 16 + ((lane / 8) % 2) * 8;
          ldmatrix_x4_trans(a_frag[i], a_base + (kline * ATile::LD + col) * 2);
        }
      }
#pragma unroll
      for (int j = 0; j < MMAS_N; j += 2) {
        uint32_t r[4];
        if constexpr (!kBT) {
          // Lines of k, n along them: .trans makes each 8 x 8 the "col" operand.
          const int kline = kk + lane % 16, col = wn0 + j * 8 + (lane / 16) * 8;
          ldmatrix_x4_trans(r, b_base + (kline * BTile::LD + col) * 2);
        } else {
          // Lines of n, k along them: already the "col" operand's layout.
          const int nline = wn0 + j * 8 + lane % 8 + (lane / 16) * 8, col = kk + ((lane / 8) % 2) * 8;
          ldmatrix_x4(r, b_base + (nline * BTile::LD + col) * 2);
        }
        b_frag[j][0] = r[0];
        b_frag[j][1] = r[1];
        b_frag[j + 1][0] = r[2];
        b_frag[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MMAS_M; ++i)
#pragma unroll
        for (int j = 0; j < MMAS_N; ++j) mma_m16n8k16_f32(acc[i][j], a_frag[i], b_frag[j]);
    }
  };

  load_slice(0);
  store_slice(0);
  __syncthreads();
  int stage = 0;
  for (int k0 = 0; k0 < k; k0 += kStridedBK) {
    const bool has_next = k0 + kStridedBK < k;
    if (has_next) load_slice(k0 + kStridedBK);
    multiply_slice(stage);
    if (has_next) store_slice(stage ^ 1);
    __syncthreads();
    stage ^= 1;
  }

  const bool pairs_aligned = reinterpret_cast<uintptr_t>(c) % 4 == 0 && n % 2 == 0 &&
                            reinterpret_cast<uintptr_t>(forward.pre_act) % 4 == 0;
  const int group = lane / 4, pair = lane % 4;
#pragma unroll
  for (int i = 0; i < MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < MMAS_N; ++j) {
      const int row = m0 + wm0 + i * 16 + group, col = n0 + wn0 + j * 8 + pair * 2;
      if (forward.act == Activation::none) {
        store_output_pair(c, m, n, row, col, acc[i][j][0], acc[i][j][1], pairs_aligned);
        store_output_pair(c, m, n, row + 8, col, acc[i][j][2], acc[i][j][3], pairs_aligned);
        continue;
      }
      // The forward's epilogue: P = acc + b, kept if asked, and Z = act(P).
      const float b0 = forward.bias && col < n ? __half2float(forward.bias[col]) : 0.0f;
      const float b1 = forward.bias && col + 1 < n ? __half2float(forward.bias[col + 1]) : 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float p0 = acc[i][j][2 * h] + b0, p1 = acc[i][j][2 * h + 1] + b1;
        if (forward.pre_act) store_output_pair(forward.pre_act, m, n, row + 8 * h, col, p0, p1, pairs_aligned);
        store_output_pair(c, m, n, row + 8 * h, col, apply_activation(forward.act, p0),
                          apply_activation(forward.act, p1), pairs_aligned);
      }
    }
  trace_end(trace, trace_first_unit + int(blockIdx.x), trace_first_row + tile.m, tile.n, 0, k, t0);
}

inline int strided_gemm_blocks(int m, int n) { return ceil_div(m, kStridedBM) * ceil_div(n, kStridedBN); }

template <Stored kA, Stored kB>
void launch_strided_gemm(const StridedGemm& g, cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0) return;
  strided_gemm_kernel<kA, kB><<<unsigned(strided_gemm_blocks(g.m, g.n)), kStridedThreads, 0, stream>>>(
      g.a, g.b, g.c, g.m, g.n, g.k, g.trace, g.trace_first_unit, g.trace_first_row, g.forward);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::backward
