// The harness every lesson uses. A lesson declares its PROBLEM (what is
// computed: operands and outputs, parameters, the reference it is timed
// against, the fp64 check, the work done) and its VARIANTS (how: a launch
// each). The harness does the rest the same way for every problem:
//   options, validated before any GPU call (bad input: one line, exit 2);
//   device memory checked before allocating; RAII buffers; random inputs
//   (never zeros) and NaN-poisoned outputs before every run;
//   every output of every variant checked against the reference and against
//   fp64 on sampled rows (a failure: marked FAIL, exit 1);
//   timing in interleaved, shuffled rounds against the reference, L2 flushed
//   before every run, a variant's `prepare` inside its timed region;
//   the report, results JSON, per-block traces and their Perfetto export.
//
//   int main(int argc, char** argv) {
//     return wb::run_lesson(wb::gemm_lesson("lesson01_naive", variants()), argc, argv);
//   }
//
// Kernels know nothing of this file: a lesson's variants adapt the harness's
// Buffers to the kernels' own arguments (gemm_problem.cuh does it for
// C = act(A B), the problem of lessons 01-04).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness/catalog.hpp"
#include "harness/params.hpp"
#include "harness/tensor.hpp"
#include "records/records.hpp"
#include "schedule/activation.hpp"
#include "schedule/trace_record.hpp"

