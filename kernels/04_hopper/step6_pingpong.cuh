// Lesson 04, step 6 (pingpong): the two consumers take turns instead of
// sharing each tile.
//
// In step 5 both consumers finish a tile together and then both run the
// epilogue, so the tensor cores idle for the epilogue's length once per tile.
// Here each consumer owns whole 128 x 128 tiles (two m64n128k16 wgmmas per k16
// step; 128 accumulator registers, as before) and the block's tiles alternate
// between them. Two named barriers order the mainloops: consumer 1 starts
// issuing tile i+1's wgmmas only once consumer 0 has issued all of tile i's,
// and so on, so the tensor cores serve one mainloop at a time while the other
// consumer converts, stages and TMA-stores its finished tile (the CUTLASS
// "ping-pong" schedule). One ring of stages serves both: the producer loads
// the tiles in order and each consumer skips the other's stages. Stages shrink
// to 32 KB, so 6 fit.
#pragma once

#include <algorithm>

#include "04_hopper/step5_tma_store.cuh"

namespace wb::hopper {

// Step 6 (pingpong): the same 3 warpgroups, but each consumer owns a whole
// tile and the two consumers take alternate tiles. A consumer's tile is
// kTileM x kTileN with kTileM * kTileN / 128 = 128 fp32 registers per thread, as
// many as a 64 x 256 half of steps 2-5: 128 x 128, two m64n128k16 wgmmas per k16
// step, 32 KB stages, 6 of them. (64 x 256 tiles, one m64n256k16 per step, need
// 40 KB stages, so only 4 fit, and read 40 KB from L2 per 1M MACs instead of 32:
// measured slower still on H100, so they are not offered.)
template <int kTileM_, int kTileN_, int kStages_>
struct PingpongShape {
  static constexpr int kTileM = kTileM_;
  static constexpr int kTileN = kTileN_;
  static constexpr int kStages = kStages_;
  static constexpr int kGroup = kGroupM * 128 / kTileM;  // <- grouped order: 1024 rows of C per group
};
using PingpongSquare = PingpongShape<128, 128, 6>;  // <- 6 x 32 KB + 2 x 16 KB staging of 227 KB
constexpr int kOrderBarrier = 3;  // <- named barriers 3, 4: "tile i's mainloop may start" (1, 2: epilogue)

// Ping-pong consumers. The block's tiles (i = 0, 1, 2, ... in the grouped order,
// as in step 3) alternate between consumer 0 (even i) and consumer 1 (odd i);
// each computes its whole 128 x 128 tile and stores it through its own 16 KB
// staging buffer. The producer loads the tiles' k stages in the same order into
// one ring of Shape::kStages slots, so consumer c finds tile i's stages at positions
// i * k_tiles, ... of the ring and skips the other consumer's.
// The two mainloops take turns: a consumer starts tile i's wgmmas only after the
// owner of tile i-1 has issued all of its own (named barrier kOrderBarrier +
// i % 2, 256 threads: the waiter's bar.sync meets the other's bar.arrive). So
// the tensor cores always work for one mainloop at full rate, and while they
// do, the other consumer runs its epilogue (activation, rounding, staging, TMA
// store) instead of leaving them idle as in steps 2-5.
// The signals alternate strictly (a consumer arrives again only after it has
// waited for the other), and a consumer signals only when a tile i+1 exists, so
// no barrier is left half-arrived at exit.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

template <class Shape, Activation kAct>
__global__ void __launch_bounds__(kWsThreads, 1)
    pingpong_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                    const __grid_constant__ CUtensorMap c_map, int k, int tiles_m, int tiles_n, TraceRecord* trace) {
  static_assert(Shape::kTileM % 64 == 0 && Shape::kTileN % kStoreCols == 0, "a tile is stored in 64 x 128 pieces");
  static_assert(Shape::kTileM * Shape::kTileN / kWarpgroupThreads == 128, "128 accumulator registers per consumer thread");
  static_assert(kConsumers == 2, "ping-pong alternates two consumer warpgroups");
#if WB_WGMMA_DEVICE
  constexpr int kTileM = Shape::kTileM, kTileN = Shape::kTileN, kStages = Shape::kStages;
  constexpr int kRowSlices = kTileM / 64;  // 64-row wgmmas per k16 step
  using Smem = PipelineSmem<kTileM, kTileN, kStages, kStagingElems>;
  extern __shared__ uint8_t smem_raw[];
  Smem& s = aligned_smem<Smem>(smem_raw);

  const int num_tiles = tiles_m * tiles_n;
  const int k_tiles = ceil_div(k, kBlockK);
  const int warpgroup = threadIdx.x / kWarpgroupThreads;
  // This block's tiles: i-th = tile_of(blockIdx.x + i * gridDim.x).
  const int block_tiles = int(blockIdx.x) < num_tiles ? ceil_div(num_tiles - int(blockIdx.x), int(gridDim.x)) : 0;
  auto tile_number = [&](int i) { return int(blockIdx.x) + i * int(gridDim.x); };

  init_pipeline<kStages>(s, &a_map, &b_map, 4);  // the warps of the one consumer that read the slot
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------- producer
    warpgroup_release_registers<kProducerRegs>();
    if (threadIdx.x == 0) {
      int slot = 0;
      uint32_t phase = 0;
      for (int i = 0; i < block_tiles; ++i) {
        const TileCoord tile = tile_of(TileOrder::grouped, tile_number(i), tiles_m, tiles_n, Shape::kGroup);
        for (int kt = 0; kt < k_tiles; ++kt) {
          mbarrier_wait(&s.empty[slot], phase ^ 1);  // first lap: passes at once
          load_stage<Smem, kTileM, kTileN>(s, slot, &a_map, &b_map, tile.m, tile.n, kt);
          if (++slot == kStages) { slot = 0; phase ^= 1; }
        }
      }
    }
  } else {
    // ---------------------------------------------------------- consumers
    warpgroup_claim_registers<kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const bool warp_leader = threadIdx.x % 32 == 0;
    __half* staging = s.c + consumer * 64 * kStoreCols;
    float acc[kRowSlices][kTileN / 2];  // (kTileM, kTileN) fp32 as (64, kTileN) row slices

    for (int i = consumer; i < block_tiles; i += kConsumers) {
      const uint64_t t0 = trace ? global_timer_ns() : 0;
      const TileCoord tile = tile_of(TileOrder::grouped, tile_number(i), tiles_m, tiles_n, Shape::kGroup);
      const int first_stage = i * k_tiles;  // where tile i's stages start in the ring
      int slot = first_stage % kStages;
      uint32_t phase = (first_stage / kStages) & 1;

      if (i > 0) named_barrier_sync(kOrderBarrier + i % 2, 2 * kWarpgroupThreads);  // tile i-1 fully issued
      int previous_slot = -1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbarrier_wait(&s.full[slot], phase);
        const uint32_t a_base = smem_u32(s.a[slot]);
        const uint32_t b_base = smem_u32(s.b[slot]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
          const uint64_t desc_b =
              desc_n_major_b(b_base + kk * 2 * kSwizzleAtomBytes, Smem::kBPanelElems * sizeof(__half));
#pragma unroll
          for (int r = 0; r < kRowSlices; ++r) {
            const uint64_t desc_a = desc_k_major_a(a_base + r * 64 * kSwizzleBytes + kk * kWgmmaK * sizeof(__half));
            wgmma_m64k16<kTileN>(acc[r], desc_a, desc_b, kt > 0 || kk > 0);
          }
        }
        wgmma_commit();
        wgmma_wait<1>();  // the group of k tile kt-1 has finished reading its slot
#pragma unroll
        for (int r = 0; r < kRowSlices; ++r) fence_accumulators(acc[r]);
        if (previous_slot >= 0 && warp_leader) mbarrier_arrive(&s.empty[previous_slot]);
        previous_slot = slot;
        if (++slot == kStages) { slot = 0; phase ^= 1; }
      }
      // Every wgmma of tile i is issued: the other consumer may queue tile i+1's.
      if (i + 1 < block_tiles) named_barrier_arrive(kOrderBarrier + (i + 1) % 2, 2 * kWarpgroupThreads);
      wgmma_wait<0>();
#pragma unroll
      for (int r = 0; r < kRowSlices; ++r) fence_accumulators(acc[r]);
      if (warp_leader) mbarrier_arrive(&s.empty[previous_slot]);

      // The epilogue, overlapping the other consumer's mainloop.
#pragma unroll
      for (int r = 0; r < kRowSlices; ++r) {
#pragma unroll
        for (int h = 0; h < kTileN / kStoreCols; ++h)
          store_64x128_via_smem<kAct, false>(*reinterpret_cast<const float(*)[64]>(acc[r] + 64 * h), staging, &c_map,
                                             tile.m * kTileM + 64 * r, tile.n * kTileN + kStoreCols * h, 1 + consumer);
      }
      if (trace != nullptr && threadIdx.x % kWarpgroupThreads == 0) write_trace(trace, tile_number(i), tile, k, t0);
    }
    if (threadIdx.x % kWarpgroupThreads == 0) tma_store_exit_wait();  // smem stays valid until TMA has read it
  }
