#include "ui/app.hpp"

namespace wb::viewer::ui {

bool parse_panel(const std::string& name, PanelId* out) {
  static constexpr std::pair<const char*, PanelId> kNames[] = {
      {"order", PanelId::order}, {"l2", PanelId::l2}, {"waves", PanelId::waves},
      {"timeline", PanelId::timeline}, {"results", PanelId::results}};
  for (const auto& [n, id] : kNames)
    if (name == n) {
      *out = id;
      return true;
    }
  return false;
}

nlohmann::json ViewerApp::layout(PanelId panel) const {
  switch (panel) {
    case PanelId::order: return order_.layout();
    case PanelId::l2: return l2_.layout();
    case PanelId::waves: return waves_.layout();
    case PanelId::timeline: return timeline_.layout();
    case PanelId::results: return results_.layout();
  }
  return nlohmann::json::object();
}

ViewerApp::ViewerApp(Workspace& workspace, std::string bin_dir) : ws_(workspace), files_(std::move(bin_dir)) {}

void ViewerApp::select(PanelId panel) {
  selected_ = panel;
  select_next_frame_ = true;
}

void ViewerApp::draw(float frame_seconds) {
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  ImGui::Begin("tile-viewer", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus |
                   ImGuiWindowFlags_NoBackground);  // the clear colour is the background: one full-window fill fewer
  ImGui::BeginChild("sidebar", ImVec2(280, 0), true);
  ImGui::TextUnformatted("tile-viewer");
  ImGui::TextDisabled("matmul-workbook");
  ImGui::Separator();
  files_.draw(ws_);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("panels", ImVec2(0, 0), false);
  if (ImGui::BeginTabBar("panel tabs")) {
    struct Tab { const char* title; PanelId id; };
    static constexpr Tab kTabs[] = {{"Tile order", PanelId::order}, {"L2 reuse", PanelId::l2},
                                    {"Waves", PanelId::waves},      {"Timeline", PanelId::timeline},
                                    {"Results", PanelId::results}};
    for (const Tab& tab : kTabs) {
      const ImGuiTabItemFlags flags = select_next_frame_ && tab.id == selected_ ? ImGuiTabItemFlags_SetSelected : 0;
      if (!ImGui::BeginTabItem(tab.title, nullptr, flags)) continue;
      if (!select_next_frame_) selected_ = tab.id;
      switch (tab.id) {
        case PanelId::order: order_.draw(ws_, frame_seconds); break;
        case PanelId::l2: l2_.draw(ws_); break;
        case PanelId::waves: waves_.draw(ws_); break;
        case PanelId::timeline: timeline_.draw(ws_, frame_seconds); break;
        case PanelId::results: results_.draw(ws_); break;
      }
      ImGui::EndTabItem();
    }
    select_next_frame_ = false;
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace wb::viewer::ui
