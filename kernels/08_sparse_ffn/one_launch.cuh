// Lesson 08, step 8: the whole skinny FFN (M <= 16) in one launch, both
// products reading their weights in one stream, one grid-wide wait between them.
//
// At M = 16 the FFN is bound by its weights' bytes, and a chain of launches
// (up product, its split-K fix-up, down product) pays a ramp-up and a drain
// for each. Here one block per SM, in clusters of 4, does both:
//
//   up    cluster c takes an even share of the active neurons; its 4 blocks
//         split d_model (k) four ways, so each block reads a quarter of X once
//         (kept in shared memory) and a quarter of each of its neurons' rows
//         of neuron-major W1. The four partial sums meet in the cluster's
//         shared memory (added in rank order: the same bits every run), the
//         activation runs there, and H (transposed, M x 16 per neuron) goes to
//         global memory.
//   wait  one grid-wide counter: every block has written its part of H.
//   down  cluster c owns a block of wd columns of Y; its 4 blocks split the
//         active neurons four ways, each reading its neurons' rows of W2
//         (wd values a row) and the matching rows of H, and the four partial
//         sums again meet in shared memory. No atomics into Y.
//
// Four producer warps copy the gathered rows with cp.async, 16 bytes a thread,
// into one ring of stages that runs through both products: the W2 rows of
// the first down stages do not depend on H, so they are asked for while the
// up product finishes and the grid waits. Only the H rows of those stages
// (one bulk copy a stage) wait for the grid. A bulk copy per gathered row
// would be simpler, but TMA takes about as long per copy as per box, and the
// rows' pieces are 256-512 bytes. Eight consumer warps multiply with
// mma.sync.m16n8k16 (M = 16 is one fragment's height); the math is small
// beside the bytes.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/check.cuh"
#include "common/mma.cuh"
#include "common/sync.cuh"
#include "common/tma.cuh"
#include "schedule/activation.hpp"

