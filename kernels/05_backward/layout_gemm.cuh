// Lesson 05, steps 2-4: transposes as layouts, at full speed; both backward
// products in one persistent launch; and act' fused into their operand path.
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
// One launch may carry two products (step 3): the work units are the tiles of
// the first product, then those of the second, each in its own grouped order,
// and the persistent blocks walk them as one list, so the last wave of dX is
// filled with the first tiles of dW instead of idling. Trace records of the
// second product are numbered after the first's tile rows (tile_m + tiles_m of
// the first), so the viewer shows the two grids one above the other.
//
// Step 4 (kGrad != none) loads dZ where A was dP, and P beside it in the same
// boxes, and forms dP in the registers an RS wgmma reads A from; dW is
// computed as dWᵀ = dPᵀ X (A = dP, M-major) and stored transposed.
//
// The forward of a training step (kForward != none, --part train) is the
// same kernel on P = X W (LayoutNN) with an epilogue that adds the bias,
// stores P (when asked) and then Z = act(P) through the same staging buffer.
//
// Step 5 (kEpilogueGrad != none, --part chain) is the same kernel on the
// product that makes dZ, the next layer's dX = dY Vᵀ (LayoutNT), with an
// epilogue that reads P where the accumulators lie and stores
// dP = dZ * act'(P) instead of dZ, the way cuBLASLt's DGELU epilogue reads
// the forward's auxiliary output; with a bias it also writes each warp's
// column sums of dP (16 rows) to a row of partials for db. For GELU and SiLU
// half of the act' work is done during the k loop, while the tensor cores run.
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>

#include "04_hopper/pipeline.cuh"
#include "04_hopper/step5_tma_store.cuh"
#include "04_hopper/step7_fused_activation.cuh"
#include "05_backward/backward.cuh"
#include "05_backward/pass_inside.cuh"
#include "common/activation_half2.cuh"
#include "common/mma.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"
#include "models/wave_model.hpp"

