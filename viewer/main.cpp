// tile-viewer: the workbook's GUI. Follows Dear ImGui's example_glfw_opengl3:
// options, window, context, backends, state, loop (poll, new frame, UI, render,
// swap), cleanup in reverse order. Two batch modes share the loop:
// --screenshot renders a panel into a PNG and exits; --bench-frames times the
// timeline with the largest trace.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#define GLFW_INCLUDE_GLEXT
#include <GLFW/glfw3.h>

#include "model/frame_stats.hpp"
#include "model/png.hpp"
#include "model/run_on_gpu.hpp"
#include "model/workspace.hpp"
#include "ui/app.hpp"

#ifndef WORKBOOK_SOURCE_ASSETS
#define WORKBOOK_SOURCE_ASSETS "assets"
#endif

namespace {

using namespace wb::viewer;

struct Options {
  std::vector<std::string> files;
  std::string compare;
  std::string assets;
  std::string panel;
  std::string screenshot;
  std::string layout;
  std::string size = "1600x900";
  int bench_frames = 0;
  int width = 1600, height = 900;
};

// Parses the command line; returns an exit code when the program should stop now.
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"tile-viewer: explore tile orders, L2 reuse, waves and recorded traces of the matmul workbook"};
  app.add_option("files", o.files, "trace or results JSON files to open");
  app.add_option("--assets", o.assets, "asset folder (default: $WORKBOOK_ASSETS, else the source tree's assets/)");
  app.add_option("--panel", o.panel, "panel to show: order, l2, waves, timeline, results")
      ->check(CLI::IsMember({"order", "l2", "waves", "timeline", "results"}));
  app.add_option("--screenshot", o.screenshot, "render the panel into this PNG and exit");
  app.add_option("--layout", o.layout,
                 "with --screenshot: also write what the panel drew (its problem, where its grid, points and labels "
                 "are) as JSON to this file");
  app.add_option("--size", o.size, "window size WIDTHxHEIGHT")->default_str("1600x900");
  app.add_option("--bench-frames", o.bench_frames, "render N frames of the timeline and print frame-time statistics")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--compare", o.compare, "a second trace to compare with the first");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tile-viewer: %s (see --help)\n", e.what());
    return 2;
  }
  if (!o.layout.empty() && o.screenshot.empty()) {
    std::fprintf(stderr, "tile-viewer: --layout needs --screenshot (see --help)\n");
    return 2;
  }
  if (std::sscanf(o.size.c_str(), "%dx%d", &o.width, &o.height) != 2 || o.width < 320 || o.height < 240 ||
      o.width > 8192 || o.height > 8192) {
    std::fprintf(stderr, "tile-viewer: --size '%s' is not WIDTHxHEIGHT between 320x240 and 8192x8192 (see --help)\n",
                 o.size.c_str());
    return 2;
  }
  return std::nullopt;
}

bool have_display() {
  const char* x = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (wayland && *wayland);
}

void glfw_error(int code, const char* description) { std::fprintf(stderr, "tile-viewer: GLFW error %d: %s\n", code, description); }

// An offscreen framebuffer, so a screenshot has the size asked for whatever the
// screen or the window manager allow. GL 3.0 entry points come from GLFW.
struct OffscreenTarget {
  PFNGLGENFRAMEBUFFERSPROC gen_framebuffers = nullptr;
  PFNGLBINDFRAMEBUFFERPROC bind_framebuffer = nullptr;
  PFNGLDELETEFRAMEBUFFERSPROC delete_framebuffers = nullptr;
  PFNGLGENRENDERBUFFERSPROC gen_renderbuffers = nullptr;
  PFNGLBINDRENDERBUFFERPROC bind_renderbuffer = nullptr;
  PFNGLRENDERBUFFERSTORAGEPROC renderbuffer_storage = nullptr;
  PFNGLFRAMEBUFFERRENDERBUFFERPROC framebuffer_renderbuffer = nullptr;
  PFNGLDELETERENDERBUFFERSPROC delete_renderbuffers = nullptr;
  PFNGLCHECKFRAMEBUFFERSTATUSPROC check_status = nullptr;
  GLuint framebuffer = 0, colour = 0;

