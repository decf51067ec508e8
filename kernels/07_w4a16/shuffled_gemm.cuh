// Steps 4 and 5 of lesson 07: a layout made for the kernel.
//
// The weights are shuffled once, offline (schedule/q4.hpp): for every 16-deep
// k step of a 64-column strip, lane l of a warp finds at 16 l bytes exactly the
// 32 values its m16n8k16 B fragments for the strip's 8 column tiles need, in
// the nibble order the lop3 trick turns into (k, k + 1) pairs. So B never
// passes through an fp16 tile: a warp copies its 512 bytes per k step into
// shared memory with cp.async, reads them back with one
// 16-byte load per lane, and dequantizes straight into the registers the
// tensor cores read (dequant_word: a shift, four lop3, four half2 subtracts
// and four multiplies per 16 bytes). The scales and zero points are shuffled
// the same way: one 32-byte read per lane per group, and only when the warp's
// k step enters a new group. No ldmatrix.trans, no second barrier, no
// scattered 2-byte stores.
//
// A block is 8 warps: 4 side by side, each a 64-column strip (256 columns),
// and two on each strip, each taking half of a slice's eight k steps (their
// sums are added in shared memory at the end), for BLOCK_M = 16 rows (32
// above M = 16: two m16 tiles share each dequantized B fragment). Up to M = 8
// the roles swap (Shuffled8): an m16n8k16 with the tokens as its 16 rows
// multiplies 15 rows of zeros at M = 1, so the weights become the 16-row A
// operand instead (two column tiles' B fragments are, register for register,
// one A fragment of Wᵀ) and the activations the 8-column B; a k step is then
// 4 mma, not 8, for the same 64 columns. The block's
// fp32 partial tile then sits in shared memory, and the splits' partials are
// added row by row, one of three ways (split-K as in lesson 06):
//   Combine::atomic      fp16x2 atomics into C (zeroed first), as in step 2
//   Combine::serial      lesson 06's semaphore: a tile's splits add in turn
//   Combine::last_block  every split writes its fp32 partial to a workspace
//                        slice; the last to finish (a counter per tile) adds
//                        the slices in order, as lesson 06's streaming kernel
//   Combine::cluster     (Hopper) a tile's splits are one thread-block cluster:
//                        after a cluster barrier each block adds its share of
//                        the tile's columns from every split's shared memory,
//                        in split order, and stores them; no workspace, no
//                        fence, no counter, no zeroing, no second launch
// The last three give the same bits on every run. Adding the splits is where
// the time goes at N = K = 4096 and 8192: without it the kernel is 3 µs
// (M = 1) to 10 µs (M = 16) faster (docs/notes/07_w4a16.md).
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <array>

#include "06_splitk/splitk_gemm.cuh"
#include "07_w4a16/dequant.cuh"
#include "common/sync.cuh"
#include "common/tma.cuh"

