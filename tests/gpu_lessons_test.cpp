// GPU tests: every variant of every built lesson against cuBLAS and the fp64
// reference, through the lesson binaries themselves (the same code path a user
// runs), on shapes with tails, M = 1 and large ones; and the per-block traces.
// Each test skips, saying why, when there is no CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "run_binary.hpp"
#include "no_device.hpp"
#include <tuple>
#include <vector>

#include "harness/catalog.hpp"
#include "harness/options.hpp"
#include "records/records.hpp"
#include "schedule/tile_order.hpp"

namespace {

namespace fs = std::filesystem;
using namespace wb;

using wb::testing::no_device_reason;

bool built(const std::string& lesson) { return fs::exists(std::string(WORKBOOK_BIN_DIR) + "/" + lesson); }

using wb::testing::Ran;

Ran run(const std::string& args) { return wb::testing::run_binary(args); }

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("wb-gpu-tests-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// Every lesson of the catalogue (lessons/catalog.json).
const std::vector<std::string> kLessons = lesson_ids();

struct Shape {
  int m, n, k;
};
// How test names and failures print a shape: "127x257x129", not its bytes.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.m << "x" << s.n << "x" << s.k; }
// 2300 x 4296 (18 x 17 tiles of 128 x 256, tails in both: two whole waves on
// 132 SMs and a third 32% full) makes lesson 04's Stream-K step share the last
// 42 tiles along K: with K = 1000 each block takes about 5 k tiles of them,
// with K = 128 (2 k tiles per tile) some blocks none.
const Shape kShapes[] = {{1, 1, 1},          {127, 257, 129},   {1, 4096, 4096},  {1000, 1000, 1000},
                         {2300, 4296, 1000}, {2300, 4296, 128}, {4096, 4096, 4096}};

using Param = std::tuple<std::string, Shape>;

// The shape a lesson runs for a shape of the lists: lesson 07's K must be a
// multiple of its group size (128 by default), so K is rounded up to one.
Shape shape_for(const std::string& lesson, Shape s) {
  if (lesson == "lesson07_w4a16") s.k = (s.k + 127) / 128 * 128;
  return s;
}

class EveryVariant : public ::testing::TestWithParam<Param> {};

TEST_P(EveryVariant, MatchesCublasAndFp64) {
  const auto& [lesson, listed] = GetParam();
  const Shape s = shape_for(lesson, listed);
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built(lesson)) GTEST_SKIP() << lesson << " is not in this build";
  if (lesson == "lesson08_sparse_ffn") GTEST_SKIP() << "N and K are set by --model: SparseFfn.* runs lesson 08";
  const std::string shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  const fs::path json = scratch(lesson + "-" + shape + ".json");
  const Ran r = run(lesson + " --m " + std::to_string(s.m) + " --n " + std::to_string(s.n) + " --k " +
                    std::to_string(s.k) + " --reps 1 --rounds 1 --seed 7 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  EXPECT_EQ(res.header.m, s.m);
  int checked = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference) continue;
    if (v.skipped) {
      EXPECT_FALSE(v.skip_reason.empty()) << v.name;
      continue;
    }
    EXPECT_TRUE(v.checked) << v.name;
    EXPECT_TRUE(v.passed) << lesson << " " << v.name << " at " << shape << ": rel_err " << v.rel_err
                          << " (cuBLAS), " << v.rel_err_fp64 << " (fp64)";
    EXPECT_LT(v.rel_err, 5e-3) << v.name;
    EXPECT_LT(v.rel_err_fp64, 5e-3) << v.name;
    EXPECT_GT(v.median_ms, 0) << v.name;
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no variant ran";
  fs::remove(json);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [lesson, s] = info.param;
  return lesson + "_" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

INSTANTIATE_TEST_SUITE_P(Lessons, EveryVariant,
                         ::testing::Combine(::testing::ValuesIn(kLessons), ::testing::ValuesIn(kShapes)), param_name);

// Traces: every tile exactly once, SM ids below the SM count, start <= end, and a
// Perfetto export beside each trace.
class Traces : public ::testing::TestWithParam<Param> {};

TEST_P(Traces, CoverEveryTileOnce) {
  const auto& [lesson, listed] = GetParam();
  const Shape s = shape_for(lesson, listed);
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built(lesson)) GTEST_SKIP() << lesson << " is not in this build";
  if (lesson == "lesson05_backward") GTEST_SKIP() << "two products per launch: Backward.TracesStackBothProducts";
  if (lesson == "lesson08_sparse_ffn") GTEST_SKIP() << "N and K are set by --model: SparseFfn.TracesCoverBothProducts";
  const Ran list = run(lesson + " --list");
  ASSERT_EQ(list.code, 0) << list.out;
  const fs::path base = scratch(lesson + "-trace.json");
  const Ran r = run(lesson + " --m " + std::to_string(s.m) + " --n " + std::to_string(s.n) + " --k " +
                    std::to_string(s.k) + " --reps 1 --rounds 1 --trace " + base.string());
  ASSERT_EQ(r.code, 0) << r.out;
  int traces = 0;
  for (const auto& entry : fs::directory_iterator(base.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(lesson + "-trace.", 0) != 0 || name.find(".perfetto.") != std::string::npos) continue;
    const Trace t = read_trace(entry.path().string());  // validates SM ids, start <= end, tile bounds
    ++traces;
    const KernelConfig& k = t.kernel;
    EXPECT_EQ(int64_t(t.records.size()), k.work_units) << name;
    EXPECT_EQ(k.tiles_m, ceil_div(s.m, k.block_m)) << name;
    EXPECT_EQ(k.tiles_n, ceil_div(s.n, k.block_n)) << name;
    EXPECT_GT(k.blocks_per_sm, 0) << name;
    // Each (tile, k range) once; together the k ranges of a tile cover [0, K).
    std::vector<int64_t> covered(size_t(k.tiles_m) * k.tiles_n, 0);
    std::set<std::tuple<int, int, int>> seen;
    for (const TraceRecord& rec : t.records) {
      EXPECT_TRUE(seen.insert({rec.tile_m, rec.tile_n, rec.k_begin}).second)
          << name << ": tile (" << rec.tile_m << "," << rec.tile_n << ") k " << rec.k_begin << " recorded twice";
      covered[size_t(rec.tile_m) * k.tiles_n + rec.tile_n] += rec.k_end - rec.k_begin;
      EXPECT_LT(rec.sm, t.header.gpu.sm_count);
      EXPECT_LE(rec.start_ns, rec.end_ns);
    }
    for (size_t i = 0; i < covered.size(); ++i)
      EXPECT_EQ(covered[i], s.k) << name << ": tile " << i << " covers " << covered[i] << " of K";
    const std::string perfetto = perfetto_path_for(entry.path().string());
    EXPECT_TRUE(fs::exists(perfetto)) << perfetto;
  }
  EXPECT_GT(traces, 0) << "no trace written: " << r.out;
  fs::remove_all(base.parent_path());
}

const Shape kTraceShapes[] = {{127, 257, 129}, {1000, 1000, 1000}, {2300, 4296, 1000}};

INSTANTIATE_TEST_SUITE_P(Lessons, Traces,
                         ::testing::Combine(::testing::ValuesIn(kLessons), ::testing::ValuesIn(kTraceShapes)),
                         param_name);

// Lesson 05 on every activation, with and without a bias, on tails, M = 1
// and N, K that TMA cannot describe (step 1's kernel then runs).
struct BackwardCase {
  const char* act;
  const char* bias;
  Shape s;
};
class Backward : public ::testing::TestWithParam<BackwardCase> {};

TEST_P(Backward, EveryVariantMatchesCublasAndFp64) {
  const BackwardCase c = GetParam();
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson05_backward")) GTEST_SKIP() << "lesson05_backward is not in this build";
  const fs::path json = scratch("backward.json");
  const Ran r = run("lesson05_backward --act " + std::string(c.act) + " --bias " + c.bias + " --m " +
                    std::to_string(c.s.m) + " --n " + std::to_string(c.s.n) + " --k " + std::to_string(c.s.k) +
                    " --reps 1 --rounds 1 --seed 11 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  EXPECT_EQ(res.header.shape_params.at("act").text, c.act);
  int checked = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference || v.skipped) continue;
    EXPECT_TRUE(v.passed) << v.name << ": rel_err " << v.rel_err << " (cuBLAS), " << v.rel_err_fp64 << " (fp64)";
    EXPECT_EQ(v.outputs.size(), std::string(c.bias) == "yes" ? 3u : 2u) << v.name;
    ++checked;
  }
  // notebook, tma_layouts, one_launch, fused, pass_inside, cublaslt, products_only (a bound, checked like the
  // rest); and for ReLU relu_mask (act' from the saved bitmask)
  EXPECT_EQ(checked, std::string(c.act) == "relu" ? 8 : 7) << r.out;
  for (const VariantResult& v : res.variants) EXPECT_EQ(v.bound, v.name == "products_only") << v.name;
  for (const VariantResult& v : res.variants)
    if (v.name == "relu_mask" && std::string(c.act) != "relu")
      EXPECT_NE(v.skip_reason.find("need P itself"), std::string::npos) << v.skip_reason;
  fs::remove(json);
}

