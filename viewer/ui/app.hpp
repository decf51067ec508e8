// The viewer's window: the sidebar and one tab per panel. Owns the panels; the
// workspace (what is open) is the model's and is passed in.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/workspace.hpp"
#include "ui/files_panel.hpp"
#include "ui/l2_panel.hpp"
#include "ui/order_panel.hpp"
#include "ui/results_panel.hpp"
#include "ui/timeline_panel.hpp"
#include "ui/waves_panel.hpp"

namespace wb::viewer::ui {

enum class PanelId { order, l2, waves, timeline, results };
// "order", "l2", "waves", "timeline", "results"; false for anything else.
bool parse_panel(const std::string& name, PanelId* out);

class ViewerApp {
 public:
  ViewerApp(Workspace& workspace, std::string bin_dir);
  void select(PanelId panel);
  // Draws the whole window for one frame.
  void draw(float frame_seconds);
  // Frees the panels' GL textures; call before the GL context is destroyed.
  void release_textures() { timeline_.release_textures(); }

  // What `panel` drew in the last frame, as JSON (tile-viewer --layout; the screenshot tests read it).
  nlohmann::json layout(PanelId panel) const;

  OrderPanel& order_panel() { return order_; }
  TimelinePanel& timeline_panel() { return timeline_; }

 private:
  Workspace& ws_;
  FilesPanel files_;
  OrderPanel order_;
  L2Panel l2_;
  WavesPanel waves_;
  TimelinePanel timeline_;
  ResultsPanel results_;
  PanelId selected_ = PanelId::order;
  bool select_next_frame_ = true;  // a tab chosen from outside the tab bar
};

}  // namespace wb::viewer::ui
