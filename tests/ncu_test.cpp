// The --ncu mode's parsing of Nsight Compute's CSV, on the shape of what ncu
// prints (the profiled program's own output mixed in), and its failures.
#include <gtest/gtest.h>

#include <string>

#include "harness/ncu.hpp"

namespace {

using namespace wb;

const char* kHeader =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
    "\"Grid Size\",\"Device\",\"CC\",\"dram__bytes_read.sum\",\"lts__t_sector_hit_rate.pct\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"byte\",\"%\"\n";

TEST(Ncu, ParsesKernelRowsAmongTheProgramsOutput) {
  const std::string text = std::string("==PROF== Connected to process 42 (lesson03_grouped)\n") +
                           "GPU: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)\n" + kHeader +
                           "\"0\",\"42\",\"lesson03_grouped\",\"host\",\"void wb::gemm<(wb::Activation)0>(int, int)\","
                           "\"1\",\"13\",\"(256, 1, 1)\",\"(512, 1, 1)\",\"0\",\"9.0\",\"170,982,400\",\"77.26\"\n"
                           "==PROF== Disconnected from process 42\n";
  NcuMetrics m;
  std::string why;
  ASSERT_TRUE(parse_ncu_csv(text, &m, &why)) << why;
  EXPECT_EQ(m.kernels, 1);
  EXPECT_DOUBLE_EQ(m.dram_bytes_read, 170982400.0);
  ASSERT_EQ(m.l2_hit_pct.size(), 1u);
  EXPECT_DOUBLE_EQ(m.l2_hit_pct[0], 77.26);
  EXPECT_EQ(format_ncu_metrics(m), "0.171 GB from DRAM, hit rate 77.3%");
}

TEST(Ncu, SumsBytesOverSeveralKernels) {
  const std::string text = std::string(kHeader) +
                           "\"0\",\"1\",\"p\",\"h\",\"gemm\",\"1\",\"7\",\"(256, 1, 1)\",\"(512, 1, 1)\",\"0\",\"9.0\","
                           "\"1000000000\",\"80\"\n"
                           "\"1\",\"1\",\"p\",\"h\",\"gelu\",\"1\",\"7\",\"(256, 1, 1)\",\"(512, 1, 1)\",\"0\",\"9.0\","
                           "\"500000000\",\"10.5\"\n";
  NcuMetrics m;
  std::string why;
  ASSERT_TRUE(parse_ncu_csv(text, &m, &why)) << why;
  EXPECT_EQ(m.kernels, 2);
  EXPECT_DOUBLE_EQ(m.dram_bytes_read, 1.5e9);
  EXPECT_EQ(format_ncu_metrics(m), "1.500 GB from DRAM, hit rate 80.0% / 10.5% (2 kernels)");
}

TEST(Ncu, SaysWhyWhenThereIsNothingToRead) {
  NcuMetrics m;
  std::string why;
  EXPECT_FALSE(parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n", &m, &why));
  EXPECT_NE(why.find("no metrics"), std::string::npos) << why;
  EXPECT_FALSE(parse_ncu_csv(kHeader, &m, &why));
  EXPECT_NE(why.find("no kernel"), std::string::npos) << why;
  EXPECT_FALSE(parse_ncu_csv("\"ID\",\"dram__bytes_read.sum\"\n", &m, &why));
  EXPECT_NE(why.find("lacks"), std::string::npos) << why;
  const std::string bad = std::string(kHeader) + "\"0\",\"1\",\"p\",\"h\",\"k\",\"1\",\"7\",\"b\",\"g\",\"0\",\"9.0\",\"n/a\",\"5\"\n";
  EXPECT_FALSE(parse_ncu_csv(bad, &m, &why));
  EXPECT_NE(why.find("without numbers"), std::string::npos) << why;
}

TEST(Ncu, RunCaptureReportsExitStatusAndOutput) {
  std::string out;
  EXPECT_EQ(run_capture({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, &out), 3);
  EXPECT_NE(out.find("hello"), std::string::npos);
  EXPECT_NE(out.find("oops"), std::string::npos);
  EXPECT_EQ(last_line(out), "oops");
  EXPECT_NE(run_capture({"/no/such/program"}, &out), 0);
}

}  // namespace
