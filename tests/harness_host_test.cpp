// The harness's host side, without a GPU: how tensors are described and read,
// how a problem's parameters are checked, and how outputs are judged (a test
// that can fail: a wrong, unwritten or inexact element must FAIL).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "harness/fp64.hpp"
#include "harness/params.hpp"
#include "harness/tensor.hpp"
#include "harness/verify.hpp"

namespace {

using namespace wb;

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Every finite half converts to float and back to itself; NaN stays NaN.
TEST(HalfFloat, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(uint16_t(h));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << h;
      continue;
    }
    EXPECT_EQ(float_to_half(f), uint16_t(h)) << "half " << h << " = " << f;
  }
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
}

// Between two neighbouring positive halves: below the midpoint rounds down,
// above rounds up, exactly on it rounds to the even one.
TEST(HalfFloat, RoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double lo = half_to_float(uint16_t(h)), hi = half_to_float(uint16_t(h + 1));
    const float mid = float((lo + hi) / 2);  // exact in float: halves have 11 significant bits
    ASSERT_EQ(double(mid), (lo + hi) / 2);
    EXPECT_EQ(float_to_half(mid), (h % 2 == 0) ? h : h + 1) << h;
    EXPECT_EQ(float_to_half(std::nextafter(mid, 0.0f)), h) << h;
    EXPECT_EQ(float_to_half(std::nextafter(mid, 1e9f)), h + 1) << h;
  }
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);  // below the rounding boundary of the largest half
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // rounds to infinity
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(bits_to_float(0x7F800000u)), 0x7C00);
}

TEST(Tensor, LayoutsAddressTheSameLogicalElement) {
  TensorSpec row{"A", 3, 5};
  TensorSpec col{"B", 3, 5, DType::f16, Layout::col_major};
  EXPECT_EQ(row.offset(1, 2), 7);
  EXPECT_EQ(col.offset(1, 2), 7);  // 2 * 3 + 1
  EXPECT_EQ(col.offset(2, 1), 5);
  EXPECT_EQ(row.leading_dim(), 5);
  EXPECT_EQ(col.leading_dim(), 3);
  EXPECT_EQ(row.bytes(), 30u);
  EXPECT_EQ((TensorSpec{"Bq", 4, 8, DType::u4x8}.bytes()), 128u);
  EXPECT_EQ(col.describe(), "B: 3 x 5 fp16, column-major");

  HostTensor t(col);
  t.set(2, 4, 1.5f);
  EXPECT_EQ(t.at(2, 4), 1.5f);
  EXPECT_EQ(t.value(col.offset(2, 4)), 1.5f);
  HostTensor idx(TensorSpec{"I", 1, 4, DType::i32});
  idx.set_int(0, 3, -7);
  EXPECT_EQ(idx.int_at(0, 3), -7);
}

TEST(Params, ChoicesAndRangesAreChecked) {
  const ParamSpec act{.name = "act", .help = "", .default_value = "relu", .choices = {"relu", "gelu", "silu"}};
  EXPECT_EQ(check_param(act, "gelu"), "");
  EXPECT_EQ(check_param(act, "tanh"), "--act: unknown value 'tanh' (known: relu, gelu, silu)");
  const ParamSpec split{.name = "split_k", .help = "", .default_value = "0", .numeric = true, .integer = true,
                        .min = 0, .max = 64};
  EXPECT_EQ(split.option(), "--split-k");
  EXPECT_EQ(check_param(split, "8"), "");
  EXPECT_EQ(check_param(split, "-1"), "--split-k must be between 0 and 64 (got -1)");
  EXPECT_EQ(check_param(split, "2.5"), "--split-k: '2.5' is not a whole number");
  EXPECT_EQ(check_param(split, "eight"), "--split-k: 'eight' is not a number");
  EXPECT_EQ(check_param(split, "8x"), "--split-k: '8x' is not a number");
  EXPECT_EQ(check_param(split, ""), "--split-k: '' is not a number");
  EXPECT_EQ(check_param(split, "nan"), "--split-k: 'nan' is not a number");

  Params p = default_params({act, split});
  EXPECT_EQ(p.text("act"), "relu");
  p.set("split_k", "16");
  EXPECT_EQ(p.integer("split_k"), 16);
  const auto shape = shape_params({act, split}, p);
  EXPECT_FALSE(shape.at("act").numeric);
  EXPECT_EQ(shape.at("act").text, "relu");
  EXPECT_TRUE(shape.at("split_k").numeric);
  EXPECT_EQ(shape.at("split_k").value, 16);
  EXPECT_THROW(p.text("no_such"), std::out_of_range);
}

TEST(Verify, SampledRowsIncludeFirstAndLast) {
  const auto rows = sample_rows(1000, 1);
  ASSERT_EQ(rows.size(), 16u);
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), 999);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(sample_rows(3, 1).size(), 3u);
  EXPECT_EQ(sample_rows(1, 1), std::vector<int64_t>{0});
}

// An M x N fp16 output whose every element is f(r, c), and the matching fp64 rows.
struct Case {
  HostTensor reference, got;
  std::vector<int64_t> rows;
  std::vector<double> fp64;
};

Case make_case(int m, int n) {
  Case c{HostTensor(TensorSpec{"C", m, n}), HostTensor(TensorSpec{"C", m, n}), sample_rows(m, 3), {}};
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < n; ++j) {
      const float v = std::sin(0.37f * float(r) + 1.3f * float(j));
      c.reference.set(r, j, v);
      c.got.set(r, j, v);
    }
  for (const int64_t r : c.rows)
    for (int j = 0; j < n; ++j) c.fp64.push_back(std::sin(0.37 * double(r) + 1.3 * double(j)));
  return c;
}

