// Panel 4, timeline: a trace drawn Tracy-style, one row per SM (its resident
// slots as lanes inside the row), each block a bar from its real start to its
// end; zoom (wheel), pan (drag), hover; a playhead shared with the tile grid;
// the tail shaded; a second trace below on the same time scale.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "model/timeline.hpp"
#include "model/unit_colours.hpp"
#include "model/workspace.hpp"
#include "ui/canvas_texture.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class TimelinePanel {
 public:
  void draw(Workspace& ws, float frame_seconds);
  // What the panel drew last frame (for --layout): per trace its label, bar area,
  // time labels and SM labels, each as [x0, y0, x1, y1].
  const nlohmann::json& layout() const { return layout_; }
  // Bars drawn last frame, over all traces shown (the benchmark reports it).
  size_t bars_drawn() const { return bars_drawn_; }
  // Animates the view for the benchmark: zooms in and out around the middle.
  void bench_step(int frame);
  // Frees the bar pictures' textures (before the GL context goes).
  void release_textures();

 private:
  void draw_trace(Workspace& ws, const LoadedTrace& t, const char* id, float height, CanvasTexture& bars_canvas);
  void fit_view(double end_ns);
  void draw_legend(const LoadedTrace& t);
  // The colouring's keys for a trace (rebuilt when the trace or the choice changes).
  const UnitColours& colours_of(const LoadedTrace& t, int which);

  TimelineView view_;
  double view_end_ns_ = 0;   // the longer trace's end: the time scale both share
  const LoadedTrace* viewed_ = nullptr;
  const LoadedTrace* compared_ = nullptr;
  bool compare_ = true;
  // What a bar's colour says: chosen per shown trace (trace a's choice applies to
  // both when they share it); a new trace starts at its default_colouring.
  UnitColouring colouring_ = UnitColouring::launch_order;
  const LoadedTrace* coloured_for_[2] = {nullptr, nullptr};
  UnitColouring coloured_by_[2] = {UnitColouring::launch_order, UnitColouring::launch_order};
  UnitColours colours_[2];
  std::vector<TimelineBar> bars_;  // reused every frame
  CanvasTexture canvases_[2];      // the bars of trace a and trace b
  size_t bars_drawn_ = 0;
  nlohmann::json layout_;
};

}  // namespace wb::viewer::ui
