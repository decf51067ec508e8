// Lesson 04, step 2 (warp_specialized): a producer warpgroup that only copies
// and two consumer warpgroups that only multiply, on 128 x 256 tiles.
//
// Warpgroup 0 is the producer: after giving registers back, one thread issues
// all TMA copies, waiting on each slot's "empty" barrier before refilling it.
// Warpgroups 1 and 2 are consumers: each owns 64 rows of the 128 x 256 tile and
// a 64 x 256 fp32 accumulator (128 registers per thread). A consumer waits on
// "full", issues four m64n256k16 wgmmas, and keeps one group in flight: once
// group kt has been issued, group kt-1 is done and its slot is released.
//
// The same kernel serves steps 2 to 5, 7 and 9. What changes between them is
// given by two policies, each defined in its step's file:
//   Schedule  which tiles a block computes and how it loads their stages:
//               OneTilePerBlock (this step), PersistentTiles (step 3),
//               ClusterPairs (step 4: two blocks share B through multicast);
//   Epilogue  how the accumulators reach C:
//               DirectStore (this step: each thread writes fp16 pairs),
//               TmaStore (step 5: through shared memory and TMA stores).
// Producer and consumers walk the same list of work units, so the stage and
// phase counters simply run on from one tile to the next.
#pragma once

#include <algorithm>

#include "04_hopper/pipeline.cuh"

namespace wb::hopper {

// ------------------------------------------------------------ the kernel
template <class Schedule, class Epilogue>
__global__ void __launch_bounds__(kWsThreads, 1)
    warp_specialized_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                            const __grid_constant__ CUtensorMap c_map, __half* __restrict__ c, int m, int n, int k,
                            int tiles_m, int tiles_n, TraceRecord* trace) {
#if WB_WGMMA_DEVICE
  using Smem = PipelineSmem<kWsBlockM, kWsBlockN, kWsStages, Epilogue::kStagingElems>;
  extern __shared__ uint8_t smem_raw[];
  Smem& s = aligned_smem<Smem>(smem_raw);

  const Schedule schedule(tiles_m, tiles_n);  // this block's work units:
  const int first_unit = schedule.first_unit(), num_units = schedule.num_units(), unit_step = schedule.unit_step();
  const int k_tiles = ceil_div(k, kBlockK);
  const int warpgroup = threadIdx.x / kWarpgroupThreads;

  // "empty" counts one arrival per consumer warp of every block that reads the slot.
  init_pipeline<kWsStages>(s, &a_map, &b_map, Schedule::kCluster * kConsumers * 4);
  Schedule::sync_blocks();  // the barriers exist before anything arrives on them

  if (warpgroup == 0) {
    // ---------------------------------------------------------- producer
    warpgroup_release_registers<kProducerRegs>();
    if (threadIdx.x == 0) {
      int slot = 0;
      uint32_t phase = 0;
      for (int unit = first_unit; unit < num_units; unit += unit_step) {
        const TileCoord tile = schedule.tile(unit);
        for (int kt = 0; kt < k_tiles; ++kt) {
          mbarrier_wait(&s.empty[slot], phase ^ 1);  // first lap: passes at once
          schedule.load(s, slot, &a_map, &b_map, tile, kt);
          if (++slot == kWsStages) { slot = 0; phase ^= 1; }
        }
      }
    }
  } else {
    // ---------------------------------------------------------- consumers
    warpgroup_claim_registers<kConsumerRegs>();
    const int consumer = warpgroup - 1;  // rows 64*consumer .. +63 of the tile
    const bool warp_leader = threadIdx.x % 32 == 0;
    auto release = [&](int released_slot) {  // one arrival per consumer warp
      if (warp_leader) schedule.release(s, released_slot);
    };
    int slot = 0;
    uint32_t phase = 0;
    float acc[kWsBlockN / 2];  // (64, 256) fp32 for this warpgroup
    Epilogue epilogue(s, consumer);

    for (int unit = first_unit; unit < num_units; unit += unit_step) {
      const uint64_t t0 = trace ? global_timer_ns() : 0;
      const TileCoord tile = schedule.tile(unit);
      const int row0 = tile.m * kWsBlockM + 64 * consumer, col0 = tile.n * kWsBlockN;
      int previous_slot = -1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbarrier_wait(&s.full[slot], phase);
        wgmma_fence();
        wgmma_k_stage<kWsBlockN, Smem>(acc, smem_u32(s.a[slot]) + consumer * 64 * kSwizzleBytes, smem_u32(s.b[slot]),
                                       kt > 0);
        wgmma_commit();
        wgmma_wait<1>();  // the group of k tile kt-1 has finished reading its slot
        fence_accumulators(acc);
        if (previous_slot >= 0) release(previous_slot);
        previous_slot = slot;
        if (++slot == kWsStages) { slot = 0; phase ^= 1; }
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      release(previous_slot);  // the producer may start the next tile

      // A tile past M (the second of a cluster pair when tiles_m is odd) stores nothing.
      const bool inside = schedule.inside(tile);
      epilogue.store(acc, c, &c_map, m, n, row0, col0, inside);
      if (trace != nullptr && threadIdx.x == kWarpgroupThreads && inside)
        write_trace(trace, schedule.trace_unit(unit), tile, k, t0);
    }
    epilogue.finish();
  }
  Schedule::finish_blocks();
#else
  (void)m; (void)n; (void)k; (void)tiles_m; (void)tiles_n; (void)c; (void)trace; (void)c_map;
  __trap();
#endif
}

// ------------------------------------------------------------ step 2's policies
// One block per tile, the tiles in the grouped order (block b computes tile b).
struct OneTilePerBlock {
  static constexpr int kCluster = 1;     // blocks that compute one work unit together
  static constexpr bool kPersistent = false;

