// Lesson 08, step 5 above M = 64 on Hopper: the gathered products on lesson
// 04's warp-specialised Stream-K kernel.
//
// Step 4's wgmma kernel (gather_wgmma.cuh) has every thread both copy and
// multiply, 128 x 128 tiles and one tile per block. Per 64-deep slice it
// reads 32 KiB from L2 for 1M multiply-adds, and all its warps wait at the
// barrier that ends each slice. And a gathered product at M = 512 has few
// tiles: 88 of 128 x 256 at s = 0.5 for 132 SMs. Here:
//   - lesson 04's structure: a producer warpgroup that only copies, two
//     consumer warpgroups that only multiply, 4 stages of 48 KiB with "full"
//     and "empty" mbarriers, 2M multiply-adds per 64-deep slice;
//   - A (X or H, not gathered) by one TMA box per slice, as in lesson 04;
//   - B gathered by the producer's 128 threads with cp.async (TMA copies
//     boxes of consecutive rows, and a gather is not one), each 16-byte chunk
//     where the 128-byte swizzle puts it, each thread's copies arriving on
//     the stage's "full" barrier by themselves once they have landed
//     (cp.async.mbarrier.arrive.noinc): "full" expects the 128 arrivals and
//     the TMA thread's expected bytes;
//   - the gathering is what limits this kernel (a list of consecutive
//     neurons ran no faster than a random one), so from M = 129 (where
//     lesson 04's 128 x 256 would take two bands of tiles) the tile is
//     256 x 128 (each consumer two m64n128k16 per k16 step): the same work
//     and bytes per slice, half of them gathered. At M = 512 on an H100, in
//     one run, that took the FFN from 1.13x to 1.28x the dense one at s = 0.5
//     and from 1.63x to 1.97x at s = 0.75; at M = 129 to 255 it is 7-12%
//     faster than two bands of 128 x 256 (docs/notes/08_sparse_ffn.md);
//   - lesson 04's Stream-K schedule (schedule/stream_k.hpp), over columns of
//     tiles: the blocks form groups of R, one per tile row (R = the tile rows,
//     at most 16), and a group walks its share of the columns' k slices in
//     step, each block on its own row. So the R blocks that read a slice of
//     gathered weights read it at about the same time, and L2 serves all but
//     the first (taking the tiles one by one, the blocks on a column's rows
//     were 20-odd slices apart, each read came from DRAM, and the kernel was
//     bound by it). With fewer columns than groups every column is shared
//     along K; with more, a last wave at most half full is. A tile cut
//     between blocks is summed through lesson 04's workspace and flags, in
//     order: the same bits every run.
// The copies are writes of the generic proxy and wgmma reads through the
// async proxy, so a consumer fences between the two after its "full" wait.
//
//   A (X or H)                K-major, BM rows x 64 k per stage (one TMA box)
//   B, Gather::neuron_rows    K-major: BN neurons' runs (W1 neuron-major) x 64 k
//   B, Gather::rows           N-major: 64 rows of W2 x BN n, as BN / 64 panels of 64
// sm_90a only: the lesson uses it on a Hopper GPU (use_wgmma).
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <vector>

#include "04_hopper/step8_streamk.cuh"
#include "08_sparse_ffn/gather_gemm.cuh"
#include "08_sparse_ffn/gather_wgmma.cuh"
#include "schedule/stream_k.hpp"

namespace wb::sparse {

// The two tiles, both 128 x 256 x 64 of work per slice and 48 KiB per stage.
// Only B is gathered (by cp.async, whose rate limits this kernel); A comes by
// TMA. So the tall tile, with half as many of B's lines per slice, gathers
// half the bytes per multiply-add: it is the kernel's tile from M = 129.
struct WideTile {  // 128 x 256: each consumer warpgroup 64 rows, one m64n256k16 per k16 step
  static constexpr int BM = 128, BN = 256;
};
struct TallTile {  // 256 x 128: each consumer warpgroup 128 rows, two m64n128k16 per k16 step
  static constexpr int BM = 256, BN = 128;
};
template <class T>
using GatherStreamKSmem = hopper::PipelineSmem<T::BM, T::BN, hopper::kWsStages>;
// A producer thread keeps the neurons of its lines of B (16 of the wide
// tile's) and their addresses: more than lesson 04's one TMA thread needs
// (with 56 or 88, ptxas spills).
constexpr int kGatherProducerRegs = 120, kGatherConsumerRegs = 192;
static_assert(kGatherProducerRegs + hopper::kConsumers * kGatherConsumerRegs <= 65536 / hopper::kWarpgroupThreads,
              "the warpgroups' register budgets fit the 64K-register file");
// The fewest k slices a block's share of the shared run may have: below that
// the hand-over of 128 KiB partials costs more than the slices it spreads.
constexpr int kStreamKMinShare = 8;
// Where M leaves a partial band, A arrives in boxes of 64 rows and a box that
// starts past M is not loaded: with one box of 256 rows a slice (most of it
// zeros), M = 300 took longer than M = 512 (docs/notes/08_sparse_ffn.md).
// Where M fills every band, A stays one box of BM rows (kPartialBand false).
constexpr int kABoxRows = 64;
constexpr int kStreamKSlicesPerSm = 16;

// This thread's copies of the stage arrive on `bar` once they have landed.
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t* bar) {
#if WB_WGMMA_DEVICE
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(hopper::smem_u32(bar)) : "memory");
#else
  (void)bar;
