// Lesson 07's host side: the int4 layouts and the quantizer (schedule/q4.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "harness/tensor.hpp"
#include "schedule/q4.hpp"

namespace {

using namespace wb;

float round_half(float x) { return half_to_float(float_to_half(x)); }

TEST(Q4, NibblesRoundTripForEveryValueAndPosition) {
  for (uint32_t base : {0u, 0xFFFFFFFFu, 0x12345678u, 0x9ABCDEF0u})
    for (int nibble = 0; nibble < 8; ++nibble)
      for (uint32_t q = 0; q < 16; ++q) {
        const uint32_t w = q4::set_nibble(base, nibble, q);
        EXPECT_EQ(q4::get_nibble(w, nibble), q);
        for (int other = 0; other < 8; ++other)
          if (other != nibble) EXPECT_EQ(q4::get_nibble(w, other), q4::get_nibble(base, other)) << "nibble " << other;
      }
}

// Packs random values into both layouts and reads every one back.
void round_trip(int64_t k, int64_t n) {
  const int64_t kp = q4::padded_k(k), np = q4::padded_n(n);
  std::vector<uint32_t> gptq(size_t(k / 8 * n), 0u), shuffled(size_t(q4::shuffled_words(k, n)), 0u);
  std::vector<uint8_t> values(size_t(k * n));
  std::mt19937 rng(uint32_t(k * 131 + n));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t q = rng() & 0xF;
      values[size_t(r * n + c)] = uint8_t(q);
      const int64_t w = q4::gptq_word(r, c, n);
      gptq[size_t(w)] = q4::set_nibble(gptq[size_t(w)], q4::gptq_nibble(r), q);
      const q4::Position p = q4::shuffled_position(r, c, kp);
      ASSERT_LT(p.word, int64_t(shuffled.size()));
      shuffled[size_t(p.word)] = q4::set_nibble(shuffled[size_t(p.word)], p.nibble, q);
    }
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t want = values[size_t(r * n + c)];
      ASSERT_EQ(q4::get_nibble(gptq[size_t(q4::gptq_word(r, c, n))], q4::gptq_nibble(r)), want);
      const q4::Position p = q4::shuffled_position(r, c, kp);
      ASSERT_EQ(q4::get_nibble(shuffled[size_t(p.word)], p.nibble), want) << r << ", " << c;
    }
  (void)np;
}

TEST(Q4, BothLayoutsRoundTrip) {
  round_trip(64, 256);
  round_trip(128, 1000);  // N padded
  round_trip(96, 300);    // K padded too
  round_trip(32, 1);
}

// Every nibble of `words` is one weight of the kp x np padded matrix, and
// every weight one nibble: a layout's map and its inverse, exhaustively.
template <class Element, class Position>
void expect_bijection(int64_t words, int64_t kp, int64_t np, Element element, Position position) {
  ASSERT_EQ(words * 8, kp * np);
  std::set<int64_t> seen;
  for (int64_t w = 0; w < words; ++w)
    for (int i = 0; i < 8; ++i) {
      const q4::Element e = element(w, i, kp);
      ASSERT_GE(e.k, 0);
      ASSERT_LT(e.k, kp);
      ASSERT_GE(e.n, 0);
      ASSERT_LT(e.n, np);
      ASSERT_TRUE(seen.insert(e.k * np + e.n).second) << "weight " << e.k << ", " << e.n << " twice";
      const q4::Position p = position(e.k, e.n, kp);
      ASSERT_EQ(p.word, w);
      ASSERT_EQ(p.nibble, i);
    }
  EXPECT_EQ(int64_t(seen.size()), kp * np);
}

TEST(Q4, ShuffledMapIsABijection) {
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{64, 256}, {192, 512}, {96, 300}})
    expect_bijection(q4::shuffled_words(k, n), q4::padded_k(k), q4::padded_n(n), q4::shuffled_element,
                     q4::shuffled_position);
}

