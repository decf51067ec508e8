// Results and trace files: round trips, and rejection of malformed files with a
// one-line reason (never a crash).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include <cmath>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fail_writes.hpp"
#include "harness/options.hpp"
#include "records/records.hpp"
#include "gathered_trace.hpp"

namespace {

using namespace wb;
namespace fs = std::filesystem;

RunHeader sample_header() {
  RunHeader h;
  h.date = "2026-11-22T03:00:00Z";
  h.commit = "abc123";
  h.versions = {"13.0", "13.0", "13.1.0"};
  h.gpu.name = "NVIDIA H100 80GB HBM3";
  h.gpu.cc_major = 9;
  h.gpu.sm_count = 132;
  h.gpu.l2_bytes = 52428800;
  h.gpu.memory_bytes = 85520809984;
  h.gpu.sm_clock_khz = 1980000;
  h.gpu.mem_clock_khz = 2619000;
  h.gpu.mem_bus_bits = 5120;
  h.gpu.max_smem_per_block = 232448;
  h.lesson = "lesson01_naive";
  h.m = 127;
  h.n = 257;
  h.k = 129;
  h.shape_params["group_m"] = ShapeParam{"8", true, 8};
  h.shape_params["act"] = ShapeParam{"gelu", false, 0};
  return h;
}

Results sample_results() {
  Results r;
  r.header = sample_header();
  r.timing = {3, 7, 104857600, 1};
  VariantResult v;
  v.name = "coalesced";
  v.what = "thread x -> column";
  v.median_ms = 1.5;
  v.min_ms = 1.25;
  v.max_ms = 2.0;
  v.samples = 21;
  v.flops = 2.0 * 127 * 257 * 129;
  v.bytes = 1000;
  v.tflops = 0.01;
  v.gbps = 0.5;
  v.rel_err = 2.5e-4;
  v.rel_err_fp64 = 2.0e-4;
  v.max_abs_err = 0.0078125;
  v.passed = true;
  v.vs_cublas = 0.125;
  v.outputs.push_back(OutputCheck{"C", 2.5e-4, 2.0e-4, 0.0078125, 0, true});
  v.outputs.push_back(OutputCheck{"S", 1e-6, 1e-6, 1e-5, 3, false});
  r.variants.push_back(v);
  r.reference = "cublas_sequence";
  r.copy_gbps = 2950.5;
  r.read_floor_ms = 0.0117;
  r.read_floor_bytes = 33554432.0;
  VariantResult s;
  s.name = "tma_wgmma";
  s.what = "Hopper only";
  s.skipped = true;
  s.skip_reason = "needs a Hopper GPU";
  r.variants.push_back(s);
  return r;
}

Trace sample_trace() {
  Trace t;
  t.header = sample_header();
  t.header.m = 32;  // 2 x 3 tiles of 16 x 16
  t.header.n = 48;
  t.variant = "coalesced";
  t.kernel.block_m = 16;
  t.kernel.block_n = 16;
  t.kernel.block_k = 1;
  t.kernel.threads = 256;
  t.kernel.tiles_m = 2;
  t.kernel.tiles_n = 3;
  t.kernel.grid_blocks = 6;
  t.kernel.work_units = 6;
  t.kernel.blocks_per_sm = 8;
  t.median_ms = 0.01;
  t.traced_ms = 0.011;
  for (int i = 0; i < 6; ++i)
    t.records.push_back(TraceRecord{i / 3, i % 3, 0, 129, i % 2, i, uint64_t(100 + 10 * i), uint64_t(164 + 10 * i)});
  return t;
}

TEST(Records, ResultsRoundTrip) {
  const Results r = sample_results();
  const Results back = results_from_json(results_to_json(r));
  EXPECT_EQ(back.header.gpu.name, r.header.gpu.name);
  EXPECT_EQ(back.header.gpu.l2_bytes, r.header.gpu.l2_bytes);
  EXPECT_EQ(back.header.m, 127);
  EXPECT_TRUE(back.header.shape_params.at("group_m").numeric);
  EXPECT_EQ(back.header.shape_params.at("group_m").value, 8);
  EXPECT_FALSE(back.header.shape_params.at("act").numeric);
  EXPECT_EQ(back.header.shape_params.at("act").text, "gelu");
  EXPECT_EQ(back.timing.reps_per_round, 7);
  ASSERT_EQ(back.variants.size(), 2u);
  EXPECT_EQ(back.variants[0].name, "coalesced");
  EXPECT_DOUBLE_EQ(back.variants[0].median_ms, 1.5);
  EXPECT_DOUBLE_EQ(back.variants[0].vs_cublas, 0.125);
  EXPECT_TRUE(back.variants[0].passed);
  EXPECT_TRUE(back.variants[1].skipped);
  EXPECT_EQ(back.variants[1].skip_reason, "needs a Hopper GPU");
  EXPECT_EQ(back.reference, "cublas_sequence");
  EXPECT_DOUBLE_EQ(back.copy_gbps, 2950.5);
  EXPECT_DOUBLE_EQ(back.read_floor_ms, 0.0117);
  EXPECT_DOUBLE_EQ(back.read_floor_bytes, 33554432.0);
  ASSERT_EQ(back.variants[0].outputs.size(), 2u);
  EXPECT_EQ(back.variants[0].outputs[1].name, "S");
  EXPECT_EQ(back.variants[0].outputs[1].mismatches, 3);
  EXPECT_FALSE(back.variants[0].outputs[1].passed);
  EXPECT_EQ(results_to_json(back), results_to_json(r));
  EXPECT_FALSE(back.variants[0].bound);  // written only where true: older files read as variants
  EXPECT_EQ(results_to_json(r).find("\"bound\""), std::string::npos);
  Results b = r;
  b.variants[0].bound = true;
  EXPECT_TRUE(results_from_json(results_to_json(b)).variants[0].bound);
}

// A variant whose output held NaN has an infinite error: written as null, read back as infinity.
TEST(Records, InfiniteErrorsRoundTripAsNull) {
  Results r = sample_results();
  r.variants[0].rel_err = INFINITY;
  r.variants[0].max_abs_err = INFINITY;
  r.variants[0].outputs[0].rel_err_fp64 = INFINITY;
  const std::string text = results_to_json(r);
  EXPECT_NE(text.find("\"rel_err\": null"), std::string::npos) << text;
  const Results back = results_from_json(text);
  EXPECT_TRUE(std::isinf(back.variants[0].rel_err));
  EXPECT_TRUE(std::isinf(back.variants[0].max_abs_err));
  EXPECT_TRUE(std::isinf(back.variants[0].outputs[0].rel_err_fp64));
  EXPECT_EQ(back.variants[0].rel_err_fp64, 2.0e-4);
}

Compare sample_compare() {
  Compare c;
  c.date = "2026-11-23T19:00:00Z";
  c.gpu = "NVIDIA H100 80GB HBM3";
  c.m = 127;
  c.n = 257;
  c.k = 129;
  c.cublas_median_ms = 0.5;
  c.ranked.push_back(RankedVariant{1, "lesson01_naive", "coalesced", 1.5, 0.01, 0.125, 2.5e-4, true, true});
  c.runs.push_back(sample_results());
  return c;
}

TEST(Records, CompareRoundTrip) {
  const Compare c = sample_compare();
  const Compare back = compare_from_json(compare_to_json(c));
  EXPECT_EQ(back.gpu, c.gpu);
  EXPECT_EQ(back.k, 129);
  ASSERT_EQ(back.ranked.size(), 1u);
  EXPECT_EQ(back.ranked[0].variant, "coalesced");
  ASSERT_EQ(back.runs.size(), 1u);
  EXPECT_EQ(back.runs[0].variants[0].name, "coalesced");
  EXPECT_EQ(compare_to_json(back), compare_to_json(c));
}

TEST(Records, CompareRejectsWhatNoRunWrites) {
  Compare c = sample_compare();
  c.ranked[0].rank = 2;
  EXPECT_THROW(compare_from_json(compare_to_json(c)), RecordError);  // ranks run 1, 2, ...
  c = sample_compare();
  c.runs[0].header.m = 128;
  EXPECT_THROW(compare_from_json(compare_to_json(c)), RecordError);  // a run of another shape
  c = sample_compare();
  c.k = 3000000000;
  EXPECT_THROW(compare_from_json(compare_to_json(c)), RecordError);  // more than any lesson takes
}

// A lesson whose N and K follow from its own options (lesson 08's model) runs
// at the compare's M alone; the compare names it, and only those runs may
// differ in N and K. What the reader rejects, the writer does not write.
TEST(Records, CompareRunsAtTheirOwnSizesOnlyWhereNamed) {
  Compare c = sample_compare();
  c.runs[0].header.n = 4096;
  c.runs[0].header.k = 11008;
  EXPECT_THROW(compare_from_json(compare_to_json(c)), RecordError);
  c.own_sizes = {c.runs[0].header.lesson};
  const Compare back = compare_from_json(compare_to_json(c));
  EXPECT_EQ(back.own_sizes, c.own_sizes);
  EXPECT_EQ(compare_to_json(back), compare_to_json(c));
  c.runs[0].header.m = 128;  // M is the compare's in every run
  EXPECT_THROW(compare_from_json(compare_to_json(c)), RecordError);

  const fs::path dir = fs::temp_directory_path() / ("wb-compare-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "compare.json").string();
  EXPECT_THROW(write_compare(path, c), RecordError);
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

// Lessons timed against the same reference are one problem and ranked together;
// a lesson with a reference of its own is ranked apart, its ranks from 1 again.
// A ranked row must belong to a run.
TEST(Records, CompareProblemsFollowTheReferences) {
  auto run = [](const std::string& lesson, const std::string& ref_what, double ref_ms) {
    Results r = sample_results();
    r.header.lesson = lesson;
    r.reference = "cublas";
    VariantResult ref;
    ref.name = "cublas";
    ref.what = ref_what;
    ref.reference = true;
    ref.median_ms = ref_ms;
    ref.min_ms = ref_ms;
    ref.max_ms = ref_ms;
    ref.samples = 21;
    ref.tflops = 2.0 * 127 * 257 * 129 / (ref_ms * 1e-3) / 1e12;
    ref.passed = true;
    ref.vs_cublas = 1;
    r.variants.push_back(ref);
    return r;
  };
  Compare c = sample_compare();
  c.runs = {run("lesson05_backward", "the backward's sequence", 0.9), run("lesson01_naive", "cublasGemmEx", 0.5),
            run("lesson04_hopper", "cublasGemmEx", 0.3), run("lesson06_splitk", "cublasGemmEx", 0.4)};
  c.ranked.clear();
  const std::vector<std::pair<std::string, double>> rows = {
      {"lesson05_backward", 1.2}, {"lesson04_hopper", 1.01}, {"lesson06_splitk", 0.5}, {"lesson01_naive", 0.01}};
  for (size_t i = 0; i < rows.size(); ++i)
    c.ranked.push_back(RankedVariant{int(i) + 1, rows[i].first, "v", 1.0, 0.1, rows[i].second, 0, true, true});
  const std::vector<CompareProblem> p = compare_problems(c);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].reference_what, "cublasGemmEx");  // the problem most lessons share comes first
  EXPECT_EQ(p[0].lessons, (std::vector<std::string>{"lesson01_naive", "lesson04_hopper", "lesson06_splitk"}));
  EXPECT_EQ(p[0].reference_ms, 0.4);  // the median of 0.3, 0.4 and 0.5
  ASSERT_EQ(p[0].ranked.size(), 3u);
  EXPECT_EQ(p[0].ranked[0].lesson, "lesson04_hopper");
  EXPECT_EQ(p[0].ranked[0].rank, 1);
  EXPECT_EQ(p[0].ranked[2].rank, 3);
  EXPECT_EQ(p[1].lessons, (std::vector<std::string>{"lesson05_backward"}));
  EXPECT_EQ(p[1].reference_ms, 0.9);
  ASSERT_EQ(p[1].ranked.size(), 1u);
  EXPECT_EQ(p[1].ranked[0].rank, 1);
  EXPECT_EQ(compare_to_json(compare_from_json(compare_to_json(c))), compare_to_json(c));
  c.ranked[2].lesson = "lesson07_w4a16";  // no run of it
  EXPECT_THROW(compare_from_json(compare_to_json(c)), RecordError);
}

// A compare written before `own_sizes` existed reads as naming none.
TEST(Records, CompareWithoutOwnSizesReads) {
  std::string text = compare_to_json(sample_compare());
  const size_t at = text.find("  \"own_sizes\": [],\n");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 300);
  text.erase(at, std::string("  \"own_sizes\": [],\n").size());
  EXPECT_TRUE(compare_from_json(text).own_sizes.empty());
}