#endif
}

// Where chunk `chunk` (16 bytes) of line `row` of a 128-byte-swizzled tile goes, in halves.
__device__ __forceinline__ int swizzled_chunk(int row, int chunk) { return row * 64 + ((chunk ^ (row & 7)) * 8); }

// The schedule: `plan` shares the columns' k slices among groups of `rows`
// blocks; block b is row b % rows of group b / rows.
struct GatherStreamK {
  StreamKPlan plan;  // over column units (a band of `rows` tile rows x one tile column), per group
  int rows = 1;      // tile rows per band: the blocks in a group
  int bands = 1;     // tiles_m / rows
};

template <Gather G, Epilogue E, class T, bool kPartialBand>
__global__ void __launch_bounds__(hopper::kWsThreads, 1)
    gather_streamk_kernel(const __grid_constant__ GatherParams p, const __grid_constant__ CUtensorMap a_map,
                          GatherStreamK sk, hopper::StreamKWorkspace ws) {
#if WB_WGMMA_DEVICE
  static_assert(G != Gather::columns, "the column gather stays on mma.sync (steps 2-3)");
  using namespace hopper;
  using Smem = GatherStreamKSmem<T>;
  constexpr int kSubM = T::BM / (64 * kConsumers);  // m64 blocks per consumer warpgroup
  static_assert(kSubM * T::BN == kWsBlockN, "a consumer's accumulators are lesson 04's 128 floats a thread");
  extern __shared__ uint8_t smem_raw[];
  Smem& s = aligned_smem<Smem>(smem_raw);
  const StreamKPlan& plan = sk.plan;
  const int group = int(blockIdx.x) / sk.rows, row_in_band = int(blockIdx.x) % sk.rows;
  // Column unit c: tile column c / bands, band c % bands; this block's tile row in it.
  auto tile_at = [&](int c) { return TileCoord{(c % sk.bands) * sk.rows + row_in_band, c / sk.bands}; };
  const int warpgroup = int(threadIdx.x) / kWarpgroupThreads;

  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&a_map);
    for (int i = 0; i < kWsStages; ++i) {
      mbarrier_init(&s.full[i], kWarpgroupThreads + 1);  // every producer thread's copies, and A's bytes
      mbarrier_init(&s.empty[i], kConsumers * 4);     // every consumer warp
    }
    fence_barrier_init();
  }
  if constexpr (kPartialBand) {
    // A partial band leaves A's boxes past M unloaded, and the consumers multiply
    // every row: those rows (never stored) read zeros or an earlier tile's A, not
    // uninitialised memory.
    for (int i = int(threadIdx.x); i < int(sizeof(s.a) / 16); i += int(blockDim.x))
      reinterpret_cast<uint4*>(&s.a[0][0])[i] = make_uint4(0, 0, 0, 0);
    fence_proxy_async_shared();  // before the TMA writes and the tensor cores' reads
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------- producer
    warpgroup_release_registers<kGatherProducerRegs>();
    const int chunk = int(threadIdx.x) % 8, row = int(threadIdx.x) / 8;  // lines row + 16 i, this 16-byte chunk
    int slot = 0;
    uint32_t phase = 0;
    StreamKWalk walk(plan, group);
    for (WorkUnit u; walk.next(&u);) {
      const TileCoord tile = tile_at(u.tile);
      const int m0 = tile.m * T::BM, n0 = tile.n * T::BN;
      constexpr int kBoxRows = kPartialBand ? kABoxRows : T::BM;
      const int a_boxes = kPartialBand ? min(T::BM / kBoxRows, ceil_div(p.m - m0, kBoxRows)) : 1;
      // neuron_rows: the weight rows of this thread's BN / 16 lines of B, fixed for the tile.
      // rows: the neurons of its 4 k lines of the next slice, fetched a slice ahead.
      constexpr int kOwn = G == Gather::neuron_rows ? T::BN / 16 : 4;
      int w[kOwn];
      auto fetch_rows = [&](int kt) {
#pragma unroll
        for (int i = 0; i < kOwn; ++i) {
          const int gk = kt * kBlockK + row + 16 * i;
          w[i] = gk < p.count ? __ldg(p.idx + gk) : -1;
        }
      };
      if constexpr (G == Gather::neuron_rows) {
#pragma unroll
        for (int i = 0; i < kOwn; ++i) w[i] = gathered(p, n0 + row + 16 * i);
      } else {
        fetch_rows(u.k_begin);
      }
      for (int kt = u.k_begin; kt < u.k_end; ++kt) {
        mbarrier_wait(&s.empty[slot], phase ^ 1);  // first lap: passes at once
        const int kc = kt * kBlockK + chunk * 8;
        const bool k_inside = kc < p.k;
        if (threadIdx.x == 0) {  // A: the boxes that start before M; k past K arrives as zeros
          mbarrier_arrive_expect_bytes(&s.full[slot], a_boxes * kBoxRows * kBlockK * sizeof(__half));
          for (int box = 0; box < a_boxes; ++box)
            tma_load_2d(s.a[slot] + box * kBoxRows * kBlockK, &a_map, m0 + box * kBoxRows, kt * kBlockK,
                        &s.full[slot]);
        }
        if constexpr (G == Gather::neuron_rows) {
#pragma unroll
          for (int i = 0; i < kOwn; ++i) {  // B: BN neurons' lines of 64 k
            const int r = row + 16 * i;
            const bool inside = w[i] >= 0 && k_inside;
            cp_async_16_zero_fill(shared_address(s.b[slot] + swizzled_chunk(r, chunk)),
                                  inside ? p.b + int64_t(w[i]) * p.ldb + kc : p.b, inside ? 16 : 0);
          }
        } else {
#pragma unroll
          for (int i = 0; i < kOwn; ++i) {  // B: 64 rows of W2 (k lines) x BN / 64 panels of 64 n
            const int r = row + 16 * i;
#pragma unroll
            for (int panel = 0; panel < T::BN / kPanelCols; ++panel) {
              const int nc = n0 + panel * kPanelCols + chunk * 8;
              const bool inside = w[i] >= 0 && nc < p.n;
              cp_async_16_zero_fill(
                  shared_address(s.b[slot] + panel * Smem::kBPanelElems + swizzled_chunk(r, chunk)),
                  inside ? p.b + int64_t(w[i]) * p.ldb + nc : p.b, inside ? 16 : 0);
            }
          }
          if (kt + 1 < u.k_end) fetch_rows(kt + 1);  // the next slice's neurons, while these copies fly
        }
        cp_async_arrive_noinc(&s.full[slot]);
        if (++slot == kWsStages) { slot = 0; phase ^= 1; }
      }
    }
  } else {
    // ---------------------------------------------------------- consumers
    warpgroup_claim_registers<kGatherConsumerRegs>();
    const int consumer = warpgroup - 1;  // rows BM / 2 consumer .. of the tile
    const int thread = int(threadIdx.x) % kWarpgroupThreads;
    const int barrier_id = 1 + consumer;
    // Worker g of the plan is block g rows + row_in_band here: the one on the same tile row.
    auto partial_of = [&](int g) {
      return ws.partials + (size_t(g * sk.rows + row_in_band) * kConsumers + consumer) * kPartialFloat4s;
    };
    auto flag_of = [&](int g) { return ws.flags + (g * sk.rows + row_in_band) * kConsumers + consumer; };
    int slot = 0;
    uint32_t phase = 0;
    float acc[kSubM][T::BN / 2];  // this warpgroup's BM / 2 x BN fp32, m64 block by block
    // Lesson 04's hand-over and adding see the same 128 floats a thread as one array.
    float(&flat)[kWsBlockN / 2] = reinterpret_cast<float(&)[kWsBlockN / 2]>(acc);

    StreamKWalk walk(plan, group, p.trace != nullptr ? ws.segments_before[group] : -1);
    for (WorkUnit u; walk.next(&u);) {
      const uint64_t t0 = p.trace ? global_timer_ns() : 0;
      const TileCoord tile = tile_at(u.tile);
      for (int kt = u.k_begin; kt < u.k_end; ++kt) {
        mbarrier_wait(&s.full[slot], phase);
        fence_proxy_async_shared();  // the producer's copies, seen by the tensor cores' reads
        wgmma_fence();
        const uint32_t a_base = smem_u32(s.a[slot]) + consumer * (T::BM / kConsumers) * kSwizzleBytes,
                       b_base = smem_u32(s.b[slot]);
        if constexpr (G == Gather::neuron_rows) {
#pragma unroll
          for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk)
#pragma unroll
            for (int h = 0; h < kSubM; ++h) {
              const uint64_t da = desc_k_major(a_base + h * 64 * kSwizzleBytes + kk * kWgmmaK * 2);
              const uint64_t db = desc_k_major(b_base + kk * kWgmmaK * 2);
              wgmma_m64k16<T::BN, Major::k, Major::k>(acc[h], da, db, kt > u.k_begin || kk > 0);
            }
        } else {
#pragma unroll
          for (int h = 0; h < kSubM; ++h)
            wgmma_k_stage<T::BN, Smem>(acc[h], a_base + h * 64 * kSwizzleBytes, b_base, kt > u.k_begin);
        }
        wgmma_commit();
        // Wait for this slice's own wgmmas and give its stage back at once: the
        // producer, whose gathers are what the consumers wait for, gets 3 of the
        // 4 stages in flight instead of 2. The tensor pipe drains each slice;
        // on an H100 that cost less than the earlier refill gained (notes).
        wgmma_wait<0>();
        fence_accumulators(flat);
        if (threadIdx.x % 32 == 0) mbarrier_arrive(&s.empty[slot]);
        if (++slot == kWsStages) { slot = 0; phase ^= 1; }
      }

      if (!owns_tile(u)) {
        streamk_hand_over(flat, partial_of(group), flag_of(group), thread, barrier_id);
      } else {
        if (!whole_tile(plan, u))
          streamk_add_partials(flat, plan, u.tile, group, partial_of, flag_of, thread, barrier_id);
        // The activation as a constant: one branch per tile, not one per element.
        with_epilogue_activation<E>(p, [&](auto act, auto swiglu) {
#pragma unroll
          for (int h = 0; h < kSubM; ++h)
            for_each_wgmma_pair<T::BN>(acc[h], tile.m * T::BM + (T::BM / kConsumers) * consumer + 64 * h,
                                       tile.n * T::BN, [&](int r, int c, float v0, float v1) {
                                         finish_pair_as<E, decltype(act)::value, decltype(swiglu)::value>(p, r, c,
                                                                                                           v0, v1);
                                       });
        });
      }
      if (p.trace != nullptr && threadIdx.x == kWarpgroupThreads)
        trace_write_record(p.trace, p.trace_first_unit + u.index * sk.rows + row_in_band, p.trace_first_row + tile.m,
                           tile.n,
                           u.k_begin * kBlockK, min(u.k_end * kBlockK, p.k), t0);
    }
  }
