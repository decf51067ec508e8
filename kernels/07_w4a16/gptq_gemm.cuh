// Steps 2 and 3 of lesson 07: the paper's kernel (its Algorithm 1) in CUDA.
// Lesson 06's split-K tiles, with B arriving packed: each k slice copies A
// (fp16) and the slice's packed words (GPTQ layout: 8 values down a column per
// word) into shared memory with cp.async, then every thread dequantizes its
// words into an fp16 B tile in shared memory, and the warps multiply it as
// lesson 06 does (ldmatrix, mma.sync). The partial sums are added into C with
// fp16x2 atomics, as the paper's kernel does (C is zeroed first).
//
//   Dequant::convert  the paper's dequantization: a conversion per value
//   Dequant::magic    the same kernel with the lop3 trick (dequant.cuh)
//
// What it costs on top of lesson 06: a second barrier per slice (the B tile
// is written by every thread and read by every warp), the dequantization, and
// scattered 2-byte stores of it into shared memory: a word holds 8 values down
// a column, and the tile wants them along rows.
#pragma once

#include <cuda_fp16.h>

#include "06_splitk/splitk_gemm.cuh"
#include "07_w4a16/dequant.cuh"

namespace wb::w4a16 {

enum class Dequant { convert, magic };

using splitk::Tile16;
using splitk::Tile64;

template <class S>
struct GptqTile {
  static constexpr int Q_ROWS = S::BLOCK_K / q4::kValuesPerWord;  // packed rows per slice
  static constexpr int Q_STAGE_WORDS = Q_ROWS * S::BLOCK_N;
  static constexpr int Q_CHUNKS_PER_THREAD = Q_STAGE_WORDS / 4 / S::THREADS;
  static constexpr int WORDS_PER_THREAD = Q_STAGE_WORDS / S::THREADS;
  static constexpr int SMEM_BYTES =
      S::STAGES * (S::A_STAGE_HALVES * 2 + Q_STAGE_WORDS * 4) + S::B_STAGE_HALVES * 2;  // + one fp16 B tile
  static_assert(Q_STAGE_WORDS % (4 * S::THREADS) == 0, "the packed slice's 16-byte chunks split evenly");
};

template <class S, Dequant D, bool ALIGNED>
__global__ void __launch_bounds__(S::THREADS) gptq_splitk_kernel(W4Args p, int splits) {
  using G = GptqTile<S>;
  extern __shared__ __align__(128) unsigned char smem[];
  __half* a_stages = reinterpret_cast<__half*>(smem);
  uint32_t* q_stages = reinterpret_cast<uint32_t*>(a_stages + S::STAGES * S::A_STAGE_HALVES);
  __half* b_tile = reinterpret_cast<__half*>(q_stages + S::STAGES * G::Q_STAGE_WORDS);
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int tiles_n = ceil_div(p.n, S::BLOCK_N);
  const int k_tiles = ceil_div(p.k, S::BLOCK_K);
  const int k_words = p.k / q4::kValuesPerWord;
  const uint64_t t0 = trace_start(p.trace);
  const SplitUnit unit = split_unit(blockIdx.x, ceil_div(p.m, S::BLOCK_M) * tiles_n);
  const int tm = unit.tile / tiles_n, tn = unit.tile % tiles_n;
  const int m0 = tm * S::BLOCK_M, n0 = tn * S::BLOCK_N;
  const int kt_begin = split_k_begin(k_tiles, splits, unit.split);
  const int kt_end = split_k_begin(k_tiles, splits, unit.split + 1);

  auto load_slice = [&](int stage, int kt) {
    splitk::load_a_slice<S, true>(p.a, p.m, p.k, a_stages + stage * S::A_STAGE_HALVES, m0, kt * S::BLOCK_K);
    uint32_t* qs = q_stages + stage * G::Q_STAGE_WORDS;
    constexpr int CPR = S::BLOCK_N / 4;  // 16-byte chunks per packed row
#pragma unroll
    for (int i = 0; i < G::Q_CHUNKS_PER_THREAD; ++i) {
      const int idx = tid + i * S::THREADS, row = idx / CPR, chunk = idx % CPR;
      const int gr = kt * G::Q_ROWS + row, gc = n0 + chunk * 4;
      const uint32_t* src = p.bq + int64_t(gr) * p.n + gc;
      uint32_t* dst = qs + row * S::BLOCK_N + chunk * 4;
      if constexpr (ALIGNED) {
        const bool inside = gr < k_words && gc < p.n;  // n % 4 == 0: a chunk is wholly in or out
        cp_async_16_zero_fill(shared_address(dst), inside ? src : p.bq, inside ? 16 : 0);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[e] = gr < k_words && gc + e < p.n ? src[e] : 0u;
      }
    }
  };

  // The slice's words into the fp16 B tile: thread t takes column t of each
  // packed row, so a warp reads 32 neighbouring words and writes 32
  // neighbouring halves per row.
  auto dequant_slice = [&](int stage, int kt) {
    const uint32_t* qs = q_stages + stage * G::Q_STAGE_WORDS;
#pragma unroll
    for (int i = 0; i < G::WORDS_PER_THREAD; ++i) {
      const int idx = tid + i * S::THREADS, row = idx / S::BLOCK_N, col = idx % S::BLOCK_N;
      const int gk = kt * S::BLOCK_K + row * q4::kValuesPerWord, gc = n0 + col;
      const uint32_t word = qs[idx];
      __half zero = __ushort_as_half(0), scale = __ushort_as_half(0);  // outside: every value 0
      if (gk < p.k && gc < p.n) {
        const int64_t sz = int64_t(gk / p.group_size) * p.n + gc;
        zero = p.zeros[sz];
        scale = p.scales[sz];
      }
      __half* column = b_tile + (col % 8);
      const int chunk = col / 8;
      if constexpr (D == Dequant::convert) {
#pragma unroll
        for (int e = 0; e < q4::kValuesPerWord; ++e)
          column[swizzled_offset<S::BLOCK_N>(row * 8 + e, chunk)] = dequant_convert(word, e, zero, scale);
      } else {
        const __half2 offset = magic_offset(zero), scale2 = __halves2half2(scale, scale);
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const __half2 pr = dequant_pair(word, s, offset, scale2);  // rows s and s + 4
          column[swizzled_offset<S::BLOCK_N>(row * 8 + s, chunk)] = __low2half(pr);
          column[swizzled_offset<S::BLOCK_N>(row * 8 + s + 4, chunk)] = __high2half(pr);
        }
      }
    }
  };

