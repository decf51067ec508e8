#include <gtest/gtest.h>

#include "model/timeline.hpp"
#include "synthetic_trace.hpp"

namespace wb::viewer {
namespace {

TimelineModel largest_timeline() {
  const Trace t = testing::synthetic_trace(testing::largest_lesson_trace_spec());
  return TimelineModel(t.records, t.header.gpu.sm_count);
}

TEST(ViewerTimeline, LanesHoldEveryRecordWithoutOverlap) {
  const TimelineModel tl = largest_timeline();
  ASSERT_EQ(tl.records().size(), 65536u);
  EXPECT_EQ(tl.sm_count(), 132);
  EXPECT_EQ(tl.slots_per_sm(), 8);
  size_t total = 0;
  for (int l = 0; l < tl.lane_count(); ++l) {
    const auto& lane = tl.lane(l);
    total += lane.size();
    for (size_t i = 1; i < lane.size(); ++i)
      ASSERT_LE(tl.records()[lane[i - 1]].end_ns, tl.records()[lane[i]].start_ns);
  }
  EXPECT_EQ(total, 65536u);
  EXPECT_LE(tl.tail_begin_ns(), tl.end_ns());
  EXPECT_EQ(tl.busy_sms_at(tl.end_ns() / 2), 132);
  EXPECT_EQ(tl.busy_sms_at(tl.end_ns() + 1), 0);
}

// Zoomed out on a narrow view, merging bounds the bar count by pixels, and the
// merged bars still account for every record.
TEST(ViewerTimeline, MergingBoundsBarsFor65536Records) {
  const TimelineModel tl = largest_timeline();
  for (float width : {100.0f, 400.0f, 1600.0f}) {
    TimelineView view;
    view.begin_ns = 0;
    view.end_ns = double(tl.end_ns());
    view.width_px = width;
    std::vector<TimelineBar> bars;
    build_timeline_bars(tl, view, 0, tl.lane_count(), bars);
    const size_t bound = size_t(tl.lane_count()) * size_t(width / view.merge_px + 2);
    EXPECT_LE(bars.size(), bound) << "width " << width;
    size_t covered = 0;
    for (const TimelineBar& b : bars) {
      covered += b.count;
      EXPECT_GE(b.x1 - b.x0, view.min_width_px);
    }
    EXPECT_EQ(covered, 65536u) << "width " << width;
  }
  // Narrow enough that blocks are below a pixel: far fewer bars than records.
  TimelineView narrow{0, double(tl.end_ns()), 20.0f};
  std::vector<TimelineBar> bars;
  build_timeline_bars(tl, narrow, 0, tl.lane_count(), bars);
  EXPECT_LT(bars.size(), 65536u / 2);
}

TEST(ViewerTimeline, CullingKeepsOnlyWhatTheViewShows) {
  const TimelineModel tl = largest_timeline();
  TimelineView view;
  view.begin_ns = double(tl.end_ns()) * 0.50;
  view.end_ns = double(tl.end_ns()) * 0.51;
  view.width_px = 1600;
  std::vector<TimelineBar> bars;
  build_timeline_bars(tl, view, 0, 10, bars);  // and only 10 lanes on screen
  EXPECT_GT(bars.size(), 0u);
  EXPECT_LT(bars.size(), 200u);
  for (const TimelineBar& b : bars) {
    const TraceRecord& r = tl.records()[b.first_record];
    EXPECT_LT(b.lane, 10);
    EXPECT_GE(double(r.end_ns), view.begin_ns);
    EXPECT_LE(double(r.start_ns), view.end_ns);
    EXPECT_GE(b.x0, -1.0f);
    EXPECT_LE(b.x0, 1601.0f);
  }
}

TEST(ViewerTimeline, ZoomAndPanStayInsideTheTrace) {
  TimelineView v{0, 1000, 500};
  zoom_view(v, 500, 0.5, 1000);
  EXPECT_DOUBLE_EQ(v.begin_ns, 250);
  EXPECT_DOUBLE_EQ(v.end_ns, 750);
  pan_view(v, 1000, 1000);
  EXPECT_DOUBLE_EQ(v.end_ns, 1000);
  zoom_view(v, 0, 100, 1000);
  EXPECT_DOUBLE_EQ(v.begin_ns, 0);
  EXPECT_DOUBLE_EQ(v.end_ns, 1000);
}

TEST(ViewerTimeline, StepsGoFromStartToStart) {
  std::vector<TraceRecord> recs = {{0, 0, 0, 1, 0, 0, 100, 200}, {0, 1, 0, 1, 1, 1, 150, 300}};
  const TimelineModel tl(recs, 2);
  EXPECT_EQ(tl.next_start_after(0), 50u) << "times are rebased to the first start";
  EXPECT_EQ(tl.next_start_after(50), tl.end_ns());
  EXPECT_EQ(tl.prev_start_before(50), 0u);
}

}  // namespace
}  // namespace wb::viewer

namespace wb::viewer {
namespace {

// 8 resident blocks per SM in one row: overlapping blocks merge by colour band,
// and the bars still cover every block exactly once.
TEST(ViewerTimeline, SmRowsMergeOverlappingSlots) {
  const TimelineModel tl = largest_timeline();
  TimelineView view{0, double(tl.end_ns()), 1600.0f};
  view.rows_per_sm = true;
  std::vector<TimelineBar> bars;
  build_timeline_bars(tl, view, 0, tl.lane_count(), bars);
  size_t covered = 0;
  for (const TimelineBar& b : bars) {
    covered += b.count;
    EXPECT_EQ(b.lane % tl.slots_per_sm(), 0);
  }
  EXPECT_EQ(covered, 65536u);
  EXPECT_LT(bars.size(), size_t(tl.sm_count()) * 3 * size_t(view.colour_buckets));
  // Zoomed in, culling keeps a handful per row.
  view.begin_ns = double(tl.end_ns()) * 0.5;
  view.end_ns = double(tl.end_ns()) * 0.52;
  bars.clear();
  build_timeline_bars(tl, view, 0, tl.lane_count(), bars);
  EXPECT_LT(bars.size(), size_t(tl.sm_count()) * 8);
}

}  // namespace
}  // namespace wb::viewer
