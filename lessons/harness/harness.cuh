// The harness every lesson uses. A lesson supplies a table of variants; the
// harness parses the options, checks each variant against cuBLAS and an fp64
// reference, times it against cuBLAS in the same run, prints the report and
// writes results and traces.
//
//   int main(int argc, char** argv) {
//     return wb::run_lesson("lesson01_naive", variants(), argc, argv);
//   }
//
// Conventions for every kernel: A is M x K, B is K x N, C is M x N, all row-major
// fp16; accumulation is fp32; any M, N, K >= 1 (tails masked).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "records/records.hpp"
#include "schedule/activation.hpp"
#include "schedule/tile_order.hpp"
#include "schedule/trace_record.hpp"

namespace wb {

struct Variant {
  std::string name;   // command-line name: lower case, digits, '_'
  std::string what;   // one line for the report
  int min_cc = 75;    // oldest compute capability, x10 (80 for cp.async, 90 for wgmma/TMA)
  Activation activation = Activation::none;  // epilogue applied; the references apply it too
  // Tile sizes, grid, occupancy (cudaOccupancyMaxActiveBlocksPerMultiprocessor) and
  // work units (trace records) for this shape. Called once per shape.
  std::function<KernelConfig(const GemmShape&)> config;
  // Enqueues the work on `stream`; must not synchronise.
  std::function<void(const GemmArgs&, cudaStream_t)> launch;
  // Device memory the launch needs beside its operands (GemmArgs::workspace),
  // owned by the harness and zeroed once; empty: none.
  std::function<size_t(const GemmShape&)> workspace_bytes;
  // DRAM bytes this variant must move at least; empty: A and B read once, C written once.
  std::function<double(const GemmShape&)> bytes;
  // A note for this shape (e.g. "falls back to lesson 03: row stride not 16-byte aligned"); empty: none.
  std::function<std::string(const GemmShape&)> note;
  // What a model predicts for this variant on this GPU (e.g. the L2 model's DRAM
  // bytes for its tile order), printed under the report beside the measurement.
  std::function<std::string(const GemmShape&, const KernelConfig&, const GpuInfo&)> model;
};

// Runs a lesson: see the file comment. Returns the process exit code
// (0 ok, 1 a check failed or a CUDA error, 2 bad arguments / no GPU for --json).
int run_lesson(const std::string& lesson_id, const std::vector<Variant>& variants, int argc, char** argv);

}  // namespace wb