  splitk::Accumulators<S> acc;
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[i][j][e] = 0.0f;
  const splitk::FragmentLanes<S> lanes(warp, lane);
  const uint32_t a_smem = shared_address(a_stages), b_smem = shared_address(b_tile);

  const int count = kt_end - kt_begin;
#pragma unroll
  for (int s = 0; s < S::STAGES - 1; ++s) {
    if (s < count) load_slice(s, kt_begin + s);
    cp_async_commit_group();
  }
  for (int t = 0; t < count; ++t) {
    cp_async_wait_group<S::STAGES - 2>();
    __syncthreads();  // slice t landed; every warp done with the B tile of slice t - 1
    const int refill = t + S::STAGES - 1;
    if (refill < count) load_slice(refill % S::STAGES, kt_begin + refill);
    cp_async_commit_group();
    const int stage = t % S::STAGES;
    dequant_slice(stage, kt_begin + t);
    __syncthreads();  // the B tile written
    splitk::slice_product<S>(lanes, a_smem + stage * 2 * S::A_STAGE_HALVES, b_smem, acc);
  }
  cp_async_wait_group<0>();

  splitk::SplitKParams out{};
  out.c = p.c;
  out.m = p.m;
  out.n = p.n;
  splitk::for_each_pair<S>(acc, m0, n0,
                           [&](int r, int c, float v0, float v1) { splitk::atomic_add_pair(out, r, c, v0, v1); });
  trace_end(p.trace, int(blockIdx.x), tm, tn, kt_begin * S::BLOCK_K, min(kt_end * S::BLOCK_K, p.k), t0);
}

// ---------------------------------------------------------------- host side

template <class S, Dequant D, bool ALIGNED>
const void* gptq_kernel_ready() {
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(gptq_splitk_kernel<S, D, ALIGNED>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    GptqTile<S>::SMEM_BYTES));
    return true;
  }();
  (void)configured;
  return reinterpret_cast<const void*>(&gptq_splitk_kernel<S, D, ALIGNED>);
}

// Lesson 06's plan: tile, split (the wave model's, one unit per SM), grid.
template <class S>
splitk::SplitKPlanned gptq_plan_for(int m, int n, int k, int requested) {
  splitk::SplitKPlanned q;
  q.block_m = S::BLOCK_M;
  q.block_n = S::BLOCK_N;
  q.block_k = S::BLOCK_K;
  q.threads = S::THREADS;
  q.smem = GptqTile<S>::SMEM_BYTES;
  q.stages = S::STAGES;
  q.tiles_m = ceil_div(m, S::BLOCK_M);
  q.tiles_n = ceil_div(n, S::BLOCK_N);
  q.k_tiles = ceil_div(k, S::BLOCK_K);
  static const int resident =
      std::max(1, blocks_per_sm(gptq_kernel_ready<S, Dequant::magic, true>(), S::THREADS, GptqTile<S>::SMEM_BYTES));
  static const int sms = sm_count();
  q.blocks_per_sm = resident;
  const int64_t tiles = int64_t(q.tiles_m) * q.tiles_n;
  q.slots = sms;  // lesson 06: one unit per SM
  q.wanted = requested > 0 ? requested : split_k_for_waves(tiles, q.k_tiles, q.slots);
  q.splits = clamp_split_k(q.wanted, q.k_tiles);
  q.grid = tiles * q.splits;
  q.units = q.grid;
  return q;
}

inline splitk::SplitKPlanned plan_gptq(int m, int n, int k, int requested) {
  return m <= 16 ? gptq_plan_for<Tile16>(m, n, k, requested) : gptq_plan_for<Tile64>(m, n, k, requested);
}

template <class S, Dequant D>
void launch_gptq_with(const W4Args& a, const splitk::SplitKPlanned& q, cudaStream_t stream) {
  W4Args p = a;
  int splits = q.splits;
  const void* kernel = a.n % 4 == 0 ? gptq_kernel_ready<S, D, true>() : gptq_kernel_ready<S, D, false>();
  void* args[] = {&p, &splits};
  CUDA_CHECK(cudaLaunchKernel(kernel, dim3(unsigned(q.grid)), dim3(S::THREADS), args, size_t(GptqTile<S>::SMEM_BYTES),
                              stream));
  CUDA_CHECK_LAUNCH();
}

// C must be zero before the launch (the partial sums are added into it).
template <Dequant D>
void launch_gptq_splitk(const W4Args& a, int requested, cudaStream_t stream) {
  const splitk::SplitKPlanned q = plan_gptq(a.m, a.n, a.k, requested);
  if (a.m <= 16)
    launch_gptq_with<Tile16, D>(a, q, stream);
  else
    launch_gptq_with<Tile64, D>(a, q, stream);
}

}  // namespace wb::w4a16