namespace wb::backward {

using hopper::Major;

// kStoreTransposed: the product's C (m x n) is stored as its transpose, an
// (n x m) row-major matrix (step 4 computes dWᵀ and writes dW).
template <Major kA_, Major kB_, bool kStoreTransposed_ = false>
struct Layout {
  static constexpr Major kA = kA_, kB = kB_;
  static constexpr bool kStoreTransposed = kStoreTransposed_;
};
using LayoutNT = Layout<Major::k, Major::k>;           // dX = dP Wᵀ
using LayoutTN = Layout<Major::mn, Major::mn>;         // dW = Xᵀ dP
using LayoutNN = Layout<Major::k, Major::mn>;          // lesson 04's C = A B
using LayoutTNt = Layout<Major::mn, Major::mn, true>;  // dWᵀ = dPᵀ X, stored as dW

// The tensor maps and sizes of up to two products, passed by value in the
// kernel's parameter space (__grid_constant__), which TMA reads directly.
struct Products {
  CUtensorMap a[2], b[2], c[2];
  CUtensorMap aux[2];  // step 4: P, in the same boxes as A (A is then dZ)
  int m[2], n[2], k[2];
  int tiles_m[2], tiles_n[2];
  int units[2];  // tiles of each product (0 for an absent second product)
  // Where this launch's trace records go: unit u writes record
  // trace_first_unit + u, its tile row offset by trace_first_row (a product
  // launched after another stacks its records after the other's).
  int trace_first_unit, trace_first_row;
  // Step 4: db (product 1's m values), summed by the tiles in its first tile
  // column; nullptr: none.
  __half* db;
  // The forward (kForward != none): the bias (n[0] values) or nullptr, and
  // whether P is stored too, through aux[0].
  const __half* bias;
  bool save_pre_act;
  // Step 5 (kEpilogueGrad != none): P (m[0] x n[0], row-major), and db's
  // partial rows (one per 16 rows of dP, n[0] floats each) or nullptr.
  const __half* epi_p;
  float* epi_db_partials;
  // Step 6 (kPassAct != none): the act' pass run inside the launch.
  PassInside pass;
};

// Rows of dP per row of step 5's db partials: one warp's share of a consumer's tile.
constexpr int kEpilogueDbRows = 16;
inline int epilogue_db_partial_rows(int m) { return (m + kEpilogueDbRows - 1) / kEpilogueDbRows; }

constexpr int kBM = hopper::kWsBlockM, kBN = hopper::kWsBlockN, kBK = hopper::kBlockK;
constexpr int kStages = hopper::kWsStages;
using Epilogue = hopper::TmaStoreEpilogue<Activation::none>;
using Smem = hopper::PipelineSmem<kBM, kBN, kStages, Epilogue::kStagingElems>;

// Step 4's shared memory: a stage holds dZ's box,
// P's box beside it, and B's: 64 KB, so 3 stages + the 32 KB staging buffer
// fill the 227 KB a block may have.
constexpr int kFusedStages = 3;  // <- 3 x 64 KB
struct FusedSmem : hopper::EpilogueStaging<Epilogue::kStagingElems> {
  static constexpr uint32_t kStageBytes = (2 * kBM * kBK + kBK * kBN) * sizeof(__half);
  __half a[kFusedStages][kBM * kBK];    // dZ
  __half aux[kFusedStages][kBM * kBK];  // P
  __half b[kFusedStages][kBK * kBN];
  uint64_t full[kFusedStages];
  uint64_t empty[kFusedStages];
};

template <Activation kGrad>
using SmemOf = std::conditional_t<kGrad == Activation::none, Smem, FusedSmem>;
template <Activation kGrad>
constexpr int kStagesOf = kGrad == Activation::none ? kStages : kFusedStages;

// One operand's rows row0 .. row0 + kRows - 1 for k tile `kt`, into `dst`
// (kRows x 64 values): one (kRows, 64) box when K-major, kRows / 64 panels of
// (64 k, 64 rows) when M- or N-major. A has kRows = 128 (t.m), B 256 (t.n).
template <Major kMajor, int kRows>
__device__ __forceinline__ void load_operand(__half* dst, const CUtensorMap* map, int row0, int kt, uint64_t* bar) {
  using namespace hopper;
  if constexpr (kMajor == Major::k) {
    tma_load_2d(dst, map, row0, kt * kBK, bar);
  } else {
#pragma unroll
    for (int p = 0; p < kRows / kPanelCols; ++p)
      tma_load_2d(dst + p * 64 * kPanelCols, map, kt * kBK, row0 + p * kPanelCols, bar);
  }
}

template <class L>
__device__ __forceinline__ void load_a(__half* dst, const CUtensorMap* a_map, TileCoord t, int kt, uint64_t* bar) {
  load_operand<L::kA, kBM>(dst, a_map, t.m * kBM, kt, bar);
}

// Copies k tile `kt` of output tile `t` of a product of layout L into `slot`
// (and step 4: P's box beside A's).
template <class L, class S>
__device__ __forceinline__ void load_stage(S& s, int slot, const CUtensorMap* a_map, const CUtensorMap* b_map,
                                           const CUtensorMap* aux_map, TileCoord t, int kt) {
  hopper::mbarrier_arrive_expect_bytes(&s.full[slot], S::kStageBytes);  // the same bytes in either layout
  load_a<L>(s.a[slot], a_map, t, kt, &s.full[slot]);
  if constexpr (std::is_same_v<S, FusedSmem>) load_a<L>(s.aux[slot], aux_map, t, kt, &s.full[slot]);
  load_operand<L::kB, kBN>(s.b[slot], b_map, t.n * kBN, kt, &s.full[slot]);
}

// Step 4: one k stage of dP for one consumer, straight into the registers an
// RS wgmma reads A from. ldmatrix (K-major A) or ldmatrix.trans (M-major A)
// gives dZ's and P's 16 x 16 pieces in the A-fragment layout, and
// dP = dZ * act'(P) is formed pair by pair (common/activation_half2.cuh). An
// elementwise op does not care which way the lines run, so both products take
// the same path. Lane l gives the address of row l % 8 of 8 x 8 matrix l / 8:
// matrix i is rows 8 (i % 2) .. of the warp's 16 and k 8 (i / 2) .. of the
// k16 step; its line and 16-byte chunk depend on the major, and the swizzle
// moves chunk q of line r to q ^ (r % 8). With `sum` (dWᵀ's first tile
// column, where A's rows are columns of dP) each thread also adds up its two
// rows' values: db.
template <class L, Activation kGrad>
__device__ __forceinline__ void load_dp_fragments(uint32_t (&frag)[16], const __half* dz, const __half* p, bool sum,
                                                  float (&sums)[2]) {
  using namespace hopper;
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x % kWarpgroupThreads) / 32;
  const int i = lane / 8;
  const uint32_t dz_base = smem_u32(dz), p_base = smem_u32(p);
#pragma unroll
  for (int kk = 0; kk < kBK / kWgmmaK; ++kk) {
    const int line = L::kA == Major::k ? 16 * warp + 8 * (i % 2) + lane % 8 : 16 * kk + 8 * (i / 2) + lane % 8;
    const int chunk = L::kA == Major::k ? 2 * kk + i / 2 : 2 * warp + i % 2;
    const uint32_t at = line * kSwizzleBytes + ((chunk ^ (lane % 8)) * 16);  // line % 8 == lane % 8
    uint32_t g[4], x[4];
    if constexpr (L::kA == Major::k) {
      ldmatrix_x4(g, dz_base + at);
      ldmatrix_x4(x, p_base + at);
    } else {
      ldmatrix_x4_trans(g, dz_base + at);
      ldmatrix_x4_trans(x, p_base + at);
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      frag[4 * kk + r] = times_activation_grad_half2<kGrad>(g[r], x[r]);
      if (sum) {
        const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&frag[4 * kk + r]));
        sums[r % 2] += v.x + v.y;  // registers 0, 2: row l / 4; 1, 3: row l / 4 + 8
      }
    }
  }
}

// Step 4's db: each thread's two rows (of dWᵀ: columns of dP), added up over
// the 4 lanes that share them, in a fixed order, so db is the same bit for bit
// on every run; no atomics, no second pass.
__device__ __forceinline__ void write_db(float (&sums)[2], __half* db, int n, int row0) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x % hopper::kWarpgroupThreads) / 32;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    sums[r] += __shfl_xor_sync(0xffffffffu, sums[r], 1);
    sums[r] += __shfl_xor_sync(0xffffffffu, sums[r], 2);
  }
  const int row = row0 + 16 * warp + lane / 4;
  if (lane % 4 == 0) {
    if (row < n) db[row] = __float2half_rn(sums[0]);
    if (row + 8 < n) db[row + 8] = __float2half_rn(sums[1]);
  }
}

