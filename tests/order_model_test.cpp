// Lesson 03's question on the CPU: where the L2 model says the tile order
// decides the time, for lesson 03's kernel (128 x 256 tiles, one block per SM)
// at about the rate it runs on an H100 (415 TFLOP/s), on two memory systems:
// an H100's (50 MiB of L2; a copy moves about 3.0 TB/s) and an H200's (60 MiB;
// about 4.3 TB/s).
#include <gtest/gtest.h>

#include <string>

#include "harness/report.hpp"
#include "models/order_model.hpp"

namespace {

using namespace wb;

KernelConfig lesson03(const char* order, int group_m) {
  KernelConfig c;
  c.block_m = 128;
  c.block_n = 256;
  c.block_k = 64;
  c.blocks_per_sm = 1;
  c.order = order;
  c.group_m = group_m;
  return c;
}

GpuInfo gpu(int64_t l2_mib) {
  GpuInfo g;
  g.name = "test GPU";
  g.sm_count = 132;
  g.l2_bytes = l2_mib << 20;
  return g;
}

TEST(OrderModel, RowMajorTendsToOneOverBlockMBytesPerFlop) {
  EXPECT_NEAR(worst_order_limit_gbps(415, 128), 3242, 1);
  const KernelConfig row = lesson03("row_major", 1);
  const double flops = 2.0 * 4096 * 131072 * 4096;
  const double bytes = double(simulate_l2(l2_input_for(4096, 131072, 4096, row, 50ll << 20, 132)).dram_bytes);
  EXPECT_NEAR(needed_gbps(bytes, flops, 415) / worst_order_limit_gbps(415, 128), 1.0, 0.02);
}

TEST(OrderModel, PaysOnAnH100LikeMemoryAtWideNButNeverOnAnH200Like) {
  const KernelConfig row = lesson03("row_major", 1), grouped = lesson03("grouped", 8);
  const auto h100 = shape_where_order_pays(row, grouped, 415, 3000, 50ll << 20, 132);
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->m, 4096);
  EXPECT_EQ(h100->n, 65536);  // row-major needs the most there (17.3 GB in 5.3 ms)
  EXPECT_GT(h100->worst_gbps, 3000);
  EXPECT_LT(h100->best_gbps, 1000);
  EXPECT_FALSE(shape_where_order_pays(row, grouped, 415, 4300, 60ll << 20, 132).has_value());
}

std::vector<OrderRun> runs(double row_tflops, double grouped_tflops) {
  return {{"row_major", lesson03("row_major", 1), row_tflops},
          {"column_major", lesson03("column_major", 1), grouped_tflops},
          {"grouped8", lesson03("grouped", 8), grouped_tflops}};
}

TEST(OrderVerdict, SaysWhereTheOrderDecidesTheTime) {
  const std::string wide = order_verdict(4096, 65536, 4096, runs(350, 415), gpu(50), 3000, "lesson03_grouped");
  EXPECT_NE(wide.find("here the order matters: row_major's traffic does not fit under the math"), std::string::npos)
      << wide;
  const std::string square = order_verdict(4096, 4096, 4096, runs(415, 415), gpu(50), 3000, "lesson03_grouped");
  EXPECT_NE(square.find("here the order should not matter"), std::string::npos) << square;
  EXPECT_NE(square.find("lesson03_grouped --m 4096 --n 65536 --k 4096"), std::string::npos) << square;
  const std::string h200 = order_verdict(4096, 65536, 4096, runs(415, 415), gpu(60), 4300, "lesson03_grouped");
  EXPECT_NE(h200.find("here the order should not matter"), std::string::npos) << h200;
  EXPECT_NE(h200.find("should not matter at any shape for this kernel"), std::string::npos) << h200;
}

TEST(OrderVerdict, NothingToSayWithoutTwoOrdersOrACopy) {
  EXPECT_EQ(order_verdict(4096, 4096, 4096, runs(415, 415), gpu(50), 0, "lesson03_grouped"), "");
  EXPECT_EQ(order_verdict(4096, 4096, 4096, {runs(415, 415)[0]}, gpu(50), 3000, "lesson03_grouped"), "");
}

}  // namespace
