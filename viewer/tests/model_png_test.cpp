#include <gtest/gtest.h>

#include <filesystem>

#include "model/colors.hpp"
#include "model/frame_stats.hpp"
#include "model/png.hpp"
#include "model/run_on_gpu.hpp"

namespace wb::viewer {
namespace {

TEST(ViewerPng, WritesAndReadsBackPixels) {
  RgbImage img;
  img.width = 300;  // rows of 900 bytes: several stored blocks for the whole image
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
