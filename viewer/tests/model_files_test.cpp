#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/tile_grid.hpp"
#include "model/workspace.hpp"
#include "synthetic_trace.hpp"

namespace wb::viewer {
namespace {

namespace fs = std::filesystem;

class ViewerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("viewer-files-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "traces/synthetic");
    fs::create_directories(dir_ / "results/synthetic");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(ViewerFiles, OpensSyntheticTraceAndResults) {
  testing::SyntheticTraceSpec spec;
  spec.m = spec.n = 1024;
  const std::string trace_path = (dir_ / "traces/synthetic/lesson03_grouped.grouped.json").string();
  write_trace(trace_path, testing::synthetic_trace(spec));
  const std::string results_path = (dir_ / "results/synthetic/lesson01_naive.json").string();
  write_results(results_path, testing::synthetic_results("lesson01_naive", "Synthetic GPU"));

  write("traces/synthetic/lesson03_grouped.grouped.perfetto.json", R"({"displayTimeUnit": "ns", "traceEvents": []})");
  write("results/synthetic/compare-4096.json", R"({"schema": "matmul-workbook/compare", "version": 1})");

  Workspace ws;
  ws.assets_dir = dir_.string();
  ws.refresh_assets();
  ASSERT_EQ(ws.assets.size(), 2u) << "Perfetto exports and compare tables are not listed";
  EXPECT_EQ(ws.assets[0].label, "results/synthetic/lesson01_naive.json");
  EXPECT_EQ(ws.assets[0].kind, FileKind::results);
  ws.open_all_asset_results();
  ASSERT_EQ(ws.results.size(), 1u);
  ASSERT_TRUE(ws.open(trace_path));
  ASSERT_NE(ws.current(), nullptr);
  EXPECT_EQ(ws.current()->trace.records.size(), 64u);
  EXPECT_DOUBLE_EQ(ws.trace_playback.length(), double(ws.current()->timeline.end_ns()));
  EXPECT_TRUE(ws.errors.empty());

  // At the end of the trace every tile is done.
  const auto states = traced_tile_states(ws.current()->trace, ws.current()->timeline.end_ns());
  for (TileState s : states) EXPECT_EQ(s, TileState::done);
}

// Traces are kept gzip-compressed: listed, detected and opened like plain ones;
// a compressed file that is corrupt is one error line, not a crash.
TEST_F(ViewerFiles, OpensCompressedTraces) {
  testing::SyntheticTraceSpec spec;
  spec.m = spec.n = 512;
  const std::string path = (dir_ / "traces/synthetic/lesson03_grouped.grouped.json.gz").string();
  write_trace(path, testing::synthetic_trace(spec));
  write("traces/synthetic/lesson03_grouped.grouped.perfetto.json.gz", gzip_compress("{\"traceEvents\": []}"));
  Workspace ws;
  ws.assets_dir = dir_.string();
  ws.refresh_assets();
  ASSERT_EQ(ws.assets.size(), 1u) << "compressed Perfetto exports are not listed either";
  EXPECT_EQ(ws.assets[0].kind, FileKind::trace);
  ASSERT_TRUE(ws.open(path)) << (ws.errors.empty() ? "" : ws.errors.back());
  EXPECT_EQ(ws.current()->trace.records.size(), 16u);
  const std::string broken = write("traces/broken.json.gz", gzip_compress(trace_to_json(testing::synthetic_trace(spec))).substr(0, 40));
  EXPECT_FALSE(ws.open(broken));
  ASSERT_FALSE(ws.errors.empty());
  EXPECT_NE(ws.errors.back().find("gzip"), std::string::npos) << ws.errors.back();
}

TEST_F(ViewerFiles, MissingFolderIsAnEmptyList) {
  EXPECT_TRUE(list_assets((dir_ / "nothing here").string()).empty());
}

TEST_F(ViewerFiles, MalformedFilesGiveAnErrorAndNoCrash) {
  testing::SyntheticTraceSpec spec;
  spec.m = spec.n = 256;
  std::string good = trace_to_json(testing::synthetic_trace(spec));
  const std::string bad_sm = [&] {
    std::string t = good;
    const auto at = t.find("\"records\": [\n    [");
    const auto first = t.find('[', at + 12);
    // tile_m, tile_n, k_begin, k_end, then an SM id far beyond the GPU's.
    const auto fourth = t.find(',', t.find(',', t.find(',', t.find(',', first) + 1) + 1) + 1);
    const auto fifth = t.find(',', fourth + 1);
    return t.replace(fourth + 1, fifth - fourth - 1, "999");
  }();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty.json", ""},
      {"not-json.json", "this is not json"},
      {"array.json", "[1, 2, 3]"},
      {"other-schema.json", R"({"schema": "someone-else/format", "version": 1})"},
      {"truncated-trace.json", good.substr(0, good.size() / 2)},
      {"bad-sm.json", bad_sm},
      {"future-version.json", std::string(R"({"schema": "matmul-workbook/trace", "version": 99})")},
      {"results-missing-fields.json", R"({"schema": "matmul-workbook/results", "version": 1, "date": "x"})"},
  };
  Workspace ws;
  for (const auto& [name, text] : cases) {
    const size_t errors_before = ws.errors.size();
    EXPECT_FALSE(ws.open(write(name, text))) << name;
    ASSERT_EQ(ws.errors.size(), errors_before + 1) << name;
    EXPECT_NE(ws.errors.back().find(name), std::string::npos) << "the error names the file: " << ws.errors.back();
  }
  EXPECT_FALSE(ws.open((dir_ / "does-not-exist.json").string()));
  EXPECT_TRUE(ws.traces.empty());
  EXPECT_TRUE(ws.results.empty());
  EXPECT_EQ(ws.current(), nullptr);
}

TEST(ViewerFileKind, DetectsTheSchema) {
  EXPECT_EQ(detect_file_kind(R"({"schema": "matmul-workbook/trace"})"), FileKind::trace);
  EXPECT_EQ(detect_file_kind(R"({"schema": "matmul-workbook/results"})"), FileKind::results);
  EXPECT_EQ(detect_file_kind("{}"), FileKind::unknown);
}

TEST(ViewerAssets, CommandLineBeatsEnvironmentBeatsDefault) {
  ::setenv("WORKBOOK_ASSETS", "/from/env", 1);
  EXPECT_EQ(resolve_assets_dir("/from/flag", "/default"), "/from/flag");
  EXPECT_EQ(resolve_assets_dir("", "/default"), "/from/env");
  ::unsetenv("WORKBOOK_ASSETS");
  EXPECT_EQ(resolve_assets_dir("", "/default"), "/default");
}

}  // namespace
}  // namespace wb::viewer
