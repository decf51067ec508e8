// The printed report's derived lines: what each fused activation costs against
// the same kernel without it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/report.hpp"
#include "records/records.hpp"

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

TEST(DisturbedRoundsLine, NamesRatiosTheMediansDoNotBear) {
  // Lesson 08's check at 18ac15b, GPT-2 at M = 2048, s = 0.5: three of five rounds paired a slowed
  // cuBLAS with split_k.
  Results r;
  r.timing.rounds = 5;
  auto timed = [](const std::string& name, double ms, double vs, bool reference = false) {
    VariantResult v = row(name, vs, false, reference);
    v.median_ms = ms;
    return v;
  };
  r.variants = {timed("masked_dense", 0.0990, 0.964), timed("neuron_major", 0.0627, 0.881),
                timed("split_k", 0.0650, 1.624), timed("cublas", 0.0558, 1.0, true)};
  EXPECT_EQ(disturbed_rounds_line(r),
            "WARNING: rounds were disturbed (masked_dense 0.96x round by round, 0.56x by the medians; split_k 1.62x "
            "round by round, 0.86x by the medians): something slowed whole rounds; run again before trusting these "
            "ratios\n");
  // The same run undisturbed: ratios within a fifth of the medians' say nothing.
  r.variants = {timed("masked_dense", 0.0550, 1.00), timed("neuron_major", 0.0627, 0.881),
                timed("split_k", 0.0650, 0.89), timed("cublas", 0.0558, 1.0, true)};
  EXPECT_EQ(disturbed_rounds_line(r), "");
  // A skipped variant, an infinite ratio: nothing to compare.
  VariantResult skipped = timed("fused", 0.0650, 1.624);
  skipped.skipped = true;
  r.variants = {skipped, timed("split_k", 0.0650, 1.0 / 0.0), timed("cublas", 0.0558, 1.0, true)};
  EXPECT_EQ(disturbed_rounds_line(r), "");
  // No reference row; or one round only (the sanitizers' runs), where the ratio is one pairing.
  r.variants = {timed("split_k", 0.0650, 1.624)};
  EXPECT_EQ(disturbed_rounds_line(r), "");
  r.variants = {timed("split_k", 0.0650, 1.624), timed("cublas", 0.0558, 1.0, true)};
  r.timing.rounds = 1;
  EXPECT_EQ(disturbed_rounds_line(r), "");
}

TEST(FusedEpilogueLines, NothingWithoutPairs) {
  Results r;
  r.variants = {row("balanced", 1.0), row("tma_store", 1.0), row("relu", 1.0), row("_gelu", 1.0)};
  EXPECT_EQ(fused_epilogue_lines(r), "");
}

TEST(ReadFloorLine, SaysWhatTheMemoryAllows) {
  Results r;
  r.read_floor_ms = 0.0120;
  r.read_floor_bytes = 33554432.0;
  VariantResult ref = row("cublas", 1.0, false, true), fast = row("cluster", 1.07), slow = row("atomic", 0.98),
                wrong = row("broken", 2.0), skipped = row("streaming", 0.0, true);
  ref.median_ms = 0.0150;
  fast.median_ms = 0.0140;
  fast.passed = true;
  slow.median_ms = 0.0153;
  slow.passed = true;
  wrong.median_ms = 0.0100;  // faster than the floor, but it failed its check: not "the fastest"
  wrong.passed = false;
  r.variants = {slow, fast, wrong, skipped, ref};
  EXPECT_EQ(read_floor_line(r),
            "floor: a kernel that only reads those 33.6 MB once takes 0.0120 ms here, launch included (timed like "
            "the variants): no variant can be faster; cublas takes 1.25x that, so 1.25x cublas is the most any "
            "variant can reach; the fastest here, cluster, takes 1.17x the floor\n");
  r.read_floor_ms = 0;  // not measured
  EXPECT_EQ(read_floor_line(r), "");
}

