#include <gtest/gtest.h>

#include "model/l2_compare.hpp"

namespace wb::viewer {
namespace {

// The Triton tutorial's example straight through the shared model.
TEST(ViewerL2, TritonTutorialExampleThroughSimulateL2) {
  L2ModelInput in;
  in.tiles_m = in.tiles_n = 9;
  in.k_steps = 9;
  in.a_block_bytes = in.b_block_bytes = 64 * 64 * 2;
  in.l2_bytes = 1LL << 30;
  in.blocks_in_flight = 9;
  in.max_tiles = 9;
  in.order = TileOrder::row_major;
  EXPECT_EQ(simulate_l2(in).misses, 90);
  in.order = TileOrder::grouped;
  in.group_m = 3;
  EXPECT_EQ(simulate_l2(in).misses, 54);
}

// The same example as the L2 panel sets it up.
TEST(ViewerL2, TritonScenarioAsThePanelRunsIt) {
  const L2Comparison c = compare_l2(triton_tutorial_scenario());
  EXPECT_EQ(c.a.misses, 90);
  EXPECT_EQ(c.b.misses, 54);
  EXPECT_EQ(c.a.waves.size(), 1u);
  EXPECT_EQ(c.a.dram_bytes, 90 * 64 * 64 * 2);
}

TEST(ViewerL2, BlocksInFlightComeFromTheGpu) {
  L2Scenario s;
  s.gpu.sms = 132;
  s.gpu.blocks_per_sm = 2;
  EXPECT_EQ(s.blocks_in_flight(), 264);
  s.blocks_in_flight_override = 9;
  EXPECT_EQ(s.blocks_in_flight(), 9);
}

TEST(ViewerL2, GroupedNeverLoadsMoreThanRowMajorOnSquares) {
  for (int tiles : {4, 8, 16}) {
    L2Scenario s;
    s.grid.m = s.grid.n = s.grid.k = tiles * 128;
    s.gpu.l2_bytes = 4LL << 20;
    s.gpu.sms = 16;
    const L2Comparison c = compare_l2(s);
    EXPECT_LE(c.b.misses, c.a.misses) << tiles << "x" << tiles << " tiles";
    EXPECT_GE(c.a.dram_bytes, c.a.compulsory_bytes);
  }
}

TEST(ViewerGpuChoice, TraceGpuMatchesItsPreset) {
  ASSERT_NE(preset_for_device("NVIDIA H100 80GB HBM3"), nullptr);
  EXPECT_STREQ(preset_for_device("NVIDIA H100 80GB HBM3")->name, "H100 SXM");
  EXPECT_STREQ(preset_for_device("NVIDIA GeForce RTX 4090")->name, "RTX 4090");
  EXPECT_EQ(preset_for_device("Some other GPU"), nullptr);
}

}  // namespace
}  // namespace wb::viewer