  bool create(int width, int height) {
    gen_framebuffers = reinterpret_cast<PFNGLGENFRAMEBUFFERSPROC>(glfwGetProcAddress("glGenFramebuffers"));
    bind_framebuffer = reinterpret_cast<PFNGLBINDFRAMEBUFFERPROC>(glfwGetProcAddress("glBindFramebuffer"));
    delete_framebuffers = reinterpret_cast<PFNGLDELETEFRAMEBUFFERSPROC>(glfwGetProcAddress("glDeleteFramebuffers"));
    gen_renderbuffers = reinterpret_cast<PFNGLGENRENDERBUFFERSPROC>(glfwGetProcAddress("glGenRenderbuffers"));
    bind_renderbuffer = reinterpret_cast<PFNGLBINDRENDERBUFFERPROC>(glfwGetProcAddress("glBindRenderbuffer"));
    renderbuffer_storage = reinterpret_cast<PFNGLRENDERBUFFERSTORAGEPROC>(glfwGetProcAddress("glRenderbufferStorage"));
    framebuffer_renderbuffer =
        reinterpret_cast<PFNGLFRAMEBUFFERRENDERBUFFERPROC>(glfwGetProcAddress("glFramebufferRenderbuffer"));
    delete_renderbuffers = reinterpret_cast<PFNGLDELETERENDERBUFFERSPROC>(glfwGetProcAddress("glDeleteRenderbuffers"));
    check_status = reinterpret_cast<PFNGLCHECKFRAMEBUFFERSTATUSPROC>(glfwGetProcAddress("glCheckFramebufferStatus"));
    if (!gen_framebuffers || !bind_framebuffer || !gen_renderbuffers || !bind_renderbuffer || !renderbuffer_storage ||
        !framebuffer_renderbuffer || !check_status)
      return false;
    gen_renderbuffers(1, &colour);
    bind_renderbuffer(GL_RENDERBUFFER, colour);
    renderbuffer_storage(GL_RENDERBUFFER, GL_RGBA8, width, height);
    gen_framebuffers(1, &framebuffer);
    bind_framebuffer(GL_FRAMEBUFFER, framebuffer);
    framebuffer_renderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, colour);
    return check_status(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  }
  void destroy() {
    if (bind_framebuffer) bind_framebuffer(GL_FRAMEBUFFER, 0);
    if (framebuffer && delete_framebuffers) delete_framebuffers(1, &framebuffer);
    if (colour && delete_renderbuffers) delete_renderbuffers(1, &colour);
  }
};

RgbImage read_pixels(int width, int height) {
  RgbImage img;
  img.width = width;
  img.height = height;
  std::vector<uint8_t> bottom_up(size_t(width) * size_t(height) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, bottom_up.data());
  img.rgb.resize(bottom_up.size());
  const size_t row = size_t(width) * 3;
  for (int y = 0; y < height; ++y)
    std::copy_n(bottom_up.begin() + std::ptrdiff_t(row * size_t(height - 1 - y)), row,
                img.rgb.begin() + std::ptrdiff_t(row * size_t(y)));
  return img;
}