namespace wb::sparse {

constexpr int kOneLaunchCluster = 4;     // blocks a cluster: the k split of up, the neuron split of down
constexpr int kOneLaunchProducerWarps = 4;
constexpr int kOneLaunchThreads = 32 * kOneLaunchProducerWarps + 256;  // producers, then eight consumer warps
constexpr int kOneLaunchGroupRows = 64;  // up: W1 rows a stage (one n8 tile per consumer warp)
constexpr int kOneLaunchDownRows = 128;  // down: W2 rows (neurons) a stage

struct OneLaunchParams {
  const __half* x;       // M x d_model
  const __half* w1n;     // per * d_ff x d_model, neuron-major (SwiGLU: a neuron's gate row, then its up row)
  const __half* w2;      // d_ff x d_model
  const int32_t* idx;    // the active neurons
  __half* ht;            // count x 16: H transposed, a neuron's 16 rows of M together
  __half* y;             // M x d_model
  uint32_t* grid_sync;   // [0] arrivals, counted up by every launch (zero at the first)
  int m, d_model, count, per;
  int nu;                // neurons a cluster (up), a multiple of 4
  int kq, kc;            // k a block (d_model / 4) and k a stage (divides kq)
  int wd, col_blocks;    // down: Y columns a cluster's block of work (the last may be narrower), how many blocks
  int rr;                // down: active neurons a block (ceil(count / 4))
  int slots;             // stages in the ring
  uint32_t slot_bytes;
  uint32_t off_idx_up, off_idx_dn, off_x, off_part, off_ring;  // shared-memory layout
  Activation act;
  bool swiglu;
  unsigned long long* times;  // TEMP: 8 timestamps a block, or nullptr
};

// ------------------------------------------------------------------ the plan
struct OneLaunchPlan {
  OneLaunchParams p{};   // everything but the pointers
  int clusters = 0;
  uint32_t smem = 0;
  std::string why_not;   // "" or why this size cannot run
};

inline int one_launch_kc(int kq) {
  for (int kc : {256, 128, 64, 32, 16})  // a power of two: 16-byte pieces a row divide the producers
    if (kq % kc == 0) return kc;
  return 0;
}

// The layout for a given cluster count and the shared memory a block may use.
inline OneLaunchPlan plan_one_launch_for(int m, int d_model, int count, int per, int clusters, int smem_limit) {
  OneLaunchPlan q;
  OneLaunchParams& p = q.p;
  q.clusters = clusters;
  if (m > 16) {
    q.why_not = "one launch keeps X's rows in one 16-row fragment: M <= 16";
    return q;
  }
  if (d_model % 64 != 0) {
    q.why_not = "one launch splits d_model four ways into 16-deep steps: d_model must be a multiple of 64";
    return q;
  }
  p.m = m;
  p.d_model = d_model;
  p.count = count;
  p.per = per;
  const int per_cluster = (count + clusters - 1) / clusters;
  p.nu = std::max(4, (per_cluster + 3) / 4 * 4);
  p.kq = d_model / kOneLaunchCluster;
  p.kc = one_launch_kc(p.kq);
  // Columns of Y a cluster's block of down work: an even share of d_model
  // (a multiple of 8, the last block narrower), 256 at most. A cluster with two
  // blocks where the others have one doubles the down product's time.
  p.wd = std::min(256, ((d_model + clusters - 1) / clusters + 7) / 8 * 8);
  p.col_blocks = (d_model + p.wd - 1) / p.wd;
  p.rr = (count + kOneLaunchCluster - 1) / kOneLaunchCluster;
  const auto up16 = [](uint32_t b) { return (b + 15) / 16 * 16; };
  const auto up128 = [](uint32_t b) { return (b + 127) / 128 * 128; };
  const uint32_t up_rows = uint32_t(p.per * p.nu);
  const uint32_t x_bytes = std::max(16u * uint32_t(p.kq * 2 + 16), 16u * uint32_t(p.wd) * 4u);
  p.off_idx_up = 512;  // the mbarriers first
  p.off_idx_dn = p.off_idx_up + up16(up_rows * 4);
  p.off_x = up128(p.off_idx_dn + up16(uint32_t(p.rr) * 4));
  p.off_part = p.off_x + up128(x_bytes);
  // A consumer warp stores its whole n8 tile: the partial sums' rows rounded up to 8.
  p.off_ring = up128(p.off_part + (up_rows + 7) / 8 * 8 * 16 * 4);
  const uint32_t up_slot = uint32_t(kOneLaunchGroupRows) * uint32_t(p.kc * 2 + 16);
  const uint32_t down_slot = uint32_t(kOneLaunchDownRows) * uint32_t(p.wd * 2 + 16 + 32);
  p.slot_bytes = up128(std::max(up_slot, down_slot));
  const int64_t room = int64_t(smem_limit) - int64_t(p.off_ring);
  p.slots = room > 0 ? int(std::min<int64_t>(room / p.slot_bytes, 8)) : 0;
  if (p.slots < 2) {
    q.why_not = "one launch: the shared memory left beside X and the partial sums holds fewer than 2 stages";
    return q;
  }
  q.smem = p.off_ring + uint32_t(p.slots) * p.slot_bytes;
  return q;
}

// ------------------------------------------------------------------ device helpers
using hopper::cluster_arrive_relaxed;
using hopper::cluster_cta_rank;
using hopper::cluster_peer;
using hopper::cluster_sum_in_order;
using hopper::cluster_wait;
using hopper::fence_barrier_init;
using hopper::mbarrier_arrive;
using hopper::mbarrier_arrive_expect_bytes;
using hopper::mbarrier_init;
using hopper::mbarrier_wait;

__device__ __forceinline__ void consumers_sync() {  // the eight consumer warps only
  asm volatile("bar.sync 1, 256;\n" ::: "memory");
}

// An arrival on the barrier at `bar`'s offset in cluster block `rank`, releasing
// this thread's (and, after a block barrier, its block's) shared-memory writes
// to the cluster.
__device__ __forceinline__ void arrive_release_cluster(uint64_t* bar, uint32_t rank) {
#if WB_HOPPER_DEVICE
  const uint32_t local = shared_address(bar);
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(local),
      "r"(rank)
      : "memory");
#endif
}

// The same without a release: "I no longer read your shared memory" (nothing
// to publish, so no fence, which under a full memory system costs microseconds).
__device__ __forceinline__ void arrive_relaxed_cluster(uint64_t* bar, uint32_t rank) {
#if WB_HOPPER_DEVICE
  const uint32_t local = shared_address(bar);
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(local),
      "r"(rank)
      : "memory");
