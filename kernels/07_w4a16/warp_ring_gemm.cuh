// Step 7 of lesson 07: each warp its own pipeline, counted by the hardware.
//
// Step 6 keeps a lane's next U k steps in registers. Whether those loads stay
// in flight is up to ptxas: a warp waits for a load through one of six
// scoreboards, so the ring's U loads share one, and a step that needs the
// oldest waits for all of them. A warp then alternates between loading and
// multiplying, and only the other warps' loads cover its math.
//
// Here each lane copies its 16 bytes of a step with cp.async into its own
// slot of a shared-memory ring, one commit group per step, and waits with
// cp.async.wait_group U - 1: "all but the newest U - 1 steps have landed",
// counted by the hardware per thread. So the oldest step is waited for alone
// and U - 1 steps stay in flight while the warp multiplies. The activations
// (16 bytes of a row per lane, read back with ldmatrix) and a group's scales
// and zero points come the same way; those a lane reads were copied by other
// lanes of its warp, so after its wait each lane meets them at __syncwarp.
// That is the only barrier: no block barrier, no mbarrier. The ring costs
// shared memory, not registers, and cp.async's zero fill (a source size of
// 0) pads the rows past M and the steps past K, so the math needs no masks.
//
// The weights are the mma's 16 rows and the tokens its 8 columns: a block
// takes 8 tokens (M <= 8) or 16, and then each unpacked fragment feeds two
// mma, one per 8 tokens. A group's scale is not applied to each weight: the
// mma takes q - z, exact in fp16, into sums of the group's own, and at the
// group's end each sum is multiplied by its column's scale and added to the
// total (an fma per sum). That drops a half2 multiply for every two weights
// (4 of a word's 13 instructions) for an fma per sum a group; on an H200 it
// took 1 x 16384 x 16384 from 44.8 to 40.4 us, and 16 tokens this way (in
// place of the tokens as the mma's rows, scaled in the unpacking) took
// 16 x 16384 x 16384 from 53.4 to 50.3 (docs/notes/07_w4a16.md). The
// products then use (q - z) s exactly rather than its fp16 rounding, so the
// result differs from cuBLAS on the dequantized weights by that rounding
// (well inside the check).
//
// The split and the adding are step 6's: a warp owns a 64-column strip and a
// contiguous range of its groups, the block's warps and a cluster's blocks
// split the strip's k, and their sums are added in order in shared memory and
// through distributed shared memory. Hopper (clusters).
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <array>

#include "07_w4a16/direct_gemm.cuh"