namespace wb::w4a16 {

enum class Combine { atomic, serial, last_block, cluster };

// The most blocks a cluster of Combine::cluster holds: 16 (an H100 allows
// more than the portable 8 on request; the plan checks what fits at once).
constexpr int kShuffledMaxClusterSplit = 16;

template <int MT, int STAGES_, int MIN_BLOCKS_, int SLICE_STEPS, bool SWAP_ = false>
struct ShuffledShape {
  static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
  // Swapped roles (M <= 8): the weights are the mma's 16-row A operand and
  // the activations its 8-column B, so one mma covers 16 columns, not 8.
  static constexpr bool SWAP = SWAP_;
  static constexpr int MMAS_M = MT;  // m16 tiles per block
  static constexpr int BLOCK_M = 16 * MT;
  static constexpr int BLOCK_N = q4::kShuffledColumns;  // 4 strips of 64 columns
  static constexpr int BLOCK_K = 16 * SLICE_STEPS;     // k steps of 16 per slice
  static constexpr int WARPS_N = BLOCK_N / q4::kStripColumns;
  static constexpr int WARPS_K = 2;  // two warps per strip, each half of a slice's k steps
  static constexpr int THREADS = WARPS_N * WARPS_K * 32;
  static constexpr int STAGES = STAGES_;
  static constexpr int STEPS = BLOCK_K / 16;
  static constexpr int STEPS_PER_WARP = STEPS / WARPS_K;
  static constexpr int A_STAGE_HALVES = BLOCK_M * BLOCK_K;
  static constexpr int A_CHUNKS = A_STAGE_HALVES / 8;
  static constexpr int A_CHUNKS_PER_THREAD = (A_CHUNKS + THREADS - 1) / THREADS;
  static constexpr int B_STAGE_BYTES = BLOCK_N * BLOCK_K / 2;
  static constexpr int B_CHUNKS_PER_THREAD = B_STAGE_BYTES / 16 / THREADS;
  static constexpr int SZ_GROUP_BYTES = WARPS_N * 8 * 32;    // a group's scales and zeros for the block's strips
  static constexpr int SZ_GROUPS = BLOCK_K / 32;                // the most groups a slice spans (G >= 32)
  static constexpr int SZ_STAGE_BYTES = SZ_GROUPS * SZ_GROUP_BYTES;
  static constexpr int STAGE_BYTES = A_STAGE_HALVES * 2 + B_STAGE_BYTES + SZ_STAGE_BYTES;
  static constexpr int TILE_LD = BLOCK_N + 8;  // the fp32 partial tile's row, padded
  static constexpr int TILE_BYTES = BLOCK_M * TILE_LD * 4;
  static constexpr int SMEM_BYTES =
      STAGES * STAGE_BYTES > TILE_BYTES + 16 ? STAGES * STAGE_BYTES : TILE_BYTES + 16;  // + the last-block flag
  static_assert(WARPS_N == q4::kBlockStrips, "a block's strips are the layout's group of strips");
  static_assert(STEPS % WARPS_K == 0, "the warps of a strip split a slice's k steps evenly");
  static_assert(B_STAGE_BYTES % (16 * THREADS) == 0, "B's 16-byte chunks split evenly over the threads");
  static_assert(A_CHUNKS <= THREADS || A_CHUNKS % THREADS == 0, "A's 16-byte chunks split evenly over the threads");
  static_assert(BLOCK_K % q4::kShuffledDepth == 0, "a slice is whole runs of the layout's 64-deep padding");
  static_assert(SZ_GROUPS * SZ_GROUP_BYTES / 16 <= THREADS, "a slice's groups' scales are copied at once");
};

// 128-deep slices (16 KiB of B, one group at G = 128), three stages, two
// blocks of 256 threads per SM (so at most 128 registers a thread).
using Shuffled16 = ShuffledShape<1, 3, 2, 8>;
using Shuffled32 = ShuffledShape<2, 3, 2, 8>;
using Shuffled8 = ShuffledShape<1, 3, 2, 8, true>;

template <int MT>
struct ShuffledAcc {
  float v[MT][8][4];
};

// The block's fp32 partial tile in shared memory: the k-half warps' sums
// added there, then every way of combining splits reads it row by row.
template <class S>
__device__ __forceinline__ void accumulate_into_tile(float* tile, const ShuffledAcc<S::MMAS_M>& acc, int strip,
                                                     int lane, bool add) {
  if constexpr (S::SWAP) {
    // acc.v[0][w]: a 16 x 8 tile of C transposed, columns 16 w .. 16 w + 15 of
    // the strip by tokens 0-7: lane holds columns g and g + 8, tokens 2 t and 2 t + 1.
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int w = 0; w < 4; ++w)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float* dst = tile + (2 * t + (e & 1)) * S::TILE_LD + strip * q4::kStripColumns + 16 * w + g + 8 * (e >> 1);
        *dst = add ? *dst + acc.v[0][w][e] : acc.v[0][w][e];
      }
    return;
  }
  const int row0 = lane / 4, col0 = strip * q4::kStripColumns + (lane % 4) * 2;
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float2* dst = reinterpret_cast<float2*>(tile + (16 * i + row0 + 8 * h) * S::TILE_LD + col0 + 8 * t);
        float2 v = make_float2(acc.v[i][t][2 * h], acc.v[i][t][2 * h + 1]);
        if (add) {
          const float2 old = *dst;
          v.x += old.x;
          v.y += old.y;
        }
        *dst = v;
      }
}