#endif
}

// Waits for phase `phase` of this block's `bar`, acquiring what the cluster's
// arrivals released.
__device__ __forceinline__ void wait_acquire_cluster(uint64_t* bar, uint32_t phase) {
#if WB_HOPPER_DEVICE
  const uint32_t address = shared_address(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred P;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P, [%1], %2;\n"
        "selp.u32 %0, 1, 0, P;\n"
        "}\n"
        : "=r"(done)
        : "r"(address), "r"(phase)
        : "memory");
  } while (!done);
#endif
}

// One bulk copy (a run of `bytes`, a multiple of 16) into this block's shared
// memory, counted on `bar`; weights are read once, so they leave L2 first.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar,
                                          uint64_t policy) {
#if WB_HOPPER_DEVICE
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::
          "r"(shared_address(dst)),
      "l"(src), "r"(bytes), "r"(shared_address(bar)), "l"(policy)
      : "memory");
#endif
}

// 16 bytes global -> shared by cp.async, with an L2 policy.
__device__ __forceinline__ void cp_async_16_hint(uint32_t dst, const void* src, uint64_t policy) {
#if WB_HOPPER_DEVICE
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "l"(policy)
               : "memory");
#endif
}

// One arrival on `bar` once every cp.async this thread has issued so far has
// landed (the barrier counts it among its expected arrivals: .noinc).
__device__ __forceinline__ void arrive_when_landed(uint64_t* bar) {
#if WB_HOPPER_DEVICE
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(shared_address(bar)) : "memory");
#endif
}

__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy = 0;
#if WB_HOPPER_DEVICE
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}
__device__ __forceinline__ uint64_t evict_last_policy() {
  uint64_t policy = 0;
#if WB_HOPPER_DEVICE
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}

// Keeps the halves of a fragment register whose k (k, k + 1) lies below `valid`.
__device__ __forceinline__ uint32_t keep_k(uint32_t reg, int k, int valid) {
  return reg & ((k < valid ? 0x0000FFFFu : 0u) | (k + 1 < valid ? 0xFFFF0000u : 0u));
}