// Results written before the problem interface (no reference, no outputs,
// numbers only in the shape) still read, as cuBLAS-referenced runs.
TEST(Records, OlderResultsStillRead) {
  Results r = sample_results();
  r.header.shape_params.clear();
  r.variants[0].outputs.clear();
  std::string text = results_to_json(r);
  const auto erase_line = [&](const std::string& key) {
    const size_t at = text.find("\"" + key + "\"");
    ASSERT_NE(at, std::string::npos) << key;
    const size_t begin = text.rfind('\n', at), end = text.find('\n', at);
    text.erase(begin, end - begin);
  };
  erase_line("reference\": \"cublas_sequence");
  erase_line("copy_gbps");
  erase_line("read_floor_ms");
  erase_line("read_floor_bytes");
  const Results back = results_from_json(text);
  EXPECT_EQ(back.reference, "cublas");
  EXPECT_EQ(back.copy_gbps, 0);
  EXPECT_EQ(back.read_floor_ms, 0);
  EXPECT_TRUE(back.variants[0].outputs.empty());
}

TEST(Records, TraceRoundTrip) {
  const Trace t = sample_trace();
  const Trace back = trace_from_json(trace_to_json(t));
  EXPECT_EQ(back.variant, "coalesced");
  EXPECT_EQ(back.kernel.tiles_n, 3);
  ASSERT_EQ(back.records.size(), 6u);
  EXPECT_EQ(back.records[4].tile_m, 1);
  EXPECT_EQ(back.records[4].tile_n, 1);
  EXPECT_EQ(back.records[4].end_ns, 204u);
  EXPECT_EQ(trace_to_json(back), trace_to_json(t));
}

