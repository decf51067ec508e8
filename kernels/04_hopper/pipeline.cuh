// Lesson 04: what the Hopper steps share. The pipeline's shared memory (a ring
// of stages, each a box of A and the boxes of B, with a "full" and an "empty"
// mbarrier per slot), how a stage is loaded (TMA) and consumed (wgmma), the
// plain epilogue that writes the accumulators straight to C, and the host
// helpers every launcher uses.
//
// C = act(A * B): A (M x K), B (K x N), C (M x N), all row-major fp16, fp32
// accumulation. Tails in M, N and K: TMA zero-fills the parts of a box outside
// the matrix, and the epilogues mask their stores. TMA needs K % 8 == 0 and
// N % 8 == 0 (16-byte row strides); other shapes go to lesson 03's kernel.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/tma.cuh"
#include "common/trace.cuh"
#include "common/wgmma.cuh"
#include "records/records.hpp"
#include "schedule/activation.hpp"
#include "schedule/tile_order.hpp"

namespace wb::hopper {

// ------------------------------------------------------------ configuration
constexpr int kBlockK = 64;            // <- k per stage: one 128-byte swizzle line of fp16
constexpr int kGroupM = 8;             // <- grouped order: 8 tile rows per group
constexpr int kAlignSlack = 1024;      // dynamic smem is aligned up to the 1024-byte swizzle atom

// Steps 2-5 and 7: producer + 2 consumer warpgroups, 128 x 256 tiles.
constexpr int kConsumers = 2;          // <- consumer warpgroups, 64 rows each
constexpr int kWsBlockM = 64 * kConsumers;
constexpr int kWsBlockN = 256;         // <- one m64n256k16 wgmma per consumer per k16 step
constexpr int kWsStages = 4;           // <- 4 x 48 KB of 227 KB
constexpr int kWsThreads = (kConsumers + 1) * kWarpgroupThreads;
// Grouped order for 128 x 256 tiles: 16 tile rows per group. The 132 tiles in
// flight on an H100 then span about 16 rows x 8 columns of tiles, which read
// 16 x 128 rows of A and 8 x 256 columns of B per k step: R x 128 + C x 256
// with R x C = 132 is smallest at R = 2C. With GROUP_M = 8 they span 8 x 16.5
// and read a third more (measured on H100 at 4096^3: about 0.5% faster with 16).
constexpr int kWsGroupM = 16;
constexpr int kProducerRegs = 40;      // <- setmaxnreg: what the copying warpgroup keeps
constexpr int kConsumerRegs = 232;     // <- and what each multiplying warpgroup gets

static_assert(kBlockK * sizeof(__half) == kSwizzleBytes, "BLOCK_K must fill exactly one 128-byte swizzle line");
static_assert(kWsBlockN % kPanelCols == 0, "BLOCK_N must be a whole number of 64-column panels (one TMA box each)");
static_assert(kWsBlockM == 64 * kConsumers, "wgmma covers 64 rows per instruction");
// setmaxnreg only moves registers between a block's warpgroups: the launch
// gives each thread what __launch_bounds__(kWsThreads, 1) allows (65536 /
// 384 = 170, in steps of 8: 168), and the budgets may share out at most that
// (3 x 168 = 504 a thread of each warpgroup), or a consumer's setmaxnreg.inc
// waits forever for registers no one releases. Lesson 04 shares out all of
// it: 40 + 2 x 232 = 504.
constexpr bool register_budgets_fit(int producer, int consumer) {
  return producer % 8 == 0 && consumer % 8 == 0 &&
         producer + kConsumers * consumer <= (kConsumers + 1) * (65536 / kWsThreads / 8 * 8);
}
static_assert(register_budgets_fit(kProducerRegs, kConsumerRegs),
              "setmaxnreg counts are multiples of 8 and must fit what the launch gives the block");

template <int kElems>
struct EpilogueStaging {
  __half c[kElems];  // (64, 128) per consumer, two (64, 64) swizzled boxes; first, so 1024-byte aligned
};
template <>
struct EpilogueStaging<0> {};

// One pipeline slot's worth of shared memory, the barriers and (step 5) the
// output staging buffer.
template <int kBlockM, int kBlockN, int kStages, int kCStagingElems = 0>
struct PipelineSmem : EpilogueStaging<kCStagingElems> {
  static constexpr int kATileElems = kBlockM * kBlockK;   // (BLOCK_M, 64), K-major
  static constexpr int kBPanelElems = kBlockK * kPanelCols;  // (64, 64), N-major
  static constexpr int kBTileElems = kBlockK * kBlockN;   // BLOCK_N / 64 panels
  static constexpr uint32_t kStageBytes = (kATileElems + kBTileElems) * sizeof(__half);