const BackwardCase kBackwardCases[] = {
    {"relu", "yes", {127, 257, 129}}, {"gelu", "yes", {127, 256, 136}}, {"silu", "no", {1, 512, 264}},
    {"gelu", "yes", {1, 4096, 4096}}, {"relu", "no", {1000, 1000, 1000}}, {"silu", "yes", {2300, 4296, 1000}},
    {"gelu", "no", {513, 130, 8}},    {"relu", "yes", {4096, 4096, 4096}},
    // Step 6's pass warps (not only the consumers' first chunks) on a partial group of bands (9
    // bands, the last of 76 rows) and a partial chunk (8 columns).
    {"gelu", "yes", {1100, 1288, 520}},
};
INSTANTIATE_TEST_SUITE_P(Lesson05, Backward, ::testing::ValuesIn(kBackwardCases),
                         [](const ::testing::TestParamInfo<BackwardCase>& info) {
                           const BackwardCase& c = info.param;
                           return std::string(c.act) + "_bias_" + c.bias + "_" + std::to_string(c.s.m) + "x" +
                                  std::to_string(c.s.n) + "x" + std::to_string(c.s.k);
                         });

// A training step (--part train): each step's forward (Z = act(X W + b), P
// saved, or for ReLU only Z) and then its backward; Z, dX, dW and db checked
// against the framework's sequence and fp64 computed from X, W and b alone.
class BackwardTrain : public ::testing::TestWithParam<BackwardCase> {};

