// Synthetic traces and results for tests and the benchmark: a greedy model of
// the block scheduler (each free slot takes the next program id), with
// per-block jitter, written in the real file formats. Never a recorded result.
#pragma once

#include <cstdint>
#include <string>

#include "records/records.hpp"
#include "schedule/tile_order.hpp"

namespace wb::viewer::testing {

struct SyntheticTraceSpec {
  std::string lesson = "lesson03_grouped";
  std::string variant = "grouped";
  int64_t m = 4096, n = 4096, k = 4096;
  int block_m = 128, block_n = 128, block_k = 64;
  TileOrder order = TileOrder::grouped;
  int group_m = 8;
  int split_k = 1;
  int sms = 132;
  int blocks_per_sm = 1;
  uint64_t block_ns = 20000;  // mean block duration
  uint32_t seed = 1;
};

Trace synthetic_trace(const SyntheticTraceSpec& spec);

// The naive kernel at 4096^3: 16x16 tiles, 65,536 blocks, 8 resident per SM.
SyntheticTraceSpec largest_lesson_trace_spec();

Results synthetic_results(const std::string& lesson, const std::string& gpu_name);

}  // namespace wb::viewer::testing