// The trace the benchmark draws: the largest one open, else the largest in the assets.
bool load_bench_trace(Workspace& ws) {
  if (ws.traces.empty()) {
    const AssetEntry* largest = nullptr;
    for (const AssetEntry& e : ws.assets)
      if (e.kind == FileKind::trace && (!largest || e.bytes > largest->bytes)) largest = &e;
    if (largest) ws.open(largest->path);
  }
  const int index = ws.largest_trace();
  if (index < 0) return false;
  ws.select_trace(index);
  ws.compare_trace = -1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // ---- options and files (before any window: a bad argument needs no display)
  Options opt;
  if (auto code = parse_options(argc, argv, opt)) return *code;
  const bool batch = !opt.screenshot.empty() || opt.bench_frames > 0;

  Workspace ws;
  ws.assets_dir = resolve_assets_dir(opt.assets, WORKBOOK_SOURCE_ASSETS);
  ws.refresh_assets();
  ws.open_all_asset_results();
  bool files_ok = true;
  for (const std::string& f : opt.files) files_ok &= ws.open(f);
  if (!opt.compare.empty()) files_ok &= ws.open(opt.compare, /*as_comparison=*/true);
  if (batch)
    for (const std::string& e : ws.errors) std::fprintf(stderr, "tile-viewer: %s\n", e.c_str());
  if (opt.bench_frames > 0 && !load_bench_trace(ws)) {
    std::fprintf(stderr, "tile-viewer: no trace to benchmark (pass one, or put traces in %s/traces)\n",
                 ws.assets_dir.c_str());
    return 2;
  }

  // ---- window
  if (!have_display()) {
    std::fprintf(stderr, "tile-viewer: no display (set DISPLAY or run under xvfb-run)\n");
    return 2;
  }
  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr, "tile-viewer: no display (set DISPLAY or run under xvfb-run)\n");
    return 2;
  }
  const char* glsl_version = "#version 130";
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  if (!opt.screenshot.empty()) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  // ImGui needs neither depth nor stencil; without them a software renderer has less to keep per tile.
  glfwWindowHint(GLFW_DEPTH_BITS, 0);
  glfwWindowHint(GLFW_STENCIL_BITS, 0);
  GLFWwindow* window = glfwCreateWindow(opt.width, opt.height, "tile-viewer", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "tile-viewer: cannot open an OpenGL 3.0 window on this display\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(batch ? 0 : 1);  // the benchmark measures frames, not vsync

  // ---- ImGui context and backends
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // layout comes from code; nothing written beside the user's files
  ImGui::StyleColorsDark();
  ImGui::GetStyle().FrameRounding = 2.0f;
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init(glsl_version);

  // ---- state
  ui::ViewerApp app(ws, executable_dir());
  ui::PanelId panel = ws.current() ? ui::PanelId::timeline : ui::PanelId::order;
  if (!opt.panel.empty()) ui::parse_panel(opt.panel, &panel);
  if (opt.panel.empty() && !ws.current() && !ws.results.empty() && !opt.files.empty()) panel = ui::PanelId::results;
  if (opt.bench_frames > 0) panel = ui::PanelId::timeline;
  app.select(panel);
  OffscreenTarget offscreen;
  if (!opt.screenshot.empty()) {
    // A picture shows a replay part-way: done, running and waiting tiles at once.
    app.order_panel().set_replay_fraction(0.4);
    ws.trace_playback.set_position(0.4 * ws.trace_playback.length());
    if (!offscreen.create(opt.width, opt.height)) {
      std::fprintf(stderr, "tile-viewer: this OpenGL has no framebuffer objects; cannot take a screenshot\n");
      return 1;
    }
  }

  // ---- loop
  const int frames_to_settle = 4;  // ImGui sizes windows and tabs over the first frames
  const int total_frames = !opt.screenshot.empty() ? frames_to_settle : opt.bench_frames > 0 ? opt.bench_frames + frames_to_settle : -1;
  std::vector<double> frame_ms;
  size_t bars_total = 0;
  auto last = std::chrono::steady_clock::now();
  for (int frame = 0; total_frames < 0 || frame < total_frames; ++frame) {
    if (total_frames < 0 && glfwWindowShouldClose(window)) break;
    const auto start = std::chrono::steady_clock::now();
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (batch) io.DisplaySize = ImVec2(float(opt.width), float(opt.height));
    ImGui::NewFrame();
    if (opt.bench_frames > 0) app.timeline_panel().bench_step(frame);
    const float dt = batch ? 0.0f : std::chrono::duration<float>(start - last).count();
    last = start;
    app.draw(dt);
    ImGui::Render();

    int fb_w = opt.width, fb_h = opt.height;
    if (opt.screenshot.empty()) glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    const ImVec4 background = ImGui::ColorConvertU32ToFloat4(ui::kWindowBackground);
    glClearColor(background.x, background.y, background.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (opt.screenshot.empty()) glfwSwapBuffers(window);
    if (opt.bench_frames > 0) {
      glFinish();  // count the software renderer's work in the frame
      if (frame >= frames_to_settle) {
        frame_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        bars_total += app.timeline_panel().bars_drawn();
      }
    }
  }

  int exit_code = 0;
  if (!opt.screenshot.empty()) {
    const RgbImage img = read_pixels(opt.width, opt.height);
    std::string error;
    if (!write_png(opt.screenshot, img, &error)) {
      std::fprintf(stderr, "tile-viewer: %s\n", error.c_str());
      exit_code = 1;
    } else {
      std::printf("tile-viewer: wrote %s (%dx%d)\n", opt.screenshot.c_str(), opt.width, opt.height);
    }
    if (!opt.layout.empty()) {
      try {
        wb::write_text_file_atomic(opt.layout, app.layout(panel).dump(1) + "\n");
      } catch (const wb::RecordError& e) {
        std::fprintf(stderr, "tile-viewer: %s\n", e.what());
        exit_code = 1;
      }
    }
    if (!files_ok) exit_code = 1;  // the picture shows the error; the run still failed to open a file
    offscreen.destroy();
  }
  if (opt.bench_frames > 0) {
    const LoadedTrace* t = ws.current();
    std::printf("tile-viewer bench: timeline at %dx%d, renderer %s\n", opt.width, opt.height,
                reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
    std::printf("trace: %s (%zu blocks), %.0f bars drawn per frame on average\n", t->label.c_str(),
                t->trace.records.size(), frame_ms.empty() ? 0.0 : double(bars_total) / double(frame_ms.size()));
    std::printf("%s\n", format_frame_stats(frame_stats(frame_ms)).c_str());
  }

  // ---- cleanup, in reverse order
  app.release_textures();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}
