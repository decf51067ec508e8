// Lesson 07's dequantization: 4-bit values to fp16, w = (q - z) s, three ways.
//
//   convert   the paper's: shift and mask each nibble out, convert the integer
//             to fp16 (I2F), subtract the zero point, multiply by the scale:
//             per value a shift, an AND, a conversion and two fp16 operations
//   magic     two nibbles at once: OR a nibble into the mantissa of the fp16
//             number 1024 (0x6400: exponent 10, so the mantissa's last bit is
//             worth 1) and the half is exactly 1024 + q. One lop3 does the
//             mask and the OR for a pair (bits 0-3 and 16-19 of a word); one
//             half2 subtract of (1024 + z) and one half2 multiply by s finish
//             it. Per pair: a shift, a lop3 and two half2 operations
//   word      a whole word's four pairs with one shift (dequant_word below):
//             the high nibbles OR-ed where they lie into 64.0
//
// All round once, in the multiply (q - z is exact), so they give the bits the
// host's fp32-then-fp16 dequantization gives (schedule/q4.hpp).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "schedule/q4.hpp"

namespace wb::w4a16 {

// What every lesson 07 kernel gets: the activations, the weights in both
// packed layouts with their scales and zero points, and C.
struct W4Args {
  const __half* a;          // (M, K) row-major
  const uint32_t* bq;       // GPTQ: (K / 8, N) words
  const __half* scales;     // (K / G, N)
  const __half* zeros;      // (K / G, N), whole numbers in [0, 15]
  const uint32_t* bs;       // shuffled (schedule/q4.hpp): q4::shuffled_words(K, N) words
  const __half* sz;         // shuffled scales and zero points: q4::shuffled_scale_halves(K, N, G)
  const uint32_t* bn;       // narrow (step 8): q4::narrow_words(K, N) words
  const __half* szn;        // narrow scales and zero points: q4::narrow_scale_halves(K, N, G)
  __half* c;                // (M, N) row-major
  int m, n, k, group_size;
  TraceRecord* trace;
  void* workspace;
  size_t workspace_bytes;
};

// The group sizes the shuffled layout's kernels take (steps 4-7): a slice's
// groups are found by a shift, and a slice holds at most four.
inline void require_shuffled_group_size(const char* kernel, int group_size) {
  if (group_size != 32 && group_size != 64 && group_size != 128)
    throw CudaError(std::string("lesson 07: the ") + kernel + " kernel takes group sizes 32, 64 and 128, not " +
                    std::to_string(group_size));
}

// One value by conversion (the paper's way).
__device__ __forceinline__ __half dequant_convert(uint32_t word, int nibble, __half zero, __half scale) {
  const int q = int((word >> (4 * nibble)) & 0xFu);
  return __hmul(__hsub(__int2half_rn(q), zero), scale);
}

__device__ __forceinline__ __half2 as_half2(uint32_t u) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(u), "");
  memcpy(&h, &u, sizeof u);
  return h;
}
__device__ __forceinline__ uint32_t as_u32(__half2 h) {
  uint32_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

// The bits of x under kMask OR-ed into the fp16 pair kMagic, in one lop3
// (0xEA: (x & mask) | magic).
template <uint32_t kMask, uint32_t kMagic>
__device__ __forceinline__ __half2 magic_half2(uint32_t x) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(x), "n"(kMask), "n"(kMagic));
  return as_half2(r);
}

// Nibbles s and s + 4 of `word` as the fp16 pair (1024 + q_s, 1024 + q_{s+4}).
__device__ __forceinline__ uint32_t magic_pair(uint32_t word, int s) {
  return as_u32(magic_half2<0x000F000Fu, 0x64006400u>(word >> (4 * s)));
}

// (q_s - z, q_{s+4} - z) s as an fp16 pair; `offset` is (1024 + z) in both halves.
__device__ __forceinline__ __half2 dequant_pair(uint32_t word, int s, __half2 offset, __half2 scale) {
  return __hmul2(__hsub2(as_half2(magic_pair(word, s)), offset), scale);
}

__device__ __forceinline__ __half2 magic_offset(__half zero) {
  const __half o = __hadd(zero, __ushort_as_half(0x6400));  // 1024 + z, exact for z in [0, 15]
  return __halves2half2(o, o);
}