// ------------------------------------------------------------------ the kernel
__global__ void __launch_bounds__(kOneLaunchThreads, 1) one_launch_ffn_kernel(const OneLaunchParams p) {
#if WB_HOPPER_DEVICE
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + p.slots;
  uint64_t* xbar = empty + p.slots;
  uint64_t* ready_up = xbar + 1;
  uint64_t* done_up = xbar + 2;
  uint64_t* ready_dn = xbar + 3;
  uint64_t* done_dn = xbar + 4;
  uint64_t* idx_bar = xbar + 5;  // the down product's row list is in shared memory
  int32_t* idx_up = reinterpret_cast<int32_t*>(smem + p.off_idx_up);
  int32_t* idx_dn = reinterpret_cast<int32_t*>(smem + p.off_idx_dn);
  unsigned char* xs = smem + p.off_x;
  float* part_up = reinterpret_cast<float*>(smem + p.off_part);
  float* part_dn = reinterpret_cast<float*>(xs);  // X is done with by then
  unsigned char* ring = smem + p.off_ring;

  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const auto stamp = [&](int i) {
    if (p.times) {
      unsigned long long t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      p.times[blockIdx.x * 10 + i] = t;
    }
  };
  if (tid == 0) stamp(0);
  const uint32_t rank = cluster_cta_rank();
  const int clusters = int(gridDim.x) / kOneLaunchCluster;
  const int cluster = int(blockIdx.x) / kOneLaunchCluster;

  // This cluster's neurons (up) and this block's (down).
  const int first = cluster * p.nu;
  const int n_in = max(0, min(p.nu, p.count - first));
  const int rows_valid = n_in * p.per;
  const int dn_first = int(rank) * p.rr;
  const int dn_len = max(0, min(p.rr, p.count - dn_first));
  const int dn_stages = (dn_len + kOneLaunchDownRows - 1) / kOneLaunchDownRows;
  const int my_cbs = cluster < p.col_blocks ? (p.col_blocks - 1 - cluster) / clusters + 1 : 0;
  const int k_stages = p.kq / p.kc;
  const int up_groups = (rows_valid + kOneLaunchGroupRows - 1) / kOneLaunchGroupRows;
  const int up_stages = up_groups * k_stages;
  const uint32_t x_stride = uint32_t(p.kq * 2 + 16), up_stride = uint32_t(p.kc * 2 + 16);
  const uint32_t dn_stride = uint32_t(p.wd * 2 + 16);

  if (tid == 0) {
    for (int s = 0; s < p.slots; ++s) {
      mbarrier_init(full + s, 32 * (kOneLaunchProducerWarps - 1) + 1);  // the copiers, the control thread
      mbarrier_init(empty + s, 8);
    }
    mbarrier_init(xbar, 1);
    mbarrier_init(ready_up, kOneLaunchCluster);
    mbarrier_init(done_up, kOneLaunchCluster);
    mbarrier_init(ready_dn, kOneLaunchCluster);
    mbarrier_init(done_dn, kOneLaunchCluster);
    mbarrier_init(idx_bar, 256);
    fence_barrier_init();
  }
  __syncthreads();
  cluster_arrive_relaxed();  // the peers may arrive on these barriers once the cluster has waited below

  // The grid-wide wait: every block adds one to a counter that no launch
  // resets, and this launch is through once it has counted gridDim.x more than
  // the launches before it (read here, before this block can count itself in;
  // the count wraps after 2^32 / gridDim.x launches of one workspace).
  uint32_t grid_target = 0;
  if (warp == 0) {
    if (lane == 0) {
      const uint32_t before = *reinterpret_cast<volatile uint32_t*>(p.grid_sync);
      grid_target = before / gridDim.x * gridDim.x + gridDim.x;
      mbarrier_arrive_expect_bytes(xbar, uint32_t(p.m * p.kq * 2));
    }
    __syncwarp();
    if (lane < p.m)  // this block's quarter of X's rows; X does not depend on I
      bulk_copy(xs + lane * x_stride, p.x + int64_t(lane) * p.d_model + int(rank) * p.kq, uint32_t(p.kq * 2), xbar,
                evict_last_policy());
  } else if (warp >= kOneLaunchProducerWarps) {
    for (int i = (tid - 32 * kOneLaunchProducerWarps) * 16; i < (16 - p.m) * int(x_stride); i += 256 * 16)  // rows past M: zeros
      *reinterpret_cast<uint4*>(xs + p.m * x_stride + i) = make_uint4(0, 0, 0, 0);
  }
  // The W1 rows this block gathers, through I, into shared memory (four loads
  // in flight a thread); the consumers fetch the W2 rows' list after the start.
  for (int base = tid; base < rows_valid; base += 4 * kOneLaunchThreads) {
    int32_t v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = base + u * kOneLaunchThreads;
      v[u] = i < rows_valid ? __ldg(p.idx + first + i / p.per) : 0;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = base + u * kOneLaunchThreads;
      if (i < rows_valid) idx_up[i] = v[u] * p.per + i % p.per;
    }
  }
  __syncthreads();
  cluster_wait();
  if (tid == 0) stamp(1);

  if (warp < kOneLaunchProducerWarps) {
    // ------------------------------------------------------------ producers
    const auto take_slot = [&](int stage) {
      const int slot = stage % p.slots;
      if (stage >= p.slots) mbarrier_wait(empty + slot, uint32_t((stage / p.slots - 1) & 1));
      return slot;
    };
    if (warp == 0) {
      // The control thread: one arrival a stage on "full", which for a down
      // stage also expects the bytes of H's rows, and the grid-wide wait. It
      // copies no weights: a thread whose cp.async queue is full stalls at its
      // next copy, and this one must notice the grid's count at once.
      if (lane != 0) return;
      int t = 0;
      for (; t < up_stages; ++t) mbarrier_arrive(full + take_slot(t));
      const auto issue_h = [&](int d) {  // down stage d's rows of H
        const int st = d % dn_stages;
        const int slot = (up_stages + d) % p.slots;
        const int valid = min(kOneLaunchDownRows, dn_len - st * kOneLaunchDownRows);
        bulk_copy(ring + size_t(slot) * p.slot_bytes + kOneLaunchDownRows * dn_stride,
                  p.ht + int64_t(dn_first + st * kOneLaunchDownRows) * 16, uint32_t(valid * 32), full + slot,
                  evict_last_policy());
      };
      const int down = my_cbs * dn_stages;
      bool passed = false;
      for (int d = 0; d < down; ++d, ++t) {
        // The slot's last use was a down stage: that needed H, so the grid must have passed.
        if (!passed && d >= p.slots) {
          stamp(9);
          while (int32_t(load_acquire_gpu(p.grid_sync) - grid_target) < 0) {
          }
          asm volatile("fence.proxy.async.global;\n" ::: "memory");  // H was written by ordinary stores
          for (int e = 0; e < d; ++e) issue_h(e);
          stamp(5);
          passed = true;
        }
        const int slot = take_slot(t);
        const int valid = min(kOneLaunchDownRows, dn_len - (d % dn_stages) * kOneLaunchDownRows);
        mbarrier_arrive_expect_bytes(full + slot, uint32_t(valid * 32));
        if (passed) issue_h(d);
      }
      if (!passed && down > 0) {
        stamp(9);
        while (int32_t(load_acquire_gpu(p.grid_sync) - grid_target) < 0) {
        }
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
        for (int e = 0; e < down; ++e) issue_h(e);
        stamp(5);
      }
      return;
    }
    // The copiers: every other producer thread copies 16-byte pieces of the
    // gathered rows with cp.async and arrives on the stage's "full" barrier
    // once its own copies have landed. Each takes one 16-byte column of the
    // rows' pieces, every (kCopiers / pieces)-th row: no division a copy.
    const uint64_t weights = evict_first_policy();
    const int pt = tid - 32;
    constexpr int kCopiers = 32 * (kOneLaunchProducerWarps - 1);
    int t = 0;
    const int up_pieces = p.kc / 8, up_c = pt % up_pieces, up_r0 = pt / up_pieces, up_step = kCopiers / up_pieces;
    for (int g = 0; g < up_groups; ++g) {
      const int rows = min(kOneLaunchGroupRows, rows_valid - g * kOneLaunchGroupRows);
      const int32_t* list = idx_up + g * kOneLaunchGroupRows;
      for (int ks = 0; ks < k_stages; ++ks, ++t) {
        const int slot = take_slot(t);
        const uint32_t dst = shared_address(ring + size_t(slot) * p.slot_bytes) + uint32_t(up_c) * 16;
        const __half* src = p.w1n + int(rank) * p.kq + ks * p.kc + up_c * 8;
#pragma unroll 4
        for (int r = up_r0; r < rows; r += up_step)
          cp_async_16_hint(dst + uint32_t(r) * up_stride, src + int64_t(list[r]) * p.d_model, weights);
        arrive_when_landed(full + slot);
      }
    }
    // Down: W2's rows do not depend on H, so they are asked for as slots free.
    mbarrier_wait(idx_bar, 0);
    int dn_span = 1;  // 16-byte pieces of a W2 row a stage, rounded up to a power of two
    while (dn_span < p.wd / 8) dn_span *= 2;
    const int dn_c = pt % dn_span, dn_r0 = pt / dn_span, dn_step = kCopiers / dn_span;
    for (int cbi = 0; cbi < my_cbs; ++cbi) {
      const int cb = cluster + cbi * clusters;
      for (int st = 0; st < dn_stages; ++st, ++t) {
        const int slot = take_slot(t);
        const int valid = min(kOneLaunchDownRows, dn_len - st * kOneLaunchDownRows);
        const uint32_t dst = shared_address(ring + size_t(slot) * p.slot_bytes) + uint32_t(dn_c) * 16;
        const __half* src = p.w2 + cb * p.wd + dn_c * 8;
        const int32_t* list = idx_dn + st * kOneLaunchDownRows;
        if (dn_c * 8 < min(p.wd, p.d_model - cb * p.wd)) {
#pragma unroll 4
          for (int r = dn_r0; r < valid; r += dn_step)
            cp_async_16_hint(dst + uint32_t(r) * dn_stride, src + int64_t(list[r]) * p.d_model, weights);
        }
        arrive_when_landed(full + slot);
      }
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  const int cw = warp - kOneLaunchProducerWarps, ct = tid - 32 * kOneLaunchProducerWarps;
  for (int base = ct; base < dn_len; base += 4 * 256) {  // the W2 rows' list, for the producers' down stages
    int32_t v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = base + u * 256 < dn_len ? __ldg(p.idx + dn_first + base + u * 256) : 0;
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (base + u * 256 < dn_len) idx_dn[base + u * 256] = v[u];
  }
  mbarrier_arrive(idx_bar);
  consumers_sync();  // X's zero rows written
  mbarrier_wait(xbar, 0);
  int t = 0;
  const int quad = lane % 4, row8 = lane / 4;
  for (int g = 0; g < up_groups; ++g) {
    const int rows = min(kOneLaunchGroupRows, rows_valid - g * kOneLaunchGroupRows);
    const bool mine = cw * 8 < rows;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int ks = 0; ks < k_stages; ++ks, ++t) {
      const int slot = t % p.slots;
      mbarrier_wait(full + slot, uint32_t((t / p.slots) & 1));
      if (mine) {
        const uint32_t a_row = shared_address(xs) + uint32_t(lane % 16) * x_stride +
                               uint32_t(ks * p.kc + (lane / 16) * 8) * 2;
        const uint32_t b_row = shared_address(ring + size_t(slot) * p.slot_bytes) +
                               uint32_t(cw * 8 + lane % 8) * up_stride + uint32_t((lane / 8) % 2) * 16;
        for (int kk = 0; kk < p.kc / 16; ++kk) {
          uint32_t a[4], b[2];
          ldmatrix_x4(a, a_row + kk * 32);
          ldmatrix_x2(b, b_row + kk * 32);
          mma_m16n8k16_f32(acc, a, b);
        }
      }
      __syncwarp();
      if (lane == 0) mbarrier_arrive(empty + slot);
    }
    if (mine) {  // part_up[n][m]
      const int n = g * kOneLaunchGroupRows + cw * 8 + 2 * quad;
      part_up[n * 16 + row8] = acc[0];
      part_up[(n + 1) * 16 + row8] = acc[1];
      part_up[n * 16 + row8 + 8] = acc[2];
      part_up[(n + 1) * 16 + row8 + 8] = acc[3];
    }
  }
  // The cluster's four k quarters added in rank order; this block finishes a
  // quarter of the cluster's neurons.
  consumers_sync();
  if (ct == 0) stamp(2);
  if (ct < kOneLaunchCluster) arrive_release_cluster(ready_up, uint32_t(ct));  // one fence for the warp
  wait_acquire_cluster(ready_up, 0);
  if (ct == 0) stamp(3);
  {
    const int nq = p.nu / kOneLaunchCluster;
    for (int item = ct; item < nq * 16; item += 256) {
      const int jl = int(rank) * nq + item / 16, m = item % 16;
      if (jl >= n_in) break;
      const int n = jl * p.per;
      float v0 = 0.0f, v1 = 0.0f;
      float parts0[kOneLaunchCluster], parts1[kOneLaunchCluster];
#pragma unroll
      for (int r = 0; r < kOneLaunchCluster; ++r) {
        const float* peer = cluster_peer(part_up, uint32_t(r));
        parts0[r] = peer[n * 16 + m];
        parts1[r] = p.swiglu ? peer[(n + 1) * 16 + m] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kOneLaunchCluster; ++r) {
        v0 += parts0[r];
        v1 += parts1[r];
      }
      const float h = p.swiglu ? apply_activation(Activation::silu, v0) * v1 : apply_activation(p.act, v0);
      p.ht[int64_t(first + jl) * 16 + m] = __float2half_rn(h);
    }
  }
  consumers_sync();
  if (ct == 0) {
    for (uint32_t r = 0; r < kOneLaunchCluster; ++r) arrive_relaxed_cluster(done_up, r);
    // The grid-wide wait: the last block to count itself in starts the next generation.
    stamp(4);
    add_release_gpu(p.grid_sync, 1);
    stamp(8);
  }

  // Down: Y's columns [cb * wd, cb * wd + wd), this block's quarter of the neurons.
  // Warp cw takes the n8 tiles cw, cw + 8, cw + 16, cw + 24 (up to 4), in pairs
  // of one ldmatrix each.
  const int tiles = p.wd / 8;
  const int nt = tiles > cw ? (tiles - cw + 7) / 8 : 0;
  for (int cbi = 0; cbi < my_cbs; ++cbi) {
    const int cb = cluster + cbi * clusters;
    float acc[4][4] = {};
    for (int st = 0; st < dn_stages; ++st, ++t) {
      const int slot = t % p.slots;
      mbarrier_wait(full + slot, uint32_t((t / p.slots) & 1));
      const int valid = min(kOneLaunchDownRows, dn_len - st * kOneLaunchDownRows);
      if (nt > 0) {
        const uint32_t base = shared_address(ring + size_t(slot) * p.slot_bytes);
        const uint32_t h_row = base + kOneLaunchDownRows * dn_stride +
                               uint32_t(lane % 8 + (lane / 16) * 8) * 32 + uint32_t((lane / 8) % 2) * 16;
        const uint32_t w_row = base + uint32_t(lane % 8 + ((lane / 8) % 2) * 8) * dn_stride;
        for (int kb = 0; kb < valid; kb += 16) {
          uint32_t a[4];
          ldmatrix_x4_trans(a, h_row + kb * 32);
          const bool partial = kb + 16 > valid;  // rows past this block's neurons: stale shared memory, kept out
          const int k = kb + 2 * quad;
          if (partial) {
            a[0] = keep_k(a[0], k, valid);
            a[1] = keep_k(a[1], k, valid);
            a[2] = keep_k(a[2], k + 8, valid);
            a[3] = keep_k(a[3], k + 8, valid);
          }
#pragma unroll
          for (int pr = 0; pr < 2; ++pr) {
            if (2 * pr < nt) {
              const int ja = cw + 16 * pr, jb = 2 * pr + 1 < nt ? ja + 8 : ja;
              uint32_t b[4];
              ldmatrix_x4_trans(b, w_row + kb * dn_stride + uint32_t(lane / 16 ? jb : ja) * 16);
              if (partial) {
                b[0] = keep_k(b[0], k, valid);
                b[1] = keep_k(b[1], k + 8, valid);
                b[2] = keep_k(b[2], k, valid);
                b[3] = keep_k(b[3], k + 8, valid);
              }
              const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
              mma_m16n8k16_f32(acc[2 * pr], a, b0);
              if (2 * pr + 1 < nt) mma_m16n8k16_f32(acc[2 * pr + 1], a, b1);
            }
          }
        }
      }
      __syncwarp();
      if (lane == 0) mbarrier_arrive(empty + slot);
    }
    if (ct == 0) stamp(6);
    if (cbi > 0) wait_acquire_cluster(done_dn, uint32_t((cbi - 1) & 1));  // the peers read the last block's sums
#pragma unroll
    for (int h = 0; h < 4; ++h)
      if (h < nt) {
        const int n = (cw + 8 * h) * 8 + 2 * quad;
        part_dn[row8 * p.wd + n] = acc[h][0];
        part_dn[row8 * p.wd + n + 1] = acc[h][1];
        part_dn[(row8 + 8) * p.wd + n] = acc[h][2];
        part_dn[(row8 + 8) * p.wd + n + 1] = acc[h][3];
      }
    consumers_sync();
    if (ct < kOneLaunchCluster) arrive_release_cluster(ready_dn, uint32_t(ct));
    wait_acquire_cluster(ready_dn, uint32_t(cbi & 1));
    const int quarter = p.wd / kOneLaunchCluster, pairs = quarter / 2, cols = min(p.wd, p.d_model - cb * p.wd);
    for (int item = ct; item < 16 * pairs; item += 256) {
      const int m = item / pairs, c = int(rank) * quarter + (item % pairs) * 2;
      if (m >= p.m) break;
      if (c >= cols) continue;  // the last block's columns past d_model
      const float2 v = cluster_sum_in_order<kOneLaunchCluster>(
          reinterpret_cast<const float2*>(part_dn + m * p.wd + c), kOneLaunchCluster);
      *reinterpret_cast<__half2*>(p.y + int64_t(m) * p.d_model + cb * p.wd + c) = __floats2half2_rn(v.x, v.y);
    }
    consumers_sync();
    if (ct == 0)
      for (uint32_t r = 0; r < kOneLaunchCluster; ++r) arrive_relaxed_cluster(done_dn, r);
  }
  // No block leaves while its peers may still read its shared memory.
  wait_acquire_cluster(done_up, 0);
  if (my_cbs > 0) wait_acquire_cluster(done_dn, uint32_t((my_cbs - 1) & 1));
  if (ct == 0) stamp(7);
#endif
}

