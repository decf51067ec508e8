// Runs tile-viewer --screenshot under Xvfb and checks the picture: the size
// asked for, not blank, and the launch-order colours where the tiles are. The
// viewer's --layout says what each panel drew and where (the problem it shows,
// its grid, labels and points); the colours come from the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "model/colors.hpp"
#include "model/png.hpp"
#include "models/roofline.hpp"
#include "records/records.hpp"
#include "schedule/tile_order.hpp"
#include "synthetic_trace.hpp"

namespace wb::viewer {
namespace {

namespace fs = std::filesystem;

bool have_xvfb_run() { return std::system("command -v xvfb-run >/dev/null 2>&1") == 0; }

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  const fs::path log = fs::temp_directory_path() / ("viewer-shot-" + std::to_string(::getpid()) + ".log");
  const int status = std::system((command + " >" + log.string() + " 2>&1").c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(log);
  std::stringstream s;
  s << f.rdbuf();
  r.output = s.str();
  fs::remove(log);
  return r;
}

std::string xvfb(const std::string& args) {
  return std::string("xvfb-run -a -s '-screen 0 1920x1080x24' ") + TILE_VIEWER_PATH + " " + args;
}

bool near(const uint8_t* p, Rgb c, int tolerance = 3) {
  return std::abs(p[0] - c.r) <= tolerance && std::abs(p[1] - c.g) <= tolerance && std::abs(p[2] - c.b) <= tolerance;
}

std::string rgb_text(const uint8_t* p) {
  return std::to_string(p[0]) + "," + std::to_string(p[1]) + "," + std::to_string(p[2]);
}

int distinct_colours(const RgbImage& img) {
  std::set<uint32_t> seen;
  for (size_t i = 0; i + 2 < img.rgb.size(); i += 3 * 7)
    seen.insert(uint32_t(img.rgb[i]) << 16 | uint32_t(img.rgb[i + 1]) << 8 | img.rgb[i + 2]);
  return int(seen.size());
}

class ViewerScreenshot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_xvfb_run()) GTEST_SKIP() << "xvfb-run not found (install xvfb to run the screenshot tests)";
    dir_ = fs::temp_directory_path() / ("viewer-shot-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

nlohmann::json read_layout(const fs::path& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
}

TEST_F(ViewerScreenshot, TileOrderPanelShowsLaunchColours) {
  const std::string png = (dir_ / "order.png").string();
  const fs::path layout = dir_ / "order.layout.json";
  const CommandResult r = run(xvfb("--assets " + dir_.string() + " --panel order --size 1280x720 --screenshot " + png +
                                   " --layout " + layout.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "tile-viewer: wrote " + png + " (1280x720)\n") << "a screenshot prints one line";

  const nlohmann::json j = read_layout(layout);
  ASSERT_TRUE(j.is_object()) << "no layout written";
  EXPECT_EQ(j["source"], "model");
  const int x = j["grid"]["x"], y = j["grid"]["y"], cell = j["grid"]["cell"];
  const int tiles_m = j["grid"]["tiles_m"], tiles_n = j["grid"]["tiles_n"], group_m = j["group_m"];
  const int64_t launched = j["grid"]["launched"];
  TileOrder order;
  ASSERT_TRUE(parse_tile_order(j["order"].get<std::string>().c_str(), &order)) << j["order"];
  ASSERT_GE(cell, 8);

  RgbImage img;
  std::string error;
  ASSERT_TRUE(read_png(png, &img, &error)) << error;
  EXPECT_EQ(img.width, 1280);
  EXPECT_EQ(img.height, 720);
  EXPECT_GT(distinct_colours(img), 20) << "the picture looks blank";

  const int tiles = tiles_m * tiles_n;
  auto pixel_of_pid = [&](int pid) {
    const TileCoord t = tile_of(order, pid, tiles_m, tiles_n, group_m);
    // Near a cell's top-left corner, inside it and clear of the centred label.
    return img.at(x + t.n * cell + 3, y + t.m * cell + 3);
  };
  const uint8_t* first = pixel_of_pid(0);
  EXPECT_TRUE(near(first, launch_order_rgb(0, tiles))) << "pid 0 is " << rgb_text(first);
  const uint8_t* done = pixel_of_pid(int(launched / 4));
  EXPECT_TRUE(near(done, launch_order_rgb(launched / 4, tiles))) << "pid " << launched / 4 << " is " << rgb_text(done);
  const uint8_t* last = pixel_of_pid(tiles - 1);
  EXPECT_TRUE(near(last, kPendingTileRgb)) << "the last pid is not launched yet but is " << rgb_text(last);
}

// Traces like the recorded ones, written by the test: 8192^3 in row-major and
// grouped order (128 x 256 tiles), and 3072 x 3072 x 4096 on a 114-SM GPU with two blocks per SM.
struct FollowFiles {
  std::string row, grouped, wide;
};

FollowFiles write_follow_traces(const fs::path& dir) {
  FollowFiles f;
  testing::SyntheticTraceSpec s;
  s.m = s.n = s.k = 8192;
  s.block_m = 128;
  s.block_n = 256;
  s.order = TileOrder::row_major;
  s.variant = "row_major";
  f.row = (dir / "row_major.8192.json.gz").string();
  write_trace(f.row, testing::synthetic_trace(s));
  s.order = TileOrder::grouped;
  s.group_m = 8;
  s.variant = "grouped8";
  f.grouped = (dir / "grouped8.8192.json.gz").string();
  write_trace(f.grouped, testing::synthetic_trace(s));
  s.m = s.n = 3072;
  s.k = 4096;
  s.sms = 114;
  s.blocks_per_sm = 2;
  s.group_m = 16;
  s.variant = "wide";
  f.wide = (dir / "wide.3072x3072x4096.json").string();
  write_trace(f.wide, testing::synthetic_trace(s));
  return f;
}

TEST_F(ViewerScreenshot, ModelPanelsFollowTheLoadedTrace) {
  const FollowFiles f = write_follow_traces(dir_);
  auto shot = [&](const std::string& files, const char* panel, const std::string& name) {
    const std::string png = (dir_ / (name + ".png")).string();
    const fs::path layout = dir_ / (name + ".json");
    const CommandResult r = run(xvfb(files + " --assets " + dir_.string() + " --panel " + panel +
                                     " --size 1280x720 --screenshot " + png + " --layout " + layout.string()));
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.output;
    return read_layout(layout);
  };

  // Tile order replays the 8192^3 row-major trace: its grid, its order, its recorded times.
  const nlohmann::json order = shot(f.row, "order", "order");
  EXPECT_EQ(order["source"], "trace");
  EXPECT_EQ(order["m"], 8192);
  EXPECT_EQ(order["order"], "row_major");
  EXPECT_EQ(order["grid"]["tiles_m"], 64);
  EXPECT_EQ(order["grid"]["tiles_n"], 32);
  EXPECT_EQ(order["sms"], 132);
  EXPECT_GT(order["grid"]["launched"].get<int>(), 0);
  EXPECT_LT(order["grid"]["launched"].get<int>(), 64 * 32) << "the picture is taken part-way through the run";

  // L2 reuse: both 8192^3 traces, each its own order, and a picture unlike the default one.
  const nlohmann::json l2 = shot(f.row + " --compare " + f.grouped, "l2", "l2");
  EXPECT_EQ(l2["source"], "trace");
  EXPECT_EQ(l2["m"], 8192);
  EXPECT_EQ(l2["block_n"], 256);
  EXPECT_EQ(l2["order_a"], "row_major");
  EXPECT_EQ(l2["order_b"], "grouped");
  EXPECT_EQ(l2["group_m_b"], 8);
  EXPECT_EQ(l2["gpu"], "Synthetic H100 (not a recording)");
  const nlohmann::json l2_default = shot("", "l2", "l2_default");
  EXPECT_EQ(l2_default["source"], "model");
  RgbImage traced, plain;
  std::string error;
  ASSERT_TRUE(read_png((dir_ / "l2.png").string(), &traced, &error)) << error;
  ASSERT_TRUE(read_png((dir_ / "l2_default.png").string(), &plain, &error)) << error;
  EXPECT_NE(traced.rgb, plain.rgb) << "with traces loaded the L2 panel draws what it drew without them";

  // Waves: the 3072 x 3072 x 4096 trace's 24 x 12 tiles on its 114 SMs x 2 blocks.
  const nlohmann::json waves = shot(f.wide, "waves", "waves");
  EXPECT_EQ(waves["source"], "trace");
  EXPECT_EQ(waves["tiles"], 288);
  EXPECT_EQ(waves["sms"], 114);
  EXPECT_EQ(waves["blocks_per_sm"], 2);
  EXPECT_EQ(waves["waves"], 2);
}

TEST_F(ViewerScreenshot, TimelineLabelsStayInside) {
  const FollowFiles f = write_follow_traces(dir_);
  const fs::path layout = dir_ / "timeline.json";
  for (const char* size : {"1600x900", "1000x640"}) {
    const CommandResult r = run(xvfb(f.row + " --compare " + f.grouped + " --assets " + dir_.string() +
                                     " --panel timeline --size " + size + " --screenshot " +
                                     (dir_ / "timeline.png").string() + " --layout " + layout.string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = read_layout(layout);
    ASSERT_EQ(j["traces"].size(), 2u) << size;
    for (const nlohmann::json& t : j["traces"]) {
      const float right = t["area"][2], bottom = t["area"][3];
      EXPECT_GE(t["time_labels"].size(), 3u) << size;
      for (const nlohmann::json& l : t["time_labels"]) EXPECT_LE(l[2].get<float>(), right) << size << ": a time label runs off";
      EXPECT_GE(t["sm_labels"].size(), 5u) << size;
      for (const nlohmann::json& l : t["sm_labels"]) EXPECT_LE(l[3].get<float>(), bottom) << size << ": an SM label is cut";
    }
  }
}

// The recorded results in the repository's assets: lesson 01 counts the bytes
// its threads request; on the roofline every point must sit under the roof and
// every label inside the plot, none over another.
TEST_F(ViewerScreenshot, RooflinePointsUnderTheRoofAndLabelsApart) {
  const fs::path layout = dir_ / "results.json";
  for (const char* size : {"1600x900", "1100x700"}) {
    const CommandResult r = run(xvfb(std::string("--assets ") + SOURCE_ASSETS_PATH + " --panel results --size " + size +
                                     " --screenshot " + (dir_ / "results.png").string() + " --layout " + layout.string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = read_layout(layout);
    ASSERT_TRUE(j.contains("points")) << "no results in " << SOURCE_ASSETS_PATH;
    const double peak = j["peak_tflops"], dram = j["dram_gbps"];
    const float x0 = j["plot"][0], y0 = j["plot"][1], x1 = j["plot"][2], y1 = j["plot"][3];
    std::vector<std::array<float, 4>> labels;
    if (j.contains("ridge_label")) labels.push_back(j["ridge_label"].get<std::array<float, 4>>());
    bool lesson01 = false;
    for (const nlohmann::json& p : j["points"]) {
      lesson01 |= p["lesson"] == "lesson01_naive";
      EXPECT_LE(p["tflops"].get<double>(), roofline_tflops(peak, dram, p["intensity"].get<double>()) * 1.0001)
          << p["lesson"] << " " << p["variant"] << " sits above the roof";
      if (p.contains("label")) labels.push_back(p["label"].get<std::array<float, 4>>());
    }
    EXPECT_TRUE(lesson01) << "lesson 01's points are on the roofline";
    EXPECT_GE(labels.size(), 8u) << size;
    for (size_t i = 0; i < labels.size(); ++i) {
      const auto& a = labels[i];
      EXPECT_TRUE(a[0] >= x0 && a[1] >= y0 && a[2] <= x1 && a[3] <= y1) << size << ": label " << i << " leaves the plot";
      for (size_t k = 0; k < i; ++k) {
        const auto& b = labels[k];
        EXPECT_FALSE(a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]) << size << ": labels " << i << " and " << k << " overlap";
      }
    }
  }
}

TEST_F(ViewerScreenshot, EveryPanelRendersWithSyntheticFiles) {
  ASSERT_EQ(run(std::string(SYNTHETIC_FILES_PATH) + " " + dir_.string()).exit_code, 0);
  const std::string row = (dir_ / "traces/synthetic/lesson03_grouped.row_major.json").string();
  const std::string grouped = (dir_ / "traces/synthetic/lesson03_grouped.grouped.json").string();
  for (const char* panel : {"order", "l2", "waves", "timeline", "results"}) {
    const std::string png = (dir_ / (std::string(panel) + ".png")).string();
    const CommandResult r = run(xvfb(row + " --compare " + grouped + " --assets " + dir_.string() + " --panel " + panel +
                           " --size 960x600 --screenshot " + png));
    ASSERT_EQ(r.exit_code, 0) << panel << ": " << r.output;
    RgbImage img;
    std::string error;
    ASSERT_TRUE(read_png(png, &img, &error)) << error;
    EXPECT_GT(distinct_colours(img), 20) << panel << " looks blank";
  }
}

TEST_F(ViewerScreenshot, TimelineBarsShowLaunchColours) {
  // The largest trace: its bars share SM rows, each in the colour of its first block's launch order.
  ASSERT_EQ(run(std::string(SYNTHETIC_FILES_PATH) + " " + dir_.string()).exit_code, 0);
  const std::string trace = (dir_ / "traces/synthetic/lesson01_naive.coalesced.json").string();
  const std::string png = (dir_ / "timeline.png").string();
  const CommandResult r = run(xvfb(trace + " --assets " + dir_.string() + " --panel timeline --size 960x600 --screenshot " + png));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  RgbImage img;
  std::string error;
  ASSERT_TRUE(read_png(png, &img, &error)) << error;

  const int64_t units = int64_t(read_trace(trace).records.size());
  std::unordered_map<uint32_t, int64_t> unit_of_colour;  // the first unit with each colour
  for (int64_t u = units - 1; u >= 0; --u) {
    const Rgb c = launch_order_rgb(u, units);
    unit_of_colour[uint32_t(c.r) << 16 | uint32_t(c.g) << 8 | c.b] = u;
  }
  int64_t bar_pixels = 0, first_unit = units, last_unit = -1;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      const uint8_t* p = img.at(x, y);
      const auto it = unit_of_colour.find(uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]);
      if (it == unit_of_colour.end()) continue;
      ++bar_pixels;
      first_unit = std::min(first_unit, it->second);
      last_unit = std::max(last_unit, it->second);
    }
  // Bars fill most of the area right of the sidebar and the SM labels: over a quarter of the picture.
  EXPECT_GT(bar_pixels, int64_t(img.width) * img.height / 4) << "bars in launch colours: " << bar_pixels << " pixels";
  EXPECT_LT(first_unit, units / 10) << "the first blocks' colours are missing";
  EXPECT_GT(last_unit, units * 9 / 10) << "the last blocks' colours are missing";
}

TEST_F(ViewerScreenshot, BadFileIsAnErrorLineAndNonZeroExit) {
  const fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << "{\"schema\": \"matmul-workbook/trace\", \"version\": 1}";
  const CommandResult r = run(xvfb(bad.string() + " --screenshot " + (dir_ / "x.png").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad.json"), std::string::npos) << r.output;
  const CommandResult missing = run(xvfb((dir_ / "missing.json").string() + " --screenshot " + (dir_ / "y.png").string()));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("missing.json"), std::string::npos) << missing.output;
}

TEST(ViewerCommandLine, NoDisplayIsOneLineAndExitTwo) {
  const CommandResult r = run(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + TILE_VIEWER_PATH + " --screenshot /tmp/never.png");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "tile-viewer: no display (set DISPLAY or run under xvfb-run)\n");
}

TEST(ViewerCommandLine, UnknownFlagIsOneLineAndExitTwo) {
  const CommandResult r = run(std::string(TILE_VIEWER_PATH) + " --no-such-flag");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

}  // namespace
}  // namespace wb::viewer
