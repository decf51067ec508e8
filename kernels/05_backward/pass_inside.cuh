// Lesson 05, step 6: the act' pass inside the products' launch.
//
// Step 3 runs the pass (dP = dZ * act'(P), 6 bytes an element) and then the
// products, one after the other: the pass is memory-bound and the products
// are bound by the tensor cores, so each leaves idle what the other needs.
// Here the pass runs in the same persistent launch, by warps that have
// nothing else to do: the producer warpgroup's TMA needs one thread, so its
// other three warps form dP while the consumers multiply. A tile may load a
// piece of dP only once it is written, so the pass is cut into pieces and
// every (band, chunk) of dP -- 128 rows, the tile's height, by 256 columns --
// counts its finished pieces; the TMA thread waits for that count before it
// loads a stage that reads there.
//
// The order is what makes it pay. The tiles of dX in flight together are a
// group of `group` bands (the grouped order's) walking along N together,
// chunk by chunk; the pass hands out its pieces in the same order (group,
// chunk, band), so the chunk a tile needs next is the one being written.
// The first chunks of the first group are needed at once, before the
// producers' three warps could write them: the consumers' eight warps write
// those (`prologue_chunks`) before they start on their tiles.
//
// db: each piece (16 rows x 256 columns) writes its column sums to a row of
// partials (one row per 16 rows of dP), and once every piece is done the
// pass warps add the rows up in order, so db is the same on every run.
// The counters live in the harness's workspace, zeroed once; the last block
// to finish puts them back to zero for the next launch.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "05_backward/backward.cuh"
#include "common/activation_half2.cuh"
#include "common/sync.cuh"
#include "common/tma.cuh"
#include "schedule/activation.hpp"