  int tiles_m, tiles_n, units;
  __device__ OneTilePerBlock(int tiles_m_, int tiles_n_)
      : tiles_m(tiles_m_), tiles_n(tiles_n_), units(tiles_m_ * tiles_n_) {}

  __device__ int first_unit() const { return int(blockIdx.x); }
  __device__ int num_units() const { return units; }
  __device__ int unit_step() const { return units; }  // one unit per block
  __device__ TileCoord tile(int unit) const {
    return tile_of(TileOrder::grouped, unit, tiles_m, tiles_n, kWsGroupM);
  }
  __device__ bool inside(TileCoord t) const { return t.m < tiles_m; }
  __device__ int trace_unit(int unit) const { return unit; }

  template <class Smem>
  __device__ void load(Smem& s, int slot, const CUtensorMap* a_map, const CUtensorMap* b_map, TileCoord t,
                       int kt) const {
    load_stage<Smem, kWsBlockM, kWsBlockN>(s, slot, a_map, b_map, t.m, t.n, kt);
  }
  // A consumer warp no longer reads `slot`.
  template <class Smem>
  __device__ void release(Smem& s, int slot) const {
    mbarrier_arrive(&s.empty[slot]);
  }
  __device__ static void sync_blocks() { __syncthreads(); }
  __device__ static void finish_blocks() {}

  // Host: blocks to launch for shape `s`, and how many fit on the GPU at once.
  static int grid(const GemmShape& s, int /*resident*/) {
    return ceil_div(s.m, kWsBlockM) * ceil_div(s.n, kWsBlockN);
  }
  static int resident(const void* kernel, int smem_bytes) {
    return sm_count() * std::max(1, blocks_per_sm(kernel, kWsThreads, smem_bytes));
  }
};

// Each consumer thread writes its accumulators to C as fp16 pairs, the
// activation applied in fp32; rows and columns past M, N are masked.
template <Activation kAct>
struct DirectStore {
  static constexpr int kStagingElems = 0;  // no shared memory for the output

  template <class Smem>
  __device__ DirectStore(Smem&, int /*consumer*/) {}
  __device__ void store(const float (&acc)[kWsBlockN / 2], __half* c, const CUtensorMap*, int m, int n, int row0,
                        int col0, bool /*inside: the stores are masked anyway*/) {
    store_tile<kWsBlockN, kAct>(acc, c, m, n, row0, col0);
  }
  __device__ void finish() {}
};

// ------------------------------------------------------------ host side
template <class Schedule, class Epilogue>
constexpr auto kWsKernel = warp_specialized_kernel<Schedule, Epilogue>;

template <class Epilogue>
constexpr int ws_smem_bytes() {
  return smem_bytes_for<PipelineSmem<kWsBlockM, kWsBlockN, kWsStages, Epilogue::kStagingElems>>();
}

// How many blocks (of Schedule::kCluster each) fit on the GPU at once, measured
// once per kernel (occupancy API).
template <class Schedule, class Epilogue>
inline int resident_units() {
  static const int resident = [] {
    constexpr auto kernel = kWsKernel<Schedule, Epilogue>;
    const int smem = ws_smem_bytes<Epilogue>();
    allow_large_smem(kernel, smem);
    return Schedule::resident(reinterpret_cast<const void*>(kernel), smem);
  }();
  return resident;
}

// Launches `grid_blocks` blocks (a multiple of Schedule::kCluster).
template <class Schedule, class Epilogue>
inline void launch_warp_specialized(const GemmArgs& g, cudaStream_t stream, int grid_blocks) {
  const int tiles_m = ceil_div(g.m, kWsBlockM), tiles_n = ceil_div(g.n, kWsBlockN);
  const CUtensorMap a_map = make_tensor_map_2d(g.a, g.m, g.k, kWsBlockM, kBlockK);  // boxes (128, 64)
  const CUtensorMap b_map = make_tensor_map_2d(g.b, g.k, g.n, kBlockK, kPanelCols);  // boxes (64, 64)
  const CUtensorMap c_map = make_tensor_map_2d(g.c, g.m, g.n, 64, kPanelCols);       // boxes (64, 64), stores
  const int smem = ws_smem_bytes<Epilogue>();
  constexpr auto kernel = kWsKernel<Schedule, Epilogue>;
  allow_large_smem(kernel, smem);

  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = Schedule::kCluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.gridDim = dim3(grid_blocks, 1, 1);
  config.blockDim = dim3(kWsThreads, 1, 1);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = Schedule::kCluster > 1 ? 1 : 0;
  CUDA_CHECK(
      cudaLaunchKernelEx(&config, kernel, a_map, b_map, c_map, g.c, g.m, g.n, g.k, tiles_m, tiles_n, g.trace));
}

// Tile sizes, occupancy and trace units of a launch of `grid_blocks` blocks.
template <class Schedule, class Epilogue>
inline KernelConfig warp_specialized_config(const GemmShape& s, int grid_blocks) {
  KernelConfig cfg = grouped_tile_config(s, kWsBlockM, kWsBlockN, kWsThreads, kWsStages, kWsGroupM);
  cfg.persistent = Schedule::kPersistent;
  cfg.grid_blocks = grid_blocks;
  cfg.smem_bytes = ws_smem_bytes<Epilogue>();
  constexpr auto kernel = kWsKernel<Schedule, Epilogue>;
  allow_large_smem(kernel, cfg.smem_bytes);
  cfg.blocks_per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), cfg.threads, cfg.smem_bytes);
  return cfg;
}

}  // namespace wb::hopper