// Two products in one launch (lesson 05): dX (16 x 40, reduced over 24) in
// tile row 0, dW (40 x 24, reduced over 16) in rows 1-3, 16 x 16 tiles.
Trace stacked_trace() {
  Trace t = sample_trace();
  t.header.m = 16;
  t.header.n = 24;
  t.header.k = 40;
  t.kernel.products = {ProductGrid{"dX", 16, 40, 24, 1, 3, 0}, ProductGrid{"dW", 40, 24, 16, 3, 2, 1}};
  t.kernel.tiles_m = 4;
  t.kernel.tiles_n = 3;
  t.kernel.work_units = t.kernel.grid_blocks = 9;
  t.records.clear();
  int unit = 0;
  for (int c = 0; c < 3; ++c, ++unit) t.records.push_back(TraceRecord{0, c, 0, 24, 0, unit, 100, 150});
  for (int r = 1; r < 4; ++r)
    for (int c = 0; c < 2; ++c, ++unit) t.records.push_back(TraceRecord{r, c, 0, 16, 1, unit, 100, 150});
  return t;
}

TEST(Records, StackedProductsRoundTripAndEachTileReducesOverItsOwnK) {
  const Trace t = stacked_trace();
  const Trace back = trace_from_json(trace_to_json(t));
  ASSERT_EQ(back.kernel.products.size(), 2u);
  EXPECT_EQ(back.kernel.products[1].name, "dW");
  EXPECT_EQ(back.kernel.products[1].k, 16);
  EXPECT_EQ(trace_to_json(back), trace_to_json(t));

  Trace bad = stacked_trace();
  bad.records[4].k_end = 24;  // a dW tile reduced past its own k
  EXPECT_THROW(trace_from_json(trace_to_json(bad)), RecordError);
  bad = stacked_trace();
  bad.records[3].tile_n = 2;  // dW has two tile columns
  bad.records[0].tile_n = 2;
  EXPECT_THROW(trace_from_json(trace_to_json(bad)), RecordError);
  bad = stacked_trace();
  bad.kernel.products[1].first_row = 2;  // not stacked right after dX
  EXPECT_THROW(trace_from_json(trace_to_json(bad)), RecordError);
}

