#include <gtest/gtest.h>

#include <filesystem>

#include "fail_writes.hpp"
#include "model/colors.hpp"
#include "model/frame_stats.hpp"
#include "model/png.hpp"
#include "model/run_on_gpu.hpp"

namespace wb::viewer {
namespace {

TEST(ViewerPng, WritesAndReadsBackPixels) {
  RgbImage img;
  img.width = 300;
  img.height = 200;
  img.rgb.resize(size_t(img.width) * img.height * 3);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      uint8_t* p = &img.rgb[(size_t(y) * img.width + x) * 3];
      p[0] = uint8_t(x);
      p[1] = uint8_t(y);
      p[2] = uint8_t(x ^ y);
    }
  const std::string path = (std::filesystem::temp_directory_path() / "viewer-png-test.png").string();
  std::string error;
  ASSERT_TRUE(write_png(path, img, &error)) << error;
  RgbImage back;
  ASSERT_TRUE(read_png(path, &back, &error)) << error;
  EXPECT_EQ(back.width, img.width);
  EXPECT_EQ(back.height, img.height);
  EXPECT_EQ(back.rgb, img.rgb);
  std::filesystem::remove(path);
}

// A screenshot that cannot be written whole (the disk full: a file-size limit in
// a child process) leaves the picture it would have replaced as it was, and no
// partial or temporary file beside it; so does one the file system refuses.
TEST(ViewerPng, AFailedWriteLeavesTheOldPictureWhole) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("viewer-png-nospace-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "shot.png").string();
  RgbImage small{8, 8, std::vector<uint8_t>(8 * 8 * 3, 40)};
  std::string error;
  ASSERT_TRUE(write_png(path, small, &error)) << error;
  RgbImage big{400, 300, std::vector<uint8_t>(400 * 300 * 3)};
  uint32_t noise = 1;  // pixels that do not compress below the limit
  for (uint8_t& v : big.rgb) v = uint8_t((noise = noise * 1664525u + 1013904223u) >> 24);
  EXPECT_EQ(wb::testing::run_with_file_size_limit(
                4096, [&] { std::string why; return write_png(path, big, &why) || why.empty(); }),
            1);
  RgbImage back;
  ASSERT_TRUE(read_png(path, &back, &error)) << error;
  EXPECT_EQ(back.rgb, small.rgb);
  EXPECT_FALSE(write_png("/proc/self/shot.png", big, &error));
  EXPECT_FALSE(error.empty());
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

TEST(ViewerColors, LaunchOrderRampRunsFromFirstToLastColour) {
  EXPECT_EQ(launch_order_rgb(0, 100), (Rgb{68, 1, 84}));
  EXPECT_EQ(launch_order_rgb(99, 100), (Rgb{253, 231, 37}));
  EXPECT_EQ(launch_order_rgb(0, 1), (Rgb{68, 1, 84}));
}

TEST(ViewerFrameStats, MedianAndP95) {
  std::vector<double> ms;
  for (int i = 1; i <= 100; ++i) ms.push_back(i);
  const FrameStats s = frame_stats(ms);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 100);
  EXPECT_NEAR(s.median_ms, 50.5, 0.5);
  EXPECT_NEAR(s.p95_ms, 95, 1);
}

TEST(ViewerRunOnGpu, MissingLessonBinaryIsAReasonNotACrash) {
  GpuRunRequest r;
  r.bin_dir = std::filesystem::temp_directory_path().string();
  r.lesson = "lesson01_naive_not_here";
  r.variant = "coalesced";
  EXPECT_NE(why_cannot_run(r).find("not built"), std::string::npos);
  std::string error;
  EXPECT_FALSE(run_on_gpu(r, &error).has_value());
  EXPECT_FALSE(error.empty());
  const auto cmd = gpu_run_command(r, "/tmp/t.json");
  ASSERT_EQ(cmd.size(), 13u);
  EXPECT_EQ(cmd[1], "--variant");
  EXPECT_EQ(cmd[10], "/tmp/t.json");
}

}  // namespace
}  // namespace wb::viewer