  __half a[kStages][kATileElems];
  __half b[kStages][kBTileElems];
  uint64_t full[kStages];   // TMA -> consumers: "the stage has landed"
  uint64_t empty[kStages];  // consumers -> producer: "the stage may be overwritten"

  static_assert((kATileElems * sizeof(__half)) % kSwizzleAtomBytes == 0 &&
                    (kBPanelElems * sizeof(__half)) % kSwizzleAtomBytes == 0,
                "every tile must start on a 1024-byte swizzle atom");
};

template <class Smem>
constexpr int smem_bytes_for() {
  return int(sizeof(Smem)) + kAlignSlack;
}

template <class Smem>
__device__ __forceinline__ Smem& aligned_smem(uint8_t* raw) {
  const uintptr_t p = (reinterpret_cast<uintptr_t>(raw) + kAlignSlack - 1) & ~uintptr_t(kAlignSlack - 1);
  return *reinterpret_cast<Smem*>(p);
}

// Issues the copies of k tile `kt` of output tile (tile_row, tile_col) into slot
// `slot`: one box of A (BLOCK_M x 64) and BLOCK_N / 64 boxes of B (64 x 64).
template <class Smem, int kBlockM, int kBlockN>
__device__ __forceinline__ void load_stage(Smem& s, int slot, const CUtensorMap* a_map, const CUtensorMap* b_map,
                                           int tile_row, int tile_col, int kt) {
  mbarrier_arrive_expect_bytes(&s.full[slot], Smem::kStageBytes);  // zero-filled bytes count too
  tma_load_2d(s.a[slot], a_map, tile_row * kBlockM, kt * kBlockK, &s.full[slot]);
#pragma unroll
  for (int p = 0; p < kBlockN / kPanelCols; ++p) {
    tma_load_2d(s.b[slot] + p * Smem::kBPanelElems, b_map, kt * kBlockK, tile_col * kBlockN + p * kPanelCols,
                &s.full[slot]);
  }
}

// Thread 0 of a warp-specialised kernel: prefetches the tensor maps and sets
// up each slot's barriers, "full" (one arrival: the producer's expect-bytes)
// and "empty" (`empty_arrivals`: one per consumer warp that reads the slot),
// then makes them visible to the async proxy. The caller synchronises after.
template <int kStages, class Smem>
__device__ __forceinline__ void init_pipeline(Smem& s, const CUtensorMap* a_map, const CUtensorMap* b_map,
                                              uint32_t empty_arrivals) {
  if (threadIdx.x != 0) return;
  tma_prefetch_descriptor(a_map);
  tma_prefetch_descriptor(b_map);
  for (int i = 0; i < kStages; ++i) {
    mbarrier_init(&s.full[i], 1);
    mbarrier_init(&s.empty[i], empty_arrivals);
  }
  fence_barrier_init();
}

// Stores one warpgroup's 64 x kN accumulator at (row0, col0) of C, applying the
// activation in fp32 and rounding to fp16; rows and columns past M, N are masked.
// N is a multiple of 8 here (TMA's rule), so a column pair is in or out together.
template <int kN, Activation kAct>
__device__ __forceinline__ void store_tile(const float (&d)[kN / 2], __half* c, int m, int n, int row0, int col0) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x % kWarpgroupThreads) / 32;
  const int row = row0 + 16 * warp + lane / 4;
#pragma unroll
  for (int j = 0; j < kN / 8; ++j) {
    const int col = col0 + 8 * j + 2 * (lane % 4);
    if (col < n) {
      if (row < m) {
        *reinterpret_cast<__half2*>(c + int64_t(row) * n + col) =
            __floats2half2_rn(apply_activation(kAct, d[4 * j + 0]), apply_activation(kAct, d[4 * j + 1]));
      }
      if (row + 8 < m) {
        *reinterpret_cast<__half2*>(c + int64_t(row + 8) * n + col) =
            __floats2half2_rn(apply_activation(kAct, d[4 * j + 2]), apply_activation(kAct, d[4 * j + 3]));
      }
    }
  }
}

