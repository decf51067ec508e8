#include "model/timeline.hpp"

#include <algorithm>

#include "records/records.hpp"

namespace wb::viewer {

TimelineModel::TimelineModel(std::vector<TraceRecord> records, int sm_count) : records_(std::move(records)) {
  rebase_trace_times(records_);
  const std::vector<int> slot = assign_resident_slots(records_);
  sm_count_ = std::max(sm_count, 1);
  slots_per_sm_ = 1;
  for (size_t i = 0; i < records_.size(); ++i) {
    sm_count_ = std::max(sm_count_, records_[i].sm + 1);
    slots_per_sm_ = std::max(slots_per_sm_, slot[i] + 1);
  }
  lanes_.assign(size_t(lane_count()), {});
  sm_last_end_.assign(size_t(sm_count_), 0);
  sorted_starts_.reserve(records_.size());
  for (size_t i = 0; i < records_.size(); ++i) {
    const TraceRecord& r = records_[i];
    lanes_[size_t(lane_of(r.sm, slot[i], slots_per_sm_))].push_back(uint32_t(i));
    end_ns_ = std::max(end_ns_, r.end_ns);
    sm_last_end_[size_t(r.sm)] = std::max(sm_last_end_[size_t(r.sm)], r.end_ns);
    sorted_starts_.push_back(r.start_ns);
  }
  sm_records_.assign(size_t(sm_count_), {});
  sm_longest_.assign(size_t(sm_count_), 0);
  for (size_t i = 0; i < records_.size(); ++i) {
    const TraceRecord& r = records_[i];
    sm_records_[size_t(r.sm)].push_back(uint32_t(i));
    sm_longest_[size_t(r.sm)] = std::max(sm_longest_[size_t(r.sm)], r.end_ns - r.start_ns);
  }
  const auto by_start = [&](uint32_t a, uint32_t b) { return records_[a].start_ns < records_[b].start_ns; };
  for (auto& lane : lanes_) std::sort(lane.begin(), lane.end(), by_start);
  for (auto& sm : sm_records_) std::sort(sm.begin(), sm.end(), by_start);
  std::sort(sorted_starts_.begin(), sorted_starts_.end());
  // SMs that never ran a block do not open the tail: they were never part of the work.
  tail_begin_ns_ = end_ns_;
  for (size_t sm = 0; sm < sm_last_end_.size(); ++sm)
    if (sm_last_end_[sm] > 0) tail_begin_ns_ = std::min(tail_begin_ns_, sm_last_end_[sm]);
}

int TimelineModel::busy_sms_at(uint64_t t_ns) const {
  int busy = 0;
  for (int sm = 0; sm < sm_count_; ++sm) {
    for (int s = 0; s < slots_per_sm_; ++s) {
      const auto& lane = lanes_[size_t(lane_of(sm, s, slots_per_sm_))];
      // Ends are sorted along a lane as its blocks do not overlap.
      auto it = std::upper_bound(lane.begin(), lane.end(), t_ns,
                                 [&](uint64_t t, uint32_t i) { return t < records_[i].end_ns; });
      if (it != lane.end() && records_[*it].start_ns <= t_ns) {
        ++busy;
        break;
      }
    }
  }
  return busy;
}

uint64_t TimelineModel::next_start_after(uint64_t t_ns) const {
  auto it = std::upper_bound(sorted_starts_.begin(), sorted_starts_.end(), t_ns);
  return it == sorted_starts_.end() ? end_ns_ : *it;
}

uint64_t TimelineModel::prev_start_before(uint64_t t_ns) const {
  auto it = std::lower_bound(sorted_starts_.begin(), sorted_starts_.end(), t_ns);
  return it == sorted_starts_.begin() ? 0 : *std::prev(it);
}

namespace {

// One row per SM: all its slots' blocks by start time. Blocks overlap here, so
// a block joins the bar being built when it starts within a pixel of its end and
// is narrow, or has the bar's colour band.
void build_sm_row_bars(const TimelineModel& model, const TimelineView& view, int sm, double px_per_ns,
                       std::vector<TimelineBar>& out) {
  const auto& records = model.records();
  const auto& row = model.sm_records(sm);
  const int lane = sm * model.slots_per_sm();
  const int64_t units = std::max<int64_t>(int64_t(records.size()), 1);
  const int buckets = std::max(view.colour_buckets, 1);
  const std::vector<uint8_t>* keys = view.colour_keys && view.colour_keys->size() == records.size() ? view.colour_keys
                                                                                                   : nullptr;
  auto bucket_of = [&](uint32_t i) {
    return keys ? int((*keys)[i]) : int(int64_t(records[i].unit) * buckets / units);
  };
  // Cull: a block that starts before begin - longest block has ended before begin.
  const double first_start = view.begin_ns - double(model.longest_block_ns(sm));
  auto it = std::lower_bound(row.begin(), row.end(), first_start,
                             [&](uint32_t i, double t) { return double(records[i].start_ns) < t; });
  bool have_pending = false;
  TimelineBar pending{};
  int pending_bucket = 0;
  for (; it != row.end(); ++it) {
    const TraceRecord& r = records[*it];
    if (double(r.start_ns) > view.end_ns) break;
    if (double(r.end_ns) < view.begin_ns) continue;
    const float x0 = float(std::max((double(r.start_ns) - view.begin_ns) * px_per_ns, -1.0));
    const float x1 = float(std::min((double(r.end_ns) - view.begin_ns) * px_per_ns, double(view.width_px) + 1.0));
    const int bucket = bucket_of(*it);
    if (have_pending) {
      const bool touches = x0 - pending.x1 < view.merge_px;
      const bool narrow = x1 - x0 < view.merge_px || pending.x1 - pending.x0 < view.merge_px;
      if (touches && (narrow || bucket == pending_bucket)) {
        pending.x1 = std::max(pending.x1, x1);
        ++pending.count;
        continue;
      }
      // Bars of one row do not overlap (overdraw is what a software renderer
      // pays for): the newer band takes over where it starts and covers the
      // rest of the older one, so the row's busy span stays the same.
      const float older_end = pending.x1;
      if (x0 < pending.x1) pending.x1 = std::max(x0, pending.x0);
      out.push_back(pending);
      pending = TimelineBar{lane, x0, std::max(x1, older_end), *it, 1};
      pending_bucket = bucket;
      continue;
    }
    pending = TimelineBar{lane, x0, x1, *it, 1};
    pending_bucket = bucket;
    have_pending = true;
  }
  if (have_pending) out.push_back(pending);
}

}  // namespace

void build_timeline_bars(const TimelineModel& model, const TimelineView& view, int lane_begin, int lane_end,
                         std::vector<TimelineBar>& out) {
  const double span = std::max(view.end_ns - view.begin_ns, 1e-9);
  const double px_per_ns = double(view.width_px) / span;
  const float merge_px = std::max(view.merge_px, 0.0f);
  const auto& records = model.records();
  const size_t first_new = out.size();
  lane_begin = std::max(lane_begin, 0);
  lane_end = std::min(lane_end, model.lane_count());
  if (view.rows_per_sm) {
    const int slots = model.slots_per_sm();
    for (int sm = lane_begin / slots; sm < (lane_end + slots - 1) / slots; ++sm)
      build_sm_row_bars(model, view, sm, px_per_ns, out);
    lane_end = lane_begin;  // no lanes of their own
  }
  for (int l = lane_begin; l < lane_end; ++l) {
    const auto& lane = model.lane(l);
    // Cull: skip the blocks that end before the view begins.
    auto it = std::lower_bound(lane.begin(), lane.end(), view.begin_ns,
                               [&](uint32_t i, double t) { return double(records[i].end_ns) < t; });
    bool have_pending = false;
    TimelineBar pending{};
    for (; it != lane.end(); ++it) {
      const TraceRecord& r = records[*it];
      if (double(r.start_ns) > view.end_ns) break;
      const float x0 = float(std::max((double(r.start_ns) - view.begin_ns) * px_per_ns, -1.0));
      const float x1 = float(std::min((double(r.end_ns) - view.begin_ns) * px_per_ns, double(view.width_px) + 1.0));
      if (have_pending) {
        const bool close = x0 - pending.x1 < merge_px;
        const bool either_narrow = x1 - x0 < merge_px || pending.x1 - pending.x0 < merge_px;
        if (close && either_narrow) {
          pending.x1 = std::max(pending.x1, x1);
          ++pending.count;
          continue;
        }
        out.push_back(pending);
      }
      pending = TimelineBar{l, x0, x1, *it, 1};
      have_pending = true;
    }
    if (have_pending) out.push_back(pending);
  }
  for (size_t i = first_new; i < out.size(); ++i)
    if (TimelineBar& b = out[i]; b.x1 - b.x0 < view.min_width_px) b.x1 = b.x0 + view.min_width_px;
}

void zoom_view(TimelineView& view, double anchor_ns, double factor, double end_ns, double min_span_ns) {
  const double full = std::max(end_ns, min_span_ns);
  double span = std::clamp((view.end_ns - view.begin_ns) * factor, min_span_ns, full);
  const double anchor_frac = (anchor_ns - view.begin_ns) / std::max(view.end_ns - view.begin_ns, 1e-9);
  double begin = anchor_ns - anchor_frac * span;
  begin = std::clamp(begin, 0.0, full - span);
  view.begin_ns = begin;
  view.end_ns = begin + span;
}

void pan_view(TimelineView& view, double delta_ns, double end_ns) {
  const double span = view.end_ns - view.begin_ns;
  const double begin = std::clamp(view.begin_ns + delta_ns, 0.0, std::max(end_ns - span, 0.0));
  view.begin_ns = begin;
  view.end_ns = begin + span;
}

}  // namespace wb::viewer