TEST(Verify, ARightOutputPasses) {
  const Case c = make_case(40, 30);
  const OutputVerdict v = check_output(c.got, c.reference, Activation::none, c.rows, c.fp64, 5e-3);
  EXPECT_TRUE(v.check.passed);
  EXPECT_EQ(v.check.mismatches, 0);
  EXPECT_LT(v.check.rel_err_fp64, 1e-3);
  EXPECT_EQ(v.compared, 1200);
  EXPECT_EQ(v.sampled, 16 * 30);
}

TEST(Verify, OneWrongElementFails) {
  Case c = make_case(40, 30);
  c.got.set(17, 5, c.got.at(17, 5) + 0.5f);  // not a sampled row: only the reference comparison sees it
  const OutputVerdict v = check_output(c.got, c.reference, Activation::none, c.rows, c.fp64, 5e-3);
  EXPECT_FALSE(v.check.passed);
  EXPECT_EQ(v.vs_reference.mismatches, 1);
  EXPECT_NE(describe_failure(v, "cuBLAS").find("C: 1 of 1200 elements differ from cuBLAS"), std::string::npos)
      << describe_failure(v, "cuBLAS");
}

TEST(Verify, AnUnwrittenElementFails) {
  Case c = make_case(40, 30);
  c.got.data[0] = 0xFF;  // element (0, 0) as the harness poisons it: fp16 NaN
  c.got.data[1] = 0xFF;
  const OutputVerdict v = check_output(c.got, c.reference, Activation::none, c.rows, c.fp64, 5e-3);
  EXPECT_FALSE(v.check.passed);
  EXPECT_EQ(v.vs_reference.mismatches, 1);
  EXPECT_EQ(v.vs_fp64.mismatches, 1);  // row 0 is always sampled
}

TEST(Verify, TheFusedActivationIsAppliedToTheReference) {
  Case c = make_case(20, 10);
  for (int r = 0; r < 20; ++r)
    for (int j = 0; j < 10; ++j) c.got.set(r, j, std::max(0.0f, c.reference.at(r, j)));
  EXPECT_TRUE(check_output(c.got, c.reference, Activation::relu, c.rows, c.fp64, 5e-3).check.passed);
  EXPECT_FALSE(check_output(c.got, c.reference, Activation::none, c.rows, c.fp64, 5e-3).check.passed);
}

TEST(Verify, AWrongFp64RowFailsThoughTheReferenceAgrees) {
  Case c = make_case(20, 10);
  c.fp64[3] += 1.0;  // the reference and the output share an error: fp64 catches it
  const OutputVerdict v = check_output(c.got, c.reference, Activation::none, c.rows, c.fp64, 5e-3);
  EXPECT_FALSE(v.check.passed);
  EXPECT_EQ(v.vs_reference.mismatches, 0);
  EXPECT_EQ(v.vs_fp64.mismatches, 1);
}

// The fp64 check's blocked product gives the plain triple loop's sums to the
// bit (each sum in the same order), at shapes around its blocks (32 rows, 256
// columns), from a starting value, with A in float and in double.
template <class T>
void expect_plain_loop_sums(int64_t rows, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const auto fp16 = [&] { return half_to_float(float_to_half(uniform(rng))); };
  std::vector<T> a(size_t(rows * k));
  std::vector<float> b(size_t(k * n));
  std::vector<double> start(size_t(rows * n));
  for (T& v : a) v = T(fp16());
  for (float& v : b) v = fp16();
  for (double& v : start) v = double(fp16());
  std::vector<double> plain = start, blocked = start;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        plain[size_t(r * n + j)] += double(a[size_t(r * k + kk)]) * double(b[size_t(kk * n + j)]);
  fp64_accumulate_product(a.data(), b.data(), blocked.data(), rows, n, k);
  int64_t differ = 0;
  for (size_t i = 0; i < plain.size(); ++i) differ += std::memcmp(&plain[i], &blocked[i], sizeof(double)) != 0;
  EXPECT_EQ(differ, 0) << rows << " x " << n << " x " << k;
}

TEST(Fp64, BlockedProductIsThePlainLoopBitForBit) {
  expect_plain_loop_sums<float>(1, 1, 1, 1);
  expect_plain_loop_sums<float>(16, 4096, 3, 2);
  expect_plain_loop_sums<float>(33, 257, 129, 3);
  expect_plain_loop_sums<double>(70, 513, 64, 4);
  expect_plain_loop_sums<double>(31, 255, 1, 5);
  expect_plain_loop_sums<float>(200, 300, 40, 6);
}

// The sums start from what out holds, and k = 1 adds one term.
TEST(Fp64, AddsOntoTheStartingValues) {
  std::vector<float> a = {1.0f, 2.0f}, b = {3.0f, 4.0f};  // (1 x 2) (2 x 1)
  std::vector<double> out = {0.5};
  fp64_accumulate_product(a.data(), b.data(), out.data(), 1, 1, 2);
  EXPECT_EQ(out[0], 11.5);
  fp64_accumulate_product(a.data(), b.data(), out.data(), 1, 1, 1);  // k = 1: the first term alone, added on
  EXPECT_EQ(out[0], 14.5);
}

TEST(Fp64, HostFloatsReadsAndTransposes) {
  HostTensor t(TensorSpec{"T", 2, 3});
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) t.set(r, c, float(10 * r + c));
  EXPECT_EQ(host_floats(t), (std::vector<float>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(host_floats(t, true), (std::vector<float>{0, 10, 1, 11, 2, 12}));
}

}  // namespace