// Synchronises the 128 threads of one warpgroup (named barrier `id`, 1..15;
// 0 is __syncthreads), leaving the other warpgroups running.
__device__ __forceinline__ void warpgroup_barrier(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(kWarpgroupThreads) : "memory");
}

// One k stage's wgmmas for a consumer's 64 rows and kN columns: four k16
// steps, A from `a_base` (K-major), B from `b_base` (N-major panels).
// accumulate = false starts the accumulator over (a tile's first k stage).
template <int kN, class Smem>
__device__ __forceinline__ void wgmma_k_stage(float (&d)[kN / 2], uint32_t a_base, uint32_t b_base, bool accumulate) {
#pragma unroll
  for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
    const uint64_t desc_a = desc_k_major_a(a_base + kk * kWgmmaK * sizeof(__half));
    const uint64_t desc_b = desc_n_major_b(b_base + kk * 2 * kSwizzleAtomBytes, Smem::kBPanelElems * sizeof(__half));
    wgmma_m64k16<kN>(d, desc_a, desc_b, accumulate || kk > 0);
  }
}

// A whole tile's trace record (k from 0 to K).
__device__ __forceinline__ void write_trace(TraceRecord* trace, int unit, TileCoord tile, int k, uint64_t start_ns) {
  trace_write_record(trace, unit, tile.m, tile.n, 0, k, start_ns);
}

// ------------------------------------------------------------ host side

// True when TMA can describe A and B: row strides of 16-byte multiples.
inline bool tma_shape_ok(const GemmShape& s) { return tma_row_stride_ok(s.k) && tma_row_stride_ok(s.n); }

// Why a shape goes to lesson 03's kernel; empty when it does not.
inline std::string hopper_fallback_note(const GemmShape& s) {
  if (tma_shape_ok(s)) return {};
  std::string why;
  if (!tma_row_stride_ok(s.k)) why += "K = " + std::to_string(s.k);
  if (!tma_row_stride_ok(s.n)) why += std::string(why.empty() ? "" : ", ") + "N = " + std::to_string(s.n);
  return "falls back to lesson 03's kernel: " + why +
         " is not a multiple of 8, so a row stride is not a multiple of 16 bytes as TMA requires";
}

template <class Kernel>
inline void allow_large_smem(Kernel kernel, int smem_bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
}

// Calls f(std::integral_constant<Activation, act>{}): the run-time activation
// as a template argument, so each kernel is compiled once per activation.
template <class F>
inline void with_activation(Activation act, F&& f) {
  switch (act) {
    case Activation::none: f(std::integral_constant<Activation, Activation::none>{}); break;
    case Activation::relu: f(std::integral_constant<Activation, Activation::relu>{}); break;
    case Activation::leaky_relu: f(std::integral_constant<Activation, Activation::leaky_relu>{}); break;
    case Activation::gelu: f(std::integral_constant<Activation, Activation::gelu>{}); break;
    case Activation::silu: f(std::integral_constant<Activation, Activation::silu>{}); break;
  }
}

// What every lesson 04 kernel reports the same way: its tiles (BLOCK_K = 64)
// in the grouped order, and one work unit per tile (Stream-K overrides that).
inline KernelConfig grouped_tile_config(const GemmShape& s, int block_m, int block_n, int threads, int stages,
                                        int group_m) {
  KernelConfig cfg;
  cfg.block_m = block_m;
  cfg.block_n = block_n;
  cfg.block_k = kBlockK;
  cfg.threads = threads;
  cfg.stages = stages;
  cfg.order = tile_order_name(TileOrder::grouped);
  cfg.group_m = group_m;
  cfg.tiles_m = ceil_div(s.m, block_m);
  cfg.tiles_n = ceil_div(s.n, block_n);
  cfg.work_units = int64_t(cfg.tiles_m) * cfg.tiles_n;
  return cfg;
}

}  // namespace wb::hopper
