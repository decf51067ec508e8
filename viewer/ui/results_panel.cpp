#include "ui/results_panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "model/gpu_choice.hpp"
#include "model/label_layout.hpp"
#include "model/roofline_points.hpp"
#include "models/roofline.hpp"

namespace wb::viewer::ui {

namespace {

inline constexpr Rgb kOursRgb{90, 170, 250};
inline constexpr Rgb kCublasRgb{160, 160, 170};
inline constexpr Rgb kFailedRgb{235, 90, 80};
// One per lesson on the roofline (cuBLAS is kCublasRgb).
inline constexpr Rgb kLessonRgb[] = {{90, 170, 250}, {120, 210, 120}, {250, 150, 70},  {200, 120, 230},
                                     {240, 210, 90}, {90, 210, 210},  {240, 110, 150}, {170, 170, 250}};

}  // namespace

void ResultsPanel::draw(Workspace& ws) {
  std::set<std::string> gpus;
  for (const LoadedResults& r : ws.results) gpus.insert(r.results.header.gpu.name);
  if (gpus.empty()) {
    ImGui::TextWrapped("No results loaded. Results files live in the asset folder under results/<gpu>/<lesson>.json; "
                       "the lessons write them with --json.");
    return;
  }
  if (!gpus.count(gpu_)) gpu_ = *gpus.begin();
  ImGui::SetNextItemWidth(320);
  if (ImGui::BeginCombo("GPU", gpu_.c_str())) {
    for (const std::string& g : gpus)
      if (ImGui::Selectable(g.c_str(), g == gpu_)) gpu_ = g;
    ImGui::EndCombo();
  }
  std::vector<const LoadedResults*> files;
  for (const LoadedResults& r : ws.results)
    if (r.results.header.gpu.name == gpu_) files.push_back(&r);
  std::sort(files.begin(), files.end(), [](auto* a, auto* b) { return a->results.header.lesson < b->results.header.lesson; });
  const RunHeader& h = files.front()->results.header;
  ImGui::TextDisabled("recorded %s, driver %s, CUDA %s, commit %s", h.date.c_str(), h.versions.driver.c_str(),
                      h.versions.runtime.c_str(), h.commit.c_str());

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  ImGui::BeginChild("bars", ImVec2(avail.x * 0.5f, 0), false);
  draw_bars(files);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("roofline", ImVec2(0, 0), false);
  draw_roofline(files);
  ImGui::EndChild();
}

void ResultsPanel::draw_bars(const std::vector<const LoadedResults*>& files) {
  double max_tflops = 1e-9;
  for (const LoadedResults* f : files)
    for (const VariantResult& v : f->results.variants)
      if (!v.skipped) max_tflops = std::max(max_tflops, v.tflops);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float name_w = 150, bar_h = ImGui::GetTextLineHeight() + 4;
  for (const LoadedResults* f : files) {
    const RunHeader& h = f->results.header;
    ImGui::Text("%s  (%lld x %lld x %lld)", h.lesson.c_str(), static_cast<long long>(h.m), static_cast<long long>(h.n),
                static_cast<long long>(h.k));
    for (const VariantResult& v : f->results.variants) {
      const ImVec2 p = ImGui::GetCursorScreenPos();
      // Room on the right for the label of the longest bar.
      const float w = ImGui::GetContentRegionAvail().x - name_w - 230;
      dl->AddText(ImVec2(p.x + 8, p.y + 2), v.reference ? kTextDim : IM_COL32(230, 230, 230, 255), v.name.c_str());
      if (v.skipped) {
        dl->AddText(ImVec2(p.x + name_w, p.y + 2), kTextDim, ("skipped: " + v.skip_reason).c_str());
      } else {
        const float len = std::max(2.0f, w * float(v.tflops / max_tflops));
        const Rgb c = v.reference ? kCublasRgb : (v.checked && !v.passed ? kFailedRgb : kOursRgb);
        dl->AddRectFilled(ImVec2(p.x + name_w, p.y + 1), ImVec2(p.x + name_w + len, p.y + bar_h - 1), to_imu32(c));
        const std::string label = bar_label(v);
        const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
        const bool inside = ts.x + 8 < len;
        dl->AddText(ImVec2(inside ? p.x + name_w + 4 : p.x + name_w + len + 4, p.y + 2),
                    inside ? IM_COL32(0, 0, 0, 255) : IM_COL32(230, 230, 230, 255), label.c_str());
      }
      ImGui::Dummy(ImVec2(w + name_w, bar_h));
      if (ImGui::IsItemHovered() && !v.what.empty()) ImGui::SetTooltip("%s", v.what.c_str());
    }
    ImGui::Spacing();
  }
}

void ResultsPanel::draw_roofline(const std::vector<const LoadedResults*>& files) {
  const RunHeader& h = files.front()->results.header;
  const GpuPreset* preset = preset_for_device(h.gpu.name);
  double peak = preset ? preset->fp16_tflops : 0;
  const double dram = h.gpu.peak_dram_gbps() > 0 ? h.gpu.peak_dram_gbps() : (preset ? preset->dram_gbps : 0);
  std::vector<const Results*> results;
  for (const LoadedResults* f : files) results.push_back(&f->results);
  const RooflineData data = roofline_points(results);
  double max_measured = 0;
  for (const RooflinePoint& p : data.points) max_measured = std::max(max_measured, p.tflops);
  const bool peak_known = peak > 0;
  if (!peak_known) peak = std::max(max_measured * 1.2, 1e-3);
  ImGui::Text("Roofline: %s, %.0f TFLOP/s%s, %.0f GB/s", h.gpu.name.c_str(), peak,
              peak_known ? "" : " (peak unknown: measured x 1.2)", dram);

  // Legend: one colour per lesson, cuBLAS grey.
  std::vector<std::string> lessons;
  for (const RooflinePoint& p : data.points)
    if (std::find(lessons.begin(), lessons.end(), p.lesson) == lessons.end()) lessons.push_back(p.lesson);
  std::sort(lessons.begin(), lessons.end());
  auto colour_of = [&](const RooflinePoint& p) {
    if (p.reference) return kCublasRgb;
    const size_t i = size_t(std::find(lessons.begin(), lessons.end(), p.lesson) - lessons.begin());
    return kLessonRgb[i % std::size(kLessonRgb)];
  };
  ImDrawList* dl = ImGui::GetWindowDrawList();
  {
    ImVec2 at = ImGui::GetCursorScreenPos();
    const float line_h = ImGui::GetTextLineHeight();
    const float right = at.x + ImGui::GetContentRegionAvail().x;
    auto entry = [&](const std::string& name, Rgb c) {
      const float w = 14 + ImGui::CalcTextSize(name.c_str()).x + 14;
      if (at.x + w > right) {  // wrap the legend
        at.x = ImGui::GetCursorScreenPos().x;
        at.y += line_h + 2;
      }
      dl->AddCircleFilled(ImVec2(at.x + 5, at.y + line_h * 0.5f), 4, to_imu32(c));
      dl->AddText(ImVec2(at.x + 13, at.y), kTextDim, name.c_str());
      at.x += w;
    };
    for (size_t i = 0; i < lessons.size(); ++i) entry(lessons[i], kLessonRgb[i % std::size(kLessonRgb)]);
    entry("cuBLAS", kCublasRgb);
    ImGui::Dummy(ImVec2(1, at.y + line_h + 4 - ImGui::GetCursorScreenPos().y));
  }

  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line_h = ImGui::GetTextLineHeight();
  const ImVec2 a(p0.x + 48, p0.y + 6), b(p0.x + avail.x - 12, p0.y + avail.y - 2 * line_h - 12);
  dl->AddRectFilled(a, b, kCanvasBackground);
  const RooflineRange range = roofline_range(data, peak, dram);
  auto px = [&](double intensity) {
    return a.x + (b.x - a.x) * float((std::log10(intensity) - range.x_lo) / double(range.x_hi - range.x_lo));
  };
  auto py = [&](double tflops) { return b.y - (b.y - a.y) * float((std::log10(tflops) - range.y_lo) / (range.y_hi - range.y_lo)); };
  char label[96];
  // Ticks: each decade. A label is centred on its tick but kept inside the plot's span.
  float last_right = -1e9f;
  for (int e = range.x_lo; e <= range.x_hi; ++e) {
    const float x = px(std::pow(10.0, e));
    dl->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), kGridLine);
    std::snprintf(label, sizeof label, "%g", std::pow(10.0, e));
    const float tw = ImGui::CalcTextSize(label).x;
    const float lx = std::clamp(x - tw * 0.5f, a.x, b.x - tw);
    if (lx > last_right + 6) {
      dl->AddText(ImVec2(lx, b.y + 2), kTextDim, label);
      last_right = lx + tw;
    }
  }
  for (int e = int(std::ceil(range.y_lo)); e <= int(std::floor(range.y_hi)); ++e) {
    const float y = py(std::pow(10.0, e));
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), kGridLine);
    std::snprintf(label, sizeof label, "%g", std::pow(10.0, e));
    const float tw = ImGui::CalcTextSize(label).x;
    dl->AddText(ImVec2(a.x - 4 - tw, std::clamp(y - line_h * 0.5f, a.y, b.y - line_h)), kTextDim, label);
  }
  dl->AddText(ImVec2(a.x, b.y + line_h + 6), kTextDim, "flop per byte the problem must move (inputs read once, outputs written once)");
  dl->AddText(ImVec2(a.x + 6, a.y + 4), kTextDim, "TFLOP/s");
  layout_ = {{"plot", {a.x, a.y, b.x, b.y}}, {"x_decades", {range.x_lo, range.x_hi}}, {"peak_tflops", peak},
             {"dram_gbps", dram}, {"gpu", h.gpu.name}, {"points", nlohmann::json::array()}};

  // The roof: bandwidth slope then the flat compute peak.
  dl->PushClipRect(a, b, true);
  if (dram > 0) {
    ImVec2 prev;
    for (int i = 0; i <= 200; ++i) {
      const double x = std::pow(10.0, range.x_lo + (range.x_hi - range.x_lo) * i / 200.0);
      const double y = std::max(roofline_tflops(peak, dram, x), std::pow(10.0, range.y_lo));
      const ImVec2 pt(px(x), py(y));
      if (i) dl->AddLine(prev, pt, IM_COL32(240, 200, 80, 255), 2.0f);
      prev = pt;
    }
  }
  // Points, then labels where they fit: per results file its reference and its
  // fastest variant first, then the rest by speed. The mouse names every point.
  std::vector<size_t> order(data.points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<uint8_t> first(data.points.size(), 0);
  {
    std::vector<int> best(results.size(), -1);
    for (size_t i = 0; i < data.points.size(); ++i) {
      const RooflinePoint& p = data.points[i];
      if (p.reference) first[i] = 1;
      else if (p.bound) continue;  // never labelled as its file's fastest
      else if (best[size_t(p.file)] < 0 || data.points[size_t(best[size_t(p.file)])].tflops < p.tflops) best[size_t(p.file)] = int(i);
    }
    for (int i : best)
      if (i >= 0) first[size_t(i)] = 1;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (first[x] != first[y]) return first[x] > first[y];
    return data.points[x].tflops > data.points[y].tflops;
  });
  std::vector<LabelRequest> requests;
  std::vector<std::string> texts;
  // The ridge's label goes first, at the ridge, so no point's label covers it.
  const double ridge = dram > 0 ? ridge_intensity(peak, dram) : 0;
  if (ridge > 0) {
    std::snprintf(label, sizeof label, "ridge %.0f flop/B", ridge);
    const ImVec2 size = ImGui::CalcTextSize(label);
    // A dotted line from the roof's corner down to the axis, labelled at its foot
    // (where points seldom are), so the label covers neither the roof nor a point.
    const float rx = std::floor(px(ridge)) + 0.5f;
    for (float y = py(peak) + 4; y < b.y; y += 6) dl->AddLine(ImVec2(rx, y), ImVec2(rx, std::min(y + 3, b.y)), IM_COL32(240, 200, 80, 160));
    requests.push_back(LabelRequest{rx, b.y - size.y * 0.5f - 6, size.x, size.y});
  }
  const size_t first_point = requests.size();
  for (size_t i : order) {
    const RooflinePoint& p = data.points[i];
    texts.push_back(point_label(p));
    const ImVec2 size = ImGui::CalcTextSize(texts.back().c_str());
    requests.push_back(LabelRequest{px(p.intensity), py(p.tflops), size.x, size.y});
  }
  // Labels stay clear of the "TFLOP/s" caption in the corner.
  const std::vector<std::optional<LabelRect>> placed =
      place_labels(requests, LabelRect{a.x, a.y + line_h + 6, b.x, b.y}, 4.0f);
  if (ridge > 0 && placed[0]) {
    std::snprintf(label, sizeof label, "ridge %.0f flop/B", ridge);
    dl->AddText(ImVec2(placed[0]->x0, placed[0]->y0), IM_COL32(240, 200, 80, 255), label);
  }
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool mouse_in = mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y;
  std::string hovered;
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t j = first_point + i;
    const RooflinePoint& p = data.points[order[i]];
    const ImVec2 pt(requests[j].x, requests[j].y);
    dl->AddCircleFilled(pt, 4, to_imu32(colour_of(p)));
    if (p.failed) dl->AddCircle(pt, 6, to_imu32(kFailedRgb), 0, 2.0f);
    if (placed[j]) dl->AddText(ImVec2(placed[j]->x0, placed[j]->y0), IM_COL32(230, 230, 230, 255), texts[i].c_str());
    nlohmann::json point = {{"lesson", p.lesson}, {"variant", p.variant}, {"intensity", p.intensity},
                            {"tflops", p.tflops}, {"x", pt.x}, {"y", pt.y}};
    if (placed[j]) point["label"] = {placed[j]->x0, placed[j]->y0, placed[j]->x1, placed[j]->y1};
    layout_["points"].push_back(std::move(point));
    if (mouse_in && std::abs(mouse.x - pt.x) < 6 && std::abs(mouse.y - pt.y) < 6) {
      char line[320];
      std::snprintf(line, sizeof line, "%s %s (%lldx%lldx%lld): %.1f TFLOP/s at %.0f flop per %s byte\n",
                    p.lesson.c_str(), point_label(p).c_str(), static_cast<long long>(p.m),
                    static_cast<long long>(p.n), static_cast<long long>(p.k), p.tflops, p.intensity,
                    p.by_own_bytes ? "of its own" : "problem");
      hovered += line;
      if (p.own_bytes > 0) {
        std::snprintf(line, sizeof line, "  its own byte count: %s (%s)\n", format_bytes(p.own_bytes).c_str(),
                      p.own_bytes_what.empty() ? (p.by_own_bytes ? "fewer than the problem's" : "more than the problem's")
                                               : p.own_bytes_what.c_str());
        hovered += line;
      }
    }
  }
  if (ridge > 0 && placed[0]) layout_["ridge_label"] = {placed[0]->x0, placed[0]->y0, placed[0]->x1, placed[0]->y1};
  dl->PopClipRect();
  if (data.unplaced > 0) {
    std::snprintf(label, sizeof label, "%d variants have no byte count to place them by", data.unplaced);
    dl->AddText(ImVec2(a.x + 6, a.y + 4), kTextDim, label);
  }
  if (!hovered.empty()) ImGui::SetTooltip("%s", hovered.c_str());
  ImGui::Dummy(avail);
}

}  // namespace wb::viewer::ui
