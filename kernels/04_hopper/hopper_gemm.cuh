// Lesson 04's kernels: fp16 GEMM on Hopper (sm_90a) with TMA, mbarriers and
// wgmma, in the lesson's steps, and their launchers.
//
//   tma_wgmma_kernel         one warpgroup does everything: thread 0 keeps
//                            kStages TMA copies in flight, all 128 threads run
//                            wgmma on the stage that has landed.
//   warp_specialized_kernel  a producer warpgroup only copies (and gives its
//                            registers away), two consumer warpgroups only
//                            multiply (and take those registers); stages are
//                            handed back and forth through "full" and "empty"
//                            mbarriers. kPersistent = true: one block per SM
//                            walks the tiles in the grouped order, so the
//                            producer loads tile i+1 while the consumers store
//                            tile i. kCluster = 2: pairs of blocks share
//                            each B tile through TMA multicast. kTmaStore = true:
//                            the epilogue stages the tile in shared memory and
//                            TMA writes it out while the next tile starts. The
//                            fused activation is a template parameter of the
//                            epilogue. Step 9 (balanced) is this kernel on a
//                            grid of ceil(tiles / waves) blocks instead of one
//                            per SM (warp_specialized_grid).
//   pingpong_kernel          the same roles, but each consumer computes whole
//                            128 x 128 tiles and the two take turns: one's
//                            epilogue runs while the other's wgmmas do.
//
// C = act(A * B): A (M x K), B (K x N), C (M x N), all row-major fp16, fp32
// accumulation. Tails in M, N and K: TMA zero-fills the parts of a box outside
// the matrix, and the epilogue masks its stores. TMA needs K % 8 == 0 and
// N % 8 == 0 (16-byte row strides); other shapes go to lesson 03's kernel.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "03_grouped/pipelined_mma.cuh"  // lesson 03: the fallback for shapes TMA cannot describe
#include "common/activation_half2.cuh"
#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/tma.cuh"
#include "common/trace.cuh"
#include "common/wgmma.cuh"
#include "models/wave_model.hpp"
#include "records/records.hpp"
#include "schedule/activation.hpp"
#include "schedule/stream_k.hpp"
#include "schedule/tile_order.hpp"

