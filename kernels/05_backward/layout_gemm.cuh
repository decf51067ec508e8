// Lesson 05, steps 2 and 4: transposes as layouts, at full speed, and both
// backward products in one persistent launch.
//
// Lesson 04's warp-specialised kernel (a TMA producer warpgroup, two wgmma
// consumer warpgroups, 128 x 256 tiles, 4 stages, a persistent grid in the
// grouped order, the TMA-store epilogue), with each operand described as it
// lies in memory:
//   dX = dP Wᵀ   A = dP (M x N) row-major: K-major, a (128, 64) box per stage
//                B = Wᵀ: W is (K x N), so each output column is a row of W:
//                    K-major, one (256, 64) box
//   dW = Xᵀ dP   A = Xᵀ: X is (M x K), so each output row is a column of X:
//                    M-major, two (64, 64) boxes (lines of k, 64 values of m)
//                B = dP: N-major, four (64, 64) boxes, as lesson 04's B
// TMA copies the box in either case; the wgmma descriptor says which way the
// 128-byte lines run (common/wgmma.cuh). No transpose kernel runs, and no
// element is read twice more than lesson 04 reads it.
//
// One launch may carry two products (step 4): the work units are the tiles of
// the first product, then those of the second, each in its own grouped order,
// and the persistent blocks walk them as one list, so the last wave of dX is
// filled with the first tiles of dW instead of idling. Trace records of the
// second product are numbered after the first's tile rows (tile_m + tiles_m of
// the first), so the viewer shows the two grids one above the other.
#pragma once

#include <algorithm>

#include "04_hopper/pipeline.cuh"
#include "04_hopper/step5_tma_store.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

