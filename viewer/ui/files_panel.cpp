#include "ui/files_panel.hpp"

#include <chrono>
#include <cstring>

namespace wb::viewer::ui {

FilesPanel::FilesPanel(std::string bin_dir) {
  request_.bin_dir = std::move(bin_dir);
  lessons_ = available_lessons(request_.bin_dir);
  if (!lessons_.empty()) request_.lesson = lessons_.front();
}

void FilesPanel::draw(Workspace& ws) {
  draw_assets(ws);
  ImGui::Separator();
  draw_traces(ws);
  ImGui::Separator();
  draw_run_on_gpu(ws);
  draw_errors(ws);
}

void FilesPanel::draw_assets(Workspace& ws) {
  ImGui::Text("Assets");
  ImGui::SameLine();
  if (ImGui::SmallButton("rescan")) {
    ws.refresh_assets();
    ws.open_all_asset_results();
  }
  ImGui::TextDisabled("%s", ws.assets_dir.c_str());
  ImGui::BeginChild("asset list", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 16), true);
  if (ws.assets.empty()) ImGui::TextDisabled("nothing recorded here yet");
  // Sections by kind and GPU folder; each row says what the file holds (lesson,
  // variant, shape), the full name on hover.
  FileKind section = FileKind::unknown;
  std::string folder;
  for (const AssetEntry& e : ws.assets) {
    if (e.kind != section || e.folder != folder) {
      section = e.kind;
      folder = e.folder;
      ImGui::TextDisabled("%s, %s", section == FileKind::trace ? "traces" : "results", folder.c_str());
    }
    bool open = false;
    for (const auto& t : ws.traces) open |= t->path == e.path;
    for (const auto& r : ws.results) open |= r.path == e.path;
    ImGui::PushID(e.path.c_str());
    if (ImGui::Selectable(e.title.c_str(), open)) ws.open(e.path);
    ImGui::PopID();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s (%s)%s", e.label.c_str(),
                        format_bytes(double(e.bytes)).c_str(), e.kind == FileKind::trace ? ": click to show it" : "");
  }
  ImGui::EndChild();
  ImGui::SetNextItemWidth(-60);
  const bool entered = ImGui::InputTextWithHint("##path", "path to a trace or results .json", path_, sizeof path_,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Open") || entered) && path_[0]) ws.open(path_);
}

void FilesPanel::draw_traces(Workspace& ws) {
  auto name_of = [&](int i) { return i >= 0 && i < int(ws.traces.size()) ? ws.traces[size_t(i)]->label : std::string("(none)"); };
  ImGui::TextUnformatted("Trace shown");
  ImGui::SetNextItemWidth(-1);
  if (ImGui::BeginCombo("##current", name_of(ws.current_trace).c_str())) {
    for (int i = 0; i < int(ws.traces.size()); ++i)
      if (ImGui::Selectable(name_of(i).c_str(), i == ws.current_trace)) ws.select_trace(i);
    ImGui::EndCombo();
  }
  ImGui::TextUnformatted("Compared with");
  ImGui::SetNextItemWidth(-1);
  if (ImGui::BeginCombo("##compare", name_of(ws.compare_trace).c_str())) {
    if (ImGui::Selectable("(none)", ws.compare_trace < 0)) ws.compare_trace = -1;
    for (int i = 0; i < int(ws.traces.size()); ++i)
      if (i != ws.current_trace && ImGui::Selectable(name_of(i).c_str(), i == ws.compare_trace)) ws.compare_trace = i;
    ImGui::EndCombo();
  }
}

void FilesPanel::draw_run_on_gpu(Workspace& ws) {
  ImGui::TextUnformatted("Run on this GPU");
  if (run_.valid()) {
    if (run_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      std::optional<Trace> t = run_.get();
      if (t) ws.add_trace(std::move(*t), "(recorded now: " + request_.lesson + " " + request_.variant + ")");
      else ws.errors.push_back("Run on this GPU: " + run_error_);
    } else {
      ImGui::TextDisabled("running %s ...", request_.lesson.c_str());
      return;
    }
  }
  if (lessons_.empty()) {
    ImGui::TextDisabled("no lesson binaries here (they are built with CUDA)");
    return;
  }
  ImGui::SetNextItemWidth(-1);
  if (ImGui::BeginCombo("##lesson", request_.lesson.c_str())) {
    for (const std::string& l : lessons_)
      if (ImGui::Selectable(l.c_str(), l == request_.lesson)) request_.lesson = l;
    ImGui::EndCombo();
  }
  ImGui::InputText("variant", variant_, sizeof variant_);
  request_.variant = variant_;
  input_int64("M##run", &request_.m, 1, 1 << 16);
  input_int64("N##run", &request_.n, 1, 1 << 16);
  input_int64("K##run", &request_.k, 1, 1 << 16);
  const std::string why = why_cannot_run(request_);
  ImGui::BeginDisabled(!why.empty());
  if (ImGui::Button("Run and load the trace")) {
    // The lesson runs for seconds: off the UI thread, polled each frame.
    run_ = std::async(std::launch::async, [request = request_, this] { return run_on_gpu(request, &run_error_); });
  }
  ImGui::EndDisabled();
  if (!why.empty()) ImGui::TextDisabled("%s", why.c_str());
}

void FilesPanel::draw_errors(Workspace& ws) {
  if (ws.errors.empty()) return;
  ImGui::Separator();
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
  ImGui::TextUnformatted("Errors");
  ImGui::PopStyleColor();
  ImGui::SameLine();
  if (ImGui::SmallButton("clear")) ws.errors.clear();
  for (const std::string& e : ws.errors) ImGui::TextWrapped("%s", e.c_str());
}

}  // namespace wb::viewer::ui