namespace wb::hopper {

// ------------------------------------------------------------ configuration
constexpr int kBlockK = 64;            // <- k per stage: one 128-byte swizzle line of fp16
constexpr int kGroupM = 8;             // <- grouped order: 8 tile rows per group
constexpr int kAlignSlack = 1024;      // dynamic smem is aligned up to the 1024-byte swizzle atom

// Step 1: one warpgroup, 128 x 128 tiles.
constexpr int kSimpleBlockM = 128;     // <- two 64-row wgmmas per k16 step
constexpr int kSimpleBlockN = 128;
constexpr int kSimpleStages = 4;       // <- TMA copies in flight
constexpr int kSimpleThreads = kWarpgroupThreads;

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
static_assert(kWsBlockN % kPanelCols == 0 && kSimpleBlockN % kPanelCols == 0,
              "BLOCK_N must be a whole number of 64-column panels (one TMA box each)");
static_assert(kSimpleBlockM % 64 == 0 && kWsBlockM == 64 * kConsumers, "wgmma covers 64 rows per instruction");
static_assert(kProducerRegs + kConsumers * kConsumerRegs <= 65536 / kWarpgroupThreads,
              "the warpgroups' register budgets must fit the 64K-register file");
static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg counts are multiples of 8");

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

// Step 5's staging buffer for the output tile: each consumer warpgroup owns
// 64 rows x 128 columns (two 64 x 64 TMA boxes, 128B-swizzled, 16 KB) and
// stores its 64 x 256 accumulator through it in two halves. 4 stages (192 KB)
// + 32 KB still fit the 227 KB a block may have.
constexpr int kStoreCols = 128;        // <- columns staged at a time per consumer
constexpr int kStagingElems = kConsumers * 64 * kStoreCols;

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

// Before a block that issued TMA stores exits: its shared memory must stay
// valid until TMA has READ it. The writes to global memory need not have
// landed (the end of the kernel makes them visible), so the block leaves as
// soon as the copy engine holds the data.
__device__ __forceinline__ void tma_store_exit_wait() { tma_store_wait_read<0>(); }

// Synchronises the 128 threads of one warpgroup (named barrier `id`, 1..15;
// 0 is __syncthreads), leaving the other warpgroups running.
__device__ __forceinline__ void warpgroup_barrier(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(kWarpgroupThreads) : "memory");
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Two neighbouring outputs, activation applied, as one fp16 pair. GELU runs
// on the pair (activation_half2.cuh): the two fp32 accumulators are rounded to
// fp16 once (as the store would round them), then u = sqrt(2/pi) (x +
// 0.044715 x^3), one tanh.approx.f16x2 and 0.5 x (1 + tanh u) take 5 half2 ops
// per TWO outputs, where fp32 took 8 fp32 ops and 2 conversions, while the
// tensor cores wait for the epilogue. The tanh itself is still two
// special-function ops per pair (SASS: MUFU.TANH.F16 per half), and that unit,
// not the arithmetic, is what fusing GELU waits on (see below, and lesson 04's
// header). Its accuracy is in activation_half2.cuh (within 1.5 fp16 ulps, or
// 1.2e-3 where x < 0 and the result is tiny); the lessons check it against
// fp64 like every variant.
template <Activation kAct>
__device__ __forceinline__ uint32_t pack_activation(float lo, float hi) {
  if constexpr (kAct == Activation::gelu) return activation_half2_bits<kAct>(pack_half2(lo, hi));
  return pack_half2(epilogue_activation<kAct>(lo), epilogue_activation<kAct>(hi));
}

// GELU's pairs are shared between two forms. The tanh form is bound by the
// special-function unit: per warp instruction over 32 pairs, 16 cycles of it
// per scheduler (two MUFU.TANH.F16 at 8 each), 10 of the FMA pipe (5 half2
// ops at 2 each, HFMA2 being half rate there), 8 issue slots. The polynomial
// form (gelu_poly_half2) needs no special function but 8 FMA-pipe ops, 16
// cycles, and a min and a max, which run on the ALU pipe beside them. On that
// count a share f of the pairs on the polynomial evens out the two pipes
// where 16 (1 - f) = 10 (1 - f) + 16 f, at f = 3/11 (about 11.6 cycles per
// warp instruction instead of 16), and f = 1/2 leaves the FMA pipe the limit
// at 13. The launches disagree, so the count misses something.
// Nsight Compute, clocks locked at base, H100, GELU's extra cycles per launch
// over `balanced`. With the polynomial's earlier form (x/2 + |x| w(|x|), one
// more multiply, 9 FMA-pipe ops), median of 9 launches each, one run:
//   share of pairs      1/4     3/8     1/2     5/8
//   2048^3            1,016     857     758     845
//   4096^3            3,461   3,191   3,352   3,164
// (another run, 5 launches each: 1/4 1,101 and 3,422, 1/2 951 and 3,108; a
// third, 7 each: the tanh form on every pair 1,129 and 5,409, 1/2 923 and
// 4,044). With the present form, median of 7 launches at 2048^3 and 3 at
// 4096^3, the earlier form at 1/2 in the same run:
//   share of pairs    earlier 1/2     1/2     5/8     3/4
//   2048^3                    841     554     687     797
//   4096^3                  3,619   3,648   2,645   2,816
// (another run, 7 launches each at 2048^3: earlier 1/2 997, 3/8 1,017, 1/2
// 897). So half the pairs take it, for 2048^3, where GELU costs the most:
// the slices j % 8 < 4 of each 64 x 128 half, 8 of its 16 eight-column
// slices. (Every other slice instead measured 1,091 against 957 at 2048^3,
// median of 11 launches each.)
constexpr int kGeluPolySlicesOf8 = 4;

// Steps 5 and 7: the same stores, but through shared memory and TMA. The
// warpgroup writes 64 x 128 of its accumulator (activation applied, fp16) into
// its staging buffer in the 128B-swizzled layout, fences it for the async
// proxy, and one thread hands two 64 x 64 boxes to TMA; then the second half,
// whose activation and rounding run while TMA is still reading the first
// (kPackAhead; the cluster and ping-pong kernels keep more state live and would
// spill those 32 extra registers, so they convert while they write).
// The copy engine writes whole 128-byte lines and clips rows and columns past
// M, N itself, and the consumers go back to their wgmmas while it does.
// Swizzle: 16-byte chunk q of line r of a box sits at chunk q ^ (r % 8). The
// writes are stmatrix (sm_90): one warp instruction stores four 8 x 8 fp16
// matrices straight from the accumulator layout, each row a 16-byte chunk, and
// the 8 rows of a matrix fall in 8 different chunks, so no bank is hit twice;
// 8 instructions per 64 x 128 half instead of 64 four-byte stores.
template <Activation kAct, bool kPackAhead>
__device__ __forceinline__ void store_64x128_via_smem(const float (&d)[64], __half* staging, const CUtensorMap* c_map,
                                                      int row0, int col0, int barrier_id) {
  constexpr int kBoxBytes = 64 * kSwizzleBytes;  // one (64, 64) fp16 box
  constexpr int kSlices = kStoreCols / 8;        // 8-column slices
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x % kWarpgroupThreads) / 32;
  const bool leader = threadIdx.x % kWarpgroupThreads == 0;
  const uint32_t base = smem_u32(staging);
  // Slice j's fp16 pair in rows `row` (upper = 0) and `row + 8`, activation applied.
  auto pack = [&](int j, int upper) {
    const float lo = d[4 * j + 2 * upper], hi = d[4 * j + 2 * upper + 1];
    if constexpr (kAct == Activation::gelu) {
      if (j % 8 < kGeluPolySlicesOf8) return gelu_poly_half2_bits(pack_half2(lo, hi));
    }
    return pack_activation<kAct>(lo, hi);
  };
  uint32_t packed[kSlices][2];
#pragma unroll
  for (int j = 0; j < kSlices; ++j) {
    if constexpr (kPackAhead) packed[j][0] = pack(j, 0), packed[j][1] = pack(j, 1);
  }
  if (leader) tma_store_wait_read<0>();  // the previous half has left the buffer
  warpgroup_barrier(barrier_id);
  // One stmatrix per two slices: matrices (j, rows 0-7), (j, rows 8-15),
  // (j+1, rows 0-7), (j+1, rows 8-15) of the warp's 16 rows; lane l gives the
  // address of row l % 8 of matrix l / 8 (the swizzle is in the address).
  const int lane_row = 16 * warp + 8 * ((lane / 8) % 2) + lane % 8;  // lane_row % 8 == lane % 8
#pragma unroll
  for (int j = 0; j < kSlices; j += 2) {
    const int slice = j + lane / 16;
    const uint32_t addr = base + lane_row * kSwizzleBytes + (slice / 8) * kBoxBytes + ((slice % 8) ^ (lane % 8)) * 16;
    if constexpr (kPackAhead) {
      stmatrix_x4(addr, packed[j][0], packed[j][1], packed[j + 1][0], packed[j + 1][1]);
    } else {
      stmatrix_x4(addr, pack(j, 0), pack(j, 1), pack(j + 1, 0), pack(j + 1, 1));
    }
  }
  fence_proxy_async_shared();
  warpgroup_barrier(barrier_id);
  if (leader) {
#pragma unroll
    for (int box = 0; box < kStoreCols / kPanelCols; ++box)
      tma_store_2d(c_map, reinterpret_cast<uint8_t*>(staging) + box * kBoxBytes, row0, col0 + box * kPanelCols);
    tma_store_commit();
  }
}

