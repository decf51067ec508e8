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
// loads a batch of chunks (its weights, scales and activations: 8 chunks, or
// 4 in the two-strip block below; a group's scales once, not once a chunk)
// into registers, then multiplies them; the warps' sums are added in order after
// one block barrier, and the block stores its 16 columns. No cluster, no
// workspace, no atomics: the same bits every run.
//
// The tokens are the mma's 8 columns. Up to 8 tokens a block takes one strip.
// Beyond 8 it takes 16 tokens (two mma for each dequantized fragment, so the
// weights are read once) and two strips with 16 warps (each run of
// activations feeds both, so the 16 rows of activations every block reads
// cost half as much per column; docs/notes/07_w4a16.md has the measurements).
// Past 16 tokens, blockIdx.y takes the next 16, reading the weights again.
// Any N; K as the other shuffled kernels take it (padded to 64 with zero
// scales, so padding adds exact zeros).
#pragma once

#include <cuda_fp16.h>

#include <algorithm>

#include "06_splitk/splitk_gemm.cuh"
#include "07_w4a16/dequant.cuh"
#include "common/gemm.cuh"
#include "common/mma.cuh"
#include "common/trace.cuh"

namespace wb::w4a16 {

constexpr int kNarrowTokens = 8;  // the mma's 8 columns: one token tile

// A block is SS strips side by side (SS * 16 columns) and TT token tiles
// (TT * 8 tokens). A batch is the chunks a warp loads before it multiplies:
// a chunk takes 6 SS + 8 TT registers, and the batch is the largest power of
// two of chunks that keeps them within 112 (8 for one strip and one tile, 4
// for two and two).
template <int TT, int SS>
constexpr int narrow_batch() {
  constexpr int per_chunk = 6 * SS + 8 * TT;
  int u = 1;
  while (2 * u * per_chunk <= 112) u *= 2;
  return u;
}

// The warps splitting a block's K: 8 for one strip (two blocks an SM), 16
// for two (one block an SM; 128 registers a thread either way).
template <int SS>
constexpr int narrow_warps() {
  return SS == 1 ? 8 : 16;
}

template <int G, int TT, int SS>
__global__ void __launch_bounds__(narrow_warps<SS>() * 32, 16 / narrow_warps<SS>()) narrow_w4_kernel(W4Args p) {
  constexpr int W = narrow_warps<SS>(), U = narrow_batch<TT, SS>(), COLS = q4::kNarrowColumns, DEPTH = q4::kNarrowDepth;
  constexpr int TOKENS = kNarrowTokens * TT;
  const int lane = int(threadIdx.x % 32u), warp = int(threadIdx.x / 32u), g = lane / 4, t = lane % 4;
  const int strip0 = int(blockIdx.x) * SS, m0 = int(blockIdx.y) * TOKENS;
  const uint64_t t0 = trace_start(p.trace);
  // Unsigned 32-bit set-up (the host keeps N K / 32 below 2^32): fewer
  // instructions before the first load than signed 64-bit arithmetic.
  static_assert(q4::kShuffledDepth == DEPTH, "K is padded to whole chunks");
  const int chunks = int((unsigned(p.k) + DEPTH - 1) / unsigned(DEPTH));
  const int groups = int((unsigned(chunks) * DEPTH + G - 1) / unsigned(G));
  const int strips = int((unsigned(p.n) + COLS - 1) / unsigned(COLS));
  // A group spans CPG chunks (two at G = 128). The warps' ranges start at a
  // group's first chunk and a batch is whole groups, so a batch's chunk u
  // starts a group where u % CPG == 0: its scales are loaded once a group.
  constexpr int CPG = G >= 2 * DEPTH ? G / DEPTH : 1;
  static_assert(U % CPG == 0, "a batch is whole groups");
  const unsigned units = (unsigned(chunks) + CPG - 1) / CPG;
  const int c_begin = min(chunks, int(CPG * (units * unsigned(warp) / W))),
            c_end = min(chunks, int(CPG * (units * unsigned(warp + 1) / W)));
  // A strip past N (the last block of an odd count) reads the strip before.
  const uint4* w_src[SS];
  const uint2* sz_src[SS];
#pragma unroll
  for (int j = 0; j < SS; ++j) {
    const unsigned strip = unsigned(min(strip0 + j, strips - 1));
    w_src[j] = reinterpret_cast<const uint4*>(p.bn) + ((strip * unsigned(chunks) + unsigned(c_begin)) * 32u + unsigned(lane));
    sz_src[j] = reinterpret_cast<const uint2*>(p.szn) + (strip * unsigned(groups) * 8u + unsigned(g));
  }
  // Lane (g, t) holds B's column g of each token tile i: token m0 + 8 i + g.
  // Tokens past M read the last one, and their sums are not stored. A chunk
  // in K's padding reads the last 16 activations inside K; its scales are 0,
  // so its products are exact zeros.
  const __half* x_row[TT];
#pragma unroll
  for (int i = 0; i < TT; ++i) x_row[i] = p.a + int64_t(min(m0 + kNarrowTokens * i + g, p.m - 1)) * p.k;
  const int x_last = p.k - 16;

  struct Chunk {
    uint4 w[SS];
    uint2 sz[SS];
    uint4 x[TT][2];
  };
  auto load_weights = [&](int c, Chunk& h) {
#pragma unroll
    for (int j = 0; j < SS; ++j) h.w[j] = __ldcs(w_src[j] + int64_t(c - c_begin) * 32);  // read once: past L1
  };
  auto load_scales = [&](int c, Chunk& h) {
#pragma unroll
    for (int j = 0; j < SS; ++j) h.sz[j] = __ldg(sz_src[j] + int64_t((DEPTH * c + 16 * t) / G) * 8);
  };
  auto load_activations = [&](int c, Chunk& h) {
    const int at = min(DEPTH * c + 16 * t, x_last);
#pragma unroll
    for (int i = 0; i < TT; ++i) {
      const uint4* x = reinterpret_cast<const uint4*>(x_row[i] + at);
      h.x[i][0] = __ldg(x);
      h.x[i][1] = __ldg(x + 1);
    }
  };
  float acc[SS][TT][4] = {};
  // Word q of the lane's 16 bytes is mma step q's A fragment (its lop3 pairs
  // in the order a0, a2, a1, a3); the run's pairs 2 q and 2 q + 1 are b0, b1.
  auto multiply = [&](const Chunk& h, const uint2 (&sz)[SS]) {
#pragma unroll
    for (int j = 0; j < SS; ++j) {
      const TileDequant d = tile_dequant(as_half2(sz[j].x), as_half2(sz[j].y));
      const uint32_t words[4] = {h.w[j].x, h.w[j].y, h.w[j].z, h.w[j].w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        uint32_t pr[4];
        dequant_word(words[q], d, pr);
        const uint32_t a[4] = {pr[0], pr[2], pr[1], pr[3]};
#pragma unroll
        for (int i = 0; i < TT; ++i) {
          const uint4& x = h.x[i][q / 2];
          const uint32_t b[2] = {q % 2 == 0 ? x.x : x.z, q % 2 == 0 ? x.y : x.w};
          mma_m16n8k16_f32(acc[j][i], a, b);
        }
      }
    }
  };
  // A batch: its weights first (the reads from DRAM), then each group's
  // scales and each chunk's activations.
  int c = c_begin;
  for (; c + U <= c_end; c += U) {
    Chunk h[U];
#pragma unroll
    for (int u = 0; u < U; ++u) load_weights(c + u, h[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (u % CPG == 0) load_scales(c + u, h[u]);
      load_activations(c + u, h[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) multiply(h[u], h[u - u % CPG].sz);
  }
  for (; c < c_end; ++c) {
    Chunk h;
    load_weights(c, h);
    load_scales(c, h);
    load_activations(c, h);
    multiply(h, h.sz);
  }

  // The warps' sums, in order. Lane (g, t) holds columns g and g + 8 of each
  // strip, tokens 8 i + 2 t and 8 i + 2 t + 1.
  __shared__ float part[W][TOKENS][SS * COLS + 1];
#pragma unroll
  for (int j = 0; j < SS; ++j) {
#pragma unroll
    for (int i = 0; i < TT; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) part[warp][8 * i + 2 * t + e % 2][COLS * j + g + 8 * (e / 2)] = acc[j][i][e];
    }
  }
  __syncthreads();
  const int tokens = min(TOKENS, p.m - m0);
  for (int q = int(threadIdx.x); q < tokens * SS * COLS; q += W * 32) {
    const int row = q / (SS * COLS), col = q % (SS * COLS), n = strip0 * COLS + col;
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < W; ++i) v += part[i][row][col];
    if (n < p.n) p.c[int64_t(m0 + row) * p.n + n] = __float2half_rn(v);
  }
  if (p.trace != nullptr)
    trace_end(p.trace, int(blockIdx.y * gridDim.x + blockIdx.x), int(blockIdx.y), int(blockIdx.x), 0, p.k, t0);
}

// ---------------------------------------------------------------- host side

// A block's shape: TT token tiles of 8 tokens, SS strips of 16 columns. Up to
// 8 tokens, one of each (8 warps, two blocks an SM); beyond, two of each (16
// warps, one block an SM), so every fragment dequantized feeds two mma and
// every run of activations read feeds two strips.
struct NarrowShape {
  int tt = 1;
  int ss = 1;
};

inline NarrowShape narrow_shape(int m) {
  const int two = m <= kNarrowTokens ? 1 : 2;
  return {two, two};
}

// Calls f with the kernel's compile-time G, TT and SS.
template <class F>
decltype(auto) with_narrow_kernel(int group_size, NarrowShape s, F&& f) {
  auto shaped = [&](auto g) {
    using G = decltype(g);
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    return s.tt == 1 ? f(G{}, One{}, One{}) : f(G{}, Two{}, Two{});
  };
  if (group_size == 32) return shaped(std::integral_constant<int, 32>{});
  if (group_size == 64) return shaped(std::integral_constant<int, 64>{});
  return shaped(std::integral_constant<int, 128>{});
}

// One block per SS strips of 16 columns and 8 TT tokens; its warps split K.
inline splitk::SplitKPlanned plan_narrow(int m, int n, int k, int group_size, int /*requested*/) {
  const NarrowShape s = narrow_shape(m);
  splitk::SplitKPlanned q;
  q.block_m = kNarrowTokens * s.tt;
  q.block_n = q4::kNarrowColumns * s.ss;
  q.block_k = q4::kNarrowDepth;
  q.threads = (s.ss == 1 ? narrow_warps<1>() : narrow_warps<2>()) * 32;
  q.smem = int(sizeof(float)) * (q.threads / 32) * q.block_m * (q.block_n + 1);
  q.tiles_m = ceil_div(m, q.block_m);
  q.tiles_n = ceil_div(n, q.block_n);
  q.k_tiles = int(q4::padded_k(k) / q4::kNarrowDepth);
  const void* kernel = with_narrow_kernel(group_size, s, [&](auto g, auto tt, auto ss) {
    q.stages = narrow_batch<tt(), ss()>();
    return reinterpret_cast<const void*>(&narrow_w4_kernel<g(), tt(), ss()>);
  });
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
  if (q4::narrow_words(a.k, a.n) / 4 >= (int64_t(1) << 32))
    throw CudaError("lesson 07: the narrow kernel indexes its weights in 32 bits: N x K must stay below 2^37");
  const NarrowShape s = narrow_shape(a.m);
  const dim3 grid(unsigned(ceil_div(a.n, q4::kNarrowColumns * s.ss)), unsigned(ceil_div(a.m, kNarrowTokens * s.tt)));
  with_narrow_kernel(a.group_size, s, [&](auto g, auto tt, auto ss) {
    narrow_w4_kernel<g(), tt(), ss()><<<grid, narrow_warps<ss()>() * 32, 0, stream>>>(a);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::w4a16
