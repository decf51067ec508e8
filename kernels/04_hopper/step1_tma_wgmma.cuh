// Lesson 04, step 1 (tma_wgmma): TMA + an mbarrier pipeline + wgmma, one
// warpgroup per 128 x 128 tile.
//
// TMA copies a whole box (128 x 64 of A, 64 x 64 of B) with one instruction
// from one thread, in the 128-byte swizzled layout wgmma reads, and counts the
// bytes it delivered on the slot's "full" mbarrier. wgmma reads A and B
// straight from shared memory through descriptors and runs asynchronously.
// The pipeline is still in order: the warpgroup waits for its wgmmas, syncs,
// and only then may thread 0 refill the slot. Step 2 takes that wait away.
#pragma once

#include "04_hopper/pipeline.cuh"

namespace wb::hopper {

// Step 1: one warpgroup, 128 x 128 tiles.
constexpr int kSimpleBlockM = 128;     // <- two 64-row wgmmas per k16 step
constexpr int kSimpleBlockN = 128;
constexpr int kSimpleStages = 4;       // <- TMA copies in flight
constexpr int kSimpleThreads = kWarpgroupThreads;
static_assert(kSimpleBlockN % kPanelCols == 0, "BLOCK_N must be a whole number of 64-column panels (one TMA box each)");
static_assert(kSimpleBlockM % 64 == 0, "wgmma covers 64 rows per instruction");

// One warpgroup, in-order pipeline. Thread 0 fills kStages slots up front;
// after the wgmmas on slot s finish, the block syncs and thread 0 refills s
// with the k tile kStages ahead. The tensor cores wait while a slot is
// refilled and while the next wgmmas are issued: that is what step 2 fixes.
template <int kBlockM, int kBlockN, int kStages>
__global__ void __launch_bounds__(kSimpleThreads)
    tma_wgmma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                     __half* __restrict__ c, int m, int n, int k, int tiles_m, int tiles_n, TraceRecord* trace) {
#if WB_WGMMA_DEVICE
  using Smem = PipelineSmem<kBlockM, kBlockN, kStages>;
  extern __shared__ uint8_t smem_raw[];
  Smem& s = aligned_smem<Smem>(smem_raw);
  constexpr int kRowSlices = kBlockM / 64;  // 64-row wgmmas per k16 step

  const uint64_t t0 = trace ? global_timer_ns() : 0;
  const TileCoord tile = tile_of(TileOrder::grouped, int(blockIdx.x), tiles_m, tiles_n, kGroupM);
  const int k_tiles = ceil_div(k, kBlockK);

  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&a_map);
    tma_prefetch_descriptor(&b_map);
    for (int i = 0; i < kStages; ++i) mbarrier_init(&s.full[i], 1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int kt = 0; kt < min_int(kStages, k_tiles); ++kt)
      load_stage<Smem, kBlockM, kBlockN>(s, kt, &a_map, &b_map, tile.m, tile.n, kt);
  }

  float acc[kRowSlices][kBlockN / 2];  // (64, BLOCK_N) per row slice, fp32
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int slot = kt % kStages;
    mbarrier_wait(&s.full[slot], (kt / kStages) & 1);
    const uint32_t a_base = smem_u32(s.a[slot]);
    const uint32_t b_base = smem_u32(s.b[slot]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
      const uint64_t desc_b = desc_n_major_b(b_base + kk * 2 * kSwizzleAtomBytes, Smem::kBPanelElems * sizeof(__half));
#pragma unroll
      for (int r = 0; r < kRowSlices; ++r) {
        const uint64_t desc_a = desc_k_major_a(a_base + r * 64 * kSwizzleBytes + kk * kWgmmaK * sizeof(__half));
        wgmma_m64k16<kBlockN>(acc[r], desc_a, desc_b, kt > 0 || kk > 0);
      }
    }
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int r = 0; r < kRowSlices; ++r) fence_accumulators(acc[r]);
    __syncthreads();  // every warp is done reading the slot
    if (threadIdx.x == 0 && kt + kStages < k_tiles)
      load_stage<Smem, kBlockM, kBlockN>(s, slot, &a_map, &b_map, tile.m, tile.n, kt + kStages);
  }

#pragma unroll
  for (int r = 0; r < kRowSlices; ++r)
    store_tile<kBlockN, Activation::none>(acc[r], c, m, n, tile.m * kBlockM + 64 * r, tile.n * kBlockN);
  if (trace != nullptr && threadIdx.x == 0) write_trace(trace, int(blockIdx.x), tile, k, t0);
#else
  (void)m; (void)n; (void)k; (void)tiles_m; (void)tiles_n; (void)c; (void)trace;
  __trap();
#endif
}

using SimpleSmem = PipelineSmem<kSimpleBlockM, kSimpleBlockN, kSimpleStages>;
constexpr auto kSimpleKernel = tma_wgmma_kernel<kSimpleBlockM, kSimpleBlockN, kSimpleStages>;

// Step 1: one block per 128 x 128 tile.
inline void launch_tma_wgmma(const GemmArgs& g, cudaStream_t stream) {
  const int tiles_m = ceil_div(g.m, kSimpleBlockM), tiles_n = ceil_div(g.n, kSimpleBlockN);
  const CUtensorMap a_map = make_tensor_map_2d(g.a, g.m, g.k, kSimpleBlockM, kBlockK);  // boxes (128, 64)
  const CUtensorMap b_map = make_tensor_map_2d(g.b, g.k, g.n, kBlockK, kPanelCols);     // boxes (64, 64)
  const int smem = smem_bytes_for<SimpleSmem>();
  allow_large_smem(kSimpleKernel, smem);
  kSimpleKernel<<<tiles_m * tiles_n, kSimpleThreads, smem, stream>>>(a_map, b_map, g.c, g.m, g.n, g.k, tiles_m,
                                                                     tiles_n, g.trace);
  CUDA_CHECK_LAUNCH();
}

// How many clusters of `cluster` blocks of the warp-specialised kernel fit on

inline KernelConfig tma_wgmma_config(const GemmShape& s) {
  KernelConfig cfg = grouped_tile_config(s, kSimpleBlockM, kSimpleBlockN, kSimpleThreads, kSimpleStages, kGroupM);
  cfg.smem_bytes = smem_bytes_for<SimpleSmem>();
  cfg.grid_blocks = cfg.work_units;
  allow_large_smem(kSimpleKernel, cfg.smem_bytes);
  cfg.blocks_per_sm = blocks_per_sm(reinterpret_cast<const void*>(kSimpleKernel), cfg.threads, cfg.smem_bytes);
  return cfg;
}

}  // namespace wb::hopper