#else
  (void)p; (void)a_map; (void)sk; (void)ws;
  __trap();
#endif
}

// ---------------------------------------------------------------- host side

template <Gather G, Epilogue E, class T, bool kPartialBand>
const void* streamk_kernel_ready() {
  static const void* k = [] {
    const void* f = reinterpret_cast<const void*>(gather_streamk_kernel<G, E, T, kPartialBand>);
    CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    hopper::smem_bytes_for<GatherStreamKSmem<T>>()));
    return f;
  }();
  return k;
}
template <Gather G, Epilogue E, class T>
const void* streamk_kernel_for(bool partial_band) {
  return partial_band ? streamk_kernel_ready<G, E, T, true>() : streamk_kernel_ready<G, E, T, false>();
}

// The tall tile from M = 129: where the wide tile would need two bands, one
// band of the tall tile (a partial one costs little since its boxes past M are
// not loaded) gathers 16 KiB a slice instead of 32. The wide tile up to 128.
inline bool streamk_tall(int m) { return m > WideTile::BM; }

// The Stream-K schedule of a product. Groups of R blocks, R the largest
// divisor of the tile rows up to 16 (all of them at M <= 2048); as many groups
// as fit on the SMs, or fewer where a group's share would be under
// kStreamKMinShare slices of a column; every column shared along K when there
// are fewer columns than groups, else lesson 04's rule.
inline GatherStreamK gather_streamk_schedule(int tiles_m, int tiles_n, int k_tiles, int sms) {
  GatherStreamK sk;
  for (int r = std::min({tiles_m, 16, sms}); r >= 1; --r)
    if (tiles_m % r == 0) {
      sk.rows = r;
      break;
    }
  sk.bands = tiles_m / sk.rows;
  const int columns = sk.bands * tiles_n;
  const int64_t iters = int64_t(columns) * k_tiles;
  const int groups = int(std::max<int64_t>(1, std::min<int64_t>(sms / sk.rows, iters / kStreamKMinShare)));
  sk.plan = columns < groups ? stream_k_plan_all(columns, k_tiles, groups) : stream_k_plan(columns, k_tiles, groups);
  return sk;
}

