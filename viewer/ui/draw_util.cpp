#include "ui/draw_util.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace wb::viewer::ui {

ImU32 darker(Rgb c, float factor) {
  return IM_COL32(int(c.r * factor), int(c.g * factor), int(c.b * factor), 255);
}

ImU32 blend_over(ImU32 top, ImU32 bottom) {
  const int a = int((top >> IM_COL32_A_SHIFT) & 0xFF);
  auto channel = [&](int shift) {
    const int t = int((top >> shift) & 0xFF), b = int((bottom >> shift) & 0xFF);
    return (t * a + b * (255 - a) + 127) / 255;
  };
  return IM_COL32(channel(IM_COL32_R_SHIFT), channel(IM_COL32_G_SHIFT), channel(IM_COL32_B_SHIFT), 255);
}

std::string format_bytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9) std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6) std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else if (bytes >= 1e3) std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  return buf;
}

std::string format_ns(double ns) {
  char buf[32];
  if (ns >= 1e6) std::snprintf(buf, sizeof buf, "%.3g ms", ns / 1e6);
  else if (ns >= 1e3) std::snprintf(buf, sizeof buf, "%.3g us", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

bool order_combo(const char* label, TileOrder* order) {
  bool changed = false;
  if (ImGui::BeginCombo(label, tile_order_name(*order))) {
    for (int i = 0; i < kTileOrderCount; ++i) {
      const TileOrder o = TileOrder(i);
      if (ImGui::Selectable(tile_order_name(o), o == *order)) {
        changed = o != *order;
        *order = o;
      }
    }
    ImGui::EndCombo();
  }
  return changed;
}

bool tile_size_combo(const char* label, int* size) {
  static constexpr int kSizes[] = {16, 32, 64, 128, 256};
  bool changed = false;
  const std::string current = std::to_string(*size);
  if (ImGui::BeginCombo(label, current.c_str())) {
    for (int s : kSizes) {
      if (ImGui::Selectable(std::to_string(s).c_str(), s == *size)) {
        changed = s != *size;
        *size = s;
      }
    }
    ImGui::EndCombo();
  }
  return changed;
}

bool input_int64(const char* label, int64_t* value, int64_t lo, int64_t hi) {
  int64_t v = *value;
  const int64_t step = 1, step_fast = 1024;
  if (ImGui::InputScalar(label, ImGuiDataType_S64, &v, &step, &step_fast)) {
    v = std::clamp(v, lo, hi);
    if (v != *value) {
      *value = v;
      return true;
    }
  }
  return false;
}

bool GpuPicker::draw(const GpuChoice* trace_gpu) {
  const int preset_count = int(std::size(kGpuPresets));
  const int trace_index = preset_count, custom_index = preset_count + 1;
  if (selection == trace_index && !trace_gpu) selection = 0;
  auto name_of = [&](int i) -> std::string {
    if (i < preset_count) return kGpuPresets[i].name;
    if (i == trace_index) return trace_gpu ? "trace: " + trace_gpu->name : "trace (none loaded)";
    return "custom";
  };
  bool changed = false;
  if (ImGui::BeginCombo("GPU", name_of(selection).c_str())) {
    for (int i = 0; i <= custom_index; ++i) {
      if (i == trace_index && !trace_gpu) continue;
      if (ImGui::Selectable(name_of(i).c_str(), i == selection) && i != selection) {
        selection = i;
        const int blocks_per_sm = gpu.blocks_per_sm;
        if (i < preset_count) gpu = gpu_from_preset(kGpuPresets[i]);
        else if (i == trace_index) gpu = *trace_gpu;
        if (i != trace_index) gpu.blocks_per_sm = blocks_per_sm;
        changed = true;
      }
    }
    ImGui::EndCombo();
  }
  if (selection == custom_index) {
    gpu.name = "custom";
    changed |= ImGui::SliderInt("SMs", &gpu.sms, 1, 256);
    int l2_mb = int(gpu.l2_bytes >> 20);
    if (ImGui::SliderInt("L2 (MiB)", &l2_mb, 1, 256)) {
      gpu.l2_bytes = int64_t(l2_mb) << 20;
      changed = true;
    }
  } else {
    ImGui::TextDisabled("%d SMs, L2 %s", gpu.sms, format_bytes(double(gpu.l2_bytes)).c_str());
  }
  changed |= ImGui::SliderInt("blocks / SM", &gpu.blocks_per_sm, 1, 16);
  return changed;
}

void GpuPicker::take_trace_gpu(const GpuChoice& trace_gpu) {
  selection = int(std::size(kGpuPresets));
  gpu = trace_gpu;
}

void follow_control(TraceFollow& follow, const LoadedTrace* current) {
  if (!current) {
    ImGui::TextDisabled("open a trace to see its run here");
    return;
  }
  bool on = follow.following();
  if (ImGui::Checkbox("follow the loaded trace", &on)) follow.set_following(on);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("on: this panel takes the trace's shape, tiles, order, split and GPU\n"
                      "off: the panel's own model, which you can edit");
  if (on) ImGui::TextWrapped("%s", current->label.c_str());
}

void text_dim_wrapped(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::TextWrapped("%s", text);
  ImGui::PopStyleColor();
}

void centred_text(ImDrawList* dl, ImVec2 min, ImVec2 max, ImU32 colour, const char* text) {
  const ImVec2 size = ImGui::CalcTextSize(text);
  if (size.x + 2 > max.x - min.x || size.y > max.y - min.y) return;
  dl->AddText(ImVec2((min.x + max.x - size.x) * 0.5f, (min.y + max.y - size.y) * 0.5f), colour, text);
}

bool key_pressed(ImGuiKey key) {
  if (ImGui::GetIO().WantTextInput) return false;
#if IMGUI_VERSION_NUM >= 18700
  return ImGui::IsKeyPressed(key);
#else
  return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key));
#endif
}

}  // namespace wb::viewer::ui
