// "Run on this GPU" end to end: runs lesson01_naive with --trace through the
// model and checks the trace it loads. Built only with CUDA; skips visibly
// without a device.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "model/run_on_gpu.hpp"

namespace wb::viewer {
namespace {

bool cuda_device_present() {
  std::FILE* p = ::popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return false;
  char line[256];
  bool found = false;
  while (std::fgets(line, sizeof line, p))
    if (std::string(line).rfind("GPU ", 0) == 0) found = true;
  return ::pclose(p) == 0 && found;
}

TEST(ViewerGpu, RunOnThisGpuLoadsAFreshTrace) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  GpuRunRequest r;
  r.bin_dir = LESSON_BIN_DIR;
  r.lesson = "lesson01_naive";
  r.variant = "coalesced";
  r.m = r.n = r.k = 512;
  if (!why_cannot_run(r).empty()) GTEST_SKIP() << why_cannot_run(r);
  std::string error;
  const auto trace = run_on_gpu(r, &error);
  ASSERT_TRUE(trace.has_value()) << error;
  EXPECT_EQ(trace->header.lesson, "lesson01_naive");
  EXPECT_EQ(trace->header.m, 512);
  EXPECT_FALSE(trace->records.empty());
  EXPECT_EQ(int64_t(trace->records.size()), trace->kernel.work_units);
}

}  // namespace
}  // namespace wb::viewer
