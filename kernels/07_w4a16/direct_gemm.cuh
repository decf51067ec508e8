// Step 6 of lesson 07: the weights straight into registers.
//
// Steps 4 and 5 copy each slice of the shuffled weights into shared memory
// with cp.async, wait at a block barrier, and only then read it back into
// registers. At M <= 16 nothing in shared memory is reused: each lane's 16
// bytes feed only that lane's mma fragments. So this kernel loads them
// straight into registers, as a plain copy kernel would, and never waits at a
// barrier: each lane keeps a ring of its next U k steps' 16-byte words, and
// refills a slot with step s + U once step s is taken out of it. The
// activations' fragments come the same way (small and read by every strip,
// so from the caches), and a group's scales and zero points with the
// weights of its first step.
//
// What decides whether the ring works is the compiled code, not the source:
// a warp waits for a load through one of six scoreboards, and ptxas merges
// them where control flow joins. With a branch in the loop (a last unit that
// is short, a refill that is conditional), every step waited for the load
// issued one step before it; with a selected or copied load register (a load
// under a condition, then a select), right after issuing it. So the loop body
// has no branch and no select: loads past the end read a valid address and are
// masked to zero where they are used (docs/notes/07_w4a16.md).
//
// The split: a warp owns one 64-column strip (the shuffled layout's unit) and
// a contiguous range of its k steps; the 8 warps of a block take the strip's
// k range one after another, and the blocks of a cluster (up to 8, launched
// together on one GPC) split the strip's k further. At the end each warp's
// partial sums go to shared memory, the block adds its warps' in order, and
// each block pushes the others their shares of its sums through distributed
// shared memory (st.async, counted on the receiver's barrier), then adds its
// own share from every block of the cluster, in order: no workspace, no
// atomics, no memset, no fence, the same bits every run.
//
// Up to M = 8 the roles are swapped as in Shuffled8 (the weights are the
// mma's 16-row operand, the tokens its 8 columns); above, a block takes 16
// rows of tokens (blockIdx.y for more). Hopper (clusters); K and the group
// size as the shuffled kernel takes them.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <array>

#include "06_splitk/splitk_gemm.cuh"
#include "07_w4a16/dequant.cuh"
#include "common/tma.cuh"