TEST_P(BackwardTrain, ForwardAndBackwardMatchCublasAndFp64) {
  const BackwardCase c = GetParam();
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson05_backward")) GTEST_SKIP() << "lesson05_backward is not in this build";
  const fs::path json = scratch("backward-train.json");
  const Ran r = run("lesson05_backward --part train --act " + std::string(c.act) + " --bias " + c.bias + " --m " +
                    std::to_string(c.s.m) + " --n " + std::to_string(c.s.n) + " --k " + std::to_string(c.s.k) +
                    " --reps 1 --rounds 1 --seed 13 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  EXPECT_EQ(res.header.shape_params.at("part").text, "train");
  const bool bias = std::string(c.bias) == "yes";
  int checked = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference) continue;
    if (v.skipped) {
      EXPECT_TRUE(v.name == "relu_mask" || v.name == "dz_epilogue" || v.name == "products_only") << v.name;
      continue;
    }
    EXPECT_TRUE(v.passed) << v.name << ": rel_err " << v.rel_err << " (cuBLAS), " << v.rel_err_fp64 << " (fp64)";
    ASSERT_EQ(v.outputs.size(), bias ? 4u : 3u) << v.name;
    EXPECT_EQ(v.outputs[0].name, "Z") << v.name;
    for (const OutputCheck& o : v.outputs) EXPECT_TRUE(o.passed) << v.name << ": " << o.name;
    ++checked;
  }
  EXPECT_EQ(checked, 6) << r.out;  // notebook, tma_layouts, one_launch, fused, pass_inside, cublaslt
  fs::remove(json);
}

const BackwardCase kTrainCases[] = {
    {"relu", "yes", {127, 257, 129}}, {"gelu", "yes", {513, 256, 136}}, {"silu", "no", {1, 512, 264}},
    {"silu", "yes", {1000, 1000, 1000}}, {"gelu", "no", {300, 130, 8}}, {"relu", "no", {2048, 2048, 2048}},
};
INSTANTIATE_TEST_SUITE_P(Lesson05, BackwardTrain, ::testing::ValuesIn(kTrainCases),
                         [](const ::testing::TestParamInfo<BackwardCase>& info) {
                           const BackwardCase& c = info.param;
                           return std::string(c.act) + "_bias_" + c.bias + "_" + std::to_string(c.s.m) + "x" +
                                  std::to_string(c.s.n) + "x" + std::to_string(c.s.k);
                         });

// The backward from an MLP's output (--part chain): every step first makes
// dZ = dY Vᵀ (step 5 makes dP there, act' and db's partial sums in the
// product's epilogue; cuBLASLt does for GELU with its DGELU epilogue), then its
// backward; dX, dW and db checked against the cuBLAS sequence and fp64 from
// dY, V and P. Tails, M = 1, and N or K that TMA cannot describe (step 1's
// kernels then run for every step).
class BackwardChain : public ::testing::TestWithParam<BackwardCase> {};

TEST_P(BackwardChain, EveryStepMatchesCublasAndFp64) {
  const BackwardCase c = GetParam();
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson05_backward")) GTEST_SKIP() << "lesson05_backward is not in this build";
  const fs::path json = scratch("backward-chain.json");
  const Ran r = run("lesson05_backward --part chain --act " + std::string(c.act) + " --bias " + c.bias + " --m " +
                    std::to_string(c.s.m) + " --n " + std::to_string(c.s.n) + " --k " + std::to_string(c.s.k) +
                    " --reps 1 --rounds 1 --seed 17 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  EXPECT_EQ(res.header.shape_params.at("part").text, "chain");
  const bool bias = std::string(c.bias) == "yes";
  int checked = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference) continue;
    if (v.skipped) {
      EXPECT_TRUE(v.name == "relu_mask" || v.name == "products_only") << v.name;
      continue;
    }
    EXPECT_TRUE(v.passed) << v.name << ": rel_err " << v.rel_err << " (cuBLAS), " << v.rel_err_fp64 << " (fp64)";
    ASSERT_EQ(v.outputs.size(), bias ? 3u : 2u) << v.name;
    for (const OutputCheck& o : v.outputs) EXPECT_TRUE(o.passed) << v.name << ": " << o.name;
    ++checked;
  }
  EXPECT_EQ(checked, 7) << r.out;  // notebook, tma_layouts, one_launch, fused, dz_epilogue, pass_inside, cublaslt
  fs::remove(json);
}

const BackwardCase kChainCases[] = {
    {"gelu", "yes", {127, 256, 136}}, {"relu", "yes", {127, 257, 129}}, {"silu", "no", {1, 512, 264}},
    {"gelu", "no", {300, 130, 8}},    {"relu", "no", {1000, 1000, 1000}}, {"silu", "yes", {513, 1032, 264}},
    {"gelu", "yes", {2048, 2048, 2048}},
};
INSTANTIATE_TEST_SUITE_P(Lesson05, BackwardChain, ::testing::ValuesIn(kChainCases),
                         [](const ::testing::TestParamInfo<BackwardCase>& info) {
                           const BackwardCase& c = info.param;
                           return std::string(c.act) + "_bias_" + c.bias + "_" + std::to_string(c.s.m) + "x" +
                                  std::to_string(c.s.n) + "x" + std::to_string(c.s.k);
                         });