namespace wb {

// What a run is for: --m --n --k and the problem's own parameters.
struct ProblemSize {
  int m = 0, n = 0, k = 0;
  Params params;
};

// What a launch gets: device pointers to the problem's inputs and outputs, in
// the order the problem lists them, the variant's workspace and the trace
// buffer. Outputs are poisoned with NaN before every run.
struct Buffers {
  ProblemSize size;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  void* workspace = nullptr;        // Variant::workspace_bytes of it, zeroed once
  size_t workspace_bytes = 0;
  TraceRecord* trace = nullptr;     // one record per work unit, or nullptr (tracing off)
  cublasHandle_t cublas = nullptr;  // the harness's handle, on the launch's stream
};

using LaunchFn = std::function<void(const Buffers&, cudaStream_t)>;

// One way of computing the problem.
struct Variant {
  std::string name;   // command-line name: lower case, digits, '_'
  std::string what;   // one line for the report
  int min_cc = 75;    // oldest compute capability, x10 (80 for cp.async, 90 for wgmma/TMA)
  // A bound, not a way to solve the problem as posed (lesson 08: cuBLAS on
  // weights compacted before timing, the router's gather left out): timed and
  // checked like a variant, marked as a bound in the report and the results,
  // and never counted as the fastest.
  bool bound = false;
  Activation activation = Activation::none;  // fused into the epilogue; the check applies it to the reference
  // Tile sizes, grid, occupancy and work units (trace records) for this size;
  // empty for a library call (nothing to trace).
  std::function<KernelConfig(const ProblemSize&)> config;
  LaunchFn launch;    // enqueues the work; must not synchronise
  // Enqueued inside the timed region, right before `launch`: work the variant's
  // time must include (e.g. zeroing an output it accumulates into with atomics).
  LaunchFn prepare;
  std::function<size_t(const ProblemSize&)> workspace_bytes;  // device memory beside the operands; empty: none
  std::function<double(const ProblemSize&)> flops;            // empty: the problem's
  std::function<double(const ProblemSize&)> bytes;            // DRAM bytes it must move at least; empty: the problem's
  std::string bytes_what;  // with `bytes`: what they count, for the report's GB/s line ("" : the problem's bytes)
  std::function<std::string(const ProblemSize&)> note;        // e.g. "falls back to lesson 03: ..."; "": none
  // Why the variant does not apply to this size (reported as skipped); "": it does.
  std::function<std::string(const ProblemSize&)> skip;
  // What a model predicts for this variant on this GPU, printed under the report.
  std::function<std::string(const ProblemSize&, const KernelConfig&, const GpuInfo&)> model;
};

// What every variant is checked and timed against: one library call or a
// sequence of them, writing every output.
struct Reference {
  std::string name = "cublas";   // its row in the report and results
  std::string label = "cuBLAS";  // how the report's prose names it
  std::string what;              // one line for the report
  LaunchFn launch;
  std::function<size_t(const ProblemSize&)> workspace_bytes;  // scratch for the sequence (zeroed once); empty: none
};

struct Problem {
  std::string summary;  // "C = A B", printed under the shape
  std::string dtype = "fp16 in, fp32 accumulate, fp16 out";
  std::vector<ParamSpec> params;                                // the problem's own options
  std::function<std::string(const ProblemSize&)> validate;     // "" or a one-line reason; before any GPU work
  std::function<std::vector<TensorSpec>(const ProblemSize&)> inputs;
  std::function<std::vector<TensorSpec>(const ProblemSize&)> outputs;
  // Writes the inputs marked filled_by_problem (the others arrive empty; they
  // are filled uniform in [-1, 1) on the device).
  std::function<void(const ProblemSize&, std::vector<HostTensor>& inputs, uint64_t seed)> fill;
  Reference reference;
  // What the variants' outputs are compared with, when the timed reference
  // computes something else (lesson 08 times the dense FFN, every neuron on,
  // and checks against the masked one); empty launch: the reference itself.
  Reference check_reference;
  // For a problem whose N and K follow from its own parameters (lesson 08:
  // --model gives d_model and d_ff): sets them, and --n / --k become an error
  // that `sizes_from_params_why` explains. Empty: --n and --k as given.
  std::function<void(const Params&, int& n, int& k)> sizes_from_params;
  std::string sizes_from_params_why;
  // Entries the results' "shape" has beside m, n, k and the parameters
  // (lesson 08: d_model, d_ff, the active count).
  std::function<std::map<std::string, ShapeParam>(const ProblemSize&)> shape_extras;
  // What a trace's kernel config takes from the inputs (lesson 08: the active
  // neurons' list, read back from the device); empty: nothing.
  std::function<void(const ProblemSize&, const Buffers& inputs, KernelConfig& config)> trace_extras;
  // fp64 values of rows `rows` of output `output` (rows.size() x cols, before
  // any fused activation), computed from the inputs.
  std::function<std::vector<double>(const ProblemSize&, const std::vector<HostTensor>& inputs, size_t output,
                                    const std::vector<int64_t>& rows)>
      fp64_rows;
  std::function<double(const ProblemSize&)> flops;
  std::function<double(const ProblemSize&)> bytes;  // empty: every input read once, every output written once
  double tolerance = 5e-3;                          // ||out - ref|| / ||ref||, against the reference and fp64
};

// What a lesson's `conclusion` sees once every variant has been timed.
struct RunSummary {
  const ProblemSize& size;
  const Results& results;                           // header (GPU), timing, every variant, copy_gbps
  const std::map<std::string, KernelConfig>& configs;  // by variant name (tiled kernels only)
};

struct Lesson {
  LessonInfo info;  // title and explanation (harness/catalog.hpp)
  Problem problem;
  std::vector<Variant> variants;
  // Bytes of a device-to-device copy to time in the same run (its GB/s goes
  // into the report and results); empty: none.
  std::function<double(const ProblemSize&)> copy_bytes;
  // Also time a kernel that only reads copy_bytes once (results' read_floor_ms):
  // the floor of a lesson whose time is those bytes over the bandwidth.
  bool read_floor = false;
  // Run every variant a second time after its check and count the output
  // elements that differ bitwise between the two runs (results' bitwise_diffs):
  // for lessons where some variants add in an order that varies (atomics).
  bool repeat_check = false;
  // The shape a run takes when --m, --n or --k is not given.
  int default_m = 4096, default_n = 4096, default_k = 4096;
  // Printed after the report and the models' lines: what this run shows.
  std::function<std::string(const RunSummary&)> conclusion;
};

// Runs a lesson: see the file comment. Returns the process exit code
// (0 ok, 1 a check failed or a CUDA error, 2 bad arguments / no GPU for --json).
int run_lesson(const Lesson& lesson, int argc, char** argv);

// ------------------------------------------------------------ typed variants
// A variant written against a problem's own argument and size types (GemmArgs
// and GemmShape for lessons 01-04), so that kernels' launchers and configs
// plug in directly. `erase_variant` turns it into a Variant, given how to
// build the arguments from Buffers and the size type from a ProblemSize.
template <class Args, class Shape>
struct TypedVariant {
  std::string name;
  std::string what;
  int min_cc = 75;
  Activation activation = Activation::none;
  std::function<KernelConfig(const Shape&)> config;
  std::function<void(const Args&, cudaStream_t)> launch;
  std::function<void(const Args&, cudaStream_t)> prepare;
  std::function<size_t(const Shape&)> workspace_bytes;
  std::function<double(const Shape&)> flops;
  std::function<double(const Shape&)> bytes;
  std::string bytes_what;
  std::function<std::string(const Shape&)> note;
  std::function<std::string(const Shape&, const KernelConfig&, const GpuInfo&)> model;
};

template <class Args, class Shape, class Bind, class ShapeOf>
Variant erase_variant(const TypedVariant<Args, Shape>& t, Bind bind, ShapeOf shape_of) {
  Variant v;
  v.name = t.name;
  v.what = t.what;
  v.min_cc = t.min_cc;
  v.activation = t.activation;
  if (t.config) v.config = [f = t.config, shape_of](const ProblemSize& s) { return f(shape_of(s)); };
  if (t.launch) v.launch = [f = t.launch, bind](const Buffers& b, cudaStream_t st) { f(bind(b), st); };
  if (t.prepare) v.prepare = [f = t.prepare, bind](const Buffers& b, cudaStream_t st) { f(bind(b), st); };
  if (t.workspace_bytes)
    v.workspace_bytes = [f = t.workspace_bytes, shape_of](const ProblemSize& s) { return f(shape_of(s)); };
  if (t.flops) v.flops = [f = t.flops, shape_of](const ProblemSize& s) { return f(shape_of(s)); };
  if (t.bytes) v.bytes = [f = t.bytes, shape_of](const ProblemSize& s) { return f(shape_of(s)); };
  v.bytes_what = t.bytes_what;
  if (t.note) v.note = [f = t.note, shape_of](const ProblemSize& s) { return f(shape_of(s)); };
  if (t.model)
    v.model = [f = t.model, shape_of](const ProblemSize& s, const KernelConfig& c, const GpuInfo& g) {
      return f(shape_of(s), c, g);
    };
  return v;
}

}  // namespace wb
