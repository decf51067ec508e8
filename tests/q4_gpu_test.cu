// Lesson 07's dequantization on the GPU equals the host's bit for bit: all
// three device forms (the paper's conversion, lop3 with 1024.0 a pair at a
// time, and a whole word with 1024.0 and 64.0) for every 4-bit
// value, every zero point and a spread of fp16 scales, against
// fp16((q - z) s) rounded on the host (schedule/q4.hpp). And lop3 takes the
// nibbles the shuffled layout says it does.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "07_w4a16/dequant.cuh"
#include "harness/tensor.hpp"
#include "no_device.hpp"
#include "schedule/q4.hpp"

namespace {

using namespace wb;

// For each case i: word, zero, scale; out[i * 8 + e] is nibble e's value.
// The word form's second column tile (nibbles 2, 3, 6 and 7) takes zeros2[i]
// and scales2[i], so a mix-up of the two tiles' halves shows.
__global__ void dequant_both(const uint32_t* words, const __half* zeros, const __half* scales, const __half* zeros2,
                             const __half* scales2, int count, __half* by_convert, __half* by_magic,
                             __half* by_word) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count) return;
  const uint32_t w = words[i];
  for (int e = 0; e < 8; ++e) by_convert[i * 8 + e] = w4a16::dequant_convert(w, e, zeros[i], scales[i]);
  const __half2 offset = w4a16::magic_offset(zeros[i]), scale2 = __halves2half2(scales[i], scales[i]);
  for (int s = 0; s < 4; ++s) {
    const __half2 p = w4a16::dequant_pair(w, s, offset, scale2);
    by_magic[i * 8 + s] = __low2half(p);
    by_magic[i * 8 + s + 4] = __high2half(p);
  }
  const w4a16::TileDequant d =
      w4a16::tile_dequant(__halves2half2(zeros[i], zeros2[i]), __halves2half2(scales[i], scales2[i]));
  uint32_t pairs[4];
  w4a16::dequant_word(w, d, pairs);
  for (int s = 0; s < 4; ++s) {
    const __half2 p = w4a16::as_half2(pairs[s]);
    by_word[i * 8 + s] = __low2half(p);
    by_word[i * 8 + s + 4] = __high2half(p);
  }
}

template <class T>
T* to_device(const std::vector<T>& v) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, v.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

TEST(Q4Gpu, BothDequantizationsEqualTheHostBitForBit) {
  if (const std::string why = wb::testing::no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  // Every (q, z) pair, each nibble position, with scales spread over fp16's range.
  std::vector<uint32_t> words;
  std::vector<uint16_t> zeros, scales;
  const std::vector<uint16_t> scale_bits = {0x0001, 0x03FF, 0x0400, 0x1C00, 0x2E66, 0x3555, 0x3C00, 0x3C01,
                                            0x4248, 0x5000, 0x57FF, 0x5BFF, 0x0000, 0x2001, 0x1400, 0x3000};
  for (uint32_t q = 0; q < 16; ++q)
    for (uint16_t z = 0; z < 16; ++z)
      for (uint16_t s : scale_bits) {
        uint32_t w = 0;
        for (int e = 0; e < 8; ++e) w = q4::set_nibble(w, e, (q + uint32_t(e) * 5u) & 0xFu);  // all 16 values per z
        words.push_back(w);
        zeros.push_back(float_to_half(float(z)));
        scales.push_back(s);
      }
  const int count = int(words.size());
  // The second tile's zero point and scale: another case's, never the same pair.
  std::vector<uint16_t> zeros2(zeros.size()), scales2(scales.size());
  for (size_t i = 0; i < zeros.size(); ++i) {
    zeros2[i] = zeros[(i + 37 * 16 + 5) % zeros.size()];
    scales2[i] = scales[(i + 37 * 16 + 5) % scales.size()];
  }
  uint32_t* d_words = to_device(words);
  __half* d_zeros2 = reinterpret_cast<__half*>(to_device(zeros2));
  __half* d_scales2 = reinterpret_cast<__half*>(to_device(scales2));
  __half* d_zeros = reinterpret_cast<__half*>(to_device(zeros));
  __half* d_scales = reinterpret_cast<__half*>(to_device(scales));
  __half *d_conv = nullptr, *d_magic = nullptr, *d_word = nullptr;
  ASSERT_EQ(cudaMalloc(&d_conv, size_t(count) * 8 * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_magic, size_t(count) * 8 * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_word, size_t(count) * 8 * 2), cudaSuccess);
  dequant_both<<<(count + 127) / 128, 128>>>(d_words, d_zeros, d_scales, d_zeros2, d_scales2, count, d_conv, d_magic,
                                                  d_word);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> conv(size_t(count) * 8), magic(size_t(count) * 8), word(size_t(count) * 8);
  ASSERT_EQ(cudaMemcpy(conv.data(), d_conv, conv.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(magic.data(), d_magic, magic.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(word.data(), d_word, word.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  int wrong = 0;
  for (int i = 0; i < count; ++i)
    for (int e = 0; e < 8; ++e) {
      const uint32_t q = q4::get_nibble(words[size_t(i)], e);
      const uint16_t want =
          float_to_half(q4::dequant_exact(q, half_to_float(zeros[size_t(i)]), half_to_float(scales[size_t(i)])));
      const bool second = e % 4 >= 2;  // nibbles 2, 3, 6, 7: the word's second column tile
      const uint16_t z2 = second ? zeros2[size_t(i)] : zeros[size_t(i)];
      const uint16_t s2 = second ? scales2[size_t(i)] : scales[size_t(i)];
      const uint16_t want_word = float_to_half(q4::dequant_exact(q, half_to_float(z2), half_to_float(s2)));
      const size_t o = size_t(i) * 8 + size_t(e);
      if (conv[o] != want || magic[o] != want || word[o] != want_word) {
        if (++wrong <= 5)
          ADD_FAILURE() << "q " << q << " z " << half_to_float(zeros[size_t(i)]) << " s bits " << scales[size_t(i)]
                        << " nibble " << e << ": host " << want << " (word form " << want_word << "), convert "
                        << conv[o] << ", lop3 " << magic[o] << ", word " << word[o];
      }
    }
  EXPECT_EQ(wrong, 0) << "of " << count * 8;
  cudaFree(d_words);
  cudaFree(d_zeros);
  cudaFree(d_scales);
  cudaFree(d_zeros2);
  cudaFree(d_scales2);
  cudaFree(d_conv);
  cudaFree(d_magic);
  cudaFree(d_word);
}

}  // namespace