// Step 4's k loop for one tile: form stage kt's dP fragments, issue its four
// RS wgmmas, and wait for them before the registers are formed again. The
// wait is not lifted to overlap the next stage's fragments with this stage's
// multiplies: the compiler sees the fragments' last use at the wgmma and may
// hand their registers to the next stage's while the tensor cores still read
// them (tried: wrong products, and no faster). The two consumers still
// overlap each other: one forms its fragments while the other's wgmmas run.
template <class L, Activation kGrad, class S>
__device__ __forceinline__ void fused_k_loop(S& s, float (&acc)[kBN / 2], int k_tiles, int consumer, int& slot,
                                             uint32_t& phase, bool sum_db, float (&db_sums)[2]) {
  using namespace hopper;
  constexpr uint32_t kPanelBytes = 64 * kPanelCols * sizeof(__half);
  const bool warp_leader = threadIdx.x % 32 == 0;
  const int part = consumer * 64 * kPanelCols;  // this consumer's 64 lines of A (its rows, or its panel)
  for (int kt = 0; kt < k_tiles; ++kt) {
    mbarrier_wait(&s.full[slot], phase);
    uint32_t frag[16];
    load_dp_fragments<L, kGrad>(frag, s.a[slot] + part, s.aux[slot] + part, sum_db, db_sums);
    const uint32_t b_base = smem_u32(s.b[slot]);
    uint64_t desc_b[kBK / kWgmmaK];  // all computed first: nothing is written between the wgmmas and the wait
#pragma unroll
    for (int kk = 0; kk < kBK / kWgmmaK; ++kk)
      desc_b[kk] = L::kB == Major::k ? desc_k_major(b_base + kk * kWgmmaK * sizeof(__half))
                                     : desc_mn_major(b_base + kk * 2 * kSwizzleAtomBytes, kPanelBytes);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / kWgmmaK; ++kk)
      wgmma_m64n256k16_rs<L::kB>(acc, *reinterpret_cast<const uint32_t(*)[4]>(frag + 4 * kk), desc_b[kk],
                                 kt > 0 || kk > 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_accumulators(acc);
    if (warp_leader) mbarrier_arrive(&s.empty[slot]);
    if (++slot == kFusedStages) { slot = 0; phase ^= 1; }
  }
}

// Stores 64 x 128 of one consumer's accumulator (rows row0.., columns col0..
// of C) as its transpose: 128 lines of Cᵀ, 64 values each, two (64, 64) boxes
// at rows col0 and col0 + 64, column row0 of the (n x m) matrix. The same
// slices as lesson 04's store_64x128_via_smem, written by stmatrix.trans:
// matrix (slice j, rows 8u..8u+7 of the warp's 16) becomes lines 8j .. 8j + 7,
// chunk 2 warp + u.
__device__ __forceinline__ void store_64x128_transposed(const float (&d)[64], __half* staging, const CUtensorMap* ct_map,
                                                        int row0, int col0, int barrier_id) {
  using namespace hopper;
  constexpr int kBoxBytes = 64 * kSwizzleBytes;
  constexpr int kSlices = kStoreCols / 8;
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x % kWarpgroupThreads) / 32;
  const bool leader = threadIdx.x % kWarpgroupThreads == 0;
  const uint32_t base = hopper::smem_u32(staging);
  uint32_t packed[kSlices][2];
#pragma unroll
  for (int j = 0; j < kSlices; ++j) {
    packed[j][0] = pack_half2(d[4 * j + 0], d[4 * j + 1]);
    packed[j][1] = pack_half2(d[4 * j + 2], d[4 * j + 3]);
  }
  if (leader) tma_store_wait_read<0>();
  warpgroup_barrier(barrier_id);
  const int chunk = 2 * warp + (lane / 8) % 2;
#pragma unroll
  for (int j = 0; j < kSlices; j += 2) {
    const int line = 8 * (j + lane / 16) + lane % 8;  // 0 .. 127
    const uint32_t addr =
        base + (line / 64) * kBoxBytes + (line % 64) * kSwizzleBytes + ((chunk ^ (line % 8)) * 16);
    stmatrix_x4_trans(addr, packed[j][0], packed[j][1], packed[j + 1][0], packed[j + 1][1]);
  }
  fence_proxy_async_shared();
  warpgroup_barrier(barrier_id);
  if (leader) {
#pragma unroll
    for (int box = 0; box < kStoreCols / kPanelCols; ++box)
      tma_store_2d(ct_map, reinterpret_cast<uint8_t*>(staging) + box * kBoxBytes, col0 + box * kPanelCols, row0);
    tma_store_commit();
  }
}

// The forward's epilogue for one consumer's 64 x 256: P = acc + b (in place:
// the next tile's first wgmma overwrites acc), P stored if asked, then
// Z = act(P). Thread t of a warp holds, for each 8-column slice j of a
// 64 x 128 half, columns 8 j + 2 (t % 4) and the next of two rows.
template <Activation kAct>
__device__ __forceinline__ void store_forward(float (&acc)[kBN / 2], const Products& ps, __half* staging, int row0,
                                              int col0, int barrier_id) {
  using namespace hopper;
  if (ps.bias != nullptr) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < kBN / 8; ++i) {  // i = 16 half + j
      const int col = col0 + 8 * i + 2 * (lane % 4);
      if (col >= ps.n[0]) continue;  // n is a multiple of 8 (TMA): col + 1 < n too
      const float2 b = __half22float2(*reinterpret_cast<const __half2*>(ps.bias + col));
      acc[4 * i] += b.x, acc[4 * i + 1] += b.y, acc[4 * i + 2] += b.x, acc[4 * i + 3] += b.y;
    }
  }
  if (ps.save_pre_act) store_tile_via_smem<Activation::none, true>(acc, staging, &ps.aux[0], row0, col0, barrier_id);
  store_tile_via_smem<kAct, true>(acc, staging, &ps.c[0], row0, col0, barrier_id);
}