// A 64 x 256 accumulator is two 64 x 128 halves: slices j = 0..15 are d[0..63],
// slices 16..31 are d[64..127] (see the layout in hopper_wgmma.cuh).
template <Activation kAct, bool kPackAhead>
__device__ __forceinline__ void store_tile_via_smem(const float (&d)[kWsBlockN / 2], __half* staging,
                                                    const CUtensorMap* c_map, int row0, int col0, int barrier_id) {
#pragma unroll
  for (int half = 0; half < kWsBlockN / kStoreCols; ++half)
    store_64x128_via_smem<kAct, kPackAhead>(*reinterpret_cast<const float(*)[64]>(d + 64 * half), staging, c_map,
                                            row0, col0 + half * kStoreCols, barrier_id);
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

// Where tile `rank` of cluster work unit `unit` stands among the tiles in launch
// order (unit 0 rank 0, unit 0 rank 1, unit 1 rank 0, ...), counting only tiles
// inside the matrix: when tiles_m is odd, the units of the last row of units
// have no second tile. Those units all lie in the last group of the grouped
// order (`rows_in_last_group` rows of units), one in every `rows_in_last_group`
// units of it, at row offset rows_in_last_group - 1. The result numbers the
// real tiles 0 .. tiles_m * tiles_n - 1, one trace record each.
WB_HD int cluster_tile_position(int unit, int rank, int tiles_m, int tiles_n, int group_units_m) {
  const int position = 2 * unit + rank;
  if (tiles_m % 2 == 0) return position;
  const int units_m = (tiles_m + 1) / 2;
  const int last_group_first_row = ((units_m - 1) / group_units_m) * group_units_m;
  const int last_group_start = last_group_first_row * tiles_n;
  const int rows_in_last_group = units_m - last_group_first_row;
  return unit <= last_group_start ? position : position - (unit - last_group_start) / rows_in_last_group;
}

__device__ __forceinline__ void write_trace(TraceRecord* trace, int unit, TileCoord tile, int k, uint64_t start_ns) {
  trace_write_record(trace, unit, tile.m, tile.n, 0, k, start_ns);
}

// ================================================================ step 1
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

// ============================================================ steps 2 to 5 and 7
// Warpgroup 0 is the producer: after giving registers back, one thread issues
// all TMA copies, waiting on each slot's "empty" barrier before refilling it.
// Warpgroups 1 and 2 are consumers: each owns 64 rows of the 128 x 256 tile and
// a 64 x 256 fp32 accumulator (128 registers per thread). A consumer waits on
// "full", issues four m64n256k16 wgmmas, and keeps one group in flight: once
// group kt has been issued, group kt-1 is done and its slot is released.
//
// kPersistent = false: one block per tile (grid = tiles). true: a grid that
// fits on the GPU at once, each block (or cluster) walking the work units
// blockIdx.x / kCluster, + gridDim.x / kCluster, ... in the grouped order.
// Producer and consumers walk the same list, so the stage/phase counters simply
// run on across tiles and the producer fetches the next tile during the
// consumers' epilogue.
//
// kCluster = 2: a work unit is a pair of vertically adjacent tiles (rows 2u and
// 2u+1 of tiles, same column), computed by the two blocks of a cluster. They
// need the same B tile, so each block copies half of its panels and multicasts
// them into both blocks' shared memory: B traffic from L2 halves. In return a
// slot may only be refilled once the consumers of BOTH blocks have released it,
// so every consumer warp arrives on the "empty" barrier of each block.
//
// kTmaStore = true: the epilogue goes through shared memory and TMA stores
// (store_tile_via_smem) instead of each thread writing fp16 pairs to global
// memory; the stores drain while the consumers start the next tile.
template <int kStages, bool kPersistent, int kCluster, bool kTmaStore, Activation kAct>
__global__ void __launch_bounds__(kWsThreads, 1)
    warp_specialized_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                            const __grid_constant__ CUtensorMap c_map, __half* __restrict__ c, int m, int n, int k,
                            int tiles_m, int tiles_n, TraceRecord* trace) {
  static_assert(kCluster == 1 || kCluster == 2, "clusters of 1 or 2 blocks along M");
  static_assert(kCluster == 1 || kPersistent, "clusters are used by the persistent kernel only");
  static_assert((kWsBlockN / kPanelCols) % kCluster == 0, "each block of a cluster multicasts the same number of panels");
  static_assert(kWsBlockN % kStoreCols == 0 && kStoreCols % kPanelCols == 0, "the epilogue stages whole TMA boxes");
#if WB_WGMMA_DEVICE
  using Smem = PipelineSmem<kWsBlockM, kWsBlockN, kStages, kTmaStore ? kStagingElems : 0>;
  extern __shared__ uint8_t smem_raw[];
  Smem& s = aligned_smem<Smem>(smem_raw);

  const int units_m = ceil_div(tiles_m, kCluster);  // rows of work units
  const int num_units = units_m * tiles_n;
  const int first_unit = int(blockIdx.x) / kCluster;
  const int unit_step = kPersistent ? int(gridDim.x) / kCluster : num_units;  // one unit per block otherwise
  const int rank = kCluster > 1 ? int(cluster_cta_rank()) : 0;             // which tile of the pair
  const int k_tiles = ceil_div(k, kBlockK);
  const int warpgroup = threadIdx.x / kWarpgroupThreads;

  // The tile of work unit `unit` that this block computes (may lie past M in a
  // pair when tiles_m is odd: its loads are all zeros and its stores masked).
  auto tile_of_unit = [&](int unit) {
    TileCoord t = tile_of(TileOrder::grouped, unit, units_m, tiles_n, kWsGroupM / kCluster);
    t.m = t.m * kCluster + rank;
    return t;
  };

  init_pipeline<kStages>(s, &a_map, &b_map, kCluster * kConsumers * 4);  // every consumer warp of the cluster
  if constexpr (kCluster > 1) {
    cluster_sync();  // the peer's barriers exist before anything arrives on them
  } else {
    __syncthreads();
  }

  if (warpgroup == 0) {
    // ---------------------------------------------------------- producer
    warpgroup_release_registers<kProducerRegs>();
    if (threadIdx.x == 0) {
      constexpr int kPanelsPerBlock = kWsBlockN / kPanelCols / kCluster;
      int slot = 0;
      uint32_t phase = 0;
      for (int unit = first_unit; unit < num_units; unit += unit_step) {
        const TileCoord tile = tile_of_unit(unit);
        for (int kt = 0; kt < k_tiles; ++kt) {
          mbarrier_wait(&s.empty[slot], phase ^ 1);  // first lap: passes at once
          if constexpr (kCluster == 1) {
            load_stage<Smem, kWsBlockM, kWsBlockN>(s, slot, &a_map, &b_map, tile.m, tile.n, kt);
          } else {
            // A: this block's own rows. B: panels rank*P .. rank*P+P-1, into both blocks;
            // the peer sends the other half, so the barrier still expects a whole stage.
            mbarrier_arrive_expect_bytes(&s.full[slot], Smem::kStageBytes);
            tma_load_2d(s.a[slot], &a_map, tile.m * kWsBlockM, kt * kBlockK, &s.full[slot]);
#pragma unroll
            for (int i = 0; i < kPanelsPerBlock; ++i) {
              const int p = rank * kPanelsPerBlock + i;
              tma_load_2d_multicast(s.b[slot] + p * Smem::kBPanelElems, &b_map, kt * kBlockK,
                                    tile.n * kWsBlockN + p * kPanelCols, &s.full[slot], uint16_t((1u << kCluster) - 1));
            }
          }
          if (++slot == kStages) { slot = 0; phase ^= 1; }
        }
      }
    }
  } else {
    // ---------------------------------------------------------- consumers
    warpgroup_claim_registers<kConsumerRegs>();
    const int consumer = warpgroup - 1;  // rows 64*consumer .. +63 of the tile
    const bool warp_leader = threadIdx.x % 32 == 0;
    auto release = [&](int released_slot) {
      if (!warp_leader) return;
      if constexpr (kCluster == 1) {
        mbarrier_arrive(&s.empty[released_slot]);
      } else {
#pragma unroll
        for (int cta = 0; cta < kCluster; ++cta) mbarrier_arrive_cluster(&s.empty[released_slot], uint32_t(cta));
      }
    };
    int slot = 0;
    uint32_t phase = 0;
    float acc[kWsBlockN / 2];  // (64, 256) fp32 for this warpgroup
    __half* staging = nullptr;  // this consumer's 64 x 128 of the staging buffer
    if constexpr (kTmaStore) staging = s.c + consumer * 64 * kStoreCols;

    for (int unit = first_unit; unit < num_units; unit += unit_step) {
      const uint64_t t0 = trace ? global_timer_ns() : 0;
      const TileCoord tile = tile_of_unit(unit);
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
        if (++slot == kStages) { slot = 0; phase ^= 1; }
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      release(previous_slot);  // the producer may start the next tile

      if constexpr (kTmaStore) {
        if (tile.m < tiles_m)  // the same for the whole warpgroup (its named barrier)
          store_tile_via_smem<kAct, kCluster == 1>(acc, staging, &c_map, row0, col0, 1 + consumer);
      } else {
        store_tile<kWsBlockN, kAct>(acc, c, m, n, row0, col0);
      }
      // Trace unit = the tile's position in the launch order (unit, then rank),
      // counting only tiles inside the matrix.
      const int trace_unit =
          kCluster == 1 ? unit : cluster_tile_position(unit, rank, tiles_m, tiles_n, kWsGroupM / kCluster);
      if (trace != nullptr && threadIdx.x == kWarpgroupThreads && tile.m < tiles_m)
        write_trace(trace, trace_unit, tile, k, t0);
    }
    if constexpr (kTmaStore) {
      if (threadIdx.x % kWarpgroupThreads == 0) tma_store_exit_wait();  // smem stays valid until TMA has read it
    }
  }
  if constexpr (kCluster > 1) {
    cluster_sync();  // no block leaves while its peer may still arrive on its barriers
  }
#else
  (void)m; (void)n; (void)k; (void)tiles_m; (void)tiles_n; (void)c; (void)trace; (void)c_map;
  __trap();
#endif
}

