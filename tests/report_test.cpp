// The printed report's derived lines: what each fused activation costs against
// the same kernel without it.
#include <gtest/gtest.h>

#include <string>

#include "harness/report.hpp"

namespace {

using namespace wb;

VariantResult row(const std::string& name, double vs_cublas, bool skipped = false, bool reference = false) {
  VariantResult v;
  v.name = name;
  v.vs_cublas = vs_cublas;
  v.skipped = skipped;
  v.reference = reference;
  return v;
}

TEST(FusedEpilogueLines, EachActivationAgainstItsBase) {
  Results r;
  r.variants = {row("balanced", 1.009),          row("balanced_gelu", 0.995),     row("balanced_relu", 1.010),
                row("grouped8", 0.584),          row("grouped8_leaky_relu", 0.593), row("tma_store_gelu", 0.991),
                row("grouped8_silu", 0.5841),    row("streamk", 0.988, true),     row("streamk_gelu", 0.984),      row("cublas", 1.0, false, true)};
  const std::string got = fused_epilogue_lines(r);
  EXPECT_EQ(got,
            "fused activations, against the same kernel without (both paired with cuBLAS round by round):\n"
            "  balanced_gelu            1.4% slower than balanced (100.9% -> 99.5% of cuBLAS)\n"
            "  balanced_relu            0.1% faster than balanced (100.9% -> 101.0% of cuBLAS)\n"
            "  grouped8_leaky_relu      1.5% faster than grouped8 (58.4% -> 59.3% of cuBLAS)\n"
            "  grouped8_silu            as fast as grouped8 (58.4% -> 58.4% of cuBLAS)\n");
  // tma_store_gelu: its base did not run; streamk_gelu: its base was skipped.
}

TEST(FusedEpilogueLines, NothingWithoutPairs) {
  Results r;
  r.variants = {row("balanced", 1.0), row("tma_store", 1.0), row("relu", 1.0), row("_gelu", 1.0)};
  EXPECT_EQ(fused_epilogue_lines(r), "");
}

}  // namespace
