// Runs tile-viewer --screenshot under Xvfb and checks the picture: the size
// asked for, not blank, and the launch-order colours where the tiles are.
// The viewer prints where it drew the tile grid; the colours come from the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include "model/colors.hpp"
#include "model/png.hpp"
#include "records/records.hpp"
#include "schedule/tile_order.hpp"

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

TEST_F(ViewerScreenshot, TileOrderPanelShowsLaunchColours) {
  const std::string png = (dir_ / "order.png").string();
  const CommandResult r = run(xvfb("--assets " + dir_.string() + " --panel order --size 1280x720 --screenshot " + png));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // "tile grid: x y cell tiles_m tiles_n order group_m launched"
  const auto at = r.output.find("tile grid: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  std::istringstream line(r.output.substr(at + 11));
  int x = 0, y = 0, cell = 0, tiles_m = 0, tiles_n = 0, group_m = 0, launched = 0;
  std::string order_name;
  line >> x >> y >> cell >> tiles_m >> tiles_n >> order_name >> group_m >> launched;
  ASSERT_TRUE(line) << r.output;
  TileOrder order;
  ASSERT_TRUE(parse_tile_order(order_name.c_str(), &order)) << order_name;
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
  const uint8_t* done = pixel_of_pid(launched / 4);
  EXPECT_TRUE(near(done, launch_order_rgb(launched / 4, tiles))) << "pid " << launched / 4 << " is " << rgb_text(done);
  const uint8_t* last = pixel_of_pid(tiles - 1);
  EXPECT_TRUE(near(last, kPendingTileRgb)) << "the last pid is not launched yet but is " << rgb_text(last);
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
