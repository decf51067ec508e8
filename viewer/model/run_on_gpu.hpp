// "Run on this GPU": run a lesson binary built next to the viewer with --trace,
// then load the trace it wrote. The lesson is a child process (no shell), so a
// crash or a CUDA error in it is an error message here, never the viewer's end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace wb::viewer {

struct GpuRunRequest {
  std::string bin_dir;   // where the lesson binaries are (the viewer's own folder)
  std::string lesson;    // e.g. "lesson03_grouped"
  std::string variant;   // e.g. "grouped"
  int64_t m = 4096, n = 4096, k = 4096;
  int reps = 3;
};

// The folder the running executable is in ("" when it cannot be told).
std::string executable_dir();

// Lesson binaries present in bin_dir ("lesson01_naive", ...), sorted. Empty in
// builds without CUDA, where the lessons are not built.
std::vector<std::string> available_lessons(const std::string& bin_dir);

// Empty when the request can run; otherwise why not (shown beside the disabled button).
std::string why_cannot_run(const GpuRunRequest& request);

// The command line run_on_gpu executes (argv[0] first).
std::vector<std::string> gpu_run_command(const GpuRunRequest& request, const std::string& trace_path);

// Runs the lesson and reads its trace. On failure returns nothing and sets `error`
// to one line (the lesson's exit status and the last line it printed).
std::optional<Trace> run_on_gpu(const GpuRunRequest& request, std::string* error);

}  // namespace wb::viewer