// Each product alone (--part dx, --part dw), given dP: the steps that run one
// product per launch are checked against cuBLAS's same-layout GEMM and fp64;
// the one-launch steps say why they do not apply.
TEST(Backward, EachProductAloneMatchesCublasSameLayoutGemm) {
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson05_backward")) GTEST_SKIP() << "lesson05_backward is not in this build";
  const fs::path json = scratch("backward-part.json");
  for (const char* part : {"dx", "dw"}) {
    for (const Shape s : {Shape{127, 257, 129}, Shape{1, 512, 264}, Shape{1000, 1000, 1000}}) {
      const std::string what = std::string(part) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                               std::to_string(s.k);
      const Ran r = run("lesson05_backward --part " + std::string(part) + " --m " + std::to_string(s.m) + " --n " +
                        std::to_string(s.n) + " --k " + std::to_string(s.k) +
                        " --reps 1 --rounds 1 --seed 5 --json " + json.string());
      ASSERT_EQ(r.code, 0) << what << ": " << r.out;
      const Results res = read_results(json.string());
      int checked = 0, skipped = 0;
      for (const VariantResult& v : res.variants) {
        if (v.reference) continue;
        if (v.skipped) {
          if (v.name == "dz_epilogue") {
            EXPECT_NE(v.skip_reason.find("--part chain"), std::string::npos) << what << ": " << v.skip_reason;
          } else if (v.name == "products_only") {
            EXPECT_NE(v.skip_reason.find("--part all"), std::string::npos) << what << ": " << v.skip_reason;
          } else {
            EXPECT_TRUE(v.name == "one_launch" || v.name == "relu_mask" || v.name == "fused" ||
                        v.name == "pass_inside")
                << what << ": " << v.name << " skipped";
            EXPECT_NE(v.skip_reason.find("both products"), std::string::npos) << what << ": " << v.skip_reason;
          }
          ++skipped;
          continue;
        }
        EXPECT_TRUE(v.passed) << what << ": " << v.name << ": rel_err " << v.rel_err << ", " << v.rel_err_fp64;
        ASSERT_EQ(v.outputs.size(), 1u) << what << ": " << v.name;
        EXPECT_EQ(v.outputs[0].name, std::string(part) == "dx" ? "dX" : "dW") << what;
        ++checked;
      }
      EXPECT_EQ(checked, 3) << what << ": " << r.out;  // notebook, tma_layouts, cublaslt
      EXPECT_EQ(skipped, 6) << what << ": " << r.out;
    }
  }
  fs::remove(json);
}

// The traces of both products: dX's tiles (M x K) in the first rows, dW's
// (K x N) below them; each once, reducing over N (dX) or M (dW).
TEST(Backward, TracesStackBothProducts) {
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson05_backward")) GTEST_SKIP() << "lesson05_backward is not in this build";
  const int m = 1000, n = 2056, k = 1032;
  const fs::path base = scratch("backward-trace.json");
  const Ran r = run("lesson05_backward --m " + std::to_string(m) + " --n " + std::to_string(n) + " --k " +
                    std::to_string(k) + " --reps 1 --rounds 1 --trace " + base.string());
  ASSERT_EQ(r.code, 0) << r.out;
  int traces = 0;
  for (const auto& entry : fs::directory_iterator(base.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("backward-trace.", 0) != 0 || name.find(".perfetto.") != std::string::npos) continue;
    const Trace t = read_trace(entry.path().string());
    ++traces;
    const KernelConfig& c = t.kernel;
    ASSERT_EQ(c.products.size(), 2u) << name;
    const ProductGrid& dx = c.products[0];
    const ProductGrid& dw = c.products[1];
    EXPECT_EQ(dx.name, "dX");
    EXPECT_EQ(dx.m, m);
    EXPECT_EQ(dx.n, k);
    EXPECT_EQ(dx.k, n);
    if (dw.name == "dW^T") {  // fused: dWᵀ = dPᵀ X (N x K)
      EXPECT_EQ(dw.m, n);
      EXPECT_EQ(dw.n, k);
    } else {
      EXPECT_EQ(dw.name, "dW");
      EXPECT_EQ(dw.m, k);
      EXPECT_EQ(dw.n, n);
    }
    EXPECT_EQ(dw.k, m);
    EXPECT_EQ(dw.first_row, dx.tiles_m);
    // read_trace has checked that every tile of both products is covered once.
    EXPECT_EQ(int64_t(t.records.size()), int64_t(dx.tiles_m) * dx.tiles_n + int64_t(dw.tiles_m) * dw.tiles_n)
        << name;
  }
  EXPECT_EQ(traces, 6) << r.out;  // notebook, tma_layouts, one_launch, relu_mask (the default act), fused, pass_inside
  fs::remove_all(base.parent_path());
}

// Lesson 06 at M in {1, 3, 16, 17, 64}: tails in N and K (neither a multiple of
// its tile), N and K that are not multiples of 8, K shorter than the split asked
// for. Every variant passes; every one but the atomic one gives the same bits
// twice; the split recorded is the one the kernel ran.
struct SplitKCase {
  Shape s;
  int split;  // --split-k (0: the wave model's)
};
void PrintTo(const SplitKCase& c, std::ostream* os) {
  PrintTo(c.s, os);
  *os << " split " << c.split;
}
class SplitK : public ::testing::TestWithParam<SplitKCase> {};

