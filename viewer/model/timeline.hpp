// Timeline geometry for a trace: one lane per (SM, resident slot), each block a
// bar from its start to its end. Only what the view shows is turned into bars
// (culling), and neighbouring bars narrower than a pixel are merged into one,
// as Tracy does, so a frame costs about lanes x pixels, not records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schedule/trace_record.hpp"

namespace wb::viewer {

class TimelineModel {
 public:
  TimelineModel() = default;
  // `sm_count`: the GPU's SMs (lanes exist for idle SMs too, so they show as gaps).
  TimelineModel(std::vector<TraceRecord> records, int sm_count);

  const std::vector<TraceRecord>& records() const { return records_; }
  int sm_count() const { return sm_count_; }
  int slots_per_sm() const { return slots_per_sm_; }
  int lane_count() const { return sm_count_ * slots_per_sm_; }
  static int lane_of(int sm, int slot, int slots_per_sm) { return sm * slots_per_sm + slot; }
  // Record indices of a lane, by start time; a lane's blocks never overlap.
  const std::vector<uint32_t>& lane(int index) const { return lanes_[size_t(index)]; }
  // Record indices of an SM (all its slots), by start time, and its longest block.
  const std::vector<uint32_t>& sm_records(int sm) const { return sm_records_[size_t(sm)]; }
  uint64_t longest_block_ns(int sm) const { return sm_longest_[size_t(sm)]; }

  uint64_t end_ns() const { return end_ns_; }      // last block's end (times start at 0)
  // The tail: from the first moment an SM has run out of work for good to the end.
  uint64_t tail_begin_ns() const { return tail_begin_ns_; }
  // Number of SMs running at least one block at t.
  int busy_sms_at(uint64_t t_ns) const;

  // Next / previous block start strictly after / before t (for stepping).
  uint64_t next_start_after(uint64_t t_ns) const;
  uint64_t prev_start_before(uint64_t t_ns) const;

 private:
  std::vector<TraceRecord> records_;
  std::vector<std::vector<uint32_t>> lanes_;
  std::vector<std::vector<uint32_t>> sm_records_;
  std::vector<uint64_t> sm_longest_;
  std::vector<uint64_t> sorted_starts_;
  std::vector<uint64_t> sm_last_end_;
  int sm_count_ = 0;
  int slots_per_sm_ = 1;
  uint64_t end_ns_ = 0;
  uint64_t tail_begin_ns_ = 0;
};

struct TimelineView {
  double begin_ns = 0;     // time at the left edge
  double end_ns = 1;       // time at the right edge
  float width_px = 1;      // drawing width
  float merge_px = 1;      // bars narrower than this merge with close neighbours
  float min_width_px = 1;  // every bar drawn at least this wide
  // One row per SM instead of one lane per slot: used when a slot's lane would be
  // thinner than a pixel. Overlapping blocks of a row then merge too, as long as
  // their launch order falls in the same one of `colour_buckets` bands, so the
  // row still shows which part of the launch order ran when.
  bool rows_per_sm = false;
  int colour_buckets = 32;
  // When set: each record's colour key (unit_colours' key, by record index),
  // used instead of the launch-order bands.
  const std::vector<uint8_t>* colour_keys = nullptr;
};

struct TimelineBar {
  int lane;                // lane index; with rows_per_sm, the SM's first lane (sm x slots_per_sm)
  float x0, x1;            // pixels from the left edge (clipped to the view, +-1)
  uint32_t first_record;   // index into TimelineModel::records()
  uint32_t count;          // > 1: this many blocks merged into one bar
};

// Appends the bars of lanes [lane_begin, lane_end) that fall in the view
// (with rows_per_sm: of the SMs those lanes belong to). Per lane at most
// width_px / merge_px + 2 bars come out, however many records; per SM row about
// that plus the colour bands.
void build_timeline_bars(const TimelineModel& model, const TimelineView& view, int lane_begin, int lane_end,
                         std::vector<TimelineBar>& out);

// Zoom around an anchor time (factor < 1 zooms in); pans keep the width.
// Both keep the view inside [0, end] with at least `min_span_ns` visible.
void zoom_view(TimelineView& view, double anchor_ns, double factor, double end_ns, double min_span_ns = 100);
void pan_view(TimelineView& view, double delta_ns, double end_ns);

}  // namespace wb::viewer