namespace wb::w4a16 {

// The most blocks a cluster of the direct kernel holds (the portable size).
constexpr int kDirectMaxSplit = 8;

// The row stride of a warp's partial sums in shared memory, padded so that a
// warp's stores of its accumulators meet no bank conflict: swapped, lanes
// store rows 2 t (a stride of 68 floats puts t's rows 8 banks apart, g's
// columns fill them); unswapped, rows g as float pairs (72: 8 banks apart).
constexpr int strip_part_ld(bool swap) { return q4::kStripColumns + (swap ? 4 : 8); }

template <bool SWAP_, int U_, int GSTEPS_>
struct DirectShape {
  static constexpr bool SWAP = SWAP_;             // tokens as the mma's 8 columns (M <= 8)
  static constexpr int ROWS = SWAP ? 8 : 16;      // tokens a block takes
  static constexpr int WARPS = 8;                 // a block: one strip, eight k ranges
  static constexpr int THREADS = WARPS * 32;
  static constexpr int U = U_;                    // k steps in flight per lane
  static constexpr int GSTEPS = GSTEPS_;          // k steps per group (G / 16)
  static constexpr int L = U > GSTEPS ? U : GSTEPS;  // steps per unit of work (the unrolled body)
  static constexpr int NSZ = U > GSTEPS ? U / GSTEPS : 1;  // groups whose scales are in flight
  static constexpr int AR = SWAP ? 2 : 4;         // activation registers per step
  static constexpr int COLS = q4::kStripColumns;
  static constexpr int PART_LD = strip_part_ld(SWAP);  // a warp's partial sums: row stride in floats
  static constexpr int MIN_BLOCKS = 2;
  static_assert(L % U == 0 && L % GSTEPS == 0, "the body holds whole rings and whole groups");
};

// The inbox that the cluster's other blocks push their shares of this block's
// columns into (a row per sending block), counted on its barrier. It is
// written while this block may still be in its loop: it shares no memory.
template <class S>
struct StripInbox {
  float2 pairs[S::ROWS * S::COLS / 2 + kDirectMaxSplit];
  uint64_t full;
};

template <class S>
struct DirectSmem {
  float part[S::WARPS][S::ROWS][S::PART_LD];  // each warp's partial sums
  float tile[S::ROWS][S::COLS];               // the block's
  StripInbox<S> inbox;
};

// One 16-byte word of weights, read once: streamed past L1.
__device__ __forceinline__ uint4 load_weights(const uint4* p) { return __ldcs(p); }

// At the kernel's start, when a cluster splits the strip: the inbox's barrier,
// set up before the cluster's other blocks may push into it. The arrival is
// relaxed: fence_barrier_init publishes the barrier, and a release arrival
// would be a GPU-wide fence before the first load.
template <class S>
__device__ __forceinline__ void strip_add_begin(StripInbox<S>& inbox, int splits) {
  if (splits == 1) return;
  if (threadIdx.x == 0) {
    hopper::mbarrier_init(&inbox.full, 1);
    hopper::fence_barrier_init();
  }
  hopper::cluster_arrive_relaxed();
}

// The end of a strip's k range: each warp's partial sums go to shared memory
// as (token, column) of the strip (`part[warp]`), and the block adds its
// warps' in order into `tile`. Then, when a cluster splits the strip's k,
// each block owns a share of the strip's column pairs: every block pushes the
// pairs the others own into their inboxes with st.async (lesson 06's step 7
// does the same), waits on its own inbox for the others' pairs, and adds the
// cluster's blocks in order. No cluster barrier at the end, so no GPU-wide
// fence; no workspace, no atomics; the same bits every run.
template <class S, class Acc>
__device__ __forceinline__ void add_strip_in_order(const Acc& acc, float (*part)[S::ROWS][S::PART_LD],
                                                   float (*tile)[S::COLS], StripInbox<S>& inbox, const W4Args& p,
                                                   int strip, int rank, int splits, int m0, int valid_rows) {
  const int tid = int(threadIdx.x), lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  float(*mine)[S::PART_LD] = part[tid / 32];
#pragma unroll
  for (int i = 0; i < (S::SWAP ? 4 * S::ROWS / 8 : 8); ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      int row, col;
      if constexpr (S::SWAP) {  // quad i: tokens 8 (i / 4) on, columns 16 (i % 4) on
        row = 8 * (i / 4) + 2 * t + (e & 1);
        col = 16 * (i % 4) + g + 8 * (e >> 1);
      } else {
        row = g + 8 * (e >> 1);
        col = 8 * i + 2 * t + (e & 1);
      }
      if (row < valid_rows) mine[row][col] = acc[i][e];
    }
  __syncthreads();
  // The block's sum, warps in order, of the rows that exist.
  for (int q = tid; q < valid_rows * S::COLS; q += S::THREADS) {
    const int row = q / S::COLS, col = q % S::COLS;
    float v = 0.0f;
#pragma unroll
    for (int w = 0; w < S::WARPS; ++w) v += part[w][row][col];
    tile[row][col] = v;
  }
  __syncthreads();

  splitk::SplitKParams out{};
  out.c = p.c;
  out.m = p.m;
  out.n = p.n;
  const int n0 = strip * S::COLS;
  constexpr int PAIRS_ROW = S::COLS / 2;
  const int pairs = valid_rows * PAIRS_ROW;
  if (splits == 1) {
    for (int q = tid; q < pairs; q += S::THREADS) {
      const int row = q / PAIRS_ROW, col = 2 * (q % PAIRS_ROW);
      splitk::store_pair(out, m0 + row, n0 + col, tile[row][col], tile[row][col + 1]);
    }
    return;
  }
  // Block r owns pairs [pairs r / splits, pairs (r + 1) / splits); its inbox
  // holds one row of that width per block of the cluster.
  auto share_begin = [&](int r) { return int(int64_t(pairs) * r / splits); };
  const int q0 = share_begin(rank), width = share_begin(rank + 1) - q0;
  hopper::cluster_wait();  // every block of the cluster has set up its inbox
  for (int q = tid; q < pairs; q += S::THREADS) {
    const int owner = int((int64_t(q + 1) * splits - 1) / pairs);  // the r whose share holds q
    if (owner == rank) continue;
    const int o0 = share_begin(owner), o_width = share_begin(owner + 1) - o0;
    const int row = q / PAIRS_ROW, col = 2 * (q % PAIRS_ROW);
    hopper::store_async_cluster(&inbox.pairs[rank * o_width + q - o0].x, uint32_t(owner), tile[row][col],
                                tile[row][col + 1], &inbox.full);
  }
  if (tid == 0) hopper::mbarrier_arrive_expect_bytes(&inbox.full, uint32_t((splits - 1) * width * 8));
  hopper::mbarrier_wait(&inbox.full, 0);
  for (int q = q0 + tid; q < q0 + width; q += S::THREADS) {
    const int row = q / PAIRS_ROW, col = 2 * (q % PAIRS_ROW);
    float2 sum = make_float2(0.0f, 0.0f);
#pragma unroll
    for (int r = 0; r < kDirectMaxSplit; ++r)
      if (r < splits) {
        const float2 v = r == rank ? make_float2(tile[row][col], tile[row][col + 1])
                                   : inbox.pairs[r * width + q - q0];
        sum.x += v.x;
        sum.y += v.y;
      }
    splitk::store_pair(out, m0 + row, n0 + col, sum.x, sum.y);
  }
}

template <class S>
__global__ void __launch_bounds__(S::THREADS, S::MIN_BLOCKS) direct_w4_kernel(W4Args p, int splits) {
  __shared__ __align__(16) DirectSmem<S> sm;
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t np = q4::padded_n(p.n), kp = q4::padded_k(p.k);
  const int strips = int(np / S::COLS);
  const int steps = int(kp / 16);       // the strip's k steps (padded K)
  const int k_steps = p.k / 16;         // those inside K (K % 32 == 0): A is zero past them
  const int strip = int(blockIdx.x) / splits, rank = int(blockIdx.x) % splits;
  const int m0 = int(blockIdx.y) * S::ROWS;
  const int valid_rows = min(S::ROWS, p.m - m0);
  const uint64_t t0 = trace_start(p.trace);
  strip_add_begin(sm.inbox, splits);

  // This warp's k steps: units of L steps, split evenly over the cluster's
  // blocks and each block's warps, in that order.
  const int units = (steps + S::L - 1) / S::L;
  const int parts = splits * S::WARPS, part = rank * S::WARPS + warp;
  const int s_begin = int(int64_t(units) * part / parts) * S::L;
  const int s_stop = int(int64_t(units) * (part + 1) / parts) * S::L;  // may pass `steps` by part of a unit

  // Weights: step s of this strip is 32 words of 16 bytes, one per lane
  // (schedule/q4.hpp: four strips side by side per step).
  const uint4* b_lane = reinterpret_cast<const uint4*>(p.bs) +
                        (int64_t(strip / q4::kBlockStrips) * steps * q4::kBlockStrips + strip % q4::kBlockStrips) * 32 + lane;
  constexpr int64_t kStepWords = q4::kBlockStrips * 32;
  // Activations: the fragments of rows m0 + g (and m0 + g + 8 unswapped),
  // columns 2t.. of each step. Rows past M read row m0 and are masked to zero
  // where they are used; steps past K (the layout's padding, whose weights are
  // exactly zero) read the last step inside K. So every load is unconditional:
  // a load whose register is selected or copied afterwards makes the warp wait
  // for it right there, and the ring would hold one load in flight, not U.
  const uint32_t mask_lo = g < valid_rows ? ~0u : 0u;
  const uint32_t mask_hi = !S::SWAP && g + 8 < valid_rows ? ~0u : 0u;
  const uint32_t* a_lo = reinterpret_cast<const uint32_t*>(p.a + int64_t(m0 + (mask_lo ? g : 0)) * p.k) + t;
  const uint32_t* a_hi = reinterpret_cast<const uint32_t*>(p.a + int64_t(m0 + (mask_hi ? g + 8 : 0)) * p.k) + t;

  // The rings: step s's words and activations in slot s % U, a group's scale
  // and zero words in slot (s / GSTEPS) % NSZ. A slot is refilled only after
  // its last use, so the load writes the register the old value was in.
  uint4 bring[S::U];
  uint32_t aring[S::U][S::AR];
  uint32_t szring[S::NSZ][2];  // this lane's scale word and zero word
  auto load_step = [&](int slot, int s) {
    bring[slot] = load_weights(b_lane + int64_t(min(s, steps - 1)) * kStepWords);
    const int sa = min(s, k_steps - 1) * 8;
    aring[slot][0] = __ldg(a_lo + sa);
    if constexpr (S::SWAP) {
      aring[slot][1] = __ldg(a_lo + sa + 4);
    } else {
      aring[slot][1] = __ldg(a_hi + sa);
      aring[slot][2] = __ldg(a_lo + sa + 4);
      aring[slot][3] = __ldg(a_hi + sa + 4);
    }
  };
  // Scales and zero points: per group and strip, row g holds 8 scales then 8
  // zeros, a word per two column tiles. The row's four lanes load one word of
  // each and pass them round at the group's start (2 registers a group in
  // flight, not 8).
  const uint32_t* sz_lane = reinterpret_cast<const uint32_t*>(p.sz) + (int64_t(strip) * 8 + g) * 8 + t;
  const int64_t group_words = int64_t(strips) * 8 * 8;
  auto load_group = [&](int slot, int s) {  // s starts a group
    const uint32_t* src = sz_lane + int64_t(min(s, steps - 1) / S::GSTEPS) * group_words;
    szring[slot][0] = __ldg(src);
    szring[slot][1] = __ldg(src + 4);
  };

  float acc[S::SWAP ? 4 : 8][4];
#pragma unroll
  for (int i = 0; i < (S::SWAP ? 4 : 8); ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.0f;

  // One unit of L steps. No branch inside: ptxas tracks a load with one of six
  // scoreboards, and at a branch or a join it merges what the scoreboards
  // hold, so a step would wait for the refill issued one step before it, not
  // U. Steps past the strip's end (the last unit may be short) read the last
  // step and are masked out through the activations.
  TileDequant deq[4];
  auto unit = [&](int s0, bool refill) {
#pragma unroll
    for (int u = 0; u < S::L; ++u) {
      const int s = s0 + u;
      if (u % S::GSTEPS == 0) {
        const uint32_t* sz = szring[(u / S::GSTEPS) % S::NSZ];
#pragma unroll
        for (int w = 0; w < 4; ++w) {  // word w of row g is lane 4 g + w's
          const uint32_t scale = __shfl_sync(0xffffffffu, sz[0], 4 * g + w);
          const uint32_t zero = __shfl_sync(0xffffffffu, sz[1], 4 * g + w);
          deq[w] = tile_dequant(as_half2(zero), as_half2(scale));
        }
      }
      const uint4 bw = bring[u % S::U];
      uint32_t bf[8][2];
      dequant_fragments(bw, deq, bf);
      const uint32_t* af = aring[u % S::U];
      const uint32_t inside = s < steps ? ~0u : 0u;
      if constexpr (S::SWAP) {
        const uint32_t xb[2] = {af[0] & mask_lo & inside, af[1] & mask_lo & inside};
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const uint32_t wa[4] = {bf[2 * w][0], bf[2 * w + 1][0], bf[2 * w][1], bf[2 * w + 1][1]};
          mma_m16n8k16_f32(acc[w], wa, xb);
        }
      } else {
        const uint32_t xa[4] = {af[0] & mask_lo & inside, af[1] & mask_hi & inside, af[2] & mask_lo & inside,
                                af[3] & mask_hi & inside};
#pragma unroll
        for (int tile = 0; tile < 8; ++tile) mma_m16n8k16_f32(acc[tile], xa, bf[tile]);
      }
      // The slot's last use is behind: refill it with step s + U (in the last
      // unit only while that step is in the unit: L may be more than U).
      if (refill || u + S::U < S::L) {
        load_step(u % S::U, s + S::U);
        if ((u + S::U) % S::GSTEPS == 0) load_group(((u + S::U) / S::GSTEPS) % S::NSZ, s + S::U);
      }
    }
  };
  if (s_begin < s_stop) {  // warp-uniform: a warp may have no unit at all
    // The ring's first U steps (s_begin starts a group: units are whole groups).
#pragma unroll
    for (int u = 0; u < S::U; ++u) {
      load_step(u, s_begin + u);
      if (u % S::GSTEPS == 0) load_group((u / S::GSTEPS) % S::NSZ, s_begin + u);
    }
    int s0 = s_begin;
    for (; s0 + S::L < s_stop; s0 += S::L) unit(s0, true);
    unit(s0, false);  // the last unit: nothing left to load
  }

  add_strip_in_order<S>(acc, sm.part, sm.tile, sm.inbox, p, strip, rank, splits, m0, valid_rows);
  if (p.trace != nullptr)
    trace_end(p.trace, int(blockIdx.y * gridDim.x + blockIdx.x), int(blockIdx.y), strip,
              16 * int(int64_t(units) * rank / splits) * S::L,
              min(p.k, 16 * int(int64_t(units) * (rank + 1) / splits) * S::L), t0);
}

// ---------------------------------------------------------------- host side

// U: k steps in flight per lane. Eight for the swapped kernel (six registers
// a step), four unswapped (eight a step, and twice the accumulators).
template <bool SWAP, int GSTEPS>
using DirectFor = DirectShape<SWAP, SWAP ? 8 : 4, GSTEPS>;

template <class F>
decltype(auto) with_direct_shape(int m, int group_size, F&& f) {
  auto by_group = [&](auto swap) -> decltype(auto) {
    constexpr bool SW = decltype(swap)::value;
    if (group_size == 32) return f(DirectFor<SW, 2>{});
    if (group_size == 64) return f(DirectFor<SW, 4>{});
    return f(DirectFor<SW, 8>{});
  };
  if (m <= 8) return by_group(std::true_type{});
  return by_group(std::false_type{});
}

template <class S>
const void* direct_kernel_ready() {
  return reinterpret_cast<const void*>(&direct_w4_kernel<S>);
}

template <class S>
splitk::SplitKPlanned direct_plan_for(int m, int n, int k, int requested) {
  splitk::SplitKPlanned q;
  q.block_m = S::ROWS;
  q.block_n = S::COLS;
  q.block_k = 16 * S::L;
  q.threads = S::THREADS;
  q.smem = int(sizeof(DirectSmem<S>));
  q.stages = S::U;
  q.tiles_m = ceil_div(m, S::ROWS);
  q.tiles_n = ceil_div(n, S::COLS);  // strips wholly in the padding are left out
  q.k_tiles = int((q4::padded_k(k) / 16 + S::L - 1) / S::L);
  static const int resident = std::max(1, blocks_per_sm(direct_kernel_ready<S>(), S::THREADS, 0));
  static const int sms = sm_count();
  q.blocks_per_sm = resident;
  q.slots = sms * resident;
  const int64_t tiles = int64_t(q.tiles_m) * q.tiles_n;
  if (requested > 0) {
    q.wanted = requested;
  } else {
    // The split with the fewest units per warp times waves of clusters; the
    // smaller on a tie (each split adds a cluster's adding). How many
    // clusters run at once is the driver's answer, not SMs / split: a
    // cluster's blocks share one GPC.
    static std::array<int, kDirectMaxSplit + 1> fit{};
    int64_t best = -1;
    for (int s = 1; s <= kDirectMaxSplit; ++s) {
      if (fit[size_t(s)] == 0)
        fit[size_t(s)] = s == 1 ? q.slots : std::max(1, hopper::max_active_clusters(direct_kernel_ready<S>(), s, S::THREADS, 0));
      const int64_t waves = (tiles + fit[size_t(s)] - 1) / fit[size_t(s)];
      const int64_t per_warp = (q.k_tiles + int64_t(s) * S::WARPS - 1) / (int64_t(s) * S::WARPS);
      if (best < 0 || waves * per_warp < best) {
        best = waves * per_warp;
        q.wanted = s;
      }
    }
  }
  q.splits = std::max(1, std::min({q.wanted, kDirectMaxSplit, q.k_tiles}));
  q.grid = tiles * q.splits;
  q.units = q.grid;
  return q;
}

inline splitk::SplitKPlanned plan_direct(int m, int n, int k, int group_size, int requested) {
  return with_direct_shape(m, group_size,
                           [&](auto shape) { return direct_plan_for<decltype(shape)>(m, n, k, requested); });
}

// Steps 6 and 7: a block per strip and split, a strip's splits one cluster.
inline void launch_strip_kernel(void (*kernel)(W4Args, int), const W4Args& a, const splitk::SplitKPlanned& q,
                                int threads, size_t smem, cudaStream_t stream) {
  const hopper::ClusterLaunch launch(dim3(unsigned(q.tiles_n * q.splits), unsigned(q.tiles_m), 1), threads, smem,
                                     stream, q.splits);
  CUDA_CHECK(cudaLaunchKernelEx(&launch.config, kernel, a, q.splits));
  CUDA_CHECK_LAUNCH();
}

template <class S>
void launch_direct_with(const W4Args& a, const splitk::SplitKPlanned& q, cudaStream_t stream) {
  launch_strip_kernel(direct_w4_kernel<S>, a, q, S::THREADS, 0, stream);
}

inline void launch_direct(const W4Args& a, int requested, cudaStream_t stream) {
  require_shuffled_group_size("direct", a.group_size);
  const splitk::SplitKPlanned q = plan_direct(a.m, a.n, a.k, a.group_size, requested);
  with_direct_shape(a.m, a.group_size, [&](auto shape) { launch_direct_with<decltype(shape)>(a, q, stream); });
}

}  // namespace wb::w4a16