// Step 5's staging buffer holds a 64 x 128 half of P: 64 lines of 16 chunks of
// 8 values, chunk c of line r at byte r * 256 + (c ^ (r % 8)) * 16, so that
// ldmatrix reads it without bank conflicts. A consumer's thread t owns chunks
// t, t + 128, ...: it copies them (stage_p_half) and is the one that turns the
// first half's into act'(P) (act_grad_chunk_in_place), so no barrier lies
// between the two.
constexpr int kPChunksPerThread = 64 * 16 / hopper::kWarpgroupThreads;
struct PChunk {
  int line, chunk;  // chunk `chunk` (columns 8 chunk ..) of line `line`
  uint32_t byte;    // its place in the buffer
};
__device__ __forceinline__ PChunk p_chunk(int i) {  // this thread's i-th chunk, i < kPChunksPerThread
  const int e = threadIdx.x % hopper::kWarpgroupThreads + hopper::kWarpgroupThreads * i;
  const int r = e / 16, c = e % 16;
  return PChunk{r, c, uint32_t(r * 256 + ((c ^ (r % 8)) * 16))};
}

// Step 5: P's 64 x 128 half `half` of this consumer's tile (rows row0.., columns
// col0 + 128 half ..) into its staging buffer with cp.async, 16 bytes a copy;
// zeros outside P. The caller has made sure that no TMA store still reads the
// buffer and that no thread still reads the last half.
__device__ __forceinline__ void stage_p_half(const Products& ps, __half* staging, int row0, int col0, int half) {
  const int m = ps.m[0], n = ps.n[0];
  const uint32_t base = hopper::smem_u32(staging);
#pragma unroll
  for (int i = 0; i < kPChunksPerThread; ++i) {
    const PChunk k = p_chunk(i);
    const int row = row0 + k.line, col = col0 + 128 * half + 8 * k.chunk;
    const bool inside = row < m && col < n;  // n is a multiple of 8 (TMA): the whole chunk
    cp_async_16_zero_fill(base + k.byte, inside ? ps.epi_p + int64_t(row) * n + col : ps.epi_p, inside ? 16 : 0);
  }
  cp_async_commit_group();
}

// Step 5, GELU and SiLU: the 16-byte chunks of P's first half that each thread
// copied in stage_p_half (8 of the half's 1024), turned into act'(P) in place,
// one chunk per k step of the tile's loop, while that step's wgmmas run: the
// tensor cores keep working and the epilogue's first half needs only a multiply.
// act' is then kept in fp16 (the buffer's type): one more rounding than the
// second half's, which is still formed in the epilogue (the buffer holds one half).
template <Activation kGrad>
__device__ __forceinline__ void act_grad_chunk_in_place(__half* staging, int i) {
  uint4* chunk = reinterpret_cast<uint4*>(reinterpret_cast<char*>(staging) + p_chunk(i).byte);
  uint4 v = *chunk;
  uint32_t* w = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 x = __half22float2(*reinterpret_cast<const __half2*>(&w[j]));
    const __half2 g = __floats2half2_rn(activation_grad_f32<kGrad>(x.x), activation_grad_f32<kGrad>(x.y));
    w[j] = *reinterpret_cast<const uint32_t*>(&g);
  }
  *chunk = v;
}

// At the start of a tile: P's first half on its way into the staging buffer
// (once the last tile's TMA store has read it), the second half's lines asked
// into L2, both landing while the tile's k loop runs.
__device__ __forceinline__ void prefetch_p(const Products& ps, __half* staging, int row0, int col0, int barrier_id) {
  const int t = threadIdx.x % hopper::kWarpgroupThreads;
  if (t == 0) hopper::tma_store_wait_read<0>();
  hopper::warpgroup_barrier(barrier_id);
  stage_p_half(ps, staging, row0, col0, 0);
  const int row = row0 + t / 2, col = col0 + 128 + 64 * (t % 2);  // 64 lines of 256 bytes: 128 lines of 128
  if (row < ps.m[0] && col < ps.n[0])
    asm volatile("prefetch.global.L2 [%0];" ::"l"(ps.epi_p + int64_t(row) * ps.n[0] + col));
}

// Step 5's epilogue for one consumer's 64 x 256 of dZ: acc = dZ (fp32) becomes
// dP = dZ * act'(P), with dZ rounded to fp16 first, as the sequence stores it:
// ReLU on fp16 pairs as step 4 forms it; GELU and SiLU in fp32
// (activation_grad_f32 in common/activation_half2.cuh), about half the
// instructions of their half2 form, which step 4 needs for its registers. For
// them the first half of the buffer already holds act'(P), formed during the k
// loop (act_grad_chunk_in_place), so only the second half's act' is paid here.
// P comes from the staging buffer (prefetch_p), a half at a time, through
// ldmatrix, which hands each thread exactly the pairs its accumulators hold:
// for each 8-column slice i, columns 8 i + 2 (t % 4) and the next of rows
// 16 warp + t / 4 and 8 below. Outside the product dZ is 0 (TMA's zero fill)
// and so is dP. With partials, each warp adds up its 16 rows per column (its
// two rows, then across the 8 lanes that share a column: a fixed order) and
// lanes 0-3 write the sums: one partial row per 16 rows of dP, each written
// by one warp, so db is the same on every run.
template <Activation kGrad>
__device__ __forceinline__ void dgrad_epilogue(float (&acc)[kBN / 2], const Products& ps, __half* staging, int row0,
                                               int col0, int barrier_id) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x % hopper::kWarpgroupThreads) / 32;
  const int m = ps.m[0], n = ps.n[0];
  const uint32_t base = hopper::smem_u32(staging);
  const int q = lane / 8, line = 16 * warp + 8 * (q % 2) + lane % 8;  // this lane's ldmatrix row
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    if (half == 1) {
      hopper::warpgroup_barrier(barrier_id);  // every thread has read the first half
      stage_p_half(ps, staging, row0, col0, 1);
    }
    cp_async_wait_group<0>();
    hopper::warpgroup_barrier(barrier_id);  // every thread's copies have landed