// ================================================================ step 6 (pingpong)
// Ping-pong consumers. The block's tiles (i = 0, 1, 2, ... in the grouped order,
// as in step 3) alternate between consumer 0 (even i) and consumer 1 (odd i);
// each computes its whole 128 x 128 tile and stores it through its own 16 KB
// staging buffer. The producer loads the tiles' k stages in the same order into
// one ring of kPpStages slots, so consumer c finds tile i's stages at positions
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

// ================================================================ step 8 (streamk)
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
// A flag holds the number of the launch that wrote it (`epoch`), so flags
// never need resetting. Waiting on another block is safe here because every
// block of the grid is resident at once (grid = SMs x blocks per SM).

__device__ __forceinline__ void store_release_gpu(uint32_t* flag, uint32_t value) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
#endif
}

__device__ __forceinline__ uint32_t load_acquire_gpu(const uint32_t* flag) {
  uint32_t value = 0;
#if defined(__CUDA_ARCH__)
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
#endif
  return value;
}

constexpr int kPartialFloat4s = 64 * kWsBlockN / 4;  // one consumer's (64, 256) fp32 partial

// What the Stream-K kernel shares between blocks: a (64, 256) fp32 partial and
// a flag per consumer warpgroup of each block.
struct StreamKWorkspace {
  float4* partials = nullptr;  // [block][consumer][kPartialFloat4s]
  uint32_t* flags = nullptr;   // [block][consumer]: the epoch of the launch that last wrote the partial
  int* segments_before = nullptr;  // [block]: shared-run segments of the blocks before (numbers trace records)
};