// Whether a product has work enough for this kernel: at least
// kStreamKSlicesPerSm slices of 128 x 256 x 64 per SM. Below that (Llama-2-7B
// at s = 0.9, GPT-2) its fix-ups and its ramp cost more than step 4's
// kernel with lesson 06's split-K loses to idle SMs.
inline bool streamk_pays(int m, int n, int k) {
  static const int sms = sm_count();
  const int64_t slices = int64_t(ceil_div(m, hopper::kWsBlockM)) * ceil_div(n, hopper::kWsBlockN) *
                         ceil_div(k, hopper::kBlockK);
  return slices >= int64_t(kStreamKSlicesPerSm) * sms;
}

template <Gather G, Epilogue E>
GatherPlan plan_streamk(int m, int n, int k) {
  GatherPlan q;
  const bool tall = streamk_tall(m);
  q.block_m = tall ? TallTile::BM : WideTile::BM;
  q.block_n = tall ? TallTile::BN : WideTile::BN;
  q.threads = hopper::kWsThreads;
  q.smem = tall ? hopper::smem_bytes_for<GatherStreamKSmem<TallTile>>()
                : hopper::smem_bytes_for<GatherStreamKSmem<WideTile>>();
  q.stages = hopper::kWsStages;
  q.tiles_m = ceil_div(m, q.block_m);
  q.tiles_n = ceil_div(n, q.block_n);
  q.k_tiles = ceil_div(k, hopper::kBlockK);
  q.blocks_per_sm = 1;
  static const int sms = sm_count();
  q.streamk = true;
  const GatherStreamK sk = gather_streamk_schedule(q.tiles_m, q.tiles_n, q.k_tiles, sms);
  q.stream_k = sk.plan;
  q.group_rows = sk.rows;
  q.grid = int64_t(sk.plan.workers) * sk.rows;
  q.units = int64_t(stream_k_units(sk.plan)) * sk.rows;
  q.streamk_workspace = hopper::streamk_workspace_bytes(int(q.grid));
  return q;
}