void expect_rejected(const std::string& text, const std::string& needle, bool trace);

Trace gathered_trace() { return test_traces::gathered_trace_from(sample_trace()); }

TEST(Records, GatheredIndexRoundTripsAndNamesEachUnitsEntries) {
  const Trace t = gathered_trace();
  const std::string text = trace_to_json(t);
  EXPECT_NE(text.find("\"index\":[17,3,9,0,12]"), std::string::npos) << "the index is one line";
  EXPECT_GT(text.find("\"gathered\""), text.find("\"records\"")) << "after the records: the header stays short";
  const Trace back = trace_from_json(text);
  EXPECT_EQ(back.kernel.gathered.index, t.kernel.gathered.index);
  EXPECT_EQ(back.kernel.products[0].gathers_per, 2);
  EXPECT_EQ(trace_to_json(back), text);

  // Up columns 0-7 are neurons 0-3 of the list, 8-15 are 4 (and padding).
  EXPECT_EQ(gathered_entries(back, back.records[0]).first, 0);
  EXPECT_EQ(gathered_entries(back, back.records[0]).last, 4);
  EXPECT_EQ(gathered_entries(back, back.records[1]).first, 4);
  EXPECT_EQ(gathered_entries(back, back.records[1]).last, 5);
  // Down: k 0-4 is entries 0-3, k 4-8 is entry 4 and padding.
  EXPECT_EQ(gathered_entries(back, back.records[2]).last, 4);
  EXPECT_EQ(gathered_entries(back, back.records[3]).first, 4);
  EXPECT_EQ(gathered_entries(back, back.records[3]).last, 5);
  EXPECT_TRUE(gathered_entries(sample_trace(), sample_trace().records[0]).empty());

  Trace bad = gathered_trace();
  bad.kernel.gathered.index[1] = 17;
  expect_rejected(trace_to_json(bad), "listed twice", true);
  bad = gathered_trace();
  bad.kernel.gathered.index[0] = 20;
  expect_rejected(trace_to_json(bad), "[0, of)", true);
  bad = gathered_trace();
  bad.kernel.products[0].gathers = bad.kernel.products[1].gathers = "";
  expect_rejected(trace_to_json(bad), "no product", true);
  bad = gathered_trace();
  bad.kernel.products[1].gathers = "m";
  expect_rejected(trace_to_json(bad), "gathers along", true);
}