template <class S, Combine R>
__global__ void __launch_bounds__(S::THREADS, S::MIN_BLOCKS) shuffled_w4_kernel(W4Args p, int splits) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int MT = S::MMAS_M;
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int strip = warp % S::WARPS_N, khalf = warp / S::WARPS_N;
  const int64_t np = q4::padded_n(p.n), kp = q4::padded_k(p.k);
  const int tiles_n = int(np / S::BLOCK_N), tiles_m = ceil_div(p.m, S::BLOCK_M);
  const int k_tiles = int((kp + S::BLOCK_K - 1) / S::BLOCK_K);
  const int64_t steps = kp / 16, strips = np / q4::kStripColumns;

  const uint64_t t0 = trace_start(p.trace);
  // Unit u: the m tiles of a column block next to each other, so they run
  // together and read the block's weights from L2, not from memory, after the
  // first. Combine::cluster: a tile's splits next to each other, one cluster.
  const SplitUnit unit = R == Combine::cluster ? SplitUnit{int(blockIdx.x) / splits, int(blockIdx.x) % splits}
                                               : split_unit(blockIdx.x, tiles_m * tiles_n);
  const int tm = unit.tile % tiles_m, tn = unit.tile / tiles_m;
  const int m0 = tm * S::BLOCK_M, n0 = tn * S::BLOCK_N;
  const int64_t strip0 = int64_t(tn) * S::WARPS_N;
  const int kt_begin = split_k_begin(k_tiles, splits, unit.split);
  const int kt_end = split_k_begin(k_tiles, splits, unit.split + 1);

  // What each thread copies per slice, with the parts that do not change
  // from slice to slice worked out once. G is 32, 64 or 128, so a slice's
  // first group is a shift away.
  const int group_shift = __ffs(p.group_size) - 1;
  constexpr int A_CPR = S::BLOCK_K / 8;
  constexpr int A_ROWS_PER_PASS = S::THREADS / A_CPR;  // rows of A one pass of the threads copies
  const int a_row = tid / A_CPR, a_chunk = tid % A_CPR;
  const bool a_copies = tid < S::A_CHUNKS;
  const __half* a_src = p.a + int64_t(m0 + a_row) * p.k + a_chunk * 8;
  const uint32_t a_dst = uint32_t(swizzled_offset<S::BLOCK_K>(a_row, a_chunk) * 2);
  const int steps_total = int(steps);
  // B: the block's slice kt is 16 KiB in a row (k step, strip, lane: schedule/q4.hpp).
  constexpr int SLICE_WORDS = S::STEPS * S::WARPS_N * 128;
  const uint32_t* b_src = p.bs + int64_t(tn) * steps * S::WARPS_N * 128 + tid * 4;
  // The slice's group(s): for each, the block's strips' 32-byte rows, 1 KiB in all.
  const int sz_sub = tid / (S::SZ_GROUP_BYTES / 16), sz_chunk = tid % (S::SZ_GROUP_BYTES / 16);
  const bool sz_copies = sz_sub < max(1, S::BLOCK_K >> group_shift);
  const int groups_total = int(q4::shuffled_groups(p.k, p.group_size));
  const __half* sz_src = p.sz + strip0 * 8 * 16 + sz_chunk * 8;
  const int64_t group_halves = strips * 8 * 16;

  const uint32_t smem_base = shared_address(smem);
  auto load_slice = [&](int stage, int kt) {
    const uint32_t base = smem_base + uint32_t(stage * S::STAGE_BYTES);
    // A: rows m0.., k columns of the slice, swizzled as lesson 06's tiles; zeros outside.
    if (a_copies) {
      const bool col_inside = kt * S::BLOCK_K + a_chunk * 8 < p.k;  // k % 8 == 0: a chunk is wholly in or out
#pragma unroll
      for (int i = 0; i < S::A_CHUNKS_PER_THREAD; ++i) {
        // Pass i: rows a_row + i A_ROWS_PER_PASS (the swizzle's period, 8 rows, divides the step).
        const bool inside = col_inside && m0 + a_row + i * A_ROWS_PER_PASS < p.m;
        cp_async_16_zero_fill(base + a_dst + uint32_t(i * A_ROWS_PER_PASS * S::BLOCK_K * 2),
                              inside ? a_src + int64_t(i * A_ROWS_PER_PASS) * p.k + kt * S::BLOCK_K : p.a,
                              inside ? 16 : 0);
      }
    }
    const uint32_t bstage = base + S::A_STAGE_HALVES * 2;
    const uint32_t* slice = b_src + int64_t(kt) * SLICE_WORDS;
#pragma unroll
    for (int i = 0; i < S::B_CHUNKS_PER_THREAD; ++i) {
      // A slice past the padded K (its last 64 rows, when K pads to an odd
      // number of 64s) is zeros, not read; A is zero there too.
      const int c = tid + i * S::THREADS;
      const bool inside = kt * S::STEPS + c / (S::WARPS_N * 32) < steps_total;
      cp_async_16_zero_fill(bstage + uint32_t(c * 16), inside ? slice + i * S::THREADS * 4 : p.bs, inside ? 16 : 0);
    }
    if (sz_copies) {
      const int group = ((kt * S::BLOCK_K) >> group_shift) + sz_sub;
      const bool inside = group < groups_total;
      cp_async_16_zero_fill(bstage + S::B_STAGE_BYTES + uint32_t(sz_sub * S::SZ_GROUP_BYTES + sz_chunk * 16),
                            inside ? sz_src + int64_t(group) * group_halves : p.sz, inside ? 16 : 0);
    }
  };
  auto stage_base = [&](int stage) { return smem + stage * S::STAGE_BYTES; };

  ShuffledAcc<MT> acc;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[i][t][e] = 0.0f;

  // A fragments: ldmatrix rows as lesson 06 addresses them (the swizzle's
  // period is 8 rows, so m tile i is 16 i rows further on the same pattern).
  const int a_swz = swizzle_bits<S::BLOCK_K>(lane % 16) ^ (lane / 16);
  const uint32_t a_lane = 2 * uint32_t((lane % 16) * S::BLOCK_K);

  const int count = kt_end - kt_begin;
