// Writes synthetic trace and results files for the screenshot test and the
// benchmark:  viewer_synthetic_files DIR
//   DIR/traces/synthetic/lesson03_grouped.row_major.json   (132 SMs, 1024 tiles)
//   DIR/traces/synthetic/lesson03_grouped.grouped.json
//   DIR/traces/synthetic/lesson01_naive.coalesced.json     (65,536 blocks)
//   DIR/results/synthetic/lesson0{1,2}_*.json
#include <cstdio>
#include <filesystem>

#include "synthetic_trace.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace wb::viewer::testing;
  if (argc != 2) {
    std::fprintf(stderr, "usage: viewer_synthetic_files DIR\n");
    return 2;
  }
  const fs::path dir = argv[1];
  try {
    fs::create_directories(dir / "traces/synthetic");
    fs::create_directories(dir / "results/synthetic");
    SyntheticTraceSpec row;
    row.order = wb::TileOrder::row_major;
    row.variant = "row_major";
    wb::write_trace((dir / "traces/synthetic/lesson03_grouped.row_major.json").string(), synthetic_trace(row));
    SyntheticTraceSpec grouped;
    grouped.block_ns = 17000;  // grouped reuses L2 better: shorter blocks in the synthetic model
    wb::write_trace((dir / "traces/synthetic/lesson03_grouped.grouped.json").string(), synthetic_trace(grouped));
    wb::write_trace((dir / "traces/synthetic/lesson01_naive.coalesced.json").string(),
                    synthetic_trace(largest_lesson_trace_spec()));
    const char* gpu = "Synthetic H100 (not a recording)";
    wb::write_results((dir / "results/synthetic/lesson01_naive.json").string(), synthetic_results("lesson01_naive", gpu));
    wb::write_results((dir / "results/synthetic/lesson02_blocked.json").string(), synthetic_results("lesson02_blocked", gpu));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "viewer_synthetic_files: %s\n", e.what());
    return 1;
  }
  return 0;
}