// Each mutation of a valid file must be rejected with a RecordError naming the problem.
void expect_rejected(const std::string& text, const std::string& needle, bool trace) {
  try {
    if (trace) trace_from_json(text);
    else results_from_json(text);
    FAIL() << "accepted a malformed file; expected an error mentioning '" << needle << "'";
  } catch (const RecordError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "error is not one line: " << e.what();
  }
}

TEST(Records, MalformedResultsAreRejected) {
  using nlohmann::json;
  const json good = json::parse(results_to_json(sample_results()));
  expect_rejected("", "not valid JSON", false);
  expect_rejected("{\"schema\": ", "not valid JSON", false);
  expect_rejected("[1,2]", "object", false);
  // Found by fuzzing: a number too large for a double was an exception the readers did not catch.
  expect_rejected("{\"schema\": 1e795463911829220384}", "not valid JSON", false);
  expect_rejected("{\"schema\": 0.320198804E4009094}", "not valid JSON", true);
  auto mutate = [&](auto fn) { json j = good; fn(j); return j.dump(); };
  expect_rejected(mutate([](json& j) { j["schema"] = "something-else"; }), "schema", false);
  expect_rejected(mutate([](json& j) { j["version"] = 99; }), "version 99", false);
  expect_rejected(mutate([](json& j) { j.erase("gpu"); }), "'gpu'", false);
  expect_rejected(mutate([](json& j) { j["gpu"]["sm_count"] = "many"; }), "sm_count", false);
  expect_rejected(mutate([](json& j) { j["shape"]["m"] = 0; }), "shape", false);
  expect_rejected(mutate([](json& j) { j["variants"] = 3; }), "variants", false);
  expect_rejected(mutate([](json& j) { j["variants"][0].erase("median_ms"); }), "median_ms", false);
  expect_rejected(mutate([](json& j) { j["variants"][0]["median_ms"] = -1.0; }), "times", false);
  expect_rejected(mutate([](json& j) { j["variants"][0]["passed"] = "yes"; }), "passed", false);
  expect_rejected(mutate([](json& j) { j["variants"][1].erase("skip_reason"); }), "skip_reason", false);
  expect_rejected(mutate([](json& j) { j["read_floor_ms"] = -0.5; }), "read_floor_ms", false);
  expect_rejected(mutate([](json& j) { j["read_floor_ms"] = "fast"; }), "read_floor_ms", false);
  expect_rejected(mutate([](json& j) { j.erase("read_floor_bytes"); }), "read_floor_bytes", false);
}

