// The opt-in `--ncu` mode: each variant once more, under Nsight Compute, for
// the DRAM bytes it reads and its L2 hit rate, printed beside the L2 model.
// Host only (the lesson re-runs itself as a child process under ncu).
#pragma once

#include <string>
#include <vector>

namespace wb {

// What ncu measured over the kernels of one profiled launch.
struct NcuMetrics {
  int kernels = 0;                 // kernels profiled (a variant may launch several)
  double dram_bytes_read = 0;      // dram__bytes_read.sum, summed over them
  std::vector<double> l2_hit_pct;  // lts__t_sector_hit_rate.pct, one per kernel
};

inline constexpr const char* kNcuMetrics = "dram__bytes_read.sum,lts__t_sector_hit_rate.pct";

// ncu on PATH, else in /usr/local/cuda/bin; "" when there is none.
std::string find_ncu();

// Parses the output of `ncu --csv --page raw --print-units base --metrics
// kNcuMetrics ...` (the program's own output may be mixed in). False, with
// the reason in `why`, when no kernel was profiled or a metric is missing.
bool parse_ncu_csv(const std::string& text, NcuMetrics* out, std::string* why);

// "0.171 GB from DRAM, hit rate 77.3%" (per kernel when there are several).
std::string format_ncu_metrics(const NcuMetrics& m);

// The last non-empty line of `text` ("" when there is none).
std::string last_line(const std::string& text);

// Runs argv[0] with its arguments (no shell), stdout and stderr into `output`;
// returns the exit status, or -1 when it could not be started.
int run_capture(const std::vector<std::string>& argv, std::string* output);

}  // namespace wb