template <Activation kAct>
__global__ void __launch_bounds__(kWsThreads, 1)
    streamk_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                   const __grid_constant__ CUtensorMap c_map, int k, int tiles_m, int tiles_n,
                   StreamKWorkspace workspace, uint32_t epoch, TraceRecord* trace) {
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
        // The end of a tile: hand the partial sum to the tile's owner.
        float4* partial = partial_of(int(blockIdx.x));
#pragma unroll
        for (int i = 0; i < kWsBlockN / 8; ++i)
          __stcg(partial + i * kWarpgroupThreads + thread,
                 make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
        warpgroup_barrier(barrier_id);  // every thread's stores come before the release
        if (thread == 0) store_release_gpu(flag_of(int(blockIdx.x)), epoch);
      } else {
        if (!whole_tile(plan, u)) {
          // The start of a tile: add the partials of the blocks that hold the rest.
          for (int b = stream_k_next_contributor(plan, u.tile, int(blockIdx.x)); b >= 0;
               b = stream_k_next_contributor(plan, u.tile, b)) {
            if (thread == 0)
              while (load_acquire_gpu(flag_of(b)) != epoch) __nanosleep(64);
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
        store_tile_via_smem<kAct, true>(acc, staging, &c_map, tile.m * kWsBlockM + 64 * consumer, tile.n * kWsBlockN,
                                        barrier_id);
      }
      if (trace != nullptr && threadIdx.x == kWarpgroupThreads)
        trace_write_record(trace, u.index, tile.m, tile.n, u.k_begin * kBlockK, min_int(u.k_end * kBlockK, k), t0);
    }
    if (thread == 0) tma_store_exit_wait();  // smem stays valid until TMA has read it
  }
#else
  (void)k; (void)tiles_m; (void)tiles_n; (void)trace; (void)c_map; (void)workspace; (void)epoch;
  __trap();
#endif
}

