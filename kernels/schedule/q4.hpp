// Int4 weights (lesson 07): the quantizer, the paper's GPTQ packing, and the
// layout the fast kernels read. Header-only, __host__ __device__ for the index
// math: kernels, the lesson's fill, and the CPU tests use the same functions.
//
// The weights B (K x N) are quantized per group of G rows along K (G = 32, 64
// or 128) and per column: each group of each column has an fp16 scale s and
// an fp16 zero point z (a whole number in [0, 15]), and each weight a 4-bit
// value q in [0, 15]. Its value is
//     w = fp16((q - z) * s)
// computed as one rounding: q - z is a small whole number, and its product
// with an fp16 scale is exact in fp32, so fp32 then one rounding to fp16 and
// fp16 arithmetic (q - z exact, then one rounded multiply) give the same bits.
//
// Two layouts of the packed values, eight to a 32-bit word:
//   GPTQ (the paper's)  word [k / 8][n] of a (K / 8) x N row-major array,
//                       q(k, n) in bits 4 (k % 8) .. 4 (k % 8) + 3
//   shuffled            one 16-byte load per thread per 16-deep k step holds
//                       exactly its m16n8k16 B fragments for 8 column tiles
//                       (64 columns): see shuffled_element below
//   narrow              one 16-byte load per thread holds its m16n8k16 A
//                       fragments of 16 columns for four k steps (64 deep):
//                       see narrow_element below
#pragma once

#include <cmath>
#include <cstdint>

#include "schedule/tile_order.hpp"