namespace wb::w4a16 {

template <int ROWS_, int WARPS_, int U_, int GSTEPS_>
struct RingShape {
  static constexpr bool SWAP = true;           // tokens as the mma's 8 columns (add_strip_in_order's layout)
  static constexpr int ROWS = ROWS_;           // tokens a block takes: 8 or 16
  static constexpr int HALVES = ROWS / 8;      // the mma a weight fragment feeds, 8 tokens each
  static constexpr int ACC = 4 * HALVES;       // a lane's accumulator quads
  static constexpr int WARPS = WARPS_;         // a block: one strip, WARPS k ranges
  static constexpr int THREADS = WARPS * 32;
  static constexpr int U = U_;                 // k steps a warp keeps in flight
  static constexpr int GSTEPS = GSTEPS_;       // k steps per group (G / 16): the unit of the split
  static constexpr int COLS = q4::kStripColumns;
  static constexpr int PART_LD = strip_part_ld(SWAP);
  // With 16 tokens the two sets of sums (the group's and the total, 64
  // registers) bring a thread to the 128 that two blocks of 8 warps an SM
  // allow; left unbounded, ptxas takes 140 and one block fits.
  static constexpr int MIN_BLOCKS = ROWS == 16 ? 16 / WARPS : 1;
  static_assert(ROWS == 8 || ROWS == 16, "a block takes 8 or 16 tokens");
};

// A warp's ring: U steps of weights and activations, and the scales and zero
// points of the groups those steps belong to (a group's are read at its first
// step, so U / GSTEPS + 1 groups are live at most). Each array is indexed so
// that a lane's copies and reads are conflict-free: a row's two 16-byte chunks
// of activations swap places in rows 4-7 of every 8, so the eight rows an
// ldmatrix phase reads fall in eight different bank groups.
template <class S>
struct WarpRing {
  static constexpr int NG = S::U / S::GSTEPS + 1;
  uint4 w[S::U][32];            // the shuffled weights: 16 bytes per lane
  uint4 a[S::U][S::ROWS][2];    // a row's 16 k values of the step, in two chunks
  uint4 sz[NG][8][2];           // per strip row g: its 8 scales, then its 8 zero points
};

__device__ __forceinline__ int ring_chunk(int row, int chunk) { return chunk ^ ((row >> 2) & 1); }

template <class S>
constexpr int ring_smem_bytes() {
  return int(sizeof(WarpRing<S>)) * S::WARPS + int(sizeof(StripInbox<S>));
}

template <class S>
__global__ void __launch_bounds__(S::THREADS, S::MIN_BLOCKS) ring_w4_kernel(W4Args p, int splits) {
  extern __shared__ __align__(16) unsigned char ring_smem[];
  WarpRing<S>* rings = reinterpret_cast<WarpRing<S>*>(ring_smem);
  // After the loop the warps' partial sums and the block's sum reuse the
  // rings; the inbox (written by the cluster's other blocks while this one
  // may still be in its loop) lies after them.
  constexpr size_t kPartBytes = sizeof(float) * S::WARPS * S::ROWS * S::PART_LD;
  float(*part)[S::ROWS][S::PART_LD] = reinterpret_cast<float(*)[S::ROWS][S::PART_LD]>(ring_smem);
  float(*tile)[S::COLS] = reinterpret_cast<float(*)[S::COLS]>(ring_smem + kPartBytes);
  StripInbox<S>& inbox = *reinterpret_cast<StripInbox<S>*>(ring_smem + sizeof(WarpRing<S>) * S::WARPS);
  static_assert(kPartBytes + sizeof(float) * S::ROWS * S::COLS <= sizeof(WarpRing<S>) * S::WARPS,
                "the partial sums and the block's sum fit in the rings");

  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4;
  const int64_t np = q4::padded_n(p.n), kp = q4::padded_k(p.k);
  const int strips = int(np / S::COLS);
  const int steps = int(kp / 16);  // the strip's k steps (padded K)
  const int k_steps = p.k / 16;    // those inside K (K % 32 == 0)
  const int strip = int(blockIdx.x) / splits, rank = int(blockIdx.x) % splits;
  const int m0 = int(blockIdx.y) * S::ROWS;
  const int valid_rows = min(S::ROWS, p.m - m0);
  const uint64_t t0 = trace_start(p.trace);
  strip_add_begin(inbox, splits);

  // This warp's k steps: whole groups, split evenly over the cluster's blocks
  // and each block's warps, in that order.
  const int groups = (steps + S::GSTEPS - 1) / S::GSTEPS;
  const int parts = splits * S::WARPS, part_index = rank * S::WARPS + warp;
  const int s_begin = int(int64_t(groups) * part_index / parts) * S::GSTEPS;
  const int s_stop = min(steps, int(int64_t(groups) * (part_index + 1) / parts) * S::GSTEPS);

  const uint4* b_lane = reinterpret_cast<const uint4*>(p.bs) +
                        (int64_t(strip / q4::kBlockStrips) * steps * q4::kBlockStrips + strip % q4::kBlockStrips) * 32 + lane;
  constexpr int64_t kStepWords = q4::kBlockStrips * 32;
  // The activations: lane l < 2 ROWS copies half l % 2 of row l / 2 of a
  // step (16 of its 32 bytes), through L1 (every strip reads them); a row past
  // M, or a step past K, is zero-filled (source size 0, from a valid address).
  const int a_row = min(lane / 2, S::ROWS - 1), a_half = lane % 2;
  const bool a_copies = lane < 2 * S::ROWS, a_in = a_copies && m0 + a_row < p.m;
  const __half* a_src = p.a + int64_t(a_in ? m0 + a_row : 0) * p.k + 8 * a_half;
  // A group's scales and zero points: per strip row g, 8 scales then 8 zero
  // points (32 bytes); lane l < 16 copies half l % 2 of row l / 2.
  const int sz_row = (lane / 2) % 8;
  const uint4* sz_src = reinterpret_cast<const uint4*>(p.sz) + (int64_t(strip) * 8 + sz_row) * 2 + a_half;
  const int64_t group_chunks = int64_t(strips) * 8 * 2;

  WarpRing<S>& r = rings[warp];
  // Step s into `slot`: the weights, the activations, and at a group's first
  // step its scales and zero points.
  auto issue = [&](int slot, int s) {
    cp_async_16_zero_fill(shared_address(&r.w[slot][lane]), b_lane + int64_t(s) * kStepWords, 16);
    if (a_copies)
      cp_async_16_zero_fill<true>(shared_address(&r.a[slot][a_row][ring_chunk(a_row, a_half)]),
                                  a_src + int64_t(min(s, k_steps - 1)) * 16, a_in && s < k_steps ? 16 : 0);
    if (s % S::GSTEPS == 0 && lane < 16) {
      const int grp = s / S::GSTEPS;
      cp_async_16_zero_fill(shared_address(&r.sz[grp % WarpRing<S>::NG][sz_row][a_half]),
                            sz_src + int64_t(grp) * group_chunks, 16);
    }
  };
  // Where this lane points ldmatrix: matrix j = lane / 8, its row lane % 8;
  // matrices 0 and 1 are k 0-7 and 8-15 of tokens 0-7 (the mma's b0, b1),
  // matrices 2 and 3 the same of tokens 8-15 (with 8 tokens, ldmatrix .x2
  // reads the first two only).
  const int lm_j = lane / 8, lm_i = lane % 8;
  const int lm_row = S::HALVES == 2 ? lm_i + 8 * (lm_j / 2) : lm_i;
  const int lm_chunk = lm_j % 2;

  // Quad i: columns 16 (i % 4) + g and + 8, tokens 8 (i / 4) + 2 t and + 1.
  float acc[S::ACC][4];
#pragma unroll
  for (int i = 0; i < S::ACC; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.0f;

  // The ring's first U steps, a commit group each (empty past the range, so
  // that the count below holds).
#pragma unroll
  for (int u = 0; u < S::U; ++u) {
    if (s_begin + u < s_stop) issue(u, s_begin + u);
    cp_async_commit_group();
  }
  TileDequant deq[4];
  float accg[S::ACC][4];  // the group's sums, before its scales (see the top)
  int slot = 0;
  for (int s0 = s_begin; s0 < s_stop; s0 += S::GSTEPS) {
#pragma unroll
    for (int u = 0; u < S::GSTEPS; ++u) {
      const int s = s0 + u;
      cp_async_wait_group<S::U - 1>();  // this lane's copies of step s have landed
      __syncwarp();                      // and so have the other lanes'
      if (u == 0) {
        const uint4 sc = r.sz[(s / S::GSTEPS) % WarpRing<S>::NG][g][0];
        const uint4 ze = r.sz[(s / S::GSTEPS) % WarpRing<S>::NG][g][1];
        deq[0] = tile_dequant(as_half2(ze.x), as_half2(sc.x));
        deq[1] = tile_dequant(as_half2(ze.y), as_half2(sc.y));
        deq[2] = tile_dequant(as_half2(ze.z), as_half2(sc.z));
        deq[3] = tile_dequant(as_half2(ze.w), as_half2(sc.w));
#pragma unroll
        for (int i = 0; i < S::ACC; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) accg[i][e] = 0.0f;
      }
      uint32_t bf[8][2];
      dequant_fragments<false>(r.w[slot][lane], deq, bf);  // q - z, unscaled
      const uint32_t a_address = shared_address(&r.a[slot][lm_row][ring_chunk(lm_row, lm_chunk)]);
      uint32_t xb[S::HALVES][2];  // tokens 8 h to 8 h + 7
      if constexpr (S::HALVES == 1) {
        ldmatrix_x2(xb[0], a_address);
      } else {
        uint32_t x4[4];
        ldmatrix_x4(x4, a_address);
        xb[0][0] = x4[0], xb[0][1] = x4[1], xb[1][0] = x4[2], xb[1][1] = x4[3];
      }
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t wa[4] = {bf[2 * w][0], bf[2 * w + 1][0], bf[2 * w][1], bf[2 * w + 1][1]};
#pragma unroll
        for (int h = 0; h < S::HALVES; ++h) mma_m16n8k16_f32(accg[4 * h + w], wa, xb[h]);
      }
      if (u == S::GSTEPS - 1) {  // the group's sums times its scales: columns g (low) and g + 8 (high)
#pragma unroll
        for (int i = 0; i < S::ACC; ++i) {
          const float2 sc = __half22float2(deq[i % 4].scale);
          acc[i][0] = fmaf(accg[i][0], sc.x, acc[i][0]);
          acc[i][1] = fmaf(accg[i][1], sc.x, acc[i][1]);
          acc[i][2] = fmaf(accg[i][2], sc.y, acc[i][2]);
          acc[i][3] = fmaf(accg[i][3], sc.y, acc[i][3]);
        }
      }
      // The slot's values are in registers and used: refill it with step s + U.
      if (s + S::U < s_stop) issue(slot, s + S::U);
      cp_async_commit_group();
      slot = slot + 1 == S::U ? 0 : slot + 1;
    }
  }
  cp_async_wait_group<0>();
  __syncthreads();  // every warp is done with its ring: the partial sums go there

  add_strip_in_order<S>(acc, part, tile, inbox, p, strip, rank, splits, m0, valid_rows);
  if (p.trace != nullptr)
    trace_end(p.trace, int(blockIdx.y * gridDim.x + blockIdx.x), int(blockIdx.y), strip,
              16 * int(int64_t(groups) * rank / splits) * S::GSTEPS,
              min(p.k, 16 * int(int64_t(groups) * (rank + 1) / splits) * S::GSTEPS), t0);
}

// ---------------------------------------------------------------- host side

// Eight steps in flight per warp; blocks of 16 warps (one an SM) or of 8 (two
// an SM), as the plan chooses.
template <int ROWS, int WARPS, int GSTEPS>
using RingFor = RingShape<ROWS, WARPS, 8, GSTEPS>;

template <class F>
decltype(auto) with_ring_shape(int m, int group_size, int warps, F&& f) {
  auto by_warps = [&](auto rows, auto gsteps) -> decltype(auto) {
    constexpr int R = decltype(rows)::value;
    constexpr int GS = decltype(gsteps)::value;
    if (warps == 16) return f(RingFor<R, 16, GS>{});
    return f(RingFor<R, 8, GS>{});
  };
  auto by_group = [&](auto rows) -> decltype(auto) {
    if (group_size == 32) return by_warps(rows, std::integral_constant<int, 2>{});
    if (group_size == 64) return by_warps(rows, std::integral_constant<int, 4>{});
    return by_warps(rows, std::integral_constant<int, 8>{});
  };
  if (m <= 8) return by_group(std::integral_constant<int, 8>{});
  return by_group(std::integral_constant<int, 16>{});
}

// The kernel, allowed its shared memory (once per shape).
template <class S>
const void* ring_kernel_ready() {
  static const bool ready = [] {
    CUDA_CHECK(cudaFuncSetAttribute(ring_w4_kernel<S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    ring_smem_bytes<S>()));
    return true;
  }();
  (void)ready;
  return reinterpret_cast<const void*>(&ring_w4_kernel<S>);
}

// How many clusters of `split` blocks of shape S run at once: the driver's
// answer, not SMs x blocks per SM / split (a cluster's blocks share one GPC).
template <class S>
int ring_clusters_at_once(int split) {
  static std::array<int, kDirectMaxSplit + 1> fit{};
  if (fit[size_t(split)] == 0) {
    const void* kernel = ring_kernel_ready<S>();
    fit[size_t(split)] = split == 1 ? sm_count() * std::max(1, blocks_per_sm(kernel, S::THREADS, ring_smem_bytes<S>()))
                                    : std::max(1, hopper::max_active_clusters(kernel, split, S::THREADS,
                                                                              ring_smem_bytes<S>()));
  }
  return fit[size_t(split)];
}

template <class S>
splitk::SplitKPlanned ring_plan_with(int m, int n, int k, int wanted) {
  splitk::SplitKPlanned q;
  q.block_m = S::ROWS;
  q.block_n = S::COLS;
  q.block_k = 16 * S::GSTEPS;
  q.threads = S::THREADS;
  q.smem = ring_smem_bytes<S>();
  q.stages = S::U;
  q.tiles_m = ceil_div(m, S::ROWS);
  q.tiles_n = ceil_div(n, S::COLS);  // strips wholly in the padding are left out
  q.k_tiles = int((q4::padded_k(k) / 16 + S::GSTEPS - 1) / S::GSTEPS);
  static const int resident = std::max(1, blocks_per_sm(ring_kernel_ready<S>(), S::THREADS, ring_smem_bytes<S>()));
  static const int sms = sm_count();
  q.blocks_per_sm = resident;
  q.slots = sms * resident;
  q.wanted = wanted;
  q.splits = std::max(1, std::min({q.wanted, kDirectMaxSplit, q.k_tiles}));
  q.grid = int64_t(q.tiles_m) * q.tiles_n * q.splits;
  q.units = q.grid;
  return q;
}

// The split and the block. A warp streams its groups at the memory's pace, so
// what costs is not how the bytes are shared out but each wave (its rings
// fill anew) and each split (a cluster's adding). So: the smallest split whose
// blocks cover the SMs in one wave (else the largest that is still one wave),
// in blocks of 16 warps if one per SM is enough, else of 8 (two an SM);
// never so many warps that some would have no group to read.
inline splitk::SplitKPlanned plan_ring(int m, int n, int k, int group_size, int requested) {
  const int64_t tiles = int64_t(ceil_div(m, m <= 8 ? 8 : 16)) * ceil_div(n, q4::kStripColumns);
  const int groups = int((q4::padded_k(k) + group_size - 1) / group_size);
  auto one_wave = [&](int warps, int split) {
    return split * warps <= groups &&
           with_ring_shape(m, group_size, warps,
                           [&](auto shape) { return ring_clusters_at_once<decltype(shape)>(split) >= tiles; });
  };
  const int most = std::max(1, std::min(kDirectMaxSplit, groups));
  int split = 0;
  if (requested > 0) {
    split = std::max(1, std::min(requested, most));
  } else {
    static const int sms = sm_count();
    const int64_t cover = int64_t(sms) * 9 / 10;
    for (int s = 1; s <= most && split == 0; ++s)
      if (tiles * s >= cover && (one_wave(16, s) || one_wave(8, s))) split = s;
    if (split == 0) {
      split = 1;
      for (int s = 1; s <= most; ++s)
        if (one_wave(16, s) || one_wave(8, s)) split = s;
    }
  }
  const int warps = one_wave(16, split) ? 16 : 8;
  return with_ring_shape(m, group_size, warps, [&](auto shape) {
    return ring_plan_with<decltype(shape)>(m, n, k, requested > 0 ? requested : split);
  });
}

template <class S>
void launch_ring_with(const W4Args& a, const splitk::SplitKPlanned& q, cudaStream_t stream) {
  ring_kernel_ready<S>();
  launch_strip_kernel(ring_w4_kernel<S>, a, q, S::THREADS, size_t(ring_smem_bytes<S>()), stream);
}

inline void launch_ring(const W4Args& a, int requested, cudaStream_t stream) {
  require_shuffled_group_size("warp_ring", a.group_size);
  const splitk::SplitKPlanned q = plan_ring(a.m, a.n, a.k, a.group_size, requested);
  with_ring_shape(a.m, a.group_size, q.threads / 32,
                  [&](auto shape) { launch_ring_with<decltype(shape)>(a, q, stream); });
}

}  // namespace wb::w4a16