// ================================================================ launchers

enum class HopperStep {
  tma_wgmma,
  warp_specialized,
  persistent,
  persistent_cluster,
  persistent_tma_store,          // step 5: step 3 + the TMA-store epilogue
  persistent_cluster_tma_store,  // step 5 + step 4's clusters
  pingpong,                      // step 6: step 5 with ping-pong consumers, 128 x 128 tiles
  streamk,                       // step 8: step 5 with a Stream-K last wave
  balanced,                      // step 9: step 5 on the fewest blocks that take as many waves
};

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

inline int sm_count() {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

using SimpleSmem = PipelineSmem<kSimpleBlockM, kSimpleBlockN, kSimpleStages>;
template <bool kTmaStore>
using WsSmem = PipelineSmem<kWsBlockM, kWsBlockN, kWsStages, kTmaStore ? kStagingElems : 0>;
constexpr auto kSimpleKernel = tma_wgmma_kernel<kSimpleBlockM, kSimpleBlockN, kSimpleStages>;
template <bool kPersistent, int kCluster, bool kTmaStore, Activation kAct>
constexpr auto kWsKernel = warp_specialized_kernel<kWsStages, kPersistent, kCluster, kTmaStore, kAct>;

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
// the GPU at once (occupancy API; GPCs decide, not only the SM count).
template <bool kPersistent, int kCluster, bool kTmaStore>
inline int resident_clusters() {
  constexpr auto kernel = kWsKernel<kPersistent, kCluster, kTmaStore, Activation::none>;
  const int smem = smem_bytes_for<WsSmem<kTmaStore>>();
  allow_large_smem(kernel, smem);
  if constexpr (kCluster == 1) {
    return sm_count() * std::max(1, blocks_per_sm(reinterpret_cast<const void*>(kernel), kWsThreads, smem));
  } else {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = kCluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.gridDim = dim3(kCluster * sm_count(), 1, 1);
    config.blockDim = dim3(kWsThreads, 1, 1);
    config.dynamicSmemBytes = smem;
    config.attrs = attr;
    config.numAttrs = 1;
    int clusters = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    return std::max(1, clusters);
  }
}

// Blocks launched for `s`: one per tile, or (persistent) as many work units as
// fit on the GPU at once, `kCluster` blocks each. `balanced` (step 9): only as
// many as the waves need, so that every block gets the same number of units.
template <bool kPersistent, int kCluster, bool kTmaStore>
inline int warp_specialized_grid(const GemmShape& s, bool balanced = false) {
  const int tiles_m = ceil_div(s.m, kWsBlockM), tiles_n = ceil_div(s.n, kWsBlockN);
  if constexpr (!kPersistent) {
    return tiles_m * tiles_n;
  } else {
    static const int resident = resident_clusters<kPersistent, kCluster, kTmaStore>();  // once per process
    const int units = ceil_div(tiles_m, kCluster) * tiles_n;
    const int clusters = balanced ? int(even_wave_blocks(units, resident)) : min_int(units, resident);
    return kCluster * clusters;
  }
}

// Steps 2-5 and 7.
template <bool kPersistent, int kCluster, bool kTmaStore, Activation kAct>
inline void launch_warp_specialized(const GemmArgs& g, cudaStream_t stream, bool balanced = false) {
  const int tiles_m = ceil_div(g.m, kWsBlockM), tiles_n = ceil_div(g.n, kWsBlockN);
  const CUtensorMap a_map = make_tensor_map_2d(g.a, g.m, g.k, kWsBlockM, kBlockK);  // boxes (128, 64)
  const CUtensorMap b_map = make_tensor_map_2d(g.b, g.k, g.n, kBlockK, kPanelCols);  // boxes (64, 64)
  const CUtensorMap c_map = make_tensor_map_2d(g.c, g.m, g.n, 64, kPanelCols);       // boxes (64, 64), stores
  const int smem = smem_bytes_for<WsSmem<kTmaStore>>();
  constexpr auto kernel = kWsKernel<kPersistent, kCluster, kTmaStore, kAct>;
  allow_large_smem(kernel, smem);

  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = kCluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.gridDim =
      dim3(warp_specialized_grid<kPersistent, kCluster, kTmaStore>(GemmShape{g.m, g.n, g.k}, balanced), 1, 1);
  config.blockDim = dim3(kWsThreads, 1, 1);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = kCluster > 1 ? 1 : 0;
  CUDA_CHECK(
      cudaLaunchKernelEx(&config, kernel, a_map, b_map, c_map, g.c, g.m, g.n, g.k, tiles_m, tiles_n, g.trace));
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

template <bool kPersistent, int kCluster, bool kTmaStore>
inline void launch_with_activation(const GemmArgs& g, Activation act, cudaStream_t stream, bool balanced = false) {
  with_activation(act, [&](auto a) {
    launch_warp_specialized<kPersistent, kCluster, kTmaStore, a.value>(g, stream, balanced);
  });
}

// Step 6 (pingpong): one block per SM (at most one per tile).
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

// Step 8 (streamk): one block per SM (at most one per tile).
template <Activation kAct>
constexpr auto kSkKernel = streamk_kernel<kAct>;
using StreamKSmem = PipelineSmem<kWsBlockM, kWsBlockN, kWsStages, kStagingElems>;

inline int streamk_grid(const GemmShape& s) {
  static const int resident = [] {  // once per process
    const int smem = smem_bytes_for<StreamKSmem>();
    allow_large_smem(kSkKernel<Activation::none>, smem);
    return sm_count() *
           std::max(1, blocks_per_sm(reinterpret_cast<const void*>(kSkKernel<Activation::none>), kWsThreads, smem));
  }();
  return min_int(ceil_div(s.m, kWsBlockM) * ceil_div(s.n, kWsBlockN), resident);
}

// What the Stream-K launches of a process share, whatever their activation:
// the workspace (allocated once, for the largest grid: about 128 KB per block,
// 17 MB on an H100), the epoch counter (the flags start at 0 and every launch
// gets the next epoch, so they are never cleared again) and the plan whose
// trace numbering is on the device.
struct StreamKState {
  StreamKWorkspace workspace;
  int capacity = 0;       // blocks the workspace holds
  uint32_t epoch = 0;     // of the last launch
  StreamKPlan numbered;   // the plan segments_before was computed for
  std::vector<int> segments_before;
};

// The workspace for `plan`, and the next launch's epoch in `epoch`.
inline StreamKWorkspace streamk_prepare(const StreamKPlan& plan, cudaStream_t stream, uint32_t* epoch) {
  static StreamKState state;
  StreamKWorkspace& w = state.workspace;
  if (plan.workers > state.capacity) {
    const int resident = streamk_grid(GemmShape{1 << 20, 1 << 20, 1});
    if (plan.workers > resident) throw CudaError("Stream-K: more blocks than can be resident at once");
    if (w.partials != nullptr) {
      CUDA_CHECK(cudaStreamSynchronize(stream));
      CUDA_CHECK(cudaFree(w.partials));
      CUDA_CHECK(cudaFree(w.flags));
      CUDA_CHECK(cudaFree(w.segments_before));
      w = StreamKWorkspace{};
    }
    CUDA_CHECK(cudaMalloc(&w.partials, size_t(resident) * kConsumers * kPartialFloat4s * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&w.flags, size_t(resident) * kConsumers * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&w.segments_before, size_t(resident) * sizeof(int)));
    CUDA_CHECK(cudaMemsetAsync(w.flags, 0, size_t(resident) * kConsumers * sizeof(uint32_t), stream));
    state.capacity = resident;
    state.numbered = StreamKPlan{};
  }
  // Trace records are numbered in launch order, which needs each block's count
  // of earlier segments: a loop with 64-bit divisions, done here once per plan.
  const StreamKPlan& n = state.numbered;
  if (plan.tiles != n.tiles || plan.k_iters != n.k_iters || plan.workers != n.workers) {
    state.segments_before.resize(size_t(plan.workers));
    for (int b = 0; b < plan.workers; ++b) state.segments_before[size_t(b)] = stream_k_segments_before(plan, b);
    // From pageable memory: the host copy is staged before this returns.
    CUDA_CHECK(cudaMemcpyAsync(w.segments_before, state.segments_before.data(), size_t(plan.workers) * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
    state.numbered = plan;
  }
  if (++state.epoch == 0) state.epoch = 1;  // 0 is what the flags start at
  *epoch = state.epoch;
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
  uint32_t epoch = 0;
  const StreamKWorkspace workspace =
      streamk_prepare(stream_k_plan(tiles_m * tiles_n, ceil_div(g.k, kBlockK), grid), stream, &epoch);
  allow_large_smem(kSkKernel<kAct>, smem);
  kSkKernel<kAct><<<grid, kWsThreads, smem, stream>>>(a_map, b_map, c_map, g.k, tiles_m, tiles_n, workspace, epoch,
                                                      g.trace);
  CUDA_CHECK_LAUNCH();
}

// Runs `step` with the fused activation `act`; shapes TMA cannot describe run
// lesson 03's kernel instead (see hopper_fallback_note). Steps 1 and 2 store
// without an activation; the fused epilogue is taught on the persistent kernels.
inline void launch_hopper_gemm(const GemmArgs& g, HopperStep step, Activation act, cudaStream_t stream) {
  if (!tma_shape_ok(GemmShape{g.m, g.n, g.k})) {
    launch_pipelined_gemm(g, TileOrder::grouped, kGroupM, act, stream);
    return;
  }
  switch (step) {
    case HopperStep::tma_wgmma:
    case HopperStep::warp_specialized:
      if (act != Activation::none)
        throw CudaError("the Hopper tma_wgmma and warp_specialized steps have no fused activation");
      if (step == HopperStep::tma_wgmma) {
        launch_tma_wgmma(g, stream);
      } else {
        launch_warp_specialized<false, 1, false, Activation::none>(g, stream);
      }
      break;
    case HopperStep::persistent: launch_with_activation<true, 1, false>(g, act, stream); break;
    case HopperStep::persistent_cluster: launch_with_activation<true, 2, false>(g, act, stream); break;
    case HopperStep::persistent_tma_store: launch_with_activation<true, 1, true>(g, act, stream); break;
    case HopperStep::balanced: launch_with_activation<true, 1, true>(g, act, stream, true); break;
    case HopperStep::persistent_cluster_tma_store: launch_with_activation<true, 2, true>(g, act, stream); break;
    case HopperStep::streamk: with_activation(act, [&](auto a) { launch_streamk<a.value>(g, stream); }); break;
    case HopperStep::pingpong: launch_pingpong_with_activation<PingpongSquare>(g, act, stream); break;
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

// Step 6's (pingpong) tile sizes, grid, occupancy and trace units (one per tile).
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

// Tile sizes, grid, occupancy and trace units for `step` on shape `s`.
inline KernelConfig hopper_gemm_config(const GemmShape& s, HopperStep step) {
  if (!tma_shape_ok(s)) return pipelined_gemm_config(s, TileOrder::grouped, kGroupM);
  if (step == HopperStep::pingpong) return pingpong_config<PingpongSquare>(s);
  if (step == HopperStep::streamk) return streamk_config(s);
  const bool simple = step == HopperStep::tma_wgmma;
  KernelConfig cfg =
      simple ? grouped_tile_config(s, kSimpleBlockM, kSimpleBlockN, kSimpleThreads, kSimpleStages, kGroupM)
             : grouped_tile_config(s, kWsBlockM, kWsBlockN, kWsThreads, kWsStages, kWsGroupM);
  cfg.persistent = step != HopperStep::tma_wgmma && step != HopperStep::warp_specialized;
  const bool tma_store = step == HopperStep::persistent_tma_store || step == HopperStep::persistent_cluster_tma_store ||
                         step == HopperStep::balanced;
  const void* kernel = nullptr;
  switch (step) {
    case HopperStep::tma_wgmma:
      cfg.smem_bytes = smem_bytes_for<SimpleSmem>();
      cfg.grid_blocks = cfg.work_units;
      allow_large_smem(kSimpleKernel, cfg.smem_bytes);
      kernel = reinterpret_cast<const void*>(kSimpleKernel);
      break;
    case HopperStep::warp_specialized:
      cfg.grid_blocks = warp_specialized_grid<false, 1, false>(s);
      kernel = reinterpret_cast<const void*>(kWsKernel<false, 1, false, Activation::none>);
      break;
    case HopperStep::persistent:
      cfg.grid_blocks = warp_specialized_grid<true, 1, false>(s);
      kernel = reinterpret_cast<const void*>(kWsKernel<true, 1, false, Activation::none>);
      break;
    case HopperStep::persistent_cluster:
      cfg.grid_blocks = warp_specialized_grid<true, 2, false>(s);
      kernel = reinterpret_cast<const void*>(kWsKernel<true, 2, false, Activation::none>);
      break;
    case HopperStep::persistent_tma_store:
      cfg.grid_blocks = warp_specialized_grid<true, 1, true>(s);
      kernel = reinterpret_cast<const void*>(kWsKernel<true, 1, true, Activation::none>);
      break;
    case HopperStep::persistent_cluster_tma_store:
      cfg.grid_blocks = warp_specialized_grid<true, 2, true>(s);
      kernel = reinterpret_cast<const void*>(kWsKernel<true, 2, true, Activation::none>);
      break;
    case HopperStep::balanced:
      cfg.grid_blocks = warp_specialized_grid<true, 1, true>(s, true);
      kernel = reinterpret_cast<const void*>(kWsKernel<true, 1, true, Activation::none>);
      break;
    case HopperStep::streamk: break;   // returned above
    case HopperStep::pingpong: break;  // returned above
  }
  if (!simple) {
    cfg.smem_bytes = tma_store ? smem_bytes_for<WsSmem<true>>() : smem_bytes_for<WsSmem<false>>();
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  }
  cfg.blocks_per_sm = blocks_per_sm(kernel, cfg.threads, cfg.smem_bytes);
  return cfg;
}

}  // namespace wb::hopper
