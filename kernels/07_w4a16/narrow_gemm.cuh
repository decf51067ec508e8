// Step 8 of lesson 07: 16-column strips, so that a block's warps add at one
// block barrier, for a few tokens.
//
// Steps 6 and 7 give a warp a 64-column strip (the shuffled layout's unit:
// 16 bytes per lane per 16-deep k step), so at N = 4096 there are 64 strips
// for 132 SMs, and the k range must be split over the warps of a block and
// over the blocks of a cluster: every block ends with its warps' sums added in
// shared memory and then the cluster's blocks' sums exchanged through
// distributed shared memory. At M = 1 and N = K = 4096 each warp reads one
// group, 4 KiB, so those fixed steps are a third of the kernel's time
// (docs/notes/07_w4a16.md).
//
// Here the weights are the mma's 16-row A operand, so a strip is 16 columns:
// 256 strips at N = 4096, a block each, and the block's 8 warps split the
// strip's k. A lane's 16 bytes hold its A fragments for four k steps (a
// 64-deep chunk, schedule/q4.hpp's narrow layout), and the mma's k slots are
// given k values that make the lane's 16 activations of a chunk one run: two
// 16-byte loads, straight into the B fragments, no shared memory. Each warp
// loads a batch of 8 chunks (its weights, scales and activations) into
// registers, then multiplies them; the warps' sums are added in order after
// one block barrier, and the block stores its 16 columns. No cluster, no
// workspace, no atomics: the same bits every run.
//
// The tokens are the mma's 8 columns: a block takes 8 of them (blockIdx.y
// for more, each reading the weights again), so the kernel is made for
// M <= 8. Any N; K as the other shuffled kernels take it (padded to 64 with
// zero scales, so padding adds exact zeros).
#pragma once

#include <cuda_fp16.h>

#include <algorithm>

#include "06_splitk/splitk_gemm.cuh"
#include "07_w4a16/dequant.cuh"
#include "common/gemm.cuh"
#include "common/mma.cuh"
#include "common/trace.cuh"

