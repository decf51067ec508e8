// Panel 1, tile order: C as a grid of tiles coloured by launch order, the A
// row-blocks and B column-blocks the blocks in flight read beside it, and a
// replay (play, pause, step, speed) of a loaded trace's recorded order and
// times (the default while one is loaded) or of the modelled order.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/playback.hpp"
#include "model/tile_grid.hpp"
#include "model/workspace.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class OrderPanel {
 public:
  OrderPanel();
  void draw(Workspace& ws, float frame_seconds);

  // Where the C grid was drawn last frame (the screenshot test checks its colours).
  struct GridPlacement {
    int x = 0, y = 0, cell = 0;
    int tiles_m = 0, tiles_n = 0;
    TileOrder order = TileOrder::row_major;
    int group_m = 1;
    int64_t launched = 0;  // tiles launched so far (running or done)
  };
  const GridPlacement& placement() const { return placement_; }
  // What the panel showed last frame (for --layout): the grid, the problem and its source.
  nlohmann::json layout() const;
  // Puts the modelled replay part-way, so a picture shows done, running and waiting tiles.
  void set_replay_fraction(double fraction);

 private:
  void draw_controls(Workspace& ws);
  void draw_grid(Workspace& ws);
  void draw_gather_strip(const LoadedTrace& trace, double position, const std::vector<size_t>& hovered, ImVec2 at,
                         float width);
  bool replaying_trace(const Workspace& ws) const { return follow_.following() && ws.current(); }
  // Takes the loaded trace's problem into the model (shape, tiles, order, GPU).
  void take_trace(const LoadedTrace& trace);

  TileGridSetup setup_;
  GpuPicker gpu_;
  Playback playback_;
  TraceFollow follow_;  // on: replay the loaded trace's recorded order and times
  GridPlacement placement_;
  nlohmann::json shown_;  // the problem drawn last frame
  // Per tile of the current trace, its first record (for hover); rebuilt when the trace changes.
  const LoadedTrace* indexed_trace_ = nullptr;
  std::vector<int64_t> record_of_tile_;
};

}  // namespace wb::viewer::ui