namespace wb::q4 {

constexpr int kValuesPerWord = 8;

// ------------------------------------------------------------------- GPTQ
// Word (k / 8, n) and the nibble k % 8 in it.
WB_HD int64_t gptq_word(int64_t k, int64_t n, int64_t cols) { return (k / kValuesPerWord) * cols + n; }
WB_HD int gptq_nibble(int64_t k) { return int(k % kValuesPerWord); }

WB_HD uint32_t get_nibble(uint32_t word, int nibble) { return (word >> (4 * nibble)) & 0xFu; }
WB_HD uint32_t set_nibble(uint32_t word, int nibble, uint32_t q) {
  const uint32_t shift = 4u * uint32_t(nibble);
  return (word & ~(0xFu << shift)) | ((q & 0xFu) << shift);
}

// --------------------------------------------------------------- shuffled
// The fast kernels' layout. Columns come in strips of 64 (8 column tiles of
// the m16n8k16 mma), K in steps of 16. For strip `sb`, step `ks`, lane `l` of
// a warp (t = l % 4, g = l / 4) and word j in 0..3 of its 16 bytes, nibble
// i = 4 h + s (h = i / 4, s = i % 4) holds
//     column tile T = 2 j + s / 2,  n = 64 sb + 8 T + g
//     k = 16 ks + 2 t + 8 (s % 2) + h
// so that the lop3 trick, which takes nibbles s and s + 4 of a word as an fp16
// pair, gives the pair (k, k + 1) the mma wants in one register of the
// fragment: s = 0 and 1 the two registers of tile 2 j, s = 2 and 3 those of
// tile 2 j + 1. Words are stored by groups of four strips (a block's 256
// columns), then k step, then strip, then lane:
//     word index = (((sb / 4) * steps + ks) * 4 + sb % 4) * 128 + 4 l + j
// so a warp's 32 lanes read 512 contiguous bytes per step, and a block's k
// steps follow one another: four steps of its four strips are one contiguous
// run of 8 KiB, eight steps 16 KiB. N is padded to `kShuffledColumns` columns
// and K to `kShuffledDepth`, with q = 0 and scale 0 in the padding, so the
// padding's weights are exactly 0.
constexpr int kStripColumns = 64;
constexpr int kShuffledColumns = 256;  // N padded to this
constexpr int kShuffledDepth = 64;     // K padded to this
constexpr int kBlockStrips = kShuffledColumns / kStripColumns;

WB_HD int64_t padded_n(int64_t n) { return (n + kShuffledColumns - 1) / kShuffledColumns * kShuffledColumns; }
WB_HD int64_t padded_k(int64_t k) { return (k + kShuffledDepth - 1) / kShuffledDepth * kShuffledDepth; }
WB_HD int64_t shuffled_words(int64_t k, int64_t n) { return padded_k(k) * padded_n(n) / kValuesPerWord; }

struct Element {
  int64_t k = 0, n = 0;
};
struct Position {
  int64_t word = 0;
  int nibble = 0;
};

// Which weight nibble `nibble` of word `word` holds (K padded: kp = padded_k(K)).
WB_HD Element shuffled_element(int64_t word, int nibble, int64_t kp) {
  const int64_t steps = kp / 16;
  const int j = int(word % 4);
  const int lane = int((word / 4) % 32);
  const int in_block = int((word / 128) % kBlockStrips);
  const int64_t ks = (word / 128 / kBlockStrips) % steps;
  const int64_t sb = word / 128 / kBlockStrips / steps * kBlockStrips + in_block;
  const int h = nibble / 4, s = nibble % 4;
  const int t = lane % 4, g = lane / 4;
  const int tile = 2 * j + s / 2;
  return Element{16 * ks + 2 * t + 8 * (s % 2) + h, kStripColumns * sb + 8 * tile + g};
}

// Where weight (k, n) lies: the inverse of shuffled_element.
WB_HD Position shuffled_position(int64_t k, int64_t n, int64_t kp) {
  const int64_t steps = kp / 16;
  const int64_t sb = n / kStripColumns, ks = k / 16;
  const int tile = int(n % kStripColumns) / 8, g = int(n % 8);
  const int kk = int(k % 16);
  const int h = kk % 2, t = (kk % 8) / 2, hi8 = kk / 8;
  const int j = tile / 2, s = 2 * (tile % 2) + hi8;
  const int lane = 4 * g + t;
  return Position{(((sb / kBlockStrips) * steps + ks) * kBlockStrips + sb % kBlockStrips) * 128 + 4 * lane + j,
                  4 * h + s};
}

// Scales and zero points for the shuffled kernels: for group `group`, strip
// `sb` and g = lane / 4, 16 fp16 values in a row: the scales of the thread's
// 8 column tiles (columns 64 sb + 8 T + g, T = 0..7), then their zero points.
// One 32-byte read gives a thread everything it needs for a group. Groups are
// padded to cover padded_k(K) (scale and zero 0 there).
WB_HD int64_t shuffled_groups(int64_t k, int group_size) { return (padded_k(k) + group_size - 1) / group_size; }
WB_HD int64_t shuffled_scale_index(int64_t group, int64_t n, int64_t np, bool zero) {
  const int64_t strips = np / kStripColumns;
  const int64_t sb = n / kStripColumns;
  const int tile = int(n % kStripColumns) / 8, g = int(n % 8);
  return ((group * strips + sb) * 8 + g) * 16 + (zero ? 8 : 0) + tile;
}
WB_HD int64_t shuffled_scale_halves(int64_t k, int64_t n, int group_size) {
  return shuffled_groups(k, group_size) * padded_n(n) * 2;
}

// ----------------------------------------------------------------- narrow
// Step 8's layout: strips of 16 columns, each the 16 rows of one m16n8k16 A
// operand (the weights as A, the tokens as B's 8 columns), K in chunks of 64.
// For strip `sb`, chunk `c`, lane `l` (t = l % 4, g = l / 4) and word j in
// 0..3 of its 16 bytes, nibble i = 4 h + s (h = i / 4, s = i % 4) holds
//     n = 16 sb + g + 8 (s / 2)
//     k = 64 c + 16 t + 4 j + 2 (s % 2) + h
// so the lop3 trick's pairs (nibbles s and s + 4) are, for s = 0..3, the A
// fragment's registers a0, a2, a1, a3 of mma step j. The mma adds over its
// 16 k slots in any order, so the slots are given k values that make lane
// t's 16 activations of a chunk one run, k = 64 c + 16 t .. + 15 (two
// 16-byte loads, no shuffle of A). Words are stored by strip, then chunk, then
// lane: word index = ((sb * chunks + c) * 32 + l) * 4 + j, a warp's chunk one
// run of 512 bytes. N is padded to 16 and K to kShuffledDepth, with q = 0
// and scale 0 in the padding.
constexpr int kNarrowColumns = 16;
constexpr int kNarrowDepth = 64;  // a chunk: four mma steps
static_assert(kShuffledDepth % kNarrowDepth == 0, "the narrow layout pads K as the shuffled one does");

WB_HD int64_t narrow_padded_n(int64_t n) { return (n + kNarrowColumns - 1) / kNarrowColumns * kNarrowColumns; }
WB_HD int64_t narrow_words(int64_t k, int64_t n) { return padded_k(k) * narrow_padded_n(n) / kValuesPerWord; }

WB_HD Element narrow_element(int64_t word, int nibble, int64_t kp) {
  const int64_t chunks = kp / kNarrowDepth;
  const int j = int(word % 4), lane = int((word / 4) % 32);
  const int64_t c = (word / 128) % chunks, sb = word / 128 / chunks;
  const int h = nibble / 4, s = nibble % 4, t = lane % 4, g = lane / 4;
  return Element{kNarrowDepth * c + 16 * t + 4 * j + 2 * (s % 2) + h, kNarrowColumns * sb + g + 8 * (s / 2)};
}

// Where weight (k, n) lies: the inverse of narrow_element.
WB_HD Position narrow_position(int64_t k, int64_t n, int64_t kp) {
  const int64_t chunks = kp / kNarrowDepth;
  const int64_t sb = n / kNarrowColumns, c = k / kNarrowDepth;
  const int cn = int(n % kNarrowColumns), r = int(k % kNarrowDepth);
  const int g = cn % 8, t = r / 16, j = (r % 16) / 4, s = 2 * (cn / 8) + (r % 4) / 2, h = r % 2;
  return Position{((sb * chunks + c) * 32 + 4 * g + t) * 4 + j, 4 * h + s};
}

// Scales and zero points for step 8: for strip `sb`, group `group` and
// g = lane / 4, four fp16 values in a row (one 8-byte load): the zero points
// of columns g and g + 8 of the strip, then their scales. Groups cover
// padded_k(K), as shuffled_groups counts them.
WB_HD int64_t narrow_scale_index(int64_t group, int64_t n, int64_t groups, bool zero) {
  const int64_t sb = n / kNarrowColumns;
  const int cn = int(n % kNarrowColumns);
  return ((sb * groups + group) * 8 + cn % 8) * 4 + (zero ? 0 : 2) + cn / 8;
}
WB_HD int64_t narrow_scale_halves(int64_t k, int64_t n, int group_size) {
  return shuffled_groups(k, group_size) * narrow_padded_n(n) * 2;
}

// ---------------------------------------------------------------- quantizer
// Round to nearest, asymmetric, per group: over the group's values the scale
// spans [min, max] in 15 steps, the zero point is where 0 falls. `to_half`
// rounds a float to the nearest fp16 (returned as a float): the scale is
// stored as fp16, so the values are quantized against the stored scale.
struct GroupQuant {
  float scale = 0;  // an fp16 value
  float zero = 0;   // a whole number in [0, 15]
};

template <class ToHalf>
GroupQuant quantize_group(const float* w, int count, int64_t stride, ToHalf to_half) {
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0, so 0 is exact
  for (int i = 0; i < count; ++i) {
    lo = std::fmin(lo, w[i * stride]);
    hi = std::fmax(hi, w[i * stride]);
  }
  GroupQuant g;
  g.scale = to_half((hi - lo) / 15.0f);
  if (!(g.scale > 0.0f)) g.scale = to_half(1.0f);  // an all-zero group: any scale gives 0
  g.zero = std::fmin(15.0f, std::fmax(0.0f, std::nearbyint(-lo / g.scale)));
  return g;
}

inline uint32_t quantize_value(float w, GroupQuant g) {
  const float q = std::nearbyint(w / g.scale) + g.zero;
  return uint32_t(std::fmin(15.0f, std::fmax(0.0f, q)));
}

// The exact value (q - z) s before its rounding to fp16 (exact in fp32).
WB_HD float dequant_exact(uint32_t q, float zero, float scale) { return (float(q) - zero) * scale; }

}  // namespace wb::q4