namespace wb::w4a16 {

constexpr int kNarrowWarps = 8;   // a block: one strip, 8 k ranges
constexpr int kNarrowBatch = 8;   // chunks a warp loads before it multiplies
constexpr int kNarrowTokens = 8;  // tokens a block takes: the mma's 8 columns

template <int G>
__global__ void __launch_bounds__(kNarrowWarps * 32, 2) narrow_w4_kernel(W4Args p) {
  constexpr int W = kNarrowWarps, U = kNarrowBatch, COLS = q4::kNarrowColumns, DEPTH = q4::kNarrowDepth;
  const int lane = int(threadIdx.x % 32u), warp = int(threadIdx.x / 32u), g = lane / 4, t = lane % 4;
  const int strip = int(blockIdx.x), m0 = int(blockIdx.y) * kNarrowTokens;
  const uint64_t t0 = trace_start(p.trace);
  const int chunks = int(q4::padded_k(p.k) / DEPTH);
  const int groups = int(q4::shuffled_groups(p.k, G));
  const int c_begin = chunks * warp / W, c_end = chunks * (warp + 1) / W;
  const uint4* w_src = reinterpret_cast<const uint4*>(p.bn) + (int64_t(strip) * chunks + c_begin) * 32 + lane;
  const uint2* sz_src = reinterpret_cast<const uint2*>(p.szn) + int64_t(strip) * groups * 8 + g;
  // Lane (g, t) holds B's column g: token m0 + g. Tokens past M read the last
  // one, and their sums are not stored. A chunk in K's padding reads the last
  // 16 activations inside K; its scales are 0, so its products are exact zeros.
  const __half* x_row = p.a + int64_t(min(m0 + g, p.m - 1)) * p.k;
  const int x_last = p.k - 16;

  auto load = [&](int c, uint4& w, uint2& sz, uint4& xa, uint4& xb) {
    w = __ldcs(w_src + int64_t(c - c_begin) * 32);  // read once: streamed past L1
    sz = __ldg(sz_src + int64_t((DEPTH * c + 16 * t) / G) * 8);
    const uint4* x = reinterpret_cast<const uint4*>(x_row + min(DEPTH * c + 16 * t, x_last));
    xa = __ldg(x);
    xb = __ldg(x + 1);
  };
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  // Word j of the lane's 16 bytes is mma step j's A fragment (its lop3 pairs
  // in the order a0, a2, a1, a3); the run's pairs 2 j and 2 j + 1 are b0, b1.
  auto multiply = [&](const uint4& w, const uint2& sz, const uint4& xa, const uint4& xb) {
    const TileDequant d = tile_dequant(as_half2(sz.x), as_half2(sz.y));
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    const uint32_t x[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t pr[4];
      dequant_word(words[j], d, pr);
      const uint32_t a[4] = {pr[0], pr[2], pr[1], pr[3]};
      const uint32_t b[2] = {x[2 * j], x[2 * j + 1]};
      mma_m16n8k16_f32(acc, a, b);
    }
  };
  int c = c_begin;
  for (; c + U <= c_end; c += U) {
    uint4 w[U], xa[U], xb[U];
    uint2 sz[U];
#pragma unroll
    for (int u = 0; u < U; ++u) load(c + u, w[u], sz[u], xa[u], xb[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) multiply(w[u], sz[u], xa[u], xb[u]);
  }
  for (; c < c_end; ++c) {
    uint4 w, xa, xb;
    uint2 sz;
    load(c, w, sz, xa, xb);
    multiply(w, sz, xa, xb);
  }

  // The warps' sums, in order. Lane (g, t) holds columns g and g + 8 of
  // tokens 2 t and 2 t + 1.
  __shared__ float part[W][kNarrowTokens][COLS + 1];
  part[warp][2 * t][g] = acc[0];
  part[warp][2 * t + 1][g] = acc[1];
  part[warp][2 * t][g + 8] = acc[2];
  part[warp][2 * t + 1][g + 8] = acc[3];
  __syncthreads();
  const int tokens = min(kNarrowTokens, p.m - m0);
  for (int q = int(threadIdx.x); q < tokens * COLS; q += W * 32) {
    const int row = q / COLS, col = q % COLS, n = strip * COLS + col;
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < W; ++i) v += part[i][row][col];
    if (n < p.n) p.c[int64_t(m0 + row) * p.n + n] = __float2half_rn(v);
  }
  if (p.trace != nullptr) trace_end(p.trace, int(blockIdx.y * gridDim.x + blockIdx.x), int(blockIdx.y), strip, 0, p.k, t0);
}

// ---------------------------------------------------------------- host side

template <int G>
const void* narrow_kernel_of() {
  return reinterpret_cast<const void*>(&narrow_w4_kernel<G>);
}

template <class F>
decltype(auto) with_narrow_group(int group_size, F&& f) {
  if (group_size == 32) return f(std::integral_constant<int, 32>{});
  if (group_size == 64) return f(std::integral_constant<int, 64>{});
  return f(std::integral_constant<int, 128>{});
}

// One block per strip of 16 columns and 8 tokens; the block's warps split K.
inline splitk::SplitKPlanned plan_narrow(int m, int n, int k, int group_size, int /*requested*/) {
  splitk::SplitKPlanned q;
  q.block_m = kNarrowTokens;
  q.block_n = q4::kNarrowColumns;
  q.block_k = q4::kNarrowDepth;
  q.threads = kNarrowWarps * 32;
  q.smem = int(sizeof(float)) * kNarrowWarps * kNarrowTokens * (q4::kNarrowColumns + 1);
  q.stages = kNarrowBatch;
  q.tiles_m = ceil_div(m, kNarrowTokens);
  q.tiles_n = ceil_div(n, q4::kNarrowColumns);
  q.k_tiles = int(q4::padded_k(k) / q4::kNarrowDepth);
  const void* kernel = with_narrow_group(group_size, [](auto g) { return narrow_kernel_of<decltype(g)::value>(); });
  q.blocks_per_sm = std::max(1, blocks_per_sm(kernel, q.threads, 0));
  q.slots = sm_count() * q.blocks_per_sm;
  q.wanted = 1;
  q.splits = 1;
  q.grid = int64_t(q.tiles_m) * q.tiles_n;
  q.units = q.grid;
  return q;
}

inline void launch_narrow(const W4Args& a, int /*requested*/, cudaStream_t stream) {
  require_shuffled_group_size("narrow", a.group_size);
  const dim3 grid(unsigned(ceil_div(a.n, q4::kNarrowColumns)), unsigned(ceil_div(a.m, kNarrowTokens)));
  with_narrow_group(a.group_size, [&](auto g) {
    narrow_w4_kernel<decltype(g)::value><<<grid, kNarrowWarps * 32, 0, stream>>>(a);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::w4a16