#pragma unroll
  for (int s = 0; s < S::STAGES - 1; ++s) {
    if (s < count) load_slice(s, kt_begin + s);
    cp_async_commit_group();
  }
  // This lane's zero points and scales for its 8 column tiles, made again
  // only when the warp's k step enters a new group.
  TileDequant deq[4];
  int group_in_use = -1;
  int read_stage = 0, write_stage = S::STAGES - 1;  // t % STAGES and (t + STAGES - 1) % STAGES
  for (int t = 0; t < count; ++t) {
    cp_async_wait_group<S::STAGES - 2>();
    __syncthreads();  // slice t landed; every warp done with slice t - 1
    const int refill = t + S::STAGES - 1;
    if (refill < count) load_slice(write_stage, kt_begin + refill);
    write_stage = write_stage + 1 == S::STAGES ? 0 : write_stage + 1;
    cp_async_commit_group();

    const int kt = kt_begin + t;
    const unsigned char* base = stage_base(read_stage);
    read_stage = read_stage + 1 == S::STAGES ? 0 : read_stage + 1;
    const uint32_t a_stage = shared_address(base);
    const unsigned char* bstage = base + S::A_STAGE_HALVES * 2;
    const unsigned char* szstage = bstage + S::B_STAGE_BYTES;
#pragma unroll
    for (int jj = 0; jj < S::STEPS_PER_WARP; ++jj) {
      const int j = khalf * S::STEPS_PER_WARP + jj;  // this warp's k step of the slice
      const int group = (kt * S::BLOCK_K + 16 * j) >> group_shift;
      if (group != group_in_use) {  // warp-uniform
        const int sub = group - ((kt * S::BLOCK_K) >> group_shift);  // 0, or 1 in a slice of two groups
        group_in_use = group;
        const uint4* row =
            reinterpret_cast<const uint4*>(szstage + sub * S::SZ_GROUP_BYTES + (strip * 8 + lane / 4) * 32);
        const uint4 sv = row[0], zv = row[1];
        deq[0] = tile_dequant(as_half2(zv.x), as_half2(sv.x));
        deq[1] = tile_dequant(as_half2(zv.y), as_half2(sv.y));
        deq[2] = tile_dequant(as_half2(zv.z), as_half2(sv.z));
        deq[3] = tile_dequant(as_half2(zv.w), as_half2(sv.w));
      }
      const uint4 bw = *reinterpret_cast<const uint4*>(bstage + ((j * S::WARPS_N + strip) * 32 + lane) * 16);
      uint32_t bf[8][2];
      dequant_fragments(bw, deq, bf);
      uint32_t af[MT][4];
#pragma unroll
      for (int i = 0; i < MT; ++i) ldmatrix_x4(af[i], a_stage + a_lane + 2 * (i * 16 * S::BLOCK_K + ((2 * j) ^ a_swz) * 8));
      if constexpr (S::SWAP) {
        // Tiles 2 w and 2 w + 1's B fragments are, register for register, the
        // A fragment of their 16 columns as rows (Wᵀ); rows 0-7 of A's
        // fragment (registers 0 and 2) are the B fragment of Aᵀ's 8 tokens.
        const uint32_t xb[2] = {af[0][0], af[0][2]};
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const uint32_t wa[4] = {bf[2 * w][0], bf[2 * w + 1][0], bf[2 * w][1], bf[2 * w + 1][1]};
          mma_m16n8k16_f32(acc.v[0][w], wa, xb);
        }
      } else {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int tile = 0; tile < 8; ++tile) mma_m16n8k16_f32(acc.v[i][tile], af[i], bf[tile]);
      }
    }
  }
  cp_async_wait_group<0>();

  // The block's partial into an fp32 tile in shared memory: the second k-half
  // warps write theirs, the first add theirs to it.
  float* tile = reinterpret_cast<float*>(smem);
  __syncthreads();  // every warp done with the pipeline's memory
  if (khalf == 1) accumulate_into_tile<S>(tile, acc, strip, lane, false);
  __syncthreads();
  if (khalf == 0) accumulate_into_tile<S>(tile, acc, strip, lane, true);
  __syncthreads();

  // From here on row by row: thread t takes column pairs t, t + THREADS, ...
  // of the tile, so the loads of several pairs are in flight together.
  constexpr int PAIRS = S::BLOCK_M * S::BLOCK_N / 2;
  const int rows = min(S::BLOCK_M, p.m - m0);
  splitk::SplitKParams out{};
  out.c = p.c;
  out.m = p.m;
  out.n = p.n;
  auto pair_at = [&](int q, int* r, int* c) {
    *r = q / (S::BLOCK_N / 2);
    *c = (q % (S::BLOCK_N / 2)) * 2;
    return *r < rows && n0 + *c < p.n;
  };
  const int tile_index = tn * tiles_m + tm;
  if constexpr (R == Combine::cluster) {
    // Block r of the cluster (split r) owns column pairs [PAIRS_ROW r / S,
    // PAIRS_ROW (r + 1) / S) of the tile's rows, and adds them from every
    // split's tile in split order.
    constexpr int PAIRS_ROW = S::BLOCK_N / 2;
    hopper::cluster_sync();  // every split's tile is complete
    const int p0 = PAIRS_ROW * unit.split / splits, width = PAIRS_ROW * (unit.split + 1) / splits - p0;
    for (int q = tid; q < rows * width; q += S::THREADS) {
      const int r = q / width, c = 2 * (p0 + q % width);
      if (n0 + c >= p.n) continue;
      const float* mine = tile + r * S::TILE_LD + c;
      // Every split's pair in flight at once, then added in split order.
      const float2 v =
          hopper::cluster_sum_in_order<kShuffledMaxClusterSplit>(reinterpret_cast<const float2*>(mine), splits);
      splitk::store_pair(out, m0 + r, n0 + c, v.x, v.y);
    }
    hopper::cluster_sync();  // no block leaves while the others read its tile
  } else if constexpr (R == Combine::atomic) {
#pragma unroll 4
    for (int q = tid; q < PAIRS; q += S::THREADS) {
      int r, c;
      if (!pair_at(q, &r, &c)) continue;
      const float2 v = *reinterpret_cast<const float2*>(tile + r * S::TILE_LD + c);
      splitk::atomic_add_pair(out, m0 + r, n0 + c, v.x, v.y);
    }
  } else if constexpr (R == Combine::serial) {
    // Lesson 06's semaphore: split s waits for the flag to say s, adds its
    // tile into the fp32 running sum (M x N, the flags after it), passes it on.
    float* sums = static_cast<float*>(p.workspace);
    uint32_t* flag = reinterpret_cast<uint32_t*>(sums + int64_t(p.m) * p.n) + tile_index;
    const bool first = unit.split == 0, last = unit.split == splits - 1;
    if (!first) {
      if (tid == 0)
        while (load_acquire_gpu(flag) != uint32_t(unit.split)) __nanosleep(32);
      __syncthreads();
    }
#pragma unroll 4
    for (int q = tid; q < PAIRS; q += S::THREADS) {
      int r, c;
      if (!pair_at(q, &r, &c)) continue;
      float2 v = *reinterpret_cast<const float2*>(tile + r * S::TILE_LD + c);
      float* sum = sums + int64_t(m0 + r) * p.n + n0 + c;
      const bool two = n0 + c + 1 < p.n;
      if (!first) {
        v.x += __ldcg(sum);
        if (two) v.y += __ldcg(sum + 1);
      }
      if (last) {
        splitk::store_pair(out, m0 + r, n0 + c, v.x, v.y);
      } else {
        sum[0] = v.x;
        if (two) sum[1] = v.y;
      }
    }
    if (splits > 1) {
      __syncthreads();  // every thread's stores come before the release
      if (tid == 0) {
        __threadfence();
        store_release_gpu(flag, last ? 0u : uint32_t(unit.split + 1));
      }
    }
  } else {
    // Every split's tile into its slice; the last to arrive adds the slices
    // in order 0 .. splits - 1 (the same order every run).
    const int64_t mn = int64_t(p.m) * p.n;
    float* slices = static_cast<float*>(p.workspace);
    uint32_t* counter = reinterpret_cast<uint32_t*>(slices + int64_t(splits) * mn) + tile_index;
    if (splits == 1) {
      for (int q = tid; q < PAIRS; q += S::THREADS) {
        int r, c;
        if (!pair_at(q, &r, &c)) continue;
        const float2 v = *reinterpret_cast<const float2*>(tile + r * S::TILE_LD + c);
        splitk::store_pair(out, m0 + r, n0 + c, v.x, v.y);
      }
    } else {
      float* mine = slices + int64_t(unit.split) * mn;
#pragma unroll 4
      for (int q = tid; q < PAIRS; q += S::THREADS) {
        int r, c;
        if (!pair_at(q, &r, &c)) continue;
        const float2 v = *reinterpret_cast<const float2*>(tile + r * S::TILE_LD + c);
        float* dst = mine + int64_t(m0 + r) * p.n + n0 + c;
        dst[0] = v.x;
        if (n0 + c + 1 < p.n) dst[1] = v.y;
      }
      // Whether this block is the tile's last, told to every thread through
      // shared memory past the tile.
      volatile uint32_t* last = reinterpret_cast<volatile uint32_t*>(smem + S::TILE_BYTES);
      __syncthreads();  // every thread's stores come before the count
      if (tid == 0) {
        __threadfence();
        const uint32_t before = atomicAdd(counter, 1u);
        *last = before == uint32_t(splits - 1) ? 1u : 0u;
        if (before == uint32_t(splits - 1)) {
          __threadfence();  // the others' slices are seen after their count
          *counter = 0;     // lowered for the next launch
        }
      }
      __syncthreads();
      if (*last != 0u) {
        for (int q = tid; q < PAIRS; q += S::THREADS) {
          int r, c;
          if (!pair_at(q, &r, &c)) continue;
          const bool two = n0 + c + 1 < p.n;
          const float* src = slices + int64_t(m0 + r) * p.n + n0 + c;
          float v0 = 0.0f, v1 = 0.0f;
          int s = 0;
          for (; s + 4 <= splits; s += 4) {  // four slices' loads in flight at once, added in order
            float a[4], b[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
              a[u] = __ldcg(src + (s + u) * mn);
              b[u] = two ? __ldcg(src + (s + u) * mn + 1) : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
              v0 += a[u];
              v1 += b[u];
            }
          }
          for (; s < splits; ++s) {
            v0 += __ldcg(src + s * mn);
            if (two) v1 += __ldcg(src + s * mn + 1);
          }
          splitk::store_pair(out, m0 + r, n0 + c, v0, v1);
        }
      }
    }
  }
  trace_end(p.trace, int(blockIdx.x), tm, tn, kt_begin * S::BLOCK_K, min(kt_end * S::BLOCK_K, p.k), t0);
}