// A bound (lesson 08's cuBLAS on compacted weights) is timed and checked like a
// variant, but it is not a way to solve the problem: never "the fastest".
TEST(Bounds, AreMarkedAndNeverTheFastest) {
  Results r;
  r.read_floor_ms = 0.0120;
  r.read_floor_bytes = 33554432.0;
  r.copy_gbps = 3000;
  VariantResult ref = row("cublas", 1.0, false, true), fast = row("split_k", 1.5), bound = row("compact", 2.0);
  ref.median_ms = 0.0300;
  fast.median_ms = 0.0200;
  fast.passed = true;
  fast.gbps = 1500;
  bound.median_ms = 0.0150;
  bound.passed = true;
  bound.gbps = 2000;
  bound.bound = true;
  r.variants = {fast, bound, ref};
  EXPECT_NE(read_floor_line(r).find("the fastest here, split_k,"), std::string::npos) << read_floor_line(r);
  EXPECT_NE(copy_bandwidth_lines(r).find("fastest here: split_k, 1.50x"), std::string::npos) << copy_bandwidth_lines(r);
  const std::string table = format_report(r);
  EXPECT_NE(table.find("pass (a bound)"), std::string::npos) << table;
  bound.passed = false;  // a bound that fails its check still fails
  r.variants = {fast, bound, ref};
  EXPECT_NE(format_report(r).find("FAIL"), std::string::npos);
}

// A recording made before a parameter existed ran at its default: it stands
// for a run at the default, and not for one at another value.
TEST(RecordedResults, ARecordingWithoutAParameterIsItsDefault) {
  namespace fs = std::filesystem;
  const fs::path assets = fs::temp_directory_path() / ("wb-recorded-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::create_directories(assets / "results" / "some-gpu");
  const auto record = [&](const std::string& file, const std::string& variant, const char* part) {
    Results r;
    r.header.date = "2026-11-24T03:00:00Z";
    r.header.commit = "abc123";
    r.header.versions = {"13.0", "13.0", "13.1.0"};
    r.header.gpu.name = "Some GPU";
    r.header.gpu.cc_major = 9;
    r.header.gpu.sm_count = 132;
    r.header.gpu.l2_bytes = 52428800;
    r.header.gpu.memory_bytes = 85520809984;
    r.header.gpu.sm_clock_khz = 1980000;
    r.header.gpu.mem_clock_khz = 2619000;
    r.header.gpu.mem_bus_bits = 5120;
    r.header.gpu.max_smem_per_block = 232448;
    r.header.lesson = "lessonx";
    r.timing = {3, 7, 104857600, 1};
    r.header.m = r.header.n = r.header.k = 4096;
    r.header.shape_params["act"] = ShapeParam{"relu", false, 0};
    if (part) r.header.shape_params["part"] = ShapeParam{part, false, 0};
    VariantResult v = row(variant, 1.0);
    v.median_ms = v.min_ms = v.max_ms = 1.0;
    v.samples = 3;
    v.passed = true;
    r.variants.push_back(v);
    write_results((assets / "results" / "some-gpu" / file).string(), r);
  };
  record("lessonx.json", "before_part", nullptr);
  record("lessonx-train.json", "trained", "train");
  const auto shown = [&](const char* part) {
    RecordedRequest q;
    q.params["act"] = ShapeParam{"relu", false, 0};
    q.params["part"] = ShapeParam{part, false, 0};
    q.defaults["act"] = ShapeParam{"relu", false, 0};
    q.defaults["part"] = ShapeParam{"all", false, 0};
    return format_recorded_results(assets.string(), "lessonx", q);
  };
  const std::string all = shown("all"), train = shown("train");
  EXPECT_NE(all.find("before_part"), std::string::npos) << all;
  EXPECT_EQ(all.find("trained"), std::string::npos) << all;
  EXPECT_NE(train.find("trained"), std::string::npos) << train;
  EXPECT_EQ(train.find("before_part"), std::string::npos) << train;
  const std::string dx = shown("dx");
  EXPECT_NE(dx.find("part=dx (recorded there: "), std::string::npos) << dx;
  fs::remove_all(assets);
}

}  // namespace