TEST_P(SplitK, EveryVariantMatchesAndOnlyAtomicsDiffer) {
  const SplitKCase& c = GetParam();
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson06_splitk")) GTEST_SKIP() << "lesson06_splitk is not in this build";
  const fs::path json = scratch("lesson06.json");
  const Ran r = run("lesson06_splitk --m " + std::to_string(c.s.m) + " --n " + std::to_string(c.s.n) + " --k " +
                    std::to_string(c.s.k) + " --split-k " + std::to_string(c.split) +
                    " --reps 1 --rounds 1 --seed 11 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  int ran = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference) continue;
    if (v.skipped) {
      const bool not_multiple_of_8 = c.s.n % 8 != 0 || c.s.k % 8 != 0;
      if (v.name == "streaming")
        EXPECT_TRUE(c.s.m > 8 || not_multiple_of_8) << "streaming skipped: " << v.skip_reason;
      else if (v.name == "cluster")
        EXPECT_TRUE(c.s.m > 16 || not_multiple_of_8) << "cluster skipped: " << v.skip_reason;
      else
        ADD_FAILURE() << v.name << " skipped: " << v.skip_reason;
      continue;
    }
    ++ran;
    EXPECT_TRUE(v.passed) << v.name << ": rel_err " << v.rel_err << " (cuBLAS), " << v.rel_err_fp64 << " (fp64)";
    EXPECT_LT(v.rel_err_fp64, 5e-3) << v.name;
    ASSERT_GE(v.bitwise_diffs, 0) << v.name << ": not run twice";
    if (v.name != "atomic") EXPECT_EQ(v.bitwise_diffs, 0) << v.name << " is meant to be deterministic";
    EXPECT_GE(v.split_k, 1) << v.name;
    if (c.split > 0 && (v.name == "atomic" || v.name == "workspace" || v.name == "serial")) {
      const int k_tiles = ceil_div(c.s.k, 64);
      EXPECT_EQ(v.split_k, std::min(c.split, k_tiles)) << v.name << ": the split asked for, clamped to the k tiles";
    }
    if (c.split > 0 && v.name == "cluster")  // at most 8 blocks a cluster, one 128-deep stage a split
      EXPECT_EQ(v.split_k, std::min({c.split, 8, ceil_div(c.s.k, 128)})) << v.name;
  }
  EXPECT_GE(ran, 6) << r.out;
  if (c.split > ceil_div(c.s.k, 64)) EXPECT_NE(r.out.find("clamped"), std::string::npos) << r.out;
  fs::remove(json);
}

const SplitKCase kSplitKCases[] = {
    {{1, 4104, 4100}, 0},  {{3, 1000, 4104}, 0}, {{16, 4096, 4096}, 0}, {{17, 1000, 2056}, 0},
    {{64, 4104, 1000}, 0}, {{1, 257, 129}, 0},   {{16, 130, 4097}, 0},  {{3, 512, 100}, 8},
    {{16, 4096, 4096}, 5}, {{64, 512, 3000}, 47}, {{9, 520, 1000}, 3}, {{5, 1000, 3000}, 7},
    {{2, 136, 264}, 12},
    // 16 strips: the wave model asks for clusters of 8, more than fit at once on an H100; the plan lowers the split.
    {{1, 1024, 4096}, 0},
};

INSTANTIATE_TEST_SUITE_P(Lesson06, SplitK, ::testing::ValuesIn(kSplitKCases),
                         [](const ::testing::TestParamInfo<SplitKCase>& info) {
                           const SplitKCase& c = info.param;
                           return std::to_string(c.s.m) + "x" + std::to_string(c.s.n) + "x" + std::to_string(c.s.k) +
                                  "_split" + std::to_string(c.split);
                         });

// Lesson 07 over group sizes, M in {1, 3, 9, 16, 17, 33, 64, 128}, tails in N
// (odd N too: the GPTQ kernels' word loads and the atomics' single halves), K
// not a multiple of the shuffled layout's 64 or of its kernels' 128-deep
// slices, the 4-bit values at their extremes,
// and splits forced past the k tiles. Every variant passes; the ones meant to
// be deterministic give the same bits twice; unpacking then cuBLAS gives
// cuBLAS's bits exactly (the device unpacks to the host's fp16 weights).
struct W4Case {
  Shape s;
  int group;
  const char* weights;
  int split;
};
void PrintTo(const W4Case& c, std::ostream* os) {
  PrintTo(c.s, os);
  *os << " g" << c.group << " " << c.weights << " split " << c.split;
}
class W4A16 : public ::testing::TestWithParam<W4Case> {};

TEST_P(W4A16, EveryVariantMatchesAndDequantIsExact) {
  const W4Case& c = GetParam();
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson07_w4a16")) GTEST_SKIP() << "lesson07_w4a16 is not in this build";
  const fs::path json = scratch("lesson07.json");
  const Ran r = run("lesson07_w4a16 --m " + std::to_string(c.s.m) + " --n " + std::to_string(c.s.n) + " --k " +
                    std::to_string(c.s.k) + " --group-size " + std::to_string(c.group) + " --weights " + c.weights +
                    " --split-k " + std::to_string(c.split) + " --reps 1 --rounds 1 --seed 5 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  EXPECT_EQ(res.header.shape_params.at("group_size").value, c.group);
  int ran = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference) continue;
    ASSERT_FALSE(v.skipped) << v.name << ": " << v.skip_reason;
    ++ran;
    EXPECT_TRUE(v.passed) << v.name << ": rel_err " << v.rel_err << " (cuBLAS), " << v.rel_err_fp64 << " (fp64)";
    EXPECT_LT(v.rel_err_fp64, 5e-3) << v.name;
    ASSERT_GE(v.bitwise_diffs, 0) << v.name << ": not run twice";
    if (v.name != "paper" && v.name != "lop3" && v.name != "shuffled")
      EXPECT_EQ(v.bitwise_diffs, 0) << v.name << " is meant to be deterministic";
    if (v.name == "dequant_cublas") EXPECT_EQ(v.rel_err, 0.0) << "unpacked weights differ from the host's";
    if (c.split > 0 && v.name == "direct") {
      // At most 8 blocks a cluster and one unit a split: 8 k steps of 16 (swapped, M <= 8, or G = 128), else 4.
      const int unit = c.s.m <= 8 || c.group == 128 ? 128 : 64;
      const int units = ceil_div(ceil_div(c.s.k, 64) * 64, unit);
      EXPECT_EQ(v.split_k, std::min({c.split, 8, units})) << v.name;
    }
    if (c.split > 0 && v.name == "warp_ring") {
      // At most 8 blocks a cluster and one group a split.
      const int groups = ceil_div(ceil_div(c.s.k, 64) * 64, c.group);
      EXPECT_EQ(v.split_k, std::min({c.split, 8, groups})) << v.name;
    }
  }
  EXPECT_EQ(ran, 10) << r.out;
  if (std::string(c.weights) == "random") EXPECT_NE(r.out.find("quantization error"), std::string::npos) << r.out;
  fs::remove(json);
}

