// The model panels follow a loaded trace: the tile order, L2 and waves panels
// take its shape, tiles, order, split and GPU; following comes back on for each
// new trace. And the roofline's geometry: points placed by the problem's bytes,
// labels that never overlap or leave the plot; the asset list's titles.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "model/label_layout.hpp"
#include "model/roofline_points.hpp"
#include "model/trace_problem.hpp"
#include "model/workspace.hpp"
#include "models/roofline.hpp"
#include "synthetic_trace.hpp"

namespace wb::viewer {
namespace {

testing::SyntheticTraceSpec spec_8192(TileOrder order, int group_m) {
  testing::SyntheticTraceSpec s;
  s.m = s.n = s.k = 8192;
  s.block_m = 128;
  s.block_n = 256;
  s.order = order;
  s.group_m = group_m;
  s.variant = order == TileOrder::grouped ? "grouped8" : "row_major";
  return s;
}

TEST(ViewerFollow, TraceProblemIsTheTracesOwn) {
  testing::SyntheticTraceSpec s;
  s.m = 3072;
  s.n = 3072;
  s.k = 4096;
  s.block_m = 128;
  s.block_n = 256;
  s.split_k = 3;
  s.sms = 114;
  s.blocks_per_sm = 2;
  s.order = TileOrder::grouped;
  s.group_m = 16;
  const TraceProblem p = trace_problem(testing::synthetic_trace(s));
  EXPECT_EQ(p.grid.m, 3072);
  EXPECT_EQ(p.grid.k, 4096);
  EXPECT_EQ(p.grid.block_n, 256);
  EXPECT_EQ(p.grid.tiles_m(), 24);
  EXPECT_EQ(p.grid.tiles_n(), 12);
  EXPECT_EQ(p.grid.order, TileOrder::grouped);
  EXPECT_EQ(p.grid.group_m, 16);
  EXPECT_EQ(p.split_k, 3);
  EXPECT_EQ(p.gpu.sms, 114);
  EXPECT_EQ(p.gpu.blocks_per_sm, 2);
  EXPECT_EQ(p.gpu.l2_bytes, 50LL << 20);
  const WaveInput w = wave_input(p);
  EXPECT_EQ(w.tiles, 288);
  EXPECT_EQ(w.split_k, 3);
  EXPECT_EQ(w.sms, 114);
  EXPECT_EQ(w.blocks_per_sm, 2);
}

TEST(ViewerFollow, L2ComparesTheTraceWithTheComparisonsOrder) {
  const Trace row = testing::synthetic_trace(spec_8192(TileOrder::row_major, 1));
  const Trace grouped = testing::synthetic_trace(spec_8192(TileOrder::grouped, 8));

  const L2Scenario both = l2_scenario_for(row, &grouped);
  EXPECT_EQ(both.grid.m, 8192);
  EXPECT_EQ(both.grid.block_n, 256);
  EXPECT_EQ(both.gpu.sms, 132);
  EXPECT_EQ(both.order_a, TileOrder::row_major);
  EXPECT_EQ(both.order_b, TileOrder::grouped);
  EXPECT_EQ(both.group_m_b, 8);
  EXPECT_EQ(both.max_tiles, -1) << "64 x 32 tiles x 128 k-steps replay whole";

  // Alone, or beside a trace in the same order: the contrasting order.
  const L2Scenario alone = l2_scenario_for(grouped, nullptr);
  EXPECT_EQ(alone.order_a, TileOrder::grouped);
  EXPECT_EQ(alone.order_b, TileOrder::row_major);
  const L2Scenario same = l2_scenario_for(row, &row);
  EXPECT_EQ(same.order_b, TileOrder::grouped);

  // The panel's figures move with the trace: a default scenario differs.
  EXPECT_FALSE(both == L2Scenario{});
  const L2Comparison c = compare_l2(both);
  EXPECT_GT(c.a.misses, c.b.misses) << "at 8192^3 grouped loads fewer blocks than row-major";
}

TEST(ViewerFollow, L2ReplaysTheFirstTilesOfAGridTooLargeForAFrame) {
  const Trace naive = testing::synthetic_trace(testing::largest_lesson_trace_spec());  // 65,536 tiles x 256 k-steps
  const L2Scenario s = l2_scenario_for(naive, nullptr);
  ASSERT_GT(s.grid.tile_count() * s.grid.k_steps(), kL2ReplayBudget);
  ASSERT_GT(s.max_tiles, 0);
  EXPECT_LE(s.max_tiles * s.grid.k_steps(), kL2ReplayBudget + int64_t(s.blocks_in_flight()) * s.grid.k_steps());
  EXPECT_GE(s.max_tiles, s.blocks_in_flight());
}

TEST(ViewerFollow, FollowingIsOnForEachNewTraceAndTheControlTurnsItOff) {
  LoadedTrace a, b;
  TraceFollow f;
  EXPECT_FALSE(f.update(nullptr));
  EXPECT_FALSE(f.following()) << "nothing loaded: the model";
  EXPECT_TRUE(f.update(&a)) << "a trace loaded: take its problem";
  EXPECT_TRUE(f.following());
  EXPECT_FALSE(f.update(&a)) << "the same trace: taken once";
  f.set_following(false);
  EXPECT_FALSE(f.update(&a));
  EXPECT_FALSE(f.following()) << "switched back to the model";
  EXPECT_TRUE(f.update(&b)) << "another trace: following again";
  EXPECT_TRUE(f.following());
  f.set_following(false);
  f.set_following(true);
  EXPECT_TRUE(f.update(&b)) << "turned back on: re-take the trace's problem";
  EXPECT_TRUE(f.update(&b, &a)) << "a comparison shown: re-take (the L2 panel's order B)";
  EXPECT_FALSE(f.update(nullptr));
  EXPECT_FALSE(f.following());
}

TEST(ViewerLabels, NeverOverlapNorLeaveTheBounds) {
  // Forty points in one column (one shape, many variants), as the roofline has them.
  std::vector<LabelRequest> req;
  for (int i = 0; i < 40; ++i) req.push_back(LabelRequest{300.0f, 100.0f + 4.0f * float(i), 90.0f, 13.0f});
  req.push_back(LabelRequest{595.0f, 50.0f, 90.0f, 13.0f});  // at the right edge: must go left
  const LabelRect bounds{0, 0, 600, 400};
  const auto placed = place_labels(req, bounds, 4.0f);
  ASSERT_EQ(placed.size(), req.size());
  int shown = 0;
  for (size_t i = 0; i < placed.size(); ++i) {
    if (!placed[i]) continue;
    ++shown;
    EXPECT_TRUE(placed[i]->inside(bounds)) << i;
    for (size_t j = 0; j < i; ++j)
      if (placed[j]) EXPECT_FALSE(placed[i]->overlaps(*placed[j])) << i << " overlaps " << j;
    for (const LabelRequest& r : req) {  // no label over a point's marker
      const LabelRect marker{r.x - 4, r.y - 4, r.x + 4, r.y + 4};
      EXPECT_FALSE(placed[i]->overlaps(marker)) << i;
    }
  }
  EXPECT_GE(shown, 15) << "both sides of the column are used";
  EXPECT_LT(shown, 41) << "not every label fits: the rest are on hover";
  ASSERT_TRUE(placed.back());
  EXPECT_LT(placed.back()->x1, 595.0f) << "the edge point's label went left";
}

Results results_with(const std::vector<VariantResult>& rows) {
  Results r;
  r.header.lesson = "lesson01_naive";
  r.header.m = r.header.n = r.header.k = 4096;
  r.variants = rows;
  return r;
}

VariantResult row(const char* name, double tflops, double bytes, bool reference, const char* bytes_what = "") {
  VariantResult v;
  v.name = name;
  v.reference = reference;
  v.flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  v.tflops = tflops;
  v.bytes = bytes;
  v.bytes_what = bytes_what;
  v.passed = true;
  return v;
}

TEST(ViewerRoofline, PointsArePlacedByTheProblemsBytesAndSitUnderTheRoof) {
  const double problem = 3.0 * 4096 * 4096 * 2;
  const double requested = 4096.0 * 4096 * 4096 * 4 + 4096.0 * 4096 * 2;  // a row of A and a column of B per output
  const Results r = results_with({row("cublas", 750, problem, true), row("coalesced", 3.0, requested, false, "the bytes its threads ask for"),
                                  row("unfused", 300, problem * 1.6, false, "also C read and written again")});
  const RooflineData d = roofline_points({&r});
  ASSERT_EQ(d.points.size(), 3u);
  const double ai = 2.0 * 4096.0 * 4096.0 * 4096.0 / problem;
  for (const RooflinePoint& p : d.points) {
    EXPECT_DOUBLE_EQ(p.intensity, ai) << p.variant << ": one shape, one intensity";
    EXPECT_LE(p.tflops, roofline_tflops(989, 3352, p.intensity)) << p.variant << " sits above the roof";
  }
  EXPECT_GT(d.points[1].own_bytes, problem) << "the variant's own count is kept for the hover";
  EXPECT_EQ(d.points[1].own_bytes_what, "the bytes its threads ask for");
  EXPECT_DOUBLE_EQ(d.points[0].own_bytes, 0.0) << "the reference counts the problem's bytes";

  // With requested bytes on the x axis lesson 01 would sit above the memory roof.
  EXPECT_GT(3.0, roofline_tflops(989, 3352, arithmetic_intensity(2.0 * 4096.0 * 4096.0 * 4096.0, requested)));

  // No reference row: only variants whose bytes are the usual ones can be placed.
  const Results alone = results_with({row("coalesced", 3.0, requested, false, "the bytes its threads ask for"),
                                      row("tiled", 100, problem, false)});
  const RooflineData d2 = roofline_points({&alone});
  EXPECT_EQ(d2.points.size(), 1u);
  EXPECT_EQ(d2.unplaced, 1);
}

// Lesson 07: the variants read int4 weights, the reference fp16 ones (4x the
// bytes). Placed by the reference's bytes a variant at 2.8x cuBLAS's speed
// would sit above the memory roof; placed by its own, smaller count it does not.
TEST(ViewerRoofline, AVariantThatReadsFewerBytesIsPlacedByThem) {
  const double n = 16384, fp16 = 2.0 * n * n + 4.0 * n, int4 = 0.5 * n * n + 4.0 * n * n / 128 + 4.0 * n;
  VariantResult ref = row("cublas", 3.0, fp16, true), w4 = row("shuffled", 8.4, int4, false, "int4 weights, scales, zeros, A and C");
  ref.flops = w4.flops = 2.0 * n * n;
  const Results r = results_with({ref, w4});
  const RooflineData d = roofline_points({&r});
  ASSERT_EQ(d.points.size(), 2u);
  EXPECT_FALSE(d.points[0].by_own_bytes);
  EXPECT_TRUE(d.points[1].by_own_bytes);
  EXPECT_DOUBLE_EQ(d.points[1].intensity, arithmetic_intensity(2.0 * n * n, int4));
  for (const RooflinePoint& p : d.points)
    EXPECT_LE(p.tflops, roofline_tflops(989, 3352, p.intensity)) << p.variant << " sits above the roof";
  EXPECT_GT(8.4, roofline_tflops(989, 3352, arithmetic_intensity(2.0 * n * n, fp16))) << "by the fp16 bytes it would";
}

// Lesson 08's bound (cuBLAS on weights compacted before timing) is drawn like a
// variant but named as a bound wherever the panel names it.
TEST(ViewerRoofline, ABoundIsNamedAsOne) {
  const double problem = 3.0 * 4096 * 4096 * 2;
  VariantResult ref = row("cublas", 700, problem, true), ours = row("split_k", 600, problem, false),
                bound = row("compact_cublas", 800, problem, false);
  ref.vs_cublas = 1.0;
  ours.vs_cublas = 0.857;
  bound.vs_cublas = 1.143;
  bound.bound = true;
  const Results r = results_with({ref, ours, bound});
  const RooflineData d = roofline_points({&r});
  ASSERT_EQ(d.points.size(), 3u);
  EXPECT_EQ(point_label(d.points[0]), "cuBLAS");
  EXPECT_EQ(point_label(d.points[1]), "split_k");
  EXPECT_TRUE(d.points[2].bound);
  EXPECT_EQ(point_label(d.points[2]), "compact_cublas (a bound)");
  EXPECT_EQ(bar_label(ref), "700.0 TFLOP/s (cuBLAS)");
  EXPECT_EQ(bar_label(ours), "600.0 TFLOP/s, 86 % of cuBLAS");
  EXPECT_EQ(bar_label(bound), "800.0 TFLOP/s, 114 % of cuBLAS (a bound)");
  bound.passed = false;
  bound.checked = true;
  EXPECT_EQ(bar_label(bound), "800.0 TFLOP/s, 114 % of cuBLAS (a bound), FAILED check");
}

TEST(ViewerRoofline, RangeHoldsEveryPointTheRidgeAndThePeak) {
  const double problem = 3.0 * 4096 * 4096 * 2;
  const Results r = results_with({row("cublas", 750, problem, true), row("slow", 0.04, problem, false)});
  const RooflineData d = roofline_points({&r});
  const RooflineRange range = roofline_range(d, 989, 3352);
  EXPECT_LE(std::pow(10.0, range.x_lo), ridge_intensity(989, 3352));
  EXPECT_GE(std::pow(10.0, range.x_hi), d.points[0].intensity);
  EXPECT_LE(std::pow(10.0, range.y_lo), 0.04);
  EXPECT_GE(std::pow(10.0, range.y_hi), 989.0);
}

TEST(ViewerAssets, TitlesSayLessonVariantAndShape) {
  Trace t = testing::synthetic_trace(spec_8192(TileOrder::row_major, 1));
  t.records.resize(4);
  EXPECT_EQ(asset_title(FileKind::trace, trace_to_json(t), "lesson03_grouped.row_major.8192.json.gz"),
            "03_grouped row_major 8192^3");
  Results r = testing::synthetic_results("lesson04_hopper", "Synthetic");
  r.header.m = 3072;
  r.header.n = 3072;
  EXPECT_EQ(asset_title(FileKind::results, results_to_json(r), "lesson04_hopper-streamk-3072x3072x4096.json"),
            "04_hopper 3072x3072x4096 streamk");
  r.header.m = r.header.n = 2048;
  r.header.k = 2048;
  EXPECT_EQ(asset_title(FileKind::results, results_to_json(r), "lesson04_hopper-targets-2048.json"), "04_hopper 2048^3 targets");
  EXPECT_EQ(asset_title(FileKind::results, results_to_json(r), "lesson04_hopper.json"), "04_hopper 2048^3");
  // A header that cannot be read: the file name.
  EXPECT_EQ(asset_title(FileKind::trace, "{\"schema\": \"matmul-workbook/trace\"", "odd.json"), "odd");
}

}  // namespace
}  // namespace wb::viewer