#pragma unroll
    for (int pair = 0; pair < 8; ++pair) {
      uint32_t pv[4];  // slices 2 pair and 2 pair + 1 of the half: rows t / 4, then t / 4 + 8
      ldmatrix_x4(pv, base + line * 256 + (((2 * pair + q / 2) ^ (lane % 8)) * 16));
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = 16 * half + 2 * pair + j / 2, h = j % 2;
        const __half2 dz = __floats2half2_rn(acc[4 * i + 2 * h], acc[4 * i + 2 * h + 1]);
        uint32_t dp;
        if constexpr (kGrad == Activation::relu) {
          dp = times_activation_grad_half2<kGrad>(*reinterpret_cast<const uint32_t*>(&dz), pv[j]);
        } else if (half == 0) {  // the buffer holds act'(P), formed during the k loop (act_grad_chunk_in_place)
          const float2 g = __half22float2(dz), a = __half22float2(*reinterpret_cast<const __half2*>(&pv[j]));
          const __half2 r = __floats2half2_rn(g.x * a.x, g.y * a.y);
          dp = *reinterpret_cast<const uint32_t*>(&r);
        } else {  // dZ rounded as the sequence stores it, times act'(P) in fp32, rounded once
          const float2 g = __half22float2(dz), x = __half22float2(*reinterpret_cast<const __half2*>(&pv[j]));
          const __half2 r = __floats2half2_rn(g.x * activation_grad_f32<kGrad>(x.x), g.y * activation_grad_f32<kGrad>(x.y));
          dp = *reinterpret_cast<const uint32_t*>(&r);
        }
        const float2 d = __half22float2(*reinterpret_cast<const __half2*>(&dp));
        acc[4 * i + 2 * h] = d.x;
        acc[4 * i + 2 * h + 1] = d.y;
      }
    }
  }
  if (ps.epi_db_partials == nullptr || row0 + 16 * warp >= m) return;
  float* out = ps.epi_db_partials + int64_t((row0 + 16 * warp) / kEpilogueDbRows) * n;