const W4Case kW4Cases[] = {
    {{1, 4096, 4096}, 128, "random", 0}, {{3, 1000, 4096}, 64, "random", 0}, {{16, 1001, 2048}, 32, "random", 0},
    {{17, 4104, 1024}, 128, "all15", 0}, {{128, 520, 512}, 32, "all0", 3},    {{1, 257, 96}, 32, "random", 5},
    {{64, 4096, 4096}, 128, "random", 0}, {{16, 300, 4096}, 64, "all15", 64},
    // K pads to an odd number of 64s: the last 128-deep slice of the shuffled kernels is half empty.
    {{9, 2000, 2080}, 32, "random", 0},   {{33, 300, 160}, 32, "all15", 3},
    // The same at G = 64 (K = 31 x 64), and M = 8, the most the swapped kernel (weights as the mma's A) takes.
    {{8, 2000, 1984}, 64, "random", 0},   {{2, 520, 1984}, 64, "all15", 3},
    // Clusters: 16 tiles at N = K = 4096 (the model's split lowered until the clusters fit), a forced
    // split of 16 (more than the portable 8 blocks a cluster), and one of 20, clamped.
    {{16, 4096, 4096}, 128, "random", 0}, {{5, 1000, 4096}, 128, "random", 16}, {{1, 300, 4096}, 64, "random", 20},
};
INSTANTIATE_TEST_SUITE_P(Lesson07, W4A16, ::testing::ValuesIn(kW4Cases),
                         [](const ::testing::TestParamInfo<W4Case>& info) {
                           const W4Case& c = info.param;
                           return std::to_string(c.s.m) + "x" + std::to_string(c.s.n) + "x" + std::to_string(c.s.k) +
                                  "_g" + std::to_string(c.group) + "_" + c.weights + "_split" +
                                  std::to_string(c.split);
                         });

// Lesson 08 on every model, M from 1 to 2048 (tails of every tile height, and
// partial bands of both Stream-K tiles), sparsity 0 (equal to dense), 0.5 to 0.9 and 1 (nothing
// active: zeros, no weight read), and an unsorted index list from a file.
// Every variant passes against the masked cuBLAS path and fp64; all but the
// atomic ones give the same bits twice.
struct FfnCase {
  const char* model;
  int m;
  const char* sparsity;
  const char* indices;  // "" or the file's text
};
void PrintTo(const FfnCase& c, std::ostream* os) { *os << c.model << " M " << c.m << " s " << c.sparsity; }
class SparseFfn : public ::testing::TestWithParam<FfnCase> {};

TEST_P(SparseFfn, EveryVariantMatchesTheMaskedFfn) {
  const FfnCase& c = GetParam();
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson08_sparse_ffn")) GTEST_SKIP() << "lesson08_sparse_ffn is not in this build";
  const fs::path json = scratch("lesson08.json");
  std::string args = std::string("lesson08_sparse_ffn --model ") + c.model + " --m " + std::to_string(c.m) +
                     " --sparsity " + c.sparsity + " --reps 1 --rounds 1 --seed 3 --json " + json.string();
  if (*c.indices) {
    const fs::path list = scratch("indices.txt");
    FILE* f = std::fopen(list.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(c.indices, f);
    std::fclose(f);
    args += " --indices " + list.string();
  }
  const Ran r = run(args);
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  EXPECT_EQ(res.header.shape_params.at("model").text, c.model);
  EXPECT_GT(res.header.shape_params.at("d_model").value, 0);
  EXPECT_GT(res.header.shape_params.at("d_ff").value, 0);
  EXPECT_EQ(res.header.n, int64_t(res.header.shape_params.at("d_model").value));
  int ran = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference) continue;
    // Step 8 holds X in one 16-row fragment: above M = 16 it says so and does not run.
    if (v.name == "one_launch" && c.m > 16) {
      EXPECT_TRUE(v.skipped) << v.name;
      EXPECT_NE(v.skip_reason.find("M <= 16"), std::string::npos) << v.skip_reason;
      continue;
    }
    ASSERT_FALSE(v.skipped) << v.name << ": " << v.skip_reason;
    ++ran;
    EXPECT_TRUE(v.passed) << v.name << ": rel_err " << v.rel_err << " (masked cuBLAS), " << v.rel_err_fp64
                          << " (fp64)";
    EXPECT_LT(v.rel_err_fp64, 5e-3) << v.name;
    ASSERT_GE(v.bitwise_diffs, 0) << v.name << ": not run twice";
    const bool atomic = v.name.rfind("fused", 0) == 0 || v.name == "split_k_atomic";
    if (!atomic) EXPECT_EQ(v.bitwise_diffs, 0) << v.name << " is meant to be deterministic";
    // Step 7's second run starts from the sums its first run left: zeroed, only the
    // last bits move (about 1% of Y at M = 16); left as they were, every Y would change.
    if (v.name == "split_k_atomic")
      EXPECT_LT(v.bitwise_diffs, res.header.m * res.header.n / 2) << v.name << ": its sums not zeroed after a launch?";
    EXPECT_GT(v.vs_cublas, 0) << v.name;
  }
  EXPECT_EQ(ran, c.m > 16 ? 9 : 10) << r.out;
  EXPECT_NE(r.out.find(std::string(c.sparsity) == "1" ? "nothing active" : "ideal speed-up"), std::string::npos)
      << r.out;
  if (std::string(c.sparsity) != "1") {  // the floor: a kernel that only reads the active weights
    EXPECT_GT(res.read_floor_ms, 0) << r.out;
    EXPECT_NE(r.out.find("floor: a kernel that only reads"), std::string::npos) << r.out;
  }
  fs::remove(json);
}

