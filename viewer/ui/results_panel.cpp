#include "ui/results_panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "model/gpu_choice.hpp"
#include "models/roofline.hpp"

namespace wb::viewer::ui {

namespace {

inline constexpr Rgb kOursRgb{90, 170, 250};
inline constexpr Rgb kCublasRgb{160, 160, 170};
inline constexpr Rgb kFailedRgb{235, 90, 80};

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
        char label[96];
        if (v.reference) std::snprintf(label, sizeof label, "%.1f TFLOP/s (cuBLAS)", v.tflops);
        else std::snprintf(label, sizeof label, "%.1f TFLOP/s, %.0f %% of cuBLAS%s", v.tflops, 100.0 * v.vs_cublas,
                           v.checked && !v.passed ? ", FAILED check" : "");
        const ImVec2 ts = ImGui::CalcTextSize(label);
        const bool inside = ts.x + 8 < len;
        dl->AddText(ImVec2(inside ? p.x + name_w + 4 : p.x + name_w + len + 4, p.y + 2),
                    inside ? IM_COL32(0, 0, 0, 255) : IM_COL32(230, 230, 230, 255), label);
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
  double dram = h.gpu.peak_dram_gbps() > 0 ? h.gpu.peak_dram_gbps() : (preset ? preset->dram_gbps : 0);
  double max_measured = 0;
  for (const LoadedResults* f : files)
    for (const VariantResult& v : f->results.variants)
      if (!v.skipped) max_measured = std::max(max_measured, v.tflops);
  const bool peak_known = peak > 0;
  if (!peak_known) peak = max_measured * 1.2;
  ImGui::Text("Roofline: %s, %.0f TFLOP/s%s, %.0f GB/s", h.gpu.name.c_str(), peak, peak_known ? "" : " (peak unknown: measured x 1.2)", dram);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 a(p0.x + 48, p0.y + 6), b(p0.x + avail.x - 10, p0.y + avail.y - 36);
  dl->AddRectFilled(a, b, kCanvasBackground);
  // Log axes: intensity 0.1 .. 10^4 flop/byte, rate from peak/10^4 to 2 x peak.
  const double x_lo = -1, x_hi = 4;
  const double y_hi = std::log10(peak * 2), y_lo = y_hi - 4.3;
  auto px = [&](double intensity) { return a.x + (b.x - a.x) * float((std::log10(intensity) - x_lo) / (x_hi - x_lo)); };
  auto py = [&](double tflops) { return b.y - (b.y - a.y) * float((std::log10(tflops) - y_lo) / (y_hi - y_lo)); };
  char label[64];
  for (int e = int(x_lo); e <= int(x_hi); ++e) {
    const float x = px(std::pow(10.0, e));
    dl->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), kGridLine);
    std::snprintf(label, sizeof label, "%g", std::pow(10.0, e));
    dl->AddText(ImVec2(x - 8, b.y + 2), kTextDim, label);
  }
  for (int e = int(std::ceil(y_lo)); e <= int(std::floor(y_hi)); ++e) {
    const float y = py(std::pow(10.0, e));
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), kGridLine);
    std::snprintf(label, sizeof label, "%g", std::pow(10.0, e));
    dl->AddText(ImVec2(p0.x + 2, y - 7), kTextDim, label);
  }
  dl->AddText(ImVec2(a.x, b.y + 18), kTextDim, "arithmetic intensity (flop / DRAM byte), TFLOP/s up");
  // The roof: bandwidth slope then the flat compute peak.
  if (dram > 0) {
    ImVec2 prev;
    for (int i = 0; i <= 100; ++i) {
      const double x = std::pow(10.0, x_lo + (x_hi - x_lo) * i / 100.0);
      const double y = std::max(roofline_tflops(peak, dram, x), std::pow(10.0, y_lo));
      const ImVec2 pt(px(x), py(y));
      if (i) dl->AddLine(prev, pt, IM_COL32(240, 200, 80, 255), 2.0f);
      prev = pt;
    }
    const double ridge = ridge_intensity(peak, dram);
    std::snprintf(label, sizeof label, "ridge %.0f flop/B", ridge);
    dl->AddText(ImVec2(px(ridge) + 4, py(peak) + 4), IM_COL32(240, 200, 80, 255), label);
  }
  // Points crowd near the peak: label a point only where no label is yet, and
  // name every point under the mouse in a tooltip.
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool mouse_in = mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y;
  std::vector<ImVec4> labels;  // taken label rectangles
  std::string hovered;
  dl->PushClipRect(a, b, true);
  for (const LoadedResults* f : files)
    for (const VariantResult& v : f->results.variants) {
      if (v.skipped || v.bytes <= 0 || v.tflops <= 0) continue;
      const double ai = arithmetic_intensity(v.flops, v.bytes);
      const ImVec2 pt(px(ai), py(v.tflops));
      dl->AddCircleFilled(pt, 4, to_imu32(v.reference ? kCublasRgb : kOursRgb));
      const ImVec2 size = ImGui::CalcTextSize(v.name.c_str());
      const ImVec4 r(pt.x + 6, pt.y - 7, pt.x + 6 + size.x, pt.y - 7 + size.y);
      const bool free = std::none_of(labels.begin(), labels.end(), [&](const ImVec4& o) {
        return r.x < o.z && o.x < r.z && r.y < o.w && o.y < r.w;
      });
      if (free) {
        dl->AddText(ImVec2(r.x, r.y), IM_COL32(230, 230, 230, 255), v.name.c_str());
        labels.push_back(r);
      }
      if (mouse_in && std::abs(mouse.x - pt.x) < 6 && std::abs(mouse.y - pt.y) < 6) {
        char line[160];
        std::snprintf(line, sizeof line, "%s %s: %.1f TFLOP/s at %.0f flop/B\n", f->results.header.lesson.c_str(),
                      v.name.c_str(), v.tflops, ai);
        hovered += line;
      }
    }
  dl->PopClipRect();
  if (!hovered.empty()) ImGui::SetTooltip("%s", hovered.c_str());
  ImGui::Dummy(avail);
}

}  // namespace wb::viewer::ui