#else
  (void)k; (void)tiles_m; (void)tiles_n; (void)trace; (void)c_map;
  __trap();
#endif
}

// ------------------------------------------------------------ host side
template <class Shape>
using PingpongSmem = PipelineSmem<Shape::kTileM, Shape::kTileN, Shape::kStages, kStagingElems>;
static_assert(smem_bytes_for<PingpongSmem<PingpongSquare>>() <= 227 * 1024,
              "step 6's stages and staging buffers must fit 227 KB");
template <class Shape, Activation kAct>
constexpr auto kPpKernel = pingpong_kernel<Shape, kAct>;

template <class Shape>
inline int pingpong_grid(const GemmShape& s) {
  static const int resident = [] {  // once per process
    const int smem = smem_bytes_for<PingpongSmem<Shape>>();
    allow_large_smem(kPpKernel<Shape, Activation::none>, smem);
    return sm_count() * std::max(1, blocks_per_sm(reinterpret_cast<const void*>(kPpKernel<Shape, Activation::none>),
                                                  kWsThreads, smem));
  }();
  return min_int(ceil_div(s.m, Shape::kTileM) * ceil_div(s.n, Shape::kTileN), resident);
}

template <class Shape, Activation kAct>
inline void launch_pingpong(const GemmArgs& g, cudaStream_t stream) {
  const int tiles_m = ceil_div(g.m, Shape::kTileM), tiles_n = ceil_div(g.n, Shape::kTileN);
  const CUtensorMap a_map = make_tensor_map_2d(g.a, g.m, g.k, Shape::kTileM, kBlockK);  // boxes (TILE_M, 64)
  const CUtensorMap b_map = make_tensor_map_2d(g.b, g.k, g.n, kBlockK, kPanelCols);      // boxes (64, 64)
  const CUtensorMap c_map = make_tensor_map_2d(g.c, g.m, g.n, 64, kPanelCols);           // boxes (64, 64), stores
  const int smem = smem_bytes_for<PingpongSmem<Shape>>();
  constexpr auto kernel = kPpKernel<Shape, kAct>;
  allow_large_smem(kernel, smem);
  kernel<<<pingpong_grid<Shape>(GemmShape{g.m, g.n, g.k}), kWsThreads, smem, stream>>>(a_map, b_map, c_map, g.k,
                                                                                        tiles_m, tiles_n, g.trace);
  CUDA_CHECK_LAUNCH();
}

template <class Shape>
inline void launch_pingpong_with_activation(const GemmArgs& g, Activation act, cudaStream_t stream) {
  with_activation(act, [&](auto a) { launch_pingpong<Shape, a.value>(g, stream); });
}

template <class Shape>
inline KernelConfig pingpong_config(const GemmShape& s) {
  KernelConfig cfg = grouped_tile_config(s, Shape::kTileM, Shape::kTileN, kWsThreads, Shape::kStages, Shape::kGroup);
  cfg.persistent = true;
  cfg.grid_blocks = pingpong_grid<Shape>(s);
  cfg.smem_bytes = smem_bytes_for<PingpongSmem<Shape>>();
  const void* kernel = reinterpret_cast<const void*>(kPpKernel<Shape, Activation::none>);
  allow_large_smem(kPpKernel<Shape, Activation::none>, cfg.smem_bytes);
  cfg.blocks_per_sm = blocks_per_sm(kernel, cfg.threads, cfg.smem_bytes);
  return cfg;
}

}  // namespace wb::hopper