namespace wb::backward {

constexpr int kPassBandRows = 128;   // a band: the height of a tile (kBM)
constexpr int kPassChunkCols = 256;  // a chunk: 32 lanes x 8 columns
constexpr int kPassPieceRows = 16;   // a piece: 16 rows of one (band, chunk)
constexpr int kPassPiecesPerPair = kPassBandRows / kPassPieceRows;
constexpr int kPassWarps = 3;        // the producer warpgroup's warps 1-3
constexpr int kPassRowsInFlight = 3; // a pass warp's rows loaded before any is used (56 registers)

struct PassInside {
  const __half* dz;
  const __half* p;
  __half* dp;
  __half* db;            // nullptr: no bias
  float* partials;       // pass_partial_rows(m) x n: each piece's column sums
  uint32_t* counters;    // pass_counter_words(m, n), zero before the launch
  int m, n;
  int bands, chunks, group;  // group: bands walked together (the tile order's group_m)
  int prologue_pairs;        // (band, chunk) pairs the consumers write first
};

__host__ __device__ inline int pass_bands(int m) { return (m + kPassBandRows - 1) / kPassBandRows; }
__host__ __device__ inline int pass_chunks(int n) { return (n + kPassChunkCols - 1) / kPassChunkCols; }
inline int pass_partial_rows(int m) { return pass_bands(m) * kPassPiecesPerPair; }
// ready[bands x chunks], then: next prologue piece, next piece, pieces done, blocks finished.
inline int pass_counter_words(int m, int n) { return pass_bands(m) * pass_chunks(n) + 4; }

// Counter words after the ready counts.
enum PassCounter { kNextPrologue = 0, kNextPiece = 1, kPiecesDone = 2, kBlocksFinished = 3 };

__device__ __forceinline__ uint32_t* pass_counter(const PassInside& ps, PassCounter c) {
  return ps.counters + ps.bands * ps.chunks + int(c);
}
__device__ __forceinline__ int pass_total_pieces(const PassInside& ps) {
  return ps.bands * ps.chunks * kPassPiecesPerPair;
}

// Pair `pair` in the pass's order: groups of `group` bands, chunk by chunk.
__device__ __forceinline__ void pass_pair(const PassInside& ps, int pair, int& band, int& chunk) {
  const int per_group = ps.group * ps.chunks;
  const int g = pair / per_group, local = pair % per_group;
  const int bands_in_group = min(ps.group, ps.bands - g * ps.group);
  chunk = local / bands_in_group;
  band = g * ps.group + local % bands_in_group;
}

// act'(x) in fp32: ReLU's exactly; GELU's and SiLU's in step 5's sigmoid
// form (fast exponentials, about half the instructions of the pass's form):
// three warps an SM must keep up with the tiles.
template <Activation ACT>
__device__ __forceinline__ float pass_grad(float x) {
  if constexpr (ACT == Activation::relu) {
    return x > 0.0f ? 1.0f : 0.0f;
  } else {
    return activation_grad_f32<ACT>(x);
  }
}

// Where piece `piece` lies: its band and chunk, first row and rows (<= 0 past M).
struct PiecePlace {
  int band, chunk, row0, rows;
};
__device__ __forceinline__ PiecePlace piece_place(const PassInside& ps, int piece) {
  PiecePlace w;
  pass_pair(ps, piece / kPassPiecesPerPair, w.band, w.chunk);
  w.row0 = w.band * kPassBandRows + (piece % kPassPiecesPerPair) * kPassPieceRows;
  w.rows = min(kPassPieceRows, ps.m - w.row0);
  return w;
}

// One piece by one warp: rows row0 .. row0 + 15 of band `band`, columns
// 256 chunk + 8 lane .. + 7, kInFlight rows' loads issued before any is used.
template <Activation ACT, int kInFlight>
__device__ __forceinline__ void pass_piece(const PassInside& ps, int piece) {
  const int lane = int(threadIdx.x % 32);
  const PiecePlace w = piece_place(ps, piece);
  const int band = w.band, chunk = w.chunk, row0 = w.row0, rows = w.rows;
  const int col = chunk * kPassChunkCols + 8 * lane;
  float sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (col < ps.n) {  // n is a multiple of 8 (TMA): the lane's 8 columns are inside
#pragma unroll 1
    for (int r0 = 0; r0 < rows; r0 += kInFlight) {
      uint4 g[kInFlight], x[kInFlight];
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        if (r0 + i >= rows) continue;
        const int64_t at = int64_t(row0 + r0 + i) * ps.n + col;
        g[i] = __ldcs(reinterpret_cast<const uint4*>(ps.dz + at));  // read once: evict first
        x[i] = __ldcs(reinterpret_cast<const uint4*>(ps.p + at));
      }
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        if (r0 + i >= rows) continue;
        const __half* gh = reinterpret_cast<const __half*>(&g[i]);
        const __half* xh = reinterpret_cast<const __half*>(&x[i]);
        uint4 o;
        __half* out = reinterpret_cast<__half*>(&o);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          out[j] = __float2half_rn(__half2float(gh[j]) * pass_grad<ACT>(__half2float(xh[j])));
          sums[j] += __half2float(out[j]);
        }
        *reinterpret_cast<uint4*>(ps.dp + int64_t(row0 + r0 + i) * ps.n + col) = o;  // the products read it from L2
      }
    }
    if (ps.db != nullptr) {
      float* at = ps.partials + int64_t(band * kPassPiecesPerPair + piece % kPassPiecesPerPair) * ps.n + col;
      reinterpret_cast<float4*>(at)[0] = make_float4(sums[0], sums[1], sums[2], sums[3]);
      reinterpret_cast<float4*>(at)[1] = make_float4(sums[4], sums[5], sums[6], sums[7]);
    }
  }
  // Every lane's stores before the count: each lane fences, the warp meets,
  // and lane 0 publishes with a release.
  __threadfence();
  hopper::fence_proxy_async_global();
  __syncwarp();
  if (lane == 0) {
    add_release_gpu(ps.counters + band * ps.chunks + chunk, 1);
    add_release_gpu(pass_counter(ps, kPiecesDone), 1);
  }
}