#pragma unroll
  for (int i = 0; i < kBN / 8; ++i) {
    float s0 = acc[4 * i] + acc[4 * i + 2], s1 = acc[4 * i + 1] + acc[4 * i + 3];
#pragma unroll
    for (int mask = 4; mask < 32; mask *= 2) {
      s0 += __shfl_xor_sync(0xffffffffu, s0, mask);
      s1 += __shfl_xor_sync(0xffffffffu, s1, mask);
    }
    const int col = col0 + 8 * i + 2 * (lane % 4);
    if (lane < 4 && col < n) *reinterpret_cast<float2*>(out + col) = make_float2(s0, s1);
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

// Steps 2 and 3: one tile's k loop for one consumer, lesson 04's: wait for a
// stage, issue its wgmmas, and release the stage before once they are done.
// One loop per layout, chosen once per tile: a branch between the wgmmas of a
// stage (which product?) makes ptxas fence them (C7519) and costs 3%. `hook(kt)`
// runs after step kt's wgmmas are issued and before waiting for them: work the
// thread does while the tensor cores multiply (step 5's act', below).
struct NoHook {
  __device__ __forceinline__ void operator()(int) const {}
};
template <class L, int kS, class S, class Hook = NoHook>
__device__ __forceinline__ void k_loop(S& s, float (&acc)[kBN / 2], int k_tiles, int consumer, int& slot,
                                       uint32_t& phase, Hook hook = {}) {
  using namespace hopper;
  const bool warp_leader = threadIdx.x % 32 == 0;
  int previous_slot = -1;
  for (int kt = 0; kt < k_tiles; ++kt) {
    mbarrier_wait(&s.full[slot], phase);
    wgmma_fence();
    wgmma_stage<L>(acc, smem_u32(s.a[slot]), smem_u32(s.b[slot]), consumer, kt > 0);
    wgmma_commit();
    hook(kt);
    wgmma_wait<1>();
    fence_accumulators(acc);
    if (previous_slot >= 0 && warp_leader) mbarrier_arrive(&s.empty[previous_slot]);
    previous_slot = slot;
    if (++slot == kS) { slot = 0; phase ^= 1; }
  }
  wgmma_wait<0>();
  fence_accumulators(acc);
  if (warp_leader) mbarrier_arrive(&s.empty[previous_slot]);
}

// kGrad == none: steps 2 and 3, A and B as they are. Otherwise step 4: A is
// dZ (with P beside it), and each consumer forms dP = dZ * act'(P) in the
// registers its wgmmas read A from; the tiles of product 1's first tile
// column also add up db.
template <class L0, class L1, Activation kGrad = Activation::none, Activation kForward = Activation::none,
          Activation kEpilogueGrad = Activation::none, Activation kPassAct = Activation::none>
__global__ void __launch_bounds__(hopper::kWsThreads, 1)
    layout_gemm_kernel(const __grid_constant__ Products ps, TraceRecord* trace) {
#if WB_WGMMA_DEVICE
  using namespace hopper;
  constexpr bool kFused = kGrad != Activation::none;
  constexpr bool kPass = kPassAct != Activation::none;
  static_assert(kBM == kPassBandRows && kBN == kPassChunkCols, "a band is a tile's rows, a chunk its columns");
  const int group_m = kPass ? ps.pass.group : kWsGroupM;
  // setmaxnreg: step 6's pass warps keep 56 registers a thread and the consumers get 224, where
  // lesson 04 shares out 40 and 232. At 40, ptxas spilled the pass loop (80 bytes for GELU, 64 for
  // ReLU); at 56 it holds three rows' loads in flight with none. The pool is the launch's: 3 x 168.
  constexpr int kProducerKeeps = kPass ? 56 : kProducerRegs;
  constexpr int kConsumerGets = kPass ? 224 : kConsumerRegs;
  static_assert(register_budgets_fit(kProducerKeeps, kConsumerGets),
                "setmaxnreg counts are multiples of 8 and must fit what the launch gives the block");
  constexpr bool kPrecomputeGrad = kEpilogueGrad == Activation::gelu || kEpilogueGrad == Activation::silu;
  constexpr int kS = kStagesOf<kGrad>;
  using S = SmemOf<kGrad>;
  extern __shared__ uint8_t smem_raw[];
  S& s = aligned_smem<S>(smem_raw);
  const int total_units = ps.units[0] + ps.units[1];
  const int warpgroup = threadIdx.x / kWarpgroupThreads;
  // Unit u: product 0's tile u, or product 1's tile u - units[0], each in the grouped order.
  auto locate = [&](int unit, int& product) {
    product = unit < ps.units[0] ? 0 : 1;
    const int local = product == 0 ? unit : unit - ps.units[0];
    return tile_of(TileOrder::grouped, local, ps.tiles_m[product], ps.tiles_n[product], group_m);
  };

  if (threadIdx.x == 0) {
    for (int p = 0; p < 2; ++p) {
      if (ps.units[p] == 0) continue;
      tma_prefetch_descriptor(&ps.a[p]);
      tma_prefetch_descriptor(&ps.b[p]);
      if constexpr (kFused) tma_prefetch_descriptor(&ps.aux[p]);
    }
    for (int i = 0; i < kS; ++i) {
      mbarrier_init(&s.full[i], 1);
      mbarrier_init(&s.empty[i], kConsumers * 4);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------- producer
    warpgroup_release_registers<kProducerKeeps>();
    if (threadIdx.x == 0) {
      int slot = 0;
      uint32_t phase = 0;
      bool all_ready = false;  // step 6: every piece of dP written
      int last_pair = -1;
      for (int unit = int(blockIdx.x); unit < total_units; unit += int(gridDim.x)) {
        int p;
        const TileCoord tile = locate(unit, p);
        const int k_tiles = ceil_div(ps.k[p], kBK);
        if constexpr (kPass) pass_check_all(ps.pass, all_ready);
        for (int kt = 0; kt < k_tiles; ++kt) {
          mbarrier_wait(&s.empty[slot], phase ^ 1);
          if constexpr (kPass) {  // dX reads dP's band tile.m along N; dW its chunk tile.n along M
            if (p == 0) {
              pass_wait(ps.pass, tile.m, kt * kBK / kPassChunkCols, all_ready, last_pair);
            } else {
              pass_wait(ps.pass, kt * kBK / kPassBandRows, tile.n, all_ready, last_pair);
            }
          }
          if (p == 0) {
            load_stage<L0>(s, slot, &ps.a[0], &ps.b[0], &ps.aux[0], tile, kt);
          } else {
            load_stage<L1>(s, slot, &ps.a[1], &ps.b[1], &ps.aux[1], tile, kt);
          }
          if (++slot == kS) { slot = 0; phase ^= 1; }
        }
      }
    } else if constexpr (kPass) {
      if (threadIdx.x >= 32) pass_rest<kPassAct>(ps.pass);
    }
  } else {
    // ---------------------------------------------------------- consumers
    warpgroup_claim_registers<kConsumerGets>();
    const int consumer = warpgroup - 1;
    int slot = 0;
    uint32_t phase = 0;
    float acc[kBN / 2];
    Epilogue epilogue(s, consumer);
    if constexpr (kPass) pass_prologue<kPassAct>(ps.pass);
    for (int unit = int(blockIdx.x); unit < total_units; unit += int(gridDim.x)) {
      const uint64_t t0 = trace ? global_timer_ns() : 0;
      int p;
      const TileCoord tile = locate(unit, p);
      const int k_tiles = ceil_div(ps.k[p], kBK);
      const bool sum_db = kFused && p == 1 && tile.n == 0 && ps.db != nullptr;
      if constexpr (kEpilogueGrad != Activation::none)
        prefetch_p(ps, epilogue.staging, tile.m * kBM + 64 * consumer, tile.n * kBN, 1 + consumer);
      float db_sums[2] = {0, 0};
      if constexpr (kFused) {
        if (p == 0) {
          fused_k_loop<L0, kGrad>(s, acc, k_tiles, consumer, slot, phase, sum_db, db_sums);
        } else {
          fused_k_loop<L1, kGrad>(s, acc, k_tiles, consumer, slot, phase, sum_db, db_sums);
        }
      } else if constexpr (kPrecomputeGrad) {
        // act' of P's first half, a chunk per k step from step 1 on (step 0's
        // wgmmas give the copies from prefetch_p time to land); what a short
        // loop leaves is converted after it.
        __half* staging = epilogue.staging;
        const int in_loop = min(max(k_tiles - 1, 0), kPChunksPerThread);
        k_loop<L0, kS>(s, acc, k_tiles, consumer, slot, phase, [staging](int kt) {
          if (kt == 1) cp_async_wait_group<0>();  // this thread's own copies: no barrier needed
          if (kt >= 1 && kt <= kPChunksPerThread) act_grad_chunk_in_place<kEpilogueGrad>(staging, kt - 1);
        });
        if (in_loop == 0) cp_async_wait_group<0>();
        for (int i = in_loop; i < kPChunksPerThread; ++i) act_grad_chunk_in_place<kEpilogueGrad>(staging, i);
      } else if (std::is_same_v<L0, L1> || p == 0) {  // one copy of the loop where both layouts are one
        k_loop<L0, kS>(s, acc, k_tiles, consumer, slot, phase);
      } else {
        k_loop<L1, kS>(s, acc, k_tiles, consumer, slot, phase);
      }
      const int row0 = tile.m * kBM + 64 * consumer, col0 = tile.n * kBN;
      if (sum_db) write_db(db_sums, ps.db, ps.m[1], row0);
      if constexpr (kEpilogueGrad != Activation::none)
        dgrad_epilogue<kEpilogueGrad>(acc, ps, epilogue.staging, row0, col0, 1 + consumer);
      if ((p == 0 && L0::kStoreTransposed) || (p == 1 && L1::kStoreTransposed)) {
#pragma unroll
        for (int half = 0; half < kBN / kStoreCols; ++half)
          store_64x128_transposed(*reinterpret_cast<const float(*)[64]>(acc + 64 * half), epilogue.staging, &ps.c[p],
                                  row0, col0 + half * kStoreCols, 1 + consumer);
      } else if (kForward != Activation::none) {
        store_forward<kForward>(acc, ps, epilogue.staging, row0, col0, 1 + consumer);
      } else {
        epilogue.store(acc, nullptr, &ps.c[p], ps.m[p], ps.n[p], row0, col0, true);
      }
      if (trace != nullptr && threadIdx.x == kWarpgroupThreads) {
        const int stacked_row = ps.trace_first_row + tile.m + (p == 0 ? 0 : ps.tiles_m[0]);
        trace_write_record(trace, ps.trace_first_unit + unit, stacked_row, tile.n, 0, ps.k[p], t0);
      }
    }
    epilogue.finish();
  }
  if constexpr (kPass) {
    __syncthreads();
    pass_finish(ps.pass);
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
  ps.c[i] = L::kStoreTransposed ? make_tensor_map_2d(g.c, g.n, g.m, 64, kPanelCols)  // c stored (n x m)
                                 : make_tensor_map_2d(g.c, g.m, g.n, 64, kPanelCols);
  ps.m[i] = g.m;
  ps.n[i] = g.n;
  ps.k[i] = g.k;
  ps.tiles_m[i] = ceil_div(g.m, kBM);
  ps.tiles_n[i] = ceil_div(g.n, kBN);
  ps.units[i] = ps.tiles_m[i] * ps.tiles_n[i];
}

// Step 4: the product's A is dZ and `p` is P, in the same shape as A.
template <class L>
inline void describe_fused_product(Products& ps, int i, const ProductArgs& g, const __half* p) {
  using namespace hopper;
  describe_product<L>(ps, i, g);
  ps.aux[i] = L::kA == Major::k ? make_tensor_map_2d(p, g.m, g.k, kBM, kBK) : make_tensor_map_2d(p, g.k, g.m, kBK, kPanelCols);
}

template <Activation kGrad = Activation::none>
inline int layout_gemm_smem_bytes() {
  return hopper::smem_bytes_for<SmemOf<kGrad>>();
}

template <class L0, class L1, Activation kGrad = Activation::none, Activation kForward = Activation::none,
          Activation kEpilogueGrad = Activation::none, Activation kPassAct = Activation::none>
inline int layout_gemm_resident() {
  static const int resident = [] {
    constexpr auto kernel = layout_gemm_kernel<L0, L1, kGrad, kForward, kEpilogueGrad, kPassAct>;
    const int smem = layout_gemm_smem_bytes<kGrad>();
    hopper::allow_large_smem(kernel, smem);
    return sm_count() *
           std::max(1, blocks_per_sm(reinterpret_cast<const void*>(kernel), hopper::kWsThreads, smem));
  }();
  return resident;
}

// Lesson 04 step 9's balanced grid: the fewest blocks that take as many waves
// (one product at 4096^3: 128 blocks of 4 tiles rather than 132 of which 16
// idle in the last wave).
inline int layout_gemm_grid(const Products& ps, int resident) {
  return int(even_wave_blocks(ps.units[0] + ps.units[1], resident));
}

// Launches the products in `ps` (a second one when ps.units[1] > 0).
template <class L0, class L1, Activation kGrad = Activation::none, Activation kForward = Activation::none,
          Activation kEpilogueGrad = Activation::none, Activation kPassAct = Activation::none>
inline void launch_layout_gemm(const Products& ps, TraceRecord* trace, cudaStream_t stream) {
  constexpr auto kernel = layout_gemm_kernel<L0, L1, kGrad, kForward, kEpilogueGrad, kPassAct>;
  const int smem = layout_gemm_smem_bytes<kGrad>();
  hopper::allow_large_smem(kernel, smem);
  // Step 6's TMA threads wait for pieces of dP that other blocks' warps write; a piece is only ever
  // taken by a running warp, and never waits, so no block need wait for one that is not resident.
  const int grid = layout_gemm_grid(ps, layout_gemm_resident<L0, L1, kGrad, kForward, kEpilogueGrad, kPassAct>());
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

// A training step's forward: Z = act(X W + b) with P saved at `f.pre_act`
// (when not null), one persistent launch of the lesson 04 kernel (not traced).
inline void launch_layout_forward(const __half* x, const __half* w, __half* z, int m, int n, int k,
                                  const ForwardEpilogue& f, cudaStream_t stream) {
  Products ps = {};
  describe_product<LayoutNN>(ps, 0, ProductArgs{x, w, z, m, n, k});
  ps.bias = f.bias;
  ps.save_pre_act = f.pre_act != nullptr;
  if (ps.save_pre_act) ps.aux[0] = hopper::make_tensor_map_2d(f.pre_act, m, n, 64, hopper::kPanelCols);
  switch (f.act) {
    case Activation::relu: return launch_layout_gemm<LayoutNN, LayoutNN, Activation::none, Activation::relu>(ps, nullptr, stream);
    case Activation::gelu: return launch_layout_gemm<LayoutNN, LayoutNN, Activation::none, Activation::gelu>(ps, nullptr, stream);
    case Activation::silu: return launch_layout_gemm<LayoutNN, LayoutNN, Activation::none, Activation::silu>(ps, nullptr, stream);
    default: throw CudaError(std::string("lesson 05's forward has no ") + activation_name(f.act) + " epilogue");
  }
}

// Step 5: dP = (dY Vᵀ) * act'(P) in one launch, the product that makes dZ with
// act' in its epilogue (not traced, as a training step's forward is not).
// dY is (m x n2), V (n x n2), P and dP (m x n); with `db_partials`
// (epilogue_db_partial_rows(m) x n floats) each 16 rows' column sums of dP.
inline void launch_dgrad_product(const __half* dy, const __half* v, const __half* p, __half* dp, float* db_partials,
                                 int m, int n, int n2, Activation act, cudaStream_t stream) {
  Products ps = {};
  describe_product<LayoutNT>(ps, 0, ProductArgs{dy, v, dp, m, n, n2});
  ps.epi_p = p;
  ps.epi_db_partials = db_partials;
  switch (act) {
    case Activation::relu:
      return launch_layout_gemm<LayoutNT, LayoutNT, Activation::none, Activation::none, Activation::relu>(ps, nullptr, stream);
    case Activation::gelu:
      return launch_layout_gemm<LayoutNT, LayoutNT, Activation::none, Activation::none, Activation::gelu>(ps, nullptr, stream);
    case Activation::silu:
      return launch_layout_gemm<LayoutNT, LayoutNT, Activation::none, Activation::none, Activation::silu>(ps, nullptr, stream);
    default: throw CudaError(std::string("lesson 05's dZ epilogue has no derivative for ") + activation_name(act));
  }
}

// Step 6: dP = dZ * act'(P) (and db) formed inside the launch of both
// products (dX = dP Wᵀ, dW = Xᵀ dP), by the producer warpgroup's spare warps
// and, for the first `prologue_chunks` chunks of the first group of bands, by
// the consumers before their first tile. `partials` holds
// pass_partial_rows(m) x n floats, `counters` pass_counter_words(m, n) words,
// zero before the first launch (each launch leaves them so).
struct PassInsideArgs {
  const __half *x, *w, *p, *dz;
  __half *dp, *dx, *dw, *db;
  float* partials;
  uint32_t* counters;
  int m, n, k;
  // Bands walked together: 8, not lesson 04's 16, so the first wave needs
  // dP half as fast (3 warps an SM do not keep up with 16 bands' appetite).
  int group = 8, prologue_chunks = 4;
};

inline void launch_pass_inside(const PassInsideArgs& g, Activation act, TraceRecord* trace, cudaStream_t stream) {
  if (g.group < 1) throw CudaError("lesson 05 step 6: a group of at least one band");
  if (g.prologue_chunks < 0) throw CudaError("lesson 05 step 6: the consumers' prologue can't be negative");
  Products ps = {};
  describe_product<LayoutNT>(ps, 0, ProductArgs{g.dp, g.w, g.dx, g.m, g.k, g.n});
  describe_product<LayoutTN>(ps, 1, ProductArgs{g.x, g.dp, g.dw, g.k, g.n, g.m});
  PassInside& pi = ps.pass;
  pi = PassInside{g.dz, g.p, g.dp, g.db, g.partials, g.counters, g.m, g.n, pass_bands(g.m), pass_chunks(g.n),
                  g.group, 0};
  pi.prologue_pairs = std::min(g.prologue_chunks, pi.chunks) * std::min(g.group, pi.bands);
  switch (act) {
    case Activation::relu:
      return launch_layout_gemm<LayoutNT, LayoutTN, Activation::none, Activation::none, Activation::none,
                                Activation::relu>(ps, trace, stream);
    case Activation::gelu:
      return launch_layout_gemm<LayoutNT, LayoutTN, Activation::none, Activation::none, Activation::none,
                                Activation::gelu>(ps, trace, stream);
    case Activation::silu:
      return launch_layout_gemm<LayoutNT, LayoutTN, Activation::none, Activation::none, Activation::none,
                                Activation::silu>(ps, trace, stream);
    default: throw CudaError(std::string("lesson 05's pass has no derivative for ") + activation_name(act));
  }
}

}  // namespace wb::backward
