// libFuzzer target: the viewer opening a file, and everything its panels derive
// from what it accepts, without a display: the timeline's lanes and bars, the
// tile grid replayed from the trace, and the operands the running tiles read.
// A bad file must end as one line in the workspace's errors, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/tile_grid.hpp"
#include "model/timeline.hpp"
#include "model/workspace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wb::viewer;
  Workspace ws;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!ws.open_text(text, "input")) {
    if (ws.errors.empty() || ws.errors.back().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  if (const LoadedTrace* t = ws.current()) {
    TileGridSetup setup = setup_from_trace(t->trace);
    setup.clamp();
    (void)setup.pid_of_tiles();
    const uint64_t mid = t->timeline.end_ns() / 2;
    const std::vector<TileState> states = traced_tile_states(t->trace, mid);
    (void)operand_use(setup, states);
    (void)t->timeline.busy_sms_at(mid);
    (void)t->timeline.next_start_after(mid);
    (void)t->timeline.prev_start_before(mid);
    TimelineView view;
    view.end_ns = double(t->timeline.end_ns()) + 1;
    view.width_px = 1600;
    std::vector<TimelineBar> bars;
    build_timeline_bars(t->timeline, view, 0, t->timeline.lane_count(), bars);
    view.rows_per_sm = true;
    bars.clear();
    build_timeline_bars(t->timeline, view, 0, t->timeline.lane_count(), bars);
  }
  return 0;
}