// The warp's next piece from `counter`, the same for every lane.
__device__ __forceinline__ int take_piece(uint32_t* counter) {
  uint32_t q = 0;
  if (threadIdx.x % 32 == 0) q = atomic_add_relaxed_gpu(counter, 1);
  return int(__shfl_sync(0xffffffffu, q, 0));
}

// The consumers' share: pieces of the first `prologue_pairs` pairs, one per
// warp at a time, until none is left; then the warp goes on to its tiles.
template <Activation ACT>
__device__ __forceinline__ void pass_prologue(const PassInside& ps) {
  const int pieces = ps.prologue_pairs * kPassPiecesPerPair;
  for (;;) {
    const int q = take_piece(pass_counter(ps, kNextPrologue));
    if (q >= pieces) return;
    pass_piece<ACT, 8>(ps, q);
  }
}

// The pass warps' share: every piece after the prologue's, in order; then,
// once every piece is done, db from the partial rows (columns spread over
// the pass warps of the grid, each column's rows added in order).
template <Activation ACT>
__device__ __forceinline__ void pass_rest(const PassInside& ps) {
  const int first = ps.prologue_pairs * kPassPiecesPerPair, total = pass_total_pieces(ps);
  for (;;) {
    const int q = first + take_piece(pass_counter(ps, kNextPiece));
    if (q >= total) break;
    pass_piece<ACT, kPassRowsInFlight>(ps, q);
  }
  if (ps.db == nullptr) return;
  while (int(load_acquire_gpu(pass_counter(ps, kPiecesDone))) < total) __nanosleep(256);
  const int rows = (ps.m + kPassPieceRows - 1) / kPassPieceRows;
  const int warp = int(blockIdx.x) * kPassWarps + int(threadIdx.x / 32) - 1;
  const int stride = int(gridDim.x) * kPassWarps * 32 * 4;
  for (int c = (warp * 32 + int(threadIdx.x % 32)) * 4; c < ps.n; c += stride) {
    float4 s = make_float4(0, 0, 0, 0);
#pragma unroll 8
    for (int r = 0; r < rows; ++r) {
      const float4 v = __ldcg(reinterpret_cast<const float4*>(ps.partials + int64_t(r) * ps.n + c));
      s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    *reinterpret_cast<__half2*>(ps.db + c) = __floats2half2_rn(s.x, s.y);
    *reinterpret_cast<__half2*>(ps.db + c + 2) = __floats2half2_rn(s.z, s.w);
  }
}

// The TMA thread, at the start of a tile: is every piece written? Then no
// stage needs to wait any more.
__device__ __forceinline__ void pass_check_all(const PassInside& ps, bool& all_ready) {
  if (!all_ready && int(load_acquire_gpu(pass_counter(ps, kPiecesDone))) >= pass_total_pieces(ps)) {
    all_ready = true;
    hopper::fence_proxy_async_global();
  }
}

// The TMA thread, before a stage that reads dP's (band, chunk): wait until
// every piece there is written (once per pair: `last_pair`).
__device__ __forceinline__ void pass_wait(const PassInside& ps, int band, int chunk, bool all_ready, int& last_pair) {
  const int pair = band * ps.chunks + chunk;
  if (all_ready || pair == last_pair) return;
  while (load_acquire_gpu(ps.counters + pair) < uint32_t(kPassPiecesPerPair)) __nanosleep(32);
  last_pair = pair;
  hopper::fence_proxy_async_global();
}

// At the very end of a block (every thread past a block barrier): the last
// block to get here puts the counters back to zero for the next launch.
__device__ __forceinline__ void pass_finish(const PassInside& ps) {
  if (threadIdx.x != 0) return;
  if (atomic_add_acq_rel_gpu(pass_counter(ps, kBlocksFinished), 1) + 1 != gridDim.x) return;
  const int words = ps.bands * ps.chunks + 4;
  for (int i = 0; i < words; ++i) ps.counters[i] = 0;
}

}  // namespace wb::backward
