// The printed report: one table per run, and the recorded results shown when
// this machine cannot run a lesson. Host only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace wb {

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 50 MiB L2), driver 13.0, CUDA 13.0, cuBLAS 13.0.2"
std::string describe_gpu(const RunHeader& h);

// variant | ms | TFLOP/s | GB/s | % of cuBLAS | rel. err | max abs err | check
std::string format_report(const Results& r);

// What the GB/s column counts, and which variants count otherwise.
std::string gbps_line(const Results& r);

// Whether each variant gives the same bits twice (Lesson::repeat_check): the
// variants whose outputs differed between two runs, with how many elements,
// and the ones that did not. "" when nothing was repeated.
std::string repeat_line(const Results& r);

// Rounds that were disturbed: % of cuBLAS is the median over rounds of the
// reference's round median over the variant's, which a slow launch or two
// does not move, but a slowdown spanning whole rounds can. Lists every
// variant whose ratio so taken and the ratio of the two overall medians
// differ by more than a fifth, and says to run again. "" when none does, and
// for fewer than 3 rounds.
std::string disturbed_rounds_line(const Results& r);

// What each fused activation costs: for every variant <base>_<activation>
// (relu, leaky_relu, gelu, silu) whose <base> ran too, how much lower its % of
// cuBLAS is, relative to <base>'s. Both are medians over rounds paired with
// cuBLAS, so drift between the two runs cancels. "" when there is none.
std::string fused_epilogue_lines(const Results& r);

// Every recorded results file of a lesson, on every GPU and shape:
// assets/results/<gpu>/<lesson>.json and <lesson>-*.json, sorted.
std::vector<std::string> recorded_results_files(const std::string& assets, const std::string& lesson_id);

// What a lesson shows where it cannot run: the recordings at the shape asked
// for, one per GPU (the one with the most variants; the others named), each
// labelled "RECORDED on <GPU>, <date>", with only the variants asked for.
// Where nothing is recorded at that shape, a line says so and names the
// shapes that are, and the recordings at 4096^3 follow.
// Among the recordings at the shape, those whose own parameters (sparsity,
// activation, group size, ...) equal the run's are shown; a parameter a
// recording does not have (it was recorded before the parameter existed)
// matches the parameter's default only. When none match, a line says so and
// the recordings at the shape follow.
struct RecordedRequest {
  int64_t m = 4096, n = 4096, k = 4096;
  std::vector<std::string> variants;  // empty: all
  std::map<std::string, ShapeParam> params;    // the run's own parameters; empty: any
  std::map<std::string, ShapeParam> defaults;  // their defaults; a parameter not here matches anything
};
std::string format_recorded_results(const std::string& assets, const std::string& lesson_id,
                                    const RecordedRequest& request = {});

// The L2 model's prediction for a tiled kernel's order on this GPU: DRAM bytes,
// hit rate, waves. Uses the kernel's tile sizes, order, GROUP_M and blocks per SM.
std::string l2_model_line(int64_t m, int64_t n, int64_t k, const KernelConfig& kernel, const GpuInfo& gpu);

// Wave quantization of a persistent kernel and what Stream-K does about it:
// waves of whole tiles, the last wave's fill, and the k tiles per block of the
// shared run when the plan shares it (schedule/stream_k.hpp).
std::string stream_k_model_line(int64_t k, const KernelConfig& kernel);

// Step 9's balanced persistent grid: how the tiles fall on its blocks, and on
// one block per SM (the same number of waves, unevenly).
std::string balanced_grid_model_line(const KernelConfig& kernel, const GpuInfo& gpu);

// A split-K grid in waves: "split 4: 32 tiles x 4 = 128 units on 132 SMs (1
// each; 2 fit): 1 wave, the last 97% full" (`per_sm`: units the wave model
// gives each SM).
std::string split_wave_line(const KernelConfig& kernel, const GpuInfo& gpu, int per_sm);

// What --split-k became when it is not what was asked ("" when it is): "split 9
// clamped to 4 (K has 4 k tiles: at most one per split)".
std::string split_clamp_note(int wanted, int used, int k_tiles);

// Each variant's GB/s against the copy's timed in the same run, and the
// fastest variant's ratio to the reference; "" when no copy was timed.
std::string copy_bandwidth_lines(const Results& r);

// The floor of a memory-bound run: what a kernel that only reads the lesson's
// bytes took (results' read_floor_ms and read_floor_bytes), how far above it
// the reference and the fastest variant are, and so the most any variant could
// gain on the reference. "" when the floor was not measured.
std::string read_floor_line(const Results& r);

// Lesson 03's question, answered for one run: does the tile order matter at
// this shape on this GPU? Each order's DRAM bytes (the L2 model), moved while
// the math runs at the fastest order's measured rate, against what a
// device-to-device copy moved in the same run; then a shape where the order
// should pay on this GPU, or why none should (models/order_model.hpp).
struct OrderRun {
  std::string name;     // the variant, e.g. "grouped8"
  KernelConfig config;  // its tile sizes, order, GROUP_M, blocks per SM
  double tflops = 0;    // measured in this run
};
std::string order_verdict(int64_t m, int64_t n, int64_t k, const std::vector<OrderRun>& orders, const GpuInfo& gpu,
                          double copy_gbps, const std::string& lesson_id);

// Lower-case, '-' separated: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3".
std::string gpu_slug(const std::string& gpu_name);

}  // namespace wb