template <Gather G, Epilogue E>
void launch_streamk(GatherParams p, const GatherPlan& q, void* workspace, cudaStream_t stream) {
  if (q.grid == 0) return;
  p.splits = 1;
  const int grid = int(q.grid);
  const hopper::StreamKWorkspace ws = hopper::streamk_workspace(workspace, gathered_workspace_bytes(q), grid);
  GatherStreamK sk;
  sk.plan = q.stream_k;
  sk.rows = q.group_rows;
  sk.bands = q.tiles_m / q.group_rows;
  const bool partial_band = p.m % q.block_m != 0;
  if (p.trace != nullptr) {
    // Trace records are numbered in launch order: each group's count of earlier segments.
    const int groups = q.stream_k.workers;
    std::vector<int> before(static_cast<size_t>(groups), 0);
    for (int g = 0; g < groups; ++g) before[static_cast<size_t>(g)] = stream_k_segments_before(q.stream_k, g);
    CUDA_CHECK(cudaMemcpyAsync(ws.segments_before, before.data(), before.size() * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
  }
  // A's boxes: 64 rows (a partial band) or BM, x 64 k; zeros past M and K (the
  // models' K are multiples of 8, as TMA needs).
  const int a_box_rows = partial_band ? kABoxRows : q.block_m;
  CUtensorMap a_map = hopper::make_tensor_map_2d(p.a, p.m, p.k, a_box_rows, hopper::kBlockK);
  void* args[] = {&p, &a_map, &sk, const_cast<hopper::StreamKWorkspace*>(&ws)};
  const void* kernel = q.block_m == TallTile::BM ? streamk_kernel_for<G, E, TallTile>(partial_band)
                                                 : streamk_kernel_for<G, E, WideTile>(partial_band);
  CUDA_CHECK(cudaLaunchKernel(kernel, dim3(unsigned(grid)), dim3(hopper::kWsThreads), args, size_t(q.smem), stream));
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::sparse