// What the layout promises the kernel: lane l's word j, nibbles s and s + 4,
// are the fp16 pair (k, k + 1) of register s % 2 of column tile 2 j + s / 2 of
// the m16n8k16 B fragment (rows 2 t, 2 t + 1, then 2 t + 8, 2 t + 9; column g).
TEST(Q4, ShuffledWordsAreTheFragments) {
  const int64_t kp = 64;
  for (int64_t ks = 0; ks < kp / 16; ++ks)
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 4; ++j)
        for (int s = 0; s < 4; ++s) {
          const int64_t word = (ks * q4::kBlockStrips * 32 + lane) * 4 + j;  // strip 0
          const q4::Element lo = q4::shuffled_element(word, s, kp), hi = q4::shuffled_element(word, s + 4, kp);
          const int t = lane % 4, g = lane / 4, tile = 2 * j + s / 2;
          EXPECT_EQ(lo.k, 16 * ks + 2 * t + 8 * (s % 2));
          EXPECT_EQ(hi.k, lo.k + 1);
          EXPECT_EQ(lo.n, 8 * tile + g);
          EXPECT_EQ(hi.n, lo.n);
        }
}

// A block's k slice (4 steps of its 4 strips) is one contiguous run of words.
TEST(Q4, ABlocksSliceIsContiguous) {
  const int64_t k = 256, n = 512, kp = q4::padded_k(k);
  for (int64_t block = 0; block < n / 256; ++block)
    for (int64_t slice = 0; slice < kp / 64; ++slice) {
      int64_t lo = INT64_MAX, hi = -1;
      for (int64_t kk = slice * 64; kk < slice * 64 + 64; ++kk)
        for (int64_t c = block * 256; c < block * 256 + 256; ++c) {
          const int64_t w = q4::shuffled_position(kk, c, kp).word;
          lo = std::min(lo, w);
          hi = std::max(hi, w);
        }
      EXPECT_EQ(hi - lo + 1, 64 * 256 / 8) << "block " << block << " slice " << slice;
      EXPECT_EQ(lo, (block * (kp / 64) + slice) * 64 * 256 / 8);
    }
}

TEST(Q4, ShuffledScalesAreARowPerLaneGroup) {
  const int64_t np = 512;
  std::set<int64_t> seen;
  for (int64_t group = 0; group < 3; ++group)
    for (int64_t n = 0; n < np; ++n)
      for (bool zero : {false, true}) {
        const int64_t i = q4::shuffled_scale_index(group, n, np, zero);
        EXPECT_TRUE(seen.insert(i).second);
        // the row of (group, strip, g): 16 halves, scales then zeros by column tile
        EXPECT_EQ(i / 16, (group * (np / 64) + n / 64) * 8 + n % 8);
        EXPECT_EQ(i % 16, (zero ? 8 : 0) + (n % 64) / 8);
      }
  EXPECT_EQ(int64_t(seen.size()), 3 * np * 2);
}

// Step 8's narrow layout: every nibble one weight of the padded matrix and
// every weight one nibble, exhaustively, and random values read back.
TEST(Q4, NarrowMapIsABijection) {
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{64, 16}, {192, 48}, {96, 37}, {32, 1}})
    expect_bijection(q4::narrow_words(k, n), q4::padded_k(k), q4::narrow_padded_n(n), q4::narrow_element,
                     q4::narrow_position);
}

TEST(Q4, NarrowRoundTrip) {
  const int64_t k = 160, n = 45, kp = q4::padded_k(k);
  std::vector<uint32_t> words(size_t(q4::narrow_words(k, n)), 0u);
  std::vector<uint8_t> values(size_t(k * n));
  std::mt19937 rng(11);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t q = rng() & 0xF;
      values[size_t(r * n + c)] = uint8_t(q);
      const q4::Position p = q4::narrow_position(r, c, kp);
      words[size_t(p.word)] = q4::set_nibble(words[size_t(p.word)], p.nibble, q);
    }
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const q4::Position p = q4::narrow_position(r, c, kp);
      ASSERT_EQ(q4::get_nibble(words[size_t(p.word)], p.nibble), values[size_t(r * n + c)]) << r << ", " << c;
    }
}