// ---------------------------------------------------------------- host side

template <class S, Combine R>
const void* shuffled_kernel_ready() {
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(shuffled_w4_kernel<S, R>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    S::SMEM_BYTES));
    if (R == Combine::cluster)
      CUDA_CHECK(cudaFuncSetAttribute(shuffled_w4_kernel<S, R>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    return true;
  }();
  (void)configured;
  return reinterpret_cast<const void*>(&shuffled_w4_kernel<S, R>);
}

// Units the wave model gives each SM: two, so that one block's adding of
// partials and its pipeline's start overlap the other's loads.
constexpr int kShuffledUnitsPerSm = 2;

template <class S, Combine R>
splitk::SplitKPlanned shuffled_plan_for(int m, int n, int k, int requested) {
  splitk::SplitKPlanned q;
  q.block_m = S::BLOCK_M;
  q.block_n = S::BLOCK_N;
  q.block_k = S::BLOCK_K;
  q.threads = S::THREADS;
  q.smem = S::SMEM_BYTES;
  q.stages = S::STAGES;
  q.tiles_m = ceil_div(m, S::BLOCK_M);
  q.tiles_n = int(q4::padded_n(n) / S::BLOCK_N);
  q.k_tiles = int((q4::padded_k(k) + S::BLOCK_K - 1) / S::BLOCK_K);
  static const int resident = std::max(1, blocks_per_sm(shuffled_kernel_ready<S, R>(), S::THREADS, S::SMEM_BYTES));
  static const int sms = sm_count();
  q.blocks_per_sm = resident;
  const int64_t tiles = int64_t(q.tiles_m) * q.tiles_n;
  q.slots = sms * std::min(resident, kShuffledUnitsPerSm);
  q.wanted = requested > 0 ? requested : split_k_for_waves(tiles, q.k_tiles, q.slots);
  q.splits = clamp_split_k(q.wanted, q.k_tiles);
  if (R == Combine::cluster) {
    // At most 16 blocks a cluster; and, for the model's own choice, lowered
    // until every tile's cluster runs at once (the GPCs decide that).
    q.splits = std::min(q.splits, kShuffledMaxClusterSplit);
    if (requested <= 0) {
      static std::array<int, kShuffledMaxClusterSplit + 1> fit{};  // asked of the driver once per split
      auto fits = [&](int s) {
        if (fit[size_t(s)] == 0)
          fit[size_t(s)] = 1 + hopper::max_active_clusters(shuffled_kernel_ready<S, R>(), s, S::THREADS, S::SMEM_BYTES);
        return fit[size_t(s)] - 1;
      };
      while (q.splits > 1 && fits(q.splits) < tiles) --q.splits;
      q.wanted = q.splits;  // the model's own choice: nothing was clamped
    }
  }
  q.grid = tiles * q.splits;
  q.units = q.grid;
  return q;
}

