// Command-line options shared by every lesson binary, parsed and validated on
// the host before any GPU call. Host only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/params.hpp"

namespace wb {

// Exit codes (DESIGN.md): 0 ok; 1 a check failed, a CUDA error, too little
// device memory; 2 bad arguments, or no GPU where the run needs one.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

struct LessonOptions {
  int m = 4096, n = 4096, k = 4096;
  bool n_given = false, k_given = false;  // --n / --k on the command line
  std::vector<std::string> variants;  // empty: every variant
  int reps = 21;                      // timed runs per variant, split over the rounds
  int rounds = 3;                     // interleaved rounds of (variant, cuBLAS)
  uint64_t seed = 1;
  int device = 0;
  std::string json_path;              // results JSON ("" = none)
  std::string trace_path;             // trace JSON ("" = none); Perfetto export beside it
  bool no_check = false;
  bool list = false;
  bool ncu = false;           // also measure DRAM bytes and L2 hit rate under Nsight Compute
  bool profile_once = false;  // (internal) the child that --ncu profiles: one launch of one variant
  Params params;              // the problem's own parameters, each at its default or as given
};

enum class ParseOutcome { run, done, usage_error };

// Parses argv: the options every lesson has, and the problem's own `params`.
// On `done` (--help) the help text is in `message`; on `usage_error` the
// one-line error is in `message`.
ParseOutcome parse_lesson_options(const std::string& program, const std::string& description, int argc,
                                  char** argv, LessonOptions& out, std::string& message,
                                  const std::vector<ParamSpec>& params = {});

// Trace path for one variant: with several variants traced, "t.json" becomes
// "t.<variant>.json" ("t.json.gz": "t.<variant>.json.gz"); the Perfetto export
// is "t.perfetto.json" ("t.perfetto.json.gz": compressed too).
std::string trace_path_for(const std::string& trace_path, const std::string& variant, bool several);
std::string perfetto_path_for(const std::string& trace_json_path);

// The folder of recorded results and traces (env WORKBOOK_ASSETS, else the source tree's assets/).
std::string assets_dir();
// The commit the binaries were built from.
const char* build_commit();

}  // namespace wb