// ------------------------------------------------------------------ the launch
// The clusters that run at once with this much shared memory (cached: the
// driver's answer does not change within a run).
inline int one_launch_clusters(uint32_t smem) {
  static std::map<uint32_t, int> cache;
  auto it = cache.find(smem);
  if (it != cache.end()) return it->second;
  CUDA_CHECK(cudaFuncSetAttribute(one_launch_ffn_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int c = hopper::max_active_clusters(reinterpret_cast<const void*>(one_launch_ffn_kernel), kOneLaunchCluster,
                                            kOneLaunchThreads, int(smem));
  cache.emplace(smem, c);
  return c;
}

inline int one_launch_smem_limit() {
  static const int limit = [] {
    int device = 0, bytes = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return bytes;
  }();
  return limit;
}

// The plan on this GPU: the layout with every byte of shared memory a block may
// have, and as many clusters as run at once with it (all must: they wait for
// each other).
inline OneLaunchPlan plan_one_launch(int m, int d_model, int count, int per) {
  const int limit = one_launch_smem_limit();
  const int guess = std::max(1, sm_count() / kOneLaunchCluster);
  OneLaunchPlan q = plan_one_launch_for(m, d_model, count, per, guess, limit);
  if (!q.why_not.empty()) return q;
  const int clusters = one_launch_clusters(q.smem);
  if (clusters < 1) {
    q.why_not = "one launch: no cluster of 4 blocks fits on this GPU";
    return q;
  }
  if (clusters != guess) q = plan_one_launch_for(m, d_model, count, per, clusters, limit);
  if (q.why_not.empty() && one_launch_clusters(q.smem) < clusters) q.why_not = "one launch: its clusters do not all fit";
  return q;
}

// Workspace: the grid's counter pair, then H transposed (count x 16 fp16).
inline size_t one_launch_workspace_bytes(int count) { return 256 + size_t(std::max(count, 1)) * 16 * sizeof(__half); }

inline void launch_one_launch(OneLaunchParams p, const OneLaunchPlan& q, void* workspace, cudaStream_t st) {
  auto* ws = static_cast<unsigned char*>(workspace);
  p.grid_sync = reinterpret_cast<uint32_t*>(ws);
  p.ht = reinterpret_cast<__half*>(ws + 256);
  one_launch_clusters(q.smem);  // sets the kernel's shared-memory attribute
  const hopper::ClusterLaunch launch(dim3(unsigned(q.clusters * kOneLaunchCluster), 1, 1), kOneLaunchThreads, q.smem,
                                     st, kOneLaunchCluster);
  static unsigned long long* times = nullptr;  // TEMP
  if (std::getenv("WB_OL_TIMES")) {
    const int n = q.clusters * kOneLaunchCluster * 10;
    if (!times) CUDA_CHECK(cudaMalloc(&times, size_t(n) * 8));
    CUDA_CHECK(cudaMemsetAsync(times, 0, size_t(n) * 8, st));
    p.times = times;
  }
  CUDA_CHECK(cudaLaunchKernelEx(&launch.config, one_launch_ffn_kernel, p));
  if (p.times) {
    const int blocks = q.clusters * kOneLaunchCluster;
    std::vector<unsigned long long> h(size_t(blocks) * 10);
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(cudaMemcpy(h.data(), times, h.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (int b = 0; b < blocks; ++b) t0 = std::min(t0, h[size_t(b) * 10]);
    std::fprintf(stderr, "one_launch times (us from the first block's start): point min med max\n");
    for (int i = 0; i < 10; ++i) {
      std::vector<double> v;
      for (int b = 0; b < blocks; ++b)
        if (h[size_t(b) * 10 + i]) v.push_back(double(h[size_t(b) * 10 + i] - t0) / 1000.0);
      std::sort(v.begin(), v.end());
      if (!v.empty()) std::fprintf(stderr, "  %d  %6.2f %6.2f %6.2f  (%zu)\n", i, v.front(), v[v.size() / 2], v.back(), v.size());
    }
  }
}

}  // namespace wb::sparse