// What the layout promises step 8: lane l's word j, nibbles s and s + 4, are
// the pair (k, k + 1) of A fragment register a0, a2, a1, a3 (s = 0..3) of mma
// step j: rows g (s < 2) or g + 8, and k slots that make lane t's 16 values of
// a chunk the run 16 t .. 16 t + 15; its B registers b0, b1 of step j are
// then that run's pairs 2 j and 2 j + 1.
TEST(Q4, NarrowWordsAreTheFragments) {
  const int64_t kp = 128;
  for (int64_t c = 0; c < kp / 64; ++c)
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 4; ++j)
        for (int s = 0; s < 4; ++s) {
          const int64_t word = (c * 32 + lane) * 4 + j;  // strip 0
          const q4::Element lo = q4::narrow_element(word, s, kp), hi = q4::narrow_element(word, s + 4, kp);
          const int t = lane % 4, g = lane / 4;
          EXPECT_EQ(lo.n, g + 8 * (s / 2));
          EXPECT_EQ(hi.n, lo.n);
          EXPECT_EQ(lo.k, 64 * c + 16 * t + 2 * (2 * j + s % 2));  // pair 2 j (b0) or 2 j + 1 (b1)
          EXPECT_EQ(hi.k, lo.k + 1);
        }
}

TEST(Q4, NarrowScalesAreARowPerLaneGroup) {
  const int64_t np = 48, groups = 3;
  std::set<int64_t> seen;
  for (int64_t group = 0; group < groups; ++group)
    for (int64_t n = 0; n < np; ++n)
      for (bool zero : {false, true}) {
        const int64_t i = q4::narrow_scale_index(group, n, groups, zero);
        EXPECT_TRUE(seen.insert(i).second);
        EXPECT_EQ(i / 4, ((n / 16) * groups + group) * 8 + n % 8);  // one 8-byte load per lane group
        EXPECT_EQ(i % 4, (zero ? 0 : 2) + (n % 16) / 8);
      }
  EXPECT_EQ(int64_t(seen.size()), groups * np * 2);
}

// The quantizer: every value within half a step of the original, the zero
// point a whole number in [0, 15], the scale an fp16 value, and the extremes
// of the group on the grid's ends.
TEST(Q4, QuantizerIsWithinHalfAStep) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> w(128);
    const float shift = trial % 3 == 0 ? 0.5f : 0.0f;  // groups not centred on 0 too
    for (float& x : w) x = u(rng) * (1.0f + float(trial % 7)) + shift;
    const q4::GroupQuant g = q4::quantize_group(w.data(), int(w.size()), 1, round_half);
    ASSERT_GT(g.scale, 0.0f);
    EXPECT_EQ(round_half(g.scale), g.scale);
    EXPECT_EQ(g.zero, std::floor(g.zero));
    EXPECT_GE(g.zero, 0.0f);
    EXPECT_LE(g.zero, 15.0f);
    for (float x : w) {
      const uint32_t q = q4::quantize_value(x, g);
      ASSERT_LE(q, 15u);
      const float back = q4::dequant_exact(q, g.zero, g.scale);
      EXPECT_LE(std::fabs(back - x), 0.5f * g.scale * 1.01f + 1e-6f) << x << " -> " << q;
    }
  }
}

TEST(Q4, AllZeroGroupQuantizesToZero) {
  const std::vector<float> w(64, 0.0f);
  const q4::GroupQuant g = q4::quantize_group(w.data(), 64, 1, round_half);
  EXPECT_GT(g.scale, 0.0f);
  for (float x : w) EXPECT_EQ(q4::dequant_exact(q4::quantize_value(x, g), g.zero, g.scale), 0.0f);
}

// (q - z) s is exact in fp32 for every q, z and fp16 scale: the one rounding
// is the one to fp16, on host and device alike.
TEST(Q4, DequantIsExactBeforeItsRounding) {
  for (uint32_t q = 0; q < 16; ++q)
    for (int z = 0; z < 16; ++z)
      for (uint16_t h = 0; h < 0x7C00; h += 7) {  // every 7th finite positive fp16
        const float s = half_to_float(h);
        const double exact = (double(q) - double(z)) * double(s);
        ASSERT_EQ(double(q4::dequant_exact(q, float(z), s)), exact);
      }
}

}  // namespace
