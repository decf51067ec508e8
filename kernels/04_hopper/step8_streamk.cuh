// Lesson 04, step 8 (streamk): step 5 with a Stream-K last wave.
//
// When the tiles do not divide evenly over the persistent grid, the last wave
// is partly empty: at 3072 x 3072 (288 tiles of 128 x 256 on 132 SMs) the
// third wave has 24 tiles and 108 SMs idle for a third of the launch.
// Stream-K (schedule/stream_k.hpp) lays the leftover tiles end to end along K
// and gives every block an equal run of k tiles of them; a tile cut between
// blocks is summed through a workspace. Sharing is not free (blocks at
// different k no longer read the same slices of A and B at the same moment),
// so the plan shares a last wave only when it is at most half full.
#pragma once

#include <algorithm>
#include <vector>

#include "04_hopper/step5_tma_store.cuh"
#include "common/sync.cuh"
#include "schedule/stream_k.hpp"

namespace wb::hopper {

// Step 5 with a Stream-K last wave (schedule/stream_k.hpp). The persistent
// grid's blocks take whole tiles, `blocks` at a time, as in step 5; when the
// last wave would be at most half full, its tiles are instead shared along K,
// an equal run of k tiles per block. A block walks its work units (tile, k
// range); producer and consumers walk the same list, so the ring of stages
// flows across units as it flows across tiles in step 5.
// When a unit ends:
//   whole tile                       epilogue, as step 5;
//   the END of a tile (k_begin > 0)  each consumer writes its 64 x 256 fp32
//                                    partial to this block's workspace slot and
//                                    raises its flag (release);
//   the START of a tile (k_begin 0)  each consumer waits for the flags of the
//                                    blocks that hold the rest of the tile
//                                    (acquire), adds their partials, stores.
// The partial is written in the accumulator's own layout (thread t's registers
// 4i..4i+3 at float4 i * 128 + t), so each 16-byte access is coalesced and the
// owner's thread t adds exactly the values its own registers hold.
// A flag is raised (1) by the block that wrote the partial and lowered (0) by
// the owner once it has read it, so every launch finds them all down; the
// workspace is the harness's, zeroed once. Waiting on another block is safe
// here because every block of the grid is resident at once (grid = SMs x
// blocks per SM).

constexpr int kPartialFloat4s = 64 * kWsBlockN / 4;  // one consumer's (64, 256) fp32 partial

// What the Stream-K kernel shares between blocks: a (64, 256) fp32 partial and
// a flag per consumer warpgroup of each block.
struct StreamKWorkspace {
  float4* partials = nullptr;  // [block][consumer][kPartialFloat4s]
  uint32_t* flags = nullptr;   // [block][consumer]: 1 while the partial waits for its owner
  int* segments_before = nullptr;  // [block]: shared-run segments of the blocks before (numbers trace records)
};

// The end of a shared tile (a unit that does not start at k = 0): a consumer
// writes its (64, 256) fp32 partial to its slot, then raises its flag
// (release) for the tile's owner.
__device__ __forceinline__ void streamk_hand_over(const float (&acc)[kWsBlockN / 2], float4* partial, uint32_t* flag,
                                                  int thread, int barrier_id) {
#pragma unroll
  for (int i = 0; i < kWsBlockN / 8; ++i)
    __stcg(partial + i * kWarpgroupThreads + thread,
           make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
  warpgroup_barrier(barrier_id);  // every thread's stores come before the release
  if (thread == 0) store_release_gpu(flag, 1);
}

// The start of a shared tile (its owner, worker `self` of the plan): adds the
// partials of the workers that hold the rest of it, in worker order, waiting
// for each one's flag (acquire) and lowering it for the next launch.
// partial_of(w) and flag_of(w) are this consumer's slot and flag of worker w.
template <class PartialOf, class FlagOf>
__device__ __forceinline__ void streamk_add_partials(float (&acc)[kWsBlockN / 2], const StreamKPlan& plan, int tile,
                                                     int self, PartialOf&& partial_of, FlagOf&& flag_of, int thread,
                                                     int barrier_id) {
  for (int b = stream_k_next_contributor(plan, tile, self); b >= 0;
       b = stream_k_next_contributor(plan, tile, b)) {
    if (thread == 0) {
      while (load_acquire_gpu(flag_of(b)) == 0) __nanosleep(64);
      *flag_of(b) = 0;  // read once per launch: lowered for the next one
    }
    warpgroup_barrier(barrier_id);  // the acquire comes before every thread's loads
    const float4* partial = partial_of(b);
#pragma unroll
    for (int i = 0; i < kWsBlockN / 8; ++i) {
      const float4 p = __ldcg(partial + i * kWarpgroupThreads + thread);
      acc[4 * i] += p.x;
      acc[4 * i + 1] += p.y;
      acc[4 * i + 2] += p.z;
      acc[4 * i + 3] += p.w;
    }
  }
}

template <Activation kAct>
__global__ void __launch_bounds__(kWsThreads, 1)
    streamk_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                   const __grid_constant__ CUtensorMap c_map, int k, int tiles_m, int tiles_n,
                   StreamKWorkspace workspace, TraceRecord* trace) {
#if WB_WGMMA_DEVICE
  using Smem = PipelineSmem<kWsBlockM, kWsBlockN, kWsStages, kStagingElems>;
  extern __shared__ uint8_t smem_raw[];
  Smem& s = aligned_smem<Smem>(smem_raw);
  const StreamKPlan plan = stream_k_plan(tiles_m * tiles_n, ceil_div(k, kBlockK), int(gridDim.x));
  const int warpgroup = threadIdx.x / kWarpgroupThreads;
  auto tile_at = [&](int t) { return tile_of(TileOrder::grouped, t, tiles_m, tiles_n, kWsGroupM); };

  init_pipeline<kWsStages>(s, &a_map, &b_map, kConsumers * 4);  // every consumer warp
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------- producer
    warpgroup_release_registers<kProducerRegs>();
    if (threadIdx.x == 0) {
      int slot = 0;
      uint32_t phase = 0;
      StreamKWalk walk(plan, int(blockIdx.x));
      for (WorkUnit u; walk.next(&u);) {
        const TileCoord tile = tile_at(u.tile);
        for (int kt = u.k_begin; kt < u.k_end; ++kt) {
          mbarrier_wait(&s.empty[slot], phase ^ 1);  // first lap: passes at once
          load_stage<Smem, kWsBlockM, kWsBlockN>(s, slot, &a_map, &b_map, tile.m, tile.n, kt);
          if (++slot == kWsStages) { slot = 0; phase ^= 1; }
        }
      }
    }
  } else {
    // ---------------------------------------------------------- consumers
    warpgroup_claim_registers<kConsumerRegs>();
    const int consumer = warpgroup - 1;  // rows 64*consumer .. +63 of the tile
    const int thread = threadIdx.x % kWarpgroupThreads;
    const int barrier_id = 1 + consumer;
    __half* const staging = s.c + consumer * 64 * kStoreCols;
    auto partial_of = [&](int block) { return workspace.partials + (size_t(block) * kConsumers + consumer) * kPartialFloat4s; };
    auto flag_of = [&](int block) { return workspace.flags + block * kConsumers + consumer; };
    int slot = 0;
    uint32_t phase = 0;
    float acc[kWsBlockN / 2];  // (64, 256) fp32 for this warpgroup

    StreamKWalk walk(plan, int(blockIdx.x), trace != nullptr ? workspace.segments_before[blockIdx.x] : -1);
    for (WorkUnit u; walk.next(&u);) {
      const uint64_t t0 = trace ? global_timer_ns() : 0;
      const TileCoord tile = tile_at(u.tile);
      int previous_slot = -1;
      for (int kt = u.k_begin; kt < u.k_end; ++kt) {
        mbarrier_wait(&s.full[slot], phase);
        wgmma_fence();
        wgmma_k_stage<kWsBlockN, Smem>(acc, smem_u32(s.a[slot]) + consumer * 64 * kSwizzleBytes, smem_u32(s.b[slot]),
                                       kt > u.k_begin);
        wgmma_commit();
        wgmma_wait<1>();  // the group of k tile kt-1 has finished reading its slot
        fence_accumulators(acc);
        if (previous_slot >= 0 && threadIdx.x % 32 == 0) mbarrier_arrive(&s.empty[previous_slot]);
        previous_slot = slot;
        if (++slot == kWsStages) { slot = 0; phase ^= 1; }
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (threadIdx.x % 32 == 0) mbarrier_arrive(&s.empty[previous_slot]);  // the producer may go on

      if (!owns_tile(u)) {
        streamk_hand_over(acc, partial_of(int(blockIdx.x)), flag_of(int(blockIdx.x)), thread, barrier_id);
      } else {
        if (!whole_tile(plan, u)) streamk_add_partials(acc, plan, u.tile, int(blockIdx.x), partial_of, flag_of, thread,
                                                      barrier_id);
        store_tile_via_smem<kAct, true>(acc, staging, &c_map, tile.m * kWsBlockM + 64 * consumer, tile.n * kWsBlockN,
                                        barrier_id);
      }
      if (trace != nullptr && threadIdx.x == kWarpgroupThreads)
        trace_write_record(trace, u.index, tile.m, tile.n, u.k_begin * kBlockK, min_int(u.k_end * kBlockK, k), t0);
    }
    if (thread == 0) tma_store_exit_wait();  // smem stays valid until TMA has read it
  }
#else
  (void)k; (void)tiles_m; (void)tiles_n; (void)trace; (void)c_map; (void)workspace;
  __trap();
#endif
}

// ------------------------------------------------------------ host side
template <Activation kAct>
constexpr auto kSkKernel = streamk_kernel<kAct>;
using StreamKSmem = PipelineSmem<kWsBlockM, kWsBlockN, kWsStages, kStagingElems>;

// One block per SM (at most one per tile).
inline int streamk_grid(const GemmShape& s) {
  static const int resident = [] {  // once per process
    const int smem = smem_bytes_for<StreamKSmem>();
    allow_large_smem(kSkKernel<Activation::none>, smem);
    return sm_count() *
           std::max(1, blocks_per_sm(reinterpret_cast<const void*>(kSkKernel<Activation::none>), kWsThreads, smem));
  }();
  return min_int(ceil_div(s.m, kWsBlockM) * ceil_div(s.n, kWsBlockN), resident);
}

// The workspace a launch of `blocks` blocks needs: a (64, 256) fp32 partial
// and a flag per consumer of each block, and each block's count of earlier
// segments (for numbering trace records). About 128 KB per block.
inline size_t streamk_workspace_bytes(int blocks) {
  return size_t(blocks) * kConsumers * (kPartialFloat4s * sizeof(float4) + sizeof(uint32_t)) +
         size_t(blocks) * sizeof(int);
}
inline size_t streamk_workspace_bytes(const GemmShape& s) { return streamk_workspace_bytes(streamk_grid(s)); }

// The workspace's parts for a launch of `blocks` blocks (partials first: float4-aligned).
inline StreamKWorkspace streamk_workspace(void* base, size_t bytes, int blocks) {
  if (base == nullptr || bytes < streamk_workspace_bytes(blocks))
    throw CudaError("Stream-K needs a workspace of " + std::to_string(streamk_workspace_bytes(blocks)) +
                    " bytes; it got " + std::to_string(base ? bytes : 0));
  StreamKWorkspace w;
  w.partials = static_cast<float4*>(base);
  w.flags = reinterpret_cast<uint32_t*>(w.partials + size_t(blocks) * kConsumers * kPartialFloat4s);
  w.segments_before = reinterpret_cast<int*>(w.flags + size_t(blocks) * kConsumers);
  return w;
}

template <Activation kAct>
inline void launch_streamk(const GemmArgs& g, cudaStream_t stream) {
  const int tiles_m = ceil_div(g.m, kWsBlockM), tiles_n = ceil_div(g.n, kWsBlockN);
  const CUtensorMap a_map = make_tensor_map_2d(g.a, g.m, g.k, kWsBlockM, kBlockK);  // boxes (128, 64)
  const CUtensorMap b_map = make_tensor_map_2d(g.b, g.k, g.n, kBlockK, kPanelCols);  // boxes (64, 64)
  const CUtensorMap c_map = make_tensor_map_2d(g.c, g.m, g.n, 64, kPanelCols);       // boxes (64, 64), stores
  const int smem = smem_bytes_for<StreamKSmem>();
  const int grid = streamk_grid(GemmShape{g.m, g.n, g.k});
  const StreamKWorkspace workspace = streamk_workspace(g.workspace, g.workspace_bytes, grid);
  if (g.trace != nullptr) {
    // Trace records are numbered in launch order, which needs each block's
    // count of earlier segments: a loop with 64-bit divisions, done here.
    const StreamKPlan plan = stream_k_plan(tiles_m * tiles_n, ceil_div(g.k, kBlockK), grid);
    std::vector<int> before(static_cast<size_t>(grid), 0);
    for (int b = 0; b < grid; ++b) before[static_cast<size_t>(b)] = stream_k_segments_before(plan, b);
    // From pageable memory: the host copy is staged before this returns.
    CUDA_CHECK(cudaMemcpyAsync(workspace.segments_before, before.data(), before.size() * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
  }
  allow_large_smem(kSkKernel<kAct>, smem);
  kSkKernel<kAct><<<grid, kWsThreads, smem, stream>>>(a_map, b_map, c_map, g.k, tiles_m, tiles_n, workspace, g.trace);
  CUDA_CHECK_LAUNCH();
}

// Step 8's (streamk) tile sizes, grid, occupancy and trace units (one per
// Stream-K segment and per whole tile).
inline KernelConfig streamk_config(const GemmShape& s) {
  KernelConfig cfg = grouped_tile_config(s, kWsBlockM, kWsBlockN, kWsThreads, kWsStages, kWsGroupM);
  cfg.persistent = true;
  cfg.grid_blocks = streamk_grid(s);
  cfg.work_units =
      stream_k_units(stream_k_plan(cfg.tiles_m * cfg.tiles_n, ceil_div(s.k, kBlockK), int(cfg.grid_blocks)));
  cfg.smem_bytes = smem_bytes_for<StreamKSmem>();
  allow_large_smem(kSkKernel<Activation::none>, cfg.smem_bytes);
  cfg.blocks_per_sm = blocks_per_sm(reinterpret_cast<const void*>(kSkKernel<Activation::none>), cfg.threads,
                                    cfg.smem_bytes);
  return cfg;
}

}  // namespace wb::hopper