const FfnCase kFfnCases[] = {
    {"gpt2", 1, "0.5", ""},          {"gpt2", 127, "0.75", ""},          {"gpt2", 16, "0", ""},
    {"gpt2", 2048, "0.9", ""},       {"gpt2", 16, "1", ""},              {"llama2-7b", 16, "0.9", ""},
    {"llama2-7b-swiglu", 3, "0.75", ""}, {"llama2-7b-swiglu", 512, "0.5", ""}, {"llama2-7b", 64, "0.9", ""}, {"llama2-7b", 300, "0.5", ""}, {"llama2-7b", 200, "0.5", ""},
    // A partial band of the 256 x 128 tile: 144 rows, so two whole boxes of A, a partial one and a skipped one.
    {"llama2-7b-swiglu", 400, "0.75", ""},
    // The wide 128 x 256 tile (M <= 128, a product big enough for Stream-K only near s = 0).
    {"llama2-7b", 100, "0", ""},
    {"gpt2", 17, "0", "3071 5 2048 17 1 0 999 64 63 65 3000 1500 128 127 2\n700,701,702"},
    // Step 8 (one launch, M <= 16): SwiGLU at every neuron (the fewest stages in the ring, so most
    // of the down product's W2 rows wait for slots), M = 16 at s = 0.5, M = 1, and 17 listed
    // neurons at M = 5 (most clusters without any).
    {"llama2-7b-swiglu", 16, "0", ""}, {"llama2-7b", 16, "0.5", ""}, {"llama2-7b", 1, "0.75", ""},
    {"gpt2", 5, "0", "3071 5 2048 17 1 0 999 64 63 65 3000 1500 128 127 2\n700,701,702"},
};
INSTANTIATE_TEST_SUITE_P(Lesson08, SparseFfn, ::testing::ValuesIn(kFfnCases),
                         [](const ::testing::TestParamInfo<FfnCase>& info) {
                           const FfnCase& c = info.param;
                           std::string s = c.sparsity;
                           std::replace(s.begin(), s.end(), '.', '_');
                           std::string m = c.model;
                           std::replace(m.begin(), m.end(), '-', '_');
                           return m + "_m" + std::to_string(c.m) + "_s" + s + (*c.indices ? "_listed" : "");
                         });

// Lesson 08's traces: one record per work unit; the two-product variants
// stack H's tiles above Y's.
TEST(SparseFfn, TracesCoverBothProducts) {
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson08_sparse_ffn")) GTEST_SKIP() << "lesson08_sparse_ffn is not in this build";
  const fs::path base = scratch("l08-trace.json");
  const Ran r = run("lesson08_sparse_ffn --model gpt2 --m 127 --sparsity 0.5 --reps 1 --rounds 1 --trace " +
                    base.string());
  ASSERT_EQ(r.code, 0) << r.out;
  int traces = 0;
  for (const auto& entry : fs::directory_iterator(base.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("l08-trace.", 0) != 0 || name.find(".perfetto.") != std::string::npos) continue;
    const Trace t = read_trace(entry.path().string());
    ++traces;
    EXPECT_EQ(int64_t(t.records.size()), t.kernel.work_units) << name;
    std::set<int> units;
    for (const TraceRecord& rec : t.records) EXPECT_TRUE(units.insert(rec.unit).second) << name;
    if (name.rfind("l08-trace.neuron_major.", 0) == 0 || name.rfind("l08-trace.gathered.", 0) == 0 ||
        name.rfind("l08-trace.split_k.", 0) == 0 || name.rfind("l08-trace.split_k_atomic.", 0) == 0) {
      ASSERT_EQ(t.kernel.products.size(), 2u) << name;
      EXPECT_EQ(t.kernel.products[1].first_row, t.kernel.products[0].tiles_m) << name;
    }
    // The trace names the neurons: GPT-2's 3072 at s = 0.5 leave 1536, and
    // every product's units together used each of them (the viewer shows which).
    const GatheredIndex& g = t.kernel.gathered;
    EXPECT_EQ(g.of, 3072) << name;
    ASSERT_EQ(g.index.size(), 1536u) << name;
    for (const ProductGrid& p : t.kernel.products) {
      EXPECT_FALSE(p.gathers.empty()) << name << ": " << p.name;
      std::vector<char> used(g.index.size(), 0);
      for (const TraceRecord& rec : t.records) {
        if (product_of_row(t.kernel, rec.tile_m) != &p) continue;
        const EntryRange e = gathered_entries(t, rec);
        for (int64_t j = e.first; j < e.last; ++j) used[size_t(j)] = 1;
      }
      EXPECT_EQ(std::count(used.begin(), used.end(), 1), 1536) << name << ": " << p.name;
    }
  }
  EXPECT_EQ(traces, 6) << r.out;  // masked_dense is library calls: not traced
  fs::remove_all(base.parent_path());
}