TEST(Records, MalformedTracesAreRejected) {
  using nlohmann::json;
  const json good = json::parse(trace_to_json(sample_trace()));
  auto mutate = [&](auto fn) { json j = good; fn(j); return j.dump(); };
  expect_rejected(mutate([](json& j) { j["schema"] = "matmul-workbook/results"; }), "schema", true);
  expect_rejected(mutate([](json& j) { j.erase("records"); }), "'records'", true);
  expect_rejected(mutate([](json& j) { j["records"][0] = json::array({1, 2, 3}); }), "8 integers", true);
  expect_rejected(mutate([](json& j) { j["records"][0][0] = 7; }), "outside", true);
  expect_rejected(mutate([](json& j) { j["records"][1][4] = 132; }), "SM id", true);
  expect_rejected(mutate([](json& j) { j["records"][2][7] = 1; }), "end before start", true);
  expect_rejected(mutate([](json& j) { j["records"][2][3] = -5; }), "negative", true);
  expect_rejected(mutate([](json& j) { j["kernel"]["tiles_m"] = 0; }), "tiles_m", true);
  expect_rejected(mutate([](json& j) { j["kernel"].erase("order"); }), "'order'", true);
  // What a launch cannot have written: a grid that is not the shape's, a block of size 0,
  // units missing or twice, k ranges that overlap, leave a gap or run past K, values past int32.
  expect_rejected(mutate([](json& j) { j["kernel"]["tiles_n"] = 4; }), "tiles", true);
  expect_rejected(mutate([](json& j) { j["kernel"]["block_m"] = 0; }), "block_m", true);
  expect_rejected(mutate([](json& j) { j["kernel"]["work_units"] = 7; }), "work units", true);
  expect_rejected(mutate([](json& j) { j["records"][1][5] = 0; }), "recorded twice", true);
  expect_rejected(mutate([](json& j) { j["records"][1][5] = 6; }), "out of range", true);
  expect_rejected(mutate([](json& j) { j["records"][3][3] = 100; }), "gap", true);
  expect_rejected(mutate([](json& j) { j["records"][3][2] = 1; }), "gap", true);
  expect_rejected(mutate([](json& j) { j["records"][3][3] = 130; }), "k range", true);
  expect_rejected(mutate([](json& j) { j["records"][3] = j["records"][2]; j["records"][3][5] = 3; }), "gap", true);
  expect_rejected(mutate([](json& j) { j["records"][0][0] = 4294967296; }), "too large", true);
  expect_rejected(mutate([](json& j) { j["shape"]["k"] = 4294967296; }), "2^31", true);
  // A tile split in two along K, end to end, is fine.
  json split = good;
  split["kernel"]["work_units"] = 7;
  split["records"][5][3] = 64;
  split["records"].push_back(json::array({1, 2, 64, 129, 0, 6, 300, 310}));
  EXPECT_EQ(trace_from_json(split.dump()).records.size(), 7u);
}

TEST(Records, FilesAreWrittenWholeOrNotAtAll) {
  const fs::path dir = fs::temp_directory_path() / ("wb-records-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "r.json").string();
  write_results(path, sample_results());
  EXPECT_EQ(read_results(path).variants.size(), 2u);
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1);
  // An unwritable path is an error naming the path, and leaves nothing.
  const std::string bad = (dir / "missing-dir" / "r.json").string();
  std::string why;
  EXPECT_FALSE(output_path_writable(bad, &why));
  EXPECT_FALSE(why.empty());
  try {
    write_results(bad, sample_results());
    FAIL() << "wrote into a folder that does not exist";
  } catch (const RecordError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos);
  }
  // A truncated file is rejected on read.
  {
    std::ofstream f(dir / "cut.json");
    f << results_to_json(sample_results()).substr(0, 200);
  }
  EXPECT_THROW(read_results((dir / "cut.json").string()), RecordError);
  EXPECT_THROW(read_trace((dir / "nothing-here.json").string()), RecordError);
  fs::remove_all(dir);
}

