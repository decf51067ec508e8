// Small drawing helpers shared by the panels: colours, number formatting,
// labelled inputs, chart axes. Panels hold their own state; nothing here does.
#pragma once

#include <cstdint>
#include <string>

#include <imgui.h>

#include "model/colors.hpp"
#include "model/gpu_choice.hpp"
#include "model/trace_problem.hpp"
#include "model/workspace.hpp"
#include "schedule/tile_order.hpp"

namespace wb::viewer::ui {

inline ImU32 to_imu32(Rgb c, int alpha = 255) { return IM_COL32(c.r, c.g, c.b, alpha); }
ImU32 darker(Rgb c, float factor);
// `top` (with its alpha) blended over the opaque `bottom`, as OpenGL would.
ImU32 blend_over(ImU32 top, ImU32 bottom);

// The GL clear colour: what shows where no window or panel draws.
inline constexpr ImU32 kWindowBackground = IM_COL32(23, 26, 31, 255);
inline constexpr ImU32 kTextDim = IM_COL32(160, 165, 175, 255);
inline constexpr ImU32 kGridLine = IM_COL32(70, 74, 84, 255);
inline constexpr ImU32 kCanvasBackground = IM_COL32(24, 26, 31, 255);
inline constexpr ImU32 kPlayhead = IM_COL32(255, 255, 255, 230);
inline constexpr ImU32 kWarn = IM_COL32(235, 90, 80, 255);

std::string format_bytes(double bytes);       // "1.50 GB", "48.0 MB"
std::string format_ns(double ns);             // "812 ns", "12.3 us", "4.56 ms"
std::string format_count(int64_t n);          // "65,536"

// Order combo over every order the schedule header knows; true when changed.
bool order_combo(const char* label, TileOrder* order);
// Power-of-two tile size picker (16 .. 256); true when changed.
bool tile_size_combo(const char* label, int* size);
// An int64 input clamped to [lo, hi]; true when changed.
bool input_int64(const char* label, int64_t* value, int64_t lo, int64_t hi);

// The GPU picker every model panel shares: presets, a loaded trace's GPU, custom.
// `selection` is the panel's own (index into presets; presets+0: trace; presets+1: custom).
struct GpuPicker {
  int selection = 0;
  GpuChoice gpu = gpu_from_preset(kGpuPresets[0]);
  // Draws the picker; true when the GPU changed. `trace_gpu` null: no trace loaded.
  bool draw(const GpuChoice* trace_gpu);
  // Selects a loaded trace's GPU (what a panel that follows the trace shows).
  void take_trace_gpu(const GpuChoice& trace_gpu);
};

// The control every model panel shares while a trace is loaded: a checkbox
// "follow the loaded trace" (off: the panel's own model), and what it follows.
void follow_control(TraceFollow& follow, const LoadedTrace* current);

// Dim text wrapped at the window's edge (ImGui's TextDisabled does not wrap).
void text_dim_wrapped(const char* text);

// Centred text in a rectangle, only when it fits.
void centred_text(ImDrawList* dl, ImVec2 min, ImVec2 max, ImU32 colour, const char* text);

// Keyboard helper across ImGui 1.86 (key indices) and 1.87+ (named keys).
bool key_pressed(ImGuiKey key);

}  // namespace wb::viewer::ui
