#include <gtest/gtest.h>

#include <vector>

#include "models/l2_model.hpp"
#include "models/roofline.hpp"
#include "models/wave_model.hpp"
#include "schedule/activation.hpp"
#include "schedule/split_k.hpp"

namespace {

using namespace wb;

L2ModelInput triton_example(TileOrder order) {
  L2ModelInput in;
  in.tiles_m = 9;
  in.tiles_n = 9;
  in.k_steps = 9;
  in.a_block_bytes = 1;
  in.b_block_bytes = 1;
  in.l2_bytes = 1 << 20;  // large enough to keep everything
  in.blocks_in_flight = 9;
  in.order = order;
  in.group_m = 3;
  in.max_tiles = 9;
  return in;
}

// The Triton tutorial: computing the first 9 tiles of a 9x9 grid loads 90 blocks
// in row-major order and 54 grouped with GROUP_M 3.
TEST(L2Model, ReproducesTritonTutorialExample) {
  const L2ModelResult row = simulate_l2(triton_example(TileOrder::row_major));
  const L2ModelResult grp = simulate_l2(triton_example(TileOrder::grouped));
  EXPECT_EQ(row.misses, 90);
  EXPECT_EQ(grp.misses, 54);
  EXPECT_EQ(row.a_misses, 9);
  EXPECT_EQ(row.b_misses, 81);
  EXPECT_EQ(grp.a_misses, 27);
  EXPECT_EQ(grp.b_misses, 27);
  EXPECT_EQ(row.hits + row.misses, 9 * 9 * 2);
}

TEST(L2Model, TinyCacheMissesEverythingAndGroupedWinsWhenCacheIsTight) {
  L2ModelInput in = triton_example(TileOrder::row_major);
  in.max_tiles = -1;
  in.l2_bytes = 0;
  const L2ModelResult none = simulate_l2(in);
  EXPECT_EQ(none.hits, 0);
  EXPECT_EQ(none.misses, 81 * 9 * 2);
  // A cache that holds one wave's working set of the grouped order (54) but not row-major's (90).
  in.l2_bytes = 60;
  const L2ModelResult row = simulate_l2(in);
  in.order = TileOrder::grouped;
  const L2ModelResult grp = simulate_l2(in);
  EXPECT_LT(grp.dram_bytes, row.dram_bytes);
  EXPECT_GE(grp.dram_bytes, grp.compulsory_bytes);
  EXPECT_EQ(int64_t(row.waves.size()), 9);
}

TEST(L2Model, LruEvictsLeastRecentlyUsed) {
  LruCache c(3);
  EXPECT_FALSE(c.access(1, 1));
  EXPECT_FALSE(c.access(2, 1));
  EXPECT_FALSE(c.access(3, 1));
  EXPECT_TRUE(c.access(1, 1));   // 1 is now most recent; 2 is least
  EXPECT_FALSE(c.access(4, 1));  // evicts 2
  EXPECT_TRUE(c.access(1, 1));
  EXPECT_FALSE(c.access(2, 1));
  EXPECT_EQ(c.used_bytes(), 3);
  EXPECT_FALSE(c.access(9, 10));  // larger than the cache: never kept
  EXPECT_EQ(c.used_bytes(), 3);
}

TEST(WaveModel, QuantizationMatchesHandCounts) {
  // 1024 tiles on 132 SMs, one block each: 8 waves, the last holds 100.
  WaveResult r = wave_quantization({1024, 1, 132, 1});
  EXPECT_EQ(r.waves, 8);
  EXPECT_EQ(r.last_wave_units, 100);
  EXPECT_NEAR(r.efficiency, 1024.0 / (8 * 132), 1e-12);
  EXPECT_NEAR(r.last_wave_utilization, 100.0 / 132, 1e-12);
  // Split-K 4 on 32 tiles with 2 blocks per SM: 128 units, one wave of 264 slots.
  r = wave_quantization({32, 4, 132, 2});
  EXPECT_EQ(r.units, 128);
  EXPECT_EQ(r.waves, 1);
  EXPECT_NEAR(r.efficiency, 128.0 / 264, 1e-12);
}

TEST(WaveModel, SplitKFillsOneWave) {
  EXPECT_EQ(split_k_for_waves(32, 64, 132), 4);     // N = K = 4096, 16 x 128 tiles, one per SM
  EXPECT_EQ(split_k_for_waves(32, 64, 396), 12);    // ... three per SM
  EXPECT_EQ(split_k_for_waves(128, 256, 396), 3);   // N = K = 16384
  EXPECT_EQ(split_k_for_waves(512, 64, 396), 1);    // the tiles fill a wave on their own
  EXPECT_EQ(split_k_for_waves(396, 64, 396), 1);
  EXPECT_EQ(split_k_for_waves(1, 5, 396), 5);       // at most one k tile per split
  EXPECT_EQ(split_k_for_waves(1, 1, 396), 1);
  for (int64_t tiles = 1; tiles <= 300; ++tiles)
    for (int k_tiles = 1; k_tiles <= 40; ++k_tiles) {
      const int s = split_k_for_waves(tiles, k_tiles, 264);
      ASSERT_GE(s, 1);
      ASSERT_LE(s, k_tiles);
      if (s > 1) ASSERT_LE(tiles * s, 264) << "one wave";
      if (s < k_tiles && tiles * (s + 1) <= 264) FAIL() << "a larger split still fits one wave";
    }
}

// Lesson 08's interleaved units (split s takes k tiles s, s + S, ...): each tile once, and the
// shares a trace records lie end to end, each as long as the unit's count of tiles.
TEST(SplitK, InterleavedSharesCoverEveryTileOnce) {
  for (int k_tiles = 1; k_tiles <= 90; ++k_tiles)
    for (int splits = 1; splits <= k_tiles; ++splits) {
      std::vector<int> seen(size_t(k_tiles), 0);
      for (int s = 0; s < splits; ++s) {
        int count = 0;
        for (int kt = s; kt < k_tiles; kt += splits) ++seen[size_t(kt)], ++count;
        EXPECT_EQ(count, (k_tiles - s + splits - 1) / splits);
        EXPECT_GE(count, 1) << k_tiles << " " << splits;
        EXPECT_EQ(interleaved_share_begin(k_tiles, splits, s + 1) - interleaved_share_begin(k_tiles, splits, s), count)
            << k_tiles << " " << splits << " " << s;
      }
      EXPECT_EQ(interleaved_share_begin(k_tiles, splits, 0), 0);
      EXPECT_EQ(interleaved_share_begin(k_tiles, splits, splits), k_tiles);
      for (int v : seen) EXPECT_EQ(v, 1);
    }
}

TEST(WaveModel, SplitCapKeepsUnitsLongButEverySmBusy) {
  // Lesson 08, Llama-2-7B at M = 16 (16 x 128 tiles, 64-deep slices, 132 SMs), at least 6 slices a unit:
  EXPECT_EQ(cap_split_for_slices(29, 9, 64, 132, 6), 15);   // s = 0.9, up: 64 / 6 = 10 would leave SMs idle
  EXPECT_EQ(cap_split_for_slices(8, 32, 18, 132, 6), 5);    // s = 0.9, down
  EXPECT_EQ(cap_split_for_slices(12, 22, 64, 132, 6), 10);  // s = 0.75, up
  EXPECT_EQ(cap_split_for_slices(8, 32, 43, 132, 6), 7);    // s = 0.75, down
  EXPECT_EQ(cap_split_for_slices(6, 43, 64, 132, 6), 6);    // s = 0.5: units long enough already
  EXPECT_EQ(cap_split_for_slices(1, 9, 64, 132, 6), 1);     // no split stays no split
  EXPECT_EQ(cap_split_for_slices(4, 200, 3, 132, 6), 1);    // tiles enough for every SM, few slices
  EXPECT_EQ(cap_split_for_slices(0, 9, 64, 132, 6), 1);
  for (int tiles = 1; tiles < 300; tiles += 7)
    for (int k_tiles = 1; k_tiles < 200; k_tiles += 5) {
      const int wave = split_k_for_waves(tiles, k_tiles, 264);
      const int s = cap_split_for_slices(wave, tiles, k_tiles, 132, 6);
      EXPECT_GE(s, 1);
      EXPECT_LE(s, wave);
      EXPECT_TRUE(s == wave || int64_t(s) * tiles >= 132 || s * 6 <= k_tiles) << tiles << " " << k_tiles;
    }
}

TEST(WaveModel, EvenWaveBlocksKeepTheWavesAndEvenTheLoad) {
  EXPECT_EQ(even_wave_blocks(512, 132), 128);   // 4096^3 in 128 x 256 tiles: 4 tiles per block
  EXPECT_EQ(even_wave_blocks(2048, 132), 128);  // 8192^3: 16 each
  EXPECT_EQ(even_wave_blocks(800, 132), 115);   // 5120^3: 7 waves, 115 blocks of 6 or 7 tiles
  EXPECT_EQ(even_wave_blocks(288, 132), 96);    // 3072^2: 3 each
  EXPECT_EQ(even_wave_blocks(133, 132), 67);
  EXPECT_EQ(even_wave_blocks(128, 132), 128);   // one wave: one block per tile
  EXPECT_EQ(even_wave_blocks(264, 132), 132);   // already even
  EXPECT_EQ(even_wave_blocks(0, 132), 1);
  for (int64_t slots = 1; slots <= 140; ++slots) {
    for (int64_t units = 1; units <= 3000; ++units) {
      const int64_t blocks = even_wave_blocks(units, slots);
      const int64_t waves = (units + slots - 1) / slots;
      ASSERT_LE(blocks, slots);
      // The busiest block has `waves` units: no extra wave ...
      ASSERT_EQ((units + blocks - 1) / blocks, waves) << units << " units, " << slots << " slots";
      // ... and one block fewer would need one.
      ASSERT_LT((blocks - 1) * waves, units) << units << " units, " << slots << " slots";
    }
  }
}

TEST(Roofline, RidgeAndAttainable) {
  EXPECT_NEAR(ridge_intensity(989, 3350), 295.2, 0.1);
  EXPECT_NEAR(roofline_tflops(989, 3350, 10), 33.5, 1e-9);
  EXPECT_NEAR(roofline_tflops(989, 3350, 1000), 989, 1e-9);
  EXPECT_NEAR(arithmetic_intensity(2.0 * 4096 * 4096 * 4096, 3.0 * 2 * 4096 * 4096), 1365.33, 0.01);
}

TEST(Activation, MatchesDefinitions) {
  EXPECT_EQ(apply_activation(Activation::relu, -2.0), 0.0);
  EXPECT_EQ(apply_activation(Activation::relu, 3.0), 3.0);
  EXPECT_NEAR(apply_activation(Activation::leaky_relu, -2.0), -0.02, 1e-7);
  EXPECT_NEAR(apply_activation(Activation::gelu, 1.0), 0.8411920, 1e-6);
  EXPECT_NEAR(apply_activation(Activation::silu, 1.0), 0.7310586, 1e-6);
  EXPECT_EQ(apply_activation(Activation::none, -5.5), -5.5);
}

}  // namespace