TEST(Records, ResidentSlotsNeverOverlapOnOneSm) {
  std::vector<TraceRecord> recs = {
      {0, 0, 0, 1, 0, 0, 0, 100},   {0, 1, 0, 1, 0, 1, 10, 50},  {0, 2, 0, 1, 0, 2, 50, 90},
      {0, 3, 0, 1, 0, 3, 100, 120}, {0, 4, 0, 1, 1, 4, 0, 10},   {0, 5, 0, 1, 0, 5, 20, 20},
  };
  const auto slot = assign_resident_slots(recs);
  for (size_t i = 0; i < recs.size(); ++i)
    for (size_t j = i + 1; j < recs.size(); ++j)
      if (recs[i].sm == recs[j].sm && slot[i] == slot[j])
        EXPECT_TRUE(recs[i].end_ns <= recs[j].start_ns || recs[j].end_ns <= recs[i].start_ns)
            << "records " << i << " and " << j << " overlap on one track";
  EXPECT_EQ(slot[0], 0);
  EXPECT_EQ(slot[4], 0);  // another SM starts again at slot 0
  EXPECT_LE(*std::max_element(slot.begin(), slot.end()), 2);
}

TEST(Records, ChromeExportIsValidJsonWithOneEventPerRecord) {
  const Trace t = sample_trace();
  const auto j = nlohmann::json::parse(trace_to_chrome_json(t));
  int complete = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_LT(e["pid"].get<int>(), 132);
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(complete, 6);
}

TEST(Records, RebaseMakesEarliestStartZero) {
  std::vector<TraceRecord> recs = {{0, 0, 0, 1, 0, 0, 500, 700}, {0, 1, 0, 1, 0, 1, 400, 900}};
  EXPECT_EQ(rebase_trace_times(recs), 400u);
  EXPECT_EQ(recs[1].start_ns, 0u);
  EXPECT_EQ(recs[0].end_ns, 300u);
}

}  // namespace

namespace {

// Every file recorded on a real GPU and committed under assets/ reads with all
// of the readers' checks: results, compare tables and traces (not the Perfetto exports).
TEST(Records, EveryRecordedFileReads) {
  const fs::path assets = wb::assets_dir();
  int results = 0, compares = 0, traces = 0;
  for (const auto& e : fs::recursive_directory_iterator(assets)) {
    const std::string name = e.path().filename().string();
    const bool json = name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
    const bool gz = name.size() > 8 && name.compare(name.size() - 8, 8, ".json.gz") == 0;
    if (!e.is_regular_file() || !(json || gz) || name.find(".perfetto.") != std::string::npos) continue;
    const std::string bytes = read_text_file(e.path().string());
    const std::string text = is_gzip(bytes) ? gzip_decompress(bytes) : bytes;
    try {
      if (text.find(kCompareSchema) != std::string::npos && text.find(kCompareSchema) < 200) {
        read_compare(e.path().string());
        ++compares;
      } else if (e.path().parent_path().parent_path().filename() == "traces") {
        read_trace(e.path().string());
        ++traces;
      } else {
        read_results(e.path().string());
        ++results;
      }
    } catch (const RecordError& err) {
      ADD_FAILURE() << err.what();
    }
  }
  EXPECT_GT(results, 0);
  EXPECT_GT(compares, 0);
  EXPECT_GT(traces, 0);
}

}  // namespace