namespace wb::backward {

using hopper::Major;

template <Major kA_, Major kB_>
struct Layout {
  static constexpr Major kA = kA_, kB = kB_;
};
using LayoutNT = Layout<Major::k, Major::k>;    // dX = dP Wᵀ
using LayoutTN = Layout<Major::mn, Major::mn>;  // dW = Xᵀ dP
using LayoutNN = Layout<Major::k, Major::mn>;   // lesson 04's C = A B

// The tensor maps and sizes of up to two products, passed by value in the
// kernel's parameter space (__grid_constant__), which TMA reads directly.
struct Products {
  CUtensorMap a[2], b[2], c[2];
  int m[2], n[2], k[2];
  int tiles_m[2], tiles_n[2];
  int units[2];  // tiles of each product (0 for an absent second product)
  // Where this launch's trace records go: unit u writes record
  // trace_first_unit + u, its tile row offset by trace_first_row (a product
  // launched after another stacks its records after the other's).
  int trace_first_unit, trace_first_row;
};

constexpr int kBM = hopper::kWsBlockM, kBN = hopper::kWsBlockN, kBK = hopper::kBlockK;
constexpr int kStages = hopper::kWsStages;
using Epilogue = hopper::TmaStoreEpilogue<Activation::none>;
using Smem = hopper::PipelineSmem<kBM, kBN, kStages, Epilogue::kStagingElems>;

// Copies k tile `kt` of output tile `t` of a product of layout L into `slot`.
template <class L>
__device__ __forceinline__ void load_stage(Smem& s, int slot, const CUtensorMap* a_map, const CUtensorMap* b_map,
                                           TileCoord t, int kt) {
  using namespace hopper;
  mbarrier_arrive_expect_bytes(&s.full[slot], Smem::kStageBytes);  // the same bytes in either layout
  if constexpr (L::kA == Major::k) {
    tma_load_2d(s.a[slot], a_map, t.m * kBM, kt * kBK, &s.full[slot]);  // (128 rows, 64 k)
  } else {
#pragma unroll
    for (int p = 0; p < kBM / kPanelCols; ++p)  // (64 k, 64 m) panels
      tma_load_2d(s.a[slot] + p * 64 * kPanelCols, a_map, kt * kBK, t.m * kBM + p * kPanelCols, &s.full[slot]);
  }
  if constexpr (L::kB == Major::k) {
    tma_load_2d(s.b[slot], b_map, t.n * kBN, kt * kBK, &s.full[slot]);  // (256 rows, 64 k)
  } else {
#pragma unroll
    for (int p = 0; p < kBN / kPanelCols; ++p)  // (64 k, 64 n) panels
      tma_load_2d(s.b[slot] + p * Smem::kBPanelElems, b_map, kt * kBK, t.n * kBN + p * kPanelCols, &s.full[slot]);
  }
}

// One stage's four k16 wgmmas for consumer `consumer` (rows 64 c .. 64 c + 63).
template <class L>
__device__ __forceinline__ void wgmma_stage(float (&acc)[kBN / 2], uint32_t a_base, uint32_t b_base, int consumer,
                                            bool accumulate) {
  using namespace hopper;
  constexpr uint32_t kPanelBytes = 64 * kPanelCols * sizeof(__half);  // 8 KB
#pragma unroll
  for (int kk = 0; kk < kBK / kWgmmaK; ++kk) {
    const uint64_t da = L::kA == Major::k
                            ? desc_k_major(a_base + consumer * 64 * kSwizzleBytes + kk * kWgmmaK * sizeof(__half))
                            : desc_mn_major(a_base + consumer * kPanelBytes + kk * 2 * kSwizzleAtomBytes, kPanelBytes);
    const uint64_t db = L::kB == Major::k ? desc_k_major(b_base + kk * kWgmmaK * sizeof(__half))
                                          : desc_mn_major(b_base + kk * 2 * kSwizzleAtomBytes, kPanelBytes);
    wgmma_m64k16<kBN, L::kA, L::kB>(acc, da, db, accumulate || kk > 0);
  }
}

template <class L0, class L1>
__global__ void __launch_bounds__(hopper::kWsThreads, 1)
    layout_gemm_kernel(const __grid_constant__ Products ps, TraceRecord* trace) {
#if WB_WGMMA_DEVICE
  using namespace hopper;
  extern __shared__ uint8_t smem_raw[];
  Smem& s = aligned_smem<Smem>(smem_raw);
  const int total_units = ps.units[0] + ps.units[1];
  const int warpgroup = threadIdx.x / kWarpgroupThreads;
  // Unit u: product 0's tile u, or product 1's tile u - units[0], each in the grouped order.
  auto locate = [&](int unit, int& product) {
    product = unit < ps.units[0] ? 0 : 1;
    const int local = product == 0 ? unit : unit - ps.units[0];
    return tile_of(TileOrder::grouped, local, ps.tiles_m[product], ps.tiles_n[product], kWsGroupM);
  };

  if (threadIdx.x == 0) {
    for (int p = 0; p < 2; ++p) {
      if (ps.units[p] == 0) continue;
      tma_prefetch_descriptor(&ps.a[p]);
      tma_prefetch_descriptor(&ps.b[p]);
    }
    for (int i = 0; i < kStages; ++i) {
      mbarrier_init(&s.full[i], 1);
      mbarrier_init(&s.empty[i], kConsumers * 4);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------- producer
    warpgroup_release_registers<kProducerRegs>();
    if (threadIdx.x == 0) {
      int slot = 0;
      uint32_t phase = 0;
      for (int unit = int(blockIdx.x); unit < total_units; unit += int(gridDim.x)) {
        int p;
        const TileCoord tile = locate(unit, p);
        const int k_tiles = ceil_div(ps.k[p], kBK);
        for (int kt = 0; kt < k_tiles; ++kt) {
          mbarrier_wait(&s.empty[slot], phase ^ 1);
          if (p == 0) {
            load_stage<L0>(s, slot, &ps.a[0], &ps.b[0], tile, kt);
          } else {
            load_stage<L1>(s, slot, &ps.a[1], &ps.b[1], tile, kt);
          }
          if (++slot == kStages) { slot = 0; phase ^= 1; }
        }
      }
    }
  } else {
    // ---------------------------------------------------------- consumers
    warpgroup_claim_registers<kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const bool warp_leader = threadIdx.x % 32 == 0;
    int slot = 0;
    uint32_t phase = 0;
    float acc[kBN / 2];
    Epilogue epilogue(s, consumer);
    for (int unit = int(blockIdx.x); unit < total_units; unit += int(gridDim.x)) {
      const uint64_t t0 = trace ? global_timer_ns() : 0;
      int p;
      const TileCoord tile = locate(unit, p);
      const int k_tiles = ceil_div(ps.k[p], kBK);
      int previous_slot = -1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbarrier_wait(&s.full[slot], phase);
        wgmma_fence();
        if (p == 0) {
          wgmma_stage<L0>(acc, smem_u32(s.a[slot]), smem_u32(s.b[slot]), consumer, kt > 0);
        } else {
          wgmma_stage<L1>(acc, smem_u32(s.a[slot]), smem_u32(s.b[slot]), consumer, kt > 0);
        }
        wgmma_commit();
        wgmma_wait<1>();
        fence_accumulators(acc);
        if (previous_slot >= 0 && warp_leader) mbarrier_arrive(&s.empty[previous_slot]);
        previous_slot = slot;
        if (++slot == kStages) { slot = 0; phase ^= 1; }
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (warp_leader) mbarrier_arrive(&s.empty[previous_slot]);
      epilogue.store(acc, nullptr, &ps.c[p], ps.m[p], ps.n[p], tile.m * kBM + 64 * consumer, tile.n * kBN, true);
      if (trace != nullptr && threadIdx.x == kWarpgroupThreads) {
        const int stacked_row = ps.trace_first_row + tile.m + (p == 0 ? 0 : ps.tiles_m[0]);
        trace_write_record(trace, ps.trace_first_unit + unit, stacked_row, tile.n, 0, ps.k[p], t0);
      }
    }
    epilogue.finish();
  }
#else
  (void)ps; (void)trace;
  __trap();
#endif
}

// ------------------------------------------------------------ host side
// One product C (m x n) = op(A) op(B) with reduction length k, of layout L:
// `a` is stored (m x k) when K-major, (k x m) when M-major; `b` is (k x n)
// when N-major, (n x k) when K-major; `c` is (m x n). Every row stride must
// be a multiple of 16 bytes (tma_row_stride_ok).
struct ProductArgs {
  const __half* a;
  const __half* b;
  __half* c;
  int m, n, k;
};

template <class L>
inline void describe_product(Products& ps, int i, const ProductArgs& g) {
  using namespace hopper;
  ps.a[i] = L::kA == Major::k ? make_tensor_map_2d(g.a, g.m, g.k, kBM, kBK)
                              : make_tensor_map_2d(g.a, g.k, g.m, kBK, kPanelCols);
  ps.b[i] = L::kB == Major::k ? make_tensor_map_2d(g.b, g.n, g.k, kBN, kBK)
                              : make_tensor_map_2d(g.b, g.k, g.n, kBK, kPanelCols);
  ps.c[i] = make_tensor_map_2d(g.c, g.m, g.n, 64, kPanelCols);
  ps.m[i] = g.m;
  ps.n[i] = g.n;
  ps.k[i] = g.k;
  ps.tiles_m[i] = ceil_div(g.m, kBM);
  ps.tiles_n[i] = ceil_div(g.n, kBN);
  ps.units[i] = ps.tiles_m[i] * ps.tiles_n[i];
}

inline int layout_gemm_smem_bytes() { return hopper::smem_bytes_for<Smem>(); }

template <class L0, class L1>
inline int layout_gemm_resident() {
  static const int resident = [] {
    constexpr auto kernel = layout_gemm_kernel<L0, L1>;
    hopper::allow_large_smem(kernel, layout_gemm_smem_bytes());
    return hopper::sm_count() *
           std::max(1, blocks_per_sm(reinterpret_cast<const void*>(kernel), hopper::kWsThreads,
                                     layout_gemm_smem_bytes()));
  }();
  return resident;
}

inline int layout_gemm_grid(const Products& ps, int resident) {
  return std::max(1, std::min(ps.units[0] + ps.units[1], resident));
}

// Launches the products in `ps` (a second one when ps.units[1] > 0).
template <class L0, class L1>
inline void launch_layout_gemm(const Products& ps, TraceRecord* trace, cudaStream_t stream) {
  constexpr auto kernel = layout_gemm_kernel<L0, L1>;
  const int smem = layout_gemm_smem_bytes();
  hopper::allow_large_smem(kernel, smem);
  const int grid = layout_gemm_grid(ps, layout_gemm_resident<L0, L1>());
  kernel<<<grid, hopper::kWsThreads, smem, stream>>>(ps, trace);
  CUDA_CHECK_LAUNCH();
}

// One product alone.
template <class L>
inline void launch_layout_product(const ProductArgs& g, TraceRecord* trace, cudaStream_t stream) {
  Products ps = {};
  describe_product<L>(ps, 0, g);
  launch_layout_gemm<L, L>(ps, trace, stream);
}

}  // namespace wb::backward