// Lesson 08's split_k traces, each unit recorded once:
// - the Stream-K kernel (above M = 64 with work enough), one block per group (M = 256: one tile
//   row of 256) and two (M = 512: two tile rows, walking the same columns in step), tiles shared
//   along k;
// - the split kernel at M <= 16, whose up-product units take every S-th k slice: a unit's record
//   holds its share of the tile's slices, so a tile's records still lie end to end along k.
// read_trace checks that each tile's k ranges lie end to end.
TEST(SparseFfn, SplitKTracesHaveEveryUnitOnce) {
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson08_sparse_ffn")) GTEST_SKIP() << "lesson08_sparse_ffn is not in this build";
  const struct {
    const char* args;
    const char* kernel;  // what the model line names
  } cases[] = {{"--model llama2-7b --m 256 --sparsity 0.5", "Stream-K"},
               {"--model llama2-7b --m 512 --sparsity 0.5", "Stream-K"},
               {"--model llama2-7b --m 16 --sparsity 0.9", "splits"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const fs::path base = scratch("l08-sk.json");
    const Ran r = run(std::string("lesson08_sparse_ffn ") + c.args + " --variant split_k --reps 1 --rounds 1 --trace " +
                      base.string());
    ASSERT_EQ(r.code, 0) << r.out;
    ASSERT_NE(r.out.find(c.kernel), std::string::npos) << r.out;
    const Trace t = read_trace(base.string());  // one variant traced: the path as given
    EXPECT_EQ(int64_t(t.records.size()), t.kernel.work_units);
    std::set<int> units;
    for (const TraceRecord& rec : t.records) {
      EXPECT_TRUE(units.insert(rec.unit).second) << rec.unit;
      EXPECT_LT(rec.k_begin, rec.k_end);
    }
    fs::remove_all(base.parent_path());
  }
}

// The harness itself, on a problem with two outputs (C fp16, S fp32), a
// column-major operand, int32 indices, a workspace and an atomic output zeroed
// in `prepare`: the right variants pass, and each wrong one FAILs on exactly
// the output it spoils, with exit status 1.
TEST(HarnessSelftest, RightVariantsPassOnEveryOutput) {
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("harness_selftest")) GTEST_SKIP() << "harness_selftest is not in this build";
  const fs::path json = scratch("selftest-right.json");
  const Ran r = run("harness_selftest --m 37 --n 45 --k 19 --reps 3 --rounds 1 --scale -1.5 --index-order shuffled "
                    "--variant right,right_workspace,right_atomic --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Results res = read_results(json.string());
  EXPECT_EQ(res.reference, "cublas_then_sums");
  EXPECT_EQ(res.header.shape_params.at("scale").value, -1.5);
  EXPECT_EQ(res.header.shape_params.at("index_order").text, "shuffled");
  int checked = 0;
  for (const VariantResult& v : res.variants) {
    if (v.reference) continue;
    ++checked;
    EXPECT_TRUE(v.passed) << v.name;
    ASSERT_EQ(v.outputs.size(), 2u) << v.name;
    EXPECT_EQ(v.outputs[0].name, "C");
    EXPECT_EQ(v.outputs[1].name, "S");
    for (const OutputCheck& o : v.outputs) EXPECT_TRUE(o.passed) << v.name << " " << o.name;
  }
  EXPECT_EQ(checked, 3);
  fs::remove(json);
}

TEST(HarnessSelftest, EachWrongVariantFailsOnTheOutputItSpoils) {
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("harness_selftest")) GTEST_SKIP() << "harness_selftest is not in this build";
  const struct {
    const char* variant;
    const char* spoiled;
  } cases[] = {{"wrong_c", "C"}, {"wrong_s", "S"}, {"unwritten_c", "C"}, {"unzeroed_atomic", "S"}};
  for (const auto& c : cases) {
    const fs::path json = scratch(std::string("selftest-") + c.variant + ".json");
    const Ran r = run(std::string("harness_selftest --m 37 --n 45 --k 19 --reps 1 --rounds 1 --variant ") + c.variant +
                      " --json " + json.string());
    EXPECT_EQ(r.code, 1) << c.variant << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("variant ") + c.variant + " FAILED on " + c.spoiled + ":"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
    const Results res = read_results(json.string());
    for (const VariantResult& v : res.variants) {
      if (v.reference) continue;
      EXPECT_FALSE(v.passed) << c.variant;
      ASSERT_EQ(v.outputs.size(), 2u);
      for (const OutputCheck& o : v.outputs)
        EXPECT_EQ(o.passed, o.name != c.spoiled) << c.variant << " output " << o.name;
    }
    fs::remove(json);
  }
}

// Too little device memory is one line and exit 1, checked before allocating.
TEST(DeviceMemory, ShapeThatDoesNotFitIsRefused) {
  if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!built("lesson01_naive")) GTEST_SKIP() << "lesson01_naive is not in this build";
  const Ran r = run("lesson01_naive --m 200000 --n 200000 --k 200000 --reps 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("of device memory"), std::string::npos) << r.out;
}

}  // namespace