namespace {

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A write that fails half-way (the disk full: a file-size limit in a child
// process) leaves the file it would have replaced as it was, and no partial
// or temporary file beside it.
TEST(Records, AWriteThatRunsOutOfSpaceLeavesTheOldFileWhole) {
  const fs::path dir = fs::temp_directory_path() / ("wb-nospace-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string results = (dir / "r.json").string(), trace = (dir / "t.json").string();
  write_results(results, sample_results());
  write_trace(trace, sample_trace());
  const std::string old_results = read_text_file(results), old_trace = read_text_file(trace);
  Results bigger = sample_results();
  for (int i = 0; i < 200; ++i) bigger.variants.push_back(bigger.variants[0]);
  Trace longer = sample_trace();
  longer.kernel.work_units = 606;
  for (int i = 6; i < 606; ++i) longer.records.push_back(longer.records[size_t(i % 6)]);
  const auto fails = [](const std::function<void()>& write) {
    try {
      write();
      return true;
    } catch (const RecordError& e) {
      return std::string(e.what()).find("cannot write") == std::string::npos;  // the error says what
    }
  };
  EXPECT_EQ(wb::testing::run_with_file_size_limit(4096, [&] { return fails([&] { write_results(results, bigger); }); }), 1);
  EXPECT_EQ(wb::testing::run_with_file_size_limit(4096, [&] { return fails([&] { write_trace(trace, longer); }); }), 1);
  EXPECT_EQ(read_text_file(results), old_results);
  EXPECT_EQ(read_text_file(trace), old_trace);
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"r.json", "t.json"}));
  // Without the limit the same writes go through.
  write_results(results, bigger);
  EXPECT_EQ(read_results(results).variants.size(), bigger.variants.size());
  fs::remove_all(dir);
}

// A write the file system refuses (a folder where the file should go; a folder
// nobody may create files in) is an error, and leaves nothing behind.
TEST(Records, ARefusedWriteLeavesNothing) {
  const fs::path dir = fs::temp_directory_path() / ("wb-refused-" + std::to_string(::getpid()));
  fs::create_directories(dir / "r.json");  // a folder in the way
  EXPECT_THROW(write_results((dir / "r.json").string(), sample_results()), RecordError);
  EXPECT_TRUE(fs::is_directory(dir / "r.json"));
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"r.json"});
  // /proc/self takes no new files, even from root.
  EXPECT_THROW(write_results("/proc/self/wb-results.json", sample_results()), RecordError);
  EXPECT_FALSE(fs::exists("/proc/self/wb-results.json"));
  fs::remove_all(dir);
}

}  // namespace

namespace {

TEST(Records, GzipRoundTripsAndIsDeterministic) {
  const std::string text = trace_to_json(sample_trace());
  const std::string z = gzip_compress(text);
  EXPECT_TRUE(is_gzip(z));
  EXPECT_FALSE(is_gzip(text));
  EXPECT_LT(z.size(), text.size());
  EXPECT_EQ(gzip_decompress(z), text);
  EXPECT_EQ(gzip_compress(text), z);  // no time stamp: the same text, the same bytes
  EXPECT_EQ(trace_from_bytes(z).records.size(), 6u);
  EXPECT_EQ(gzip_decompress(gzip_compress("")), "");
}

TEST(Records, BadGzipIsAOneLineError) {
  const std::string z = gzip_compress(trace_to_json(sample_trace()));
  EXPECT_THROW(gzip_decompress(z.substr(0, z.size() / 2)), RecordError);  // truncated
  std::string flipped = z;
  flipped[z.size() / 2] = char(flipped[z.size() / 2] ^ 0x55);
  EXPECT_THROW(gzip_decompress(flipped), RecordError);  // corrupt (or its CRC fails)
  EXPECT_THROW(gzip_decompress(std::string("\x1f\x8b")), RecordError);
  // More than the limit: a small file that would decompress to a large one.
  const std::string zeros(1 << 20, '0');
  EXPECT_THROW(gzip_decompress(gzip_compress(zeros), 1 << 16), RecordError);
  EXPECT_THROW(trace_from_bytes(gzip_compress("not json")), RecordError);
}

TEST(Records, TracesWriteCompressedWhenThePathSaysSo) {
  const fs::path dir = fs::temp_directory_path() / ("wb-gz-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string plain = (dir / "t.json").string(), packed = (dir / "t.json.gz").string();
  write_trace(plain, sample_trace());
  write_trace(packed, sample_trace());
  EXPECT_FALSE(is_gzip(read_text_file(plain)));
  EXPECT_TRUE(is_gzip(read_text_file(packed)));
  EXPECT_EQ(trace_to_json(read_trace(packed)), trace_to_json(read_trace(plain)));
  fs::remove_all(dir);
}

}  // namespace