// The shape that takes M rows, the one place the plan and the launch choose it.
template <class F>
decltype(auto) with_shuffled_shape(int m, F&& f) {
  if (m <= 8) return f(Shuffled8{});
  if (m <= 16) return f(Shuffled16{});
  return f(Shuffled32{});
}

template <Combine R>
splitk::SplitKPlanned plan_shuffled(int m, int n, int k, int requested) {
  return with_shuffled_shape(m, [&](auto shape) { return shuffled_plan_for<decltype(shape), R>(m, n, k, requested); });
}

// Workspace: serial, the fp32 running sum (M x N) and a flag per tile;
// last_block, a slice per split and a counter per tile.
template <Combine R>
size_t shuffled_workspace_bytes(int m, int n, int k, int requested) {
  if (R == Combine::atomic || R == Combine::cluster) return 0;
  const splitk::SplitKPlanned q = plan_shuffled<R>(m, n, k, requested);
  const size_t mn = size_t(m) * size_t(n), tiles = size_t(q.tiles_m) * size_t(q.tiles_n);
  return (R == Combine::serial ? mn : mn * size_t(q.splits)) * sizeof(float) + tiles * sizeof(uint32_t);
}

template <class S, Combine R>
void launch_shuffled_with(const W4Args& a, const splitk::SplitKPlanned& q, cudaStream_t stream) {
  const size_t need = shuffled_workspace_bytes<R>(a.m, a.n, a.k, q.wanted);
  if (need > 0 && (a.workspace == nullptr || a.workspace_bytes < need))
    throw CudaError("lesson 07: the shuffled kernel needs a workspace of " + std::to_string(need) + " bytes; it got " +
                    std::to_string(a.workspace ? a.workspace_bytes : 0));
  W4Args p = a;
  int splits = q.splits;
  if constexpr (R == Combine::cluster) {
    const hopper::ClusterLaunch launch(dim3(unsigned(q.grid), 1, 1), S::THREADS, size_t(S::SMEM_BYTES), stream, splits);
    shuffled_kernel_ready<S, R>();
    CUDA_CHECK(cudaLaunchKernelEx(&launch.config, shuffled_w4_kernel<S, R>, p, splits));
  } else {
    void* args[] = {&p, &splits};
    CUDA_CHECK(cudaLaunchKernel(shuffled_kernel_ready<S, R>(), dim3(unsigned(q.grid)), dim3(S::THREADS), args,
                                size_t(S::SMEM_BYTES), stream));
  }
  CUDA_CHECK_LAUNCH();
}

// Combine::atomic: C must be zero before the launch.
template <Combine R>
void launch_shuffled(const W4Args& a, int requested, cudaStream_t stream) {
  require_shuffled_group_size("shuffled", a.group_size);
  const splitk::SplitKPlanned q = plan_shuffled<R>(a.m, a.n, a.k, requested);
  with_shuffled_shape(a.m, [&](auto shape) { launch_shuffled_with<decltype(shape), R>(a, q, stream); });
}

}  // namespace wb::w4a16
