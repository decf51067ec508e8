#include <gtest/gtest.h>

#include <set>

#include "model/timeline.hpp"
#include "model/unit_colours.hpp"
#include "gathered_trace.hpp"
#include "synthetic_trace.hpp"

namespace wb::viewer {
namespace {

using testing::SyntheticTraceSpec;
using testing::synthetic_trace;

Trace split_trace(int split) {
  SyntheticTraceSpec s;
  s.m = s.n = 1024;
  s.k = 4096;
  s.split_k = split;
  return synthetic_trace(s);
}

TEST(UnitColours, SplitKColoursEachSliceAndNamesItsRange) {
  const Trace t = split_trace(4);
  ASSERT_TRUE(splits_k(t));
  EXPECT_EQ(default_colouring(t), UnitColouring::k_slice);
  const UnitColours c = unit_colours(t, UnitColouring::k_slice);
  EXPECT_EQ(c.keys, 4);
  ASSERT_EQ(c.labels.size(), 4u);
  EXPECT_EQ(c.labels[0], "k 0 .. 1K");
  EXPECT_EQ(c.labels[3], "k 3K .. 4K");
  for (size_t i = 0; i < t.records.size(); ++i) {
    EXPECT_EQ(int(c.key[i]), t.records[i].k_begin / 1024);
    EXPECT_EQ(unit_rgb(c, t, i), category_rgb(t.records[i].k_begin / 1024));
  }
  // Four different colours, none of them on the launch-order ramp's ends.
  EXPECT_NE(category_rgb(0), category_rgb(1));
  EXPECT_NE(category_rgb(2), category_rgb(3));
}

TEST(UnitColours, ManyStartsFallIntoTenthsOfK) {
  Trace t = split_trace(2);
  // Stream-K style: the second halves start anywhere past the middle.
  int64_t shift = 0;
  for (TraceRecord& r : t.records)
    if (r.k_begin > 0) r.k_begin = int32_t(2048 + (shift++ % 40) * 32);
  // Their first halves end where they start (the trace's coverage is not checked here).
  const UnitColours c = unit_colours(t, UnitColouring::k_slice);
  EXPECT_EQ(c.keys, kMaxKSlices);
  EXPECT_EQ(c.labels[5], "50");
  EXPECT_EQ(c.title, "where its k range starts (% of K)");
  for (size_t i = 0; i < t.records.size(); ++i)
    EXPECT_EQ(int(c.key[i]), t.records[i].k_begin == 0 ? 0 : t.records[i].k_begin * 10 / 4096);
}

TEST(UnitColours, UnsplitTraceKeepsLaunchOrder) {
  const Trace t = split_trace(1);
  EXPECT_FALSE(splits_k(t));
  EXPECT_EQ(default_colouring(t), UnitColouring::launch_order);
  EXPECT_EQ(colourings_for(t).size(), 1u);
  const UnitColours c = unit_colours(t, UnitColouring::launch_order, 8);
  const int64_t units = int64_t(t.records.size());
  for (size_t i = 0; i < t.records.size(); ++i) {
    EXPECT_EQ(int(c.key[i]), int(int64_t(t.records[i].unit) * 8 / units));
    EXPECT_EQ(unit_rgb(c, t, i), launch_order_rgb(t.records[i].unit, units));
  }
}

Trace gathered_trace() { return wb::test_traces::gathered_trace_from(split_trace(1)); }  // lesson 08's shape

TEST(UnitColours, ProductsAndGatheredNeuronsAreNamed) {
  const Trace t = gathered_trace();
  EXPECT_EQ(default_colouring(t), UnitColouring::k_slice);
  const UnitColours p = unit_colours(t, UnitColouring::product);
  ASSERT_EQ(p.labels.size(), 2u);
  EXPECT_EQ(p.labels[1], "Y (down)");
  EXPECT_EQ(int(p.key[0]), 0);
  EXPECT_EQ(int(p.key[7]), 1);
  EXPECT_EQ(tile_label(t, t.records[3]), "Y (down) tile (0, 0)");

  EXPECT_EQ(gathered_text(t, t.records[0]), "17, 3, 9, 0 (4 of the 5 neurons listed, of 20)");
  EXPECT_EQ(gathered_text(t, t.records[0], 2), "17, 3, ... (4 of the 5 neurons listed, of 20)");
  EXPECT_EQ(gathered_text(t, t.records[3]), "12 (1 of the 5 neurons listed, of 20)");
  EXPECT_EQ(gathered_text(split_trace(1), split_trace(1).records[0]), "");

  // A strip one cell per neuron: listed, in flight (unit 1: neuron 12), hovered (unit 2: 17, 3, 9, 0).
  const std::vector<GatherState> s = gather_strip(t, {1}, {2}, 20);
  ASSERT_EQ(s.size(), 20u);
  EXPECT_EQ(s[12], GatherState::in_flight);
  for (int n : {17, 3, 9, 0}) EXPECT_EQ(s[size_t(n)], GatherState::hovered) << n;
  EXPECT_EQ(s[1], GatherState::not_listed);
  // Narrower than the neurons: a cell takes the highest state in it.
  const std::vector<GatherState> narrow = gather_strip(t, {1}, {}, 4);  // 5 neurons a cell
  EXPECT_EQ(narrow[2], GatherState::in_flight);                     // 10-14 holds 12
  EXPECT_EQ(narrow[0], GatherState::listed);                        // 0-4 holds 0 and 3
  EXPECT_EQ(narrow[1], GatherState::listed);                        // 5-9 holds 9
}

TEST(UnitColours, SmRowsMergeByColourKey) {
  // With colour keys, an SM row merges only blocks of the same key: split-K's
  // slices stay apart however far out the view is.
  const Trace t = split_trace(4);
  const TimelineModel tl(t.records, t.header.gpu.sm_count);
  const UnitColours c = unit_colours(t, UnitColouring::k_slice);
  TimelineView view;
  view.end_ns = double(tl.end_ns());
  view.width_px = 4000;
  view.merge_px = 0.5f;
  view.rows_per_sm = true;
  view.colour_keys = &c.key;
  std::vector<TimelineBar> bars;
  build_timeline_bars(tl, view, 0, tl.lane_count(), bars);
  ASSERT_FALSE(bars.empty());
  for (const TimelineBar& b : bars) {
    if (b.count != 1) continue;
    EXPECT_LT(b.first_record, t.records.size());
  }
  std::set<int> keys;
  for (const TimelineBar& b : bars) keys.insert(c.key[b.first_record]);
  EXPECT_EQ(keys.size(), 4u) << "every slice shows";
}

}  // namespace
}  // namespace wb::viewer