// The four pairs of a shuffled word with one shift instead of three. Pairs
// 0 and 2 are nibbles s and s + 4 of the word and of word >> 8 at bits 0-3
// and 16-19: OR-ed into 1024.0 as in dequant_pair, 1024 + q. Pairs 1 and 3
// are taken where they lie, at bits 4-7 and 20-23, and OR-ed into 64.0
// (0x5400): its mantissa's last bit is worth 1/16, so bit 4 is worth 1 and
// the half is 64 + q exactly. Subtracting 1024 + z or 64 + z is exact, and
// the multiply by s rounds once: the same bits as dequant_pair. A word holds
// two column tiles (pairs 0 and 1 the first, 2 and 3 the second); their zero
// points and scales stay packed two to a register, the first tile's in the
// low half, as the shuffled layout stores them, and each operation takes the
// half it needs.
struct TileDequant {
  __half2 low;    // 1024 + z of the two tiles
  __half2 high;   // 64 + z
  __half2 scale;  // s
};

__device__ __forceinline__ TileDequant tile_dequant(__half2 zeros, __half2 scales) {
  return TileDequant{__hadd2(zeros, as_half2(0x64006400u)), __hadd2(zeros, as_half2(0x54005400u)), scales};
}


// SCALED = false leaves the scale out: q - z, exact in fp16 (step 7 applies
// the scale to a group's fp32 sums instead).
template <bool SCALED = true>
__device__ __forceinline__ void dequant_word(uint32_t word, const TileDequant& d, uint32_t (&pairs)[4]) {
  const uint32_t shifted = word >> 8;
  const __half2 s0 = __low2half2(d.scale), s1 = __high2half2(d.scale);
  const auto scaled = [](__half2 q, __half2 s) { return as_u32(SCALED ? __hmul2(q, s) : q); };
  pairs[0] = scaled(__hsub2(magic_half2<0x000F000Fu, 0x64006400u>(word), __low2half2(d.low)), s0);
  pairs[1] = scaled(__hsub2(magic_half2<0x00F000F0u, 0x54005400u>(word), __low2half2(d.high)), s0);
  pairs[2] = scaled(__hsub2(magic_half2<0x000F000Fu, 0x64006400u>(shifted), __high2half2(d.low)), s1);
  pairs[3] = scaled(__hsub2(magic_half2<0x00F000F0u, 0x54005400u>(shifted), __high2half2(d.high)), s1);
}

// A lane's 16 shuffled bytes of one k step to its B fragments for the strip's
// 8 column tiles (schedule/q4.hpp): word w holds tiles 2 w and 2 w + 1.
template <bool SCALED = true>
__device__ __forceinline__ void dequant_fragments(uint4 bw, const TileDequant (&deq)[4], uint32_t (&bf)[8][2]) {
  const uint32_t words[4] = {bw.x, bw.y, bw.z, bw.w};
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    uint32_t pairs[4];
    dequant_word<SCALED>(words[w], deq[w], pairs);
    bf[2 * w][0] = pairs[0];
    bf[2 * w][1] = pairs[1];
    bf[2 * w + 1][0] = pairs[2];
    bf[2 * w + 1][1] = pairs[3];
  }
}

// Step 1: the GPTQ-packed weights to fp16 W (K x N row-major), one word (8
// values down a column) per thread, by conversion.
__global__ void dequant_gptq_kernel(const uint32_t* __restrict__ bq, const __half* __restrict__ scales,
                                    const __half* __restrict__ zeros, __half* __restrict__ w, int k, int n,
                                    int group_size) {
  const int64_t words = int64_t(k / q4::kValuesPerWord) * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t kw = i / n, col = i % n;
    const uint32_t word = bq[i];
    const int64_t k0 = kw * q4::kValuesPerWord;
    const int64_t sz = (k0 / group_size) * n + col;  // a word never spans two groups (group_size % 8 == 0)
    const __half zero = zeros[sz], scale = scales[sz];
#pragma unroll
    for (int e = 0; e < q4::kValuesPerWord; ++e) w[(k0 + e) * n + col] = dequant_convert(word, e, zero, scale);
  }
}

inline void launch_dequant_gptq(const uint32_t* bq, const __half* scales, const __half* zeros, __half* w, int k, int n,
                                int group_size, cudaStream_t stream) {
  const int64_t words = int64_t(k / q4::kValuesPerWord) * n;
  const int threads = 256;
  const int blocks = int(std::min<int64_t>(ceil_div64(words, threads), int64_t(sm_count()) * 16));
  dequant_gptq_kernel<<<blocks, threads, 0, stream>>>(bq, scales, zeros, w, k, n, group_size);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::w4a16
