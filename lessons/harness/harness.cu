// The harness behind every lesson: options -> GPU checks -> verification
// against the reference and fp64 -> interleaved timing against the reference
// -> report, results JSON and traces. See harness.cuh.
#include "harness/harness.cuh"

#include <cuda_fp16.h>
#include <cuda_profiler_api.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "common/check.cuh"
#include "common/device_buffer.cuh"
#include "harness/catalog.hpp"
#include "harness/ncu.hpp"
#include "harness/options.hpp"
#include "harness/report.hpp"
#include "harness/verify.hpp"

namespace wb {

namespace {

struct CublasHandle {
  cublasHandle_t h = nullptr;
  CublasHandle() {
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw CudaError("cuBLAS: cublasCreate failed");
  }
  ~CublasHandle() {
    if (h) cublasDestroy(h);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
};

// ---------------------------------------------------------------- data

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1), a pure function of (seed, tensor, index): reproducible, never zero-filled.
template <class T>
__global__ void fill_uniform_kernel(T* out, size_t count, uint64_t seed, uint64_t tensor) {
  const uint64_t salt = splitmix64(seed * 0x100000001B3ull + tensor);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t r = splitmix64(salt ^ i);
    const float u = float(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    out[i] = T(2.0f * u - 1.0f);
  }
}

// Reads `words` 16-byte words of `buf`, which pushes everything else out of
// L2 and leaves it holding only clean lines. A memset would flush too, but
// leave L2 full of dirty lines, and the timed kernel would pay for writing them
// back: up to L2's size in DRAM writes, as much as a skinny product reads
// (docs/notes/measuring.md). `buf` is zeroed: the sink is never written.
__global__ void read_flush_kernel(const uint4* __restrict__ buf, size_t words, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;  // keeps the loads
}

// The floor of a memory-bound lesson: a kernel that only reads `words` 16-byte
// words, each once, with nothing else to do: four blocks of 512 threads per
// SM, four evict-first loads in flight per thread. No kernel that must read
// those bytes can finish sooner, timed the same way (after the same flush,
// launch included): it says how far above the memory's limit a variant is, and
// how much faster than the reference any variant could be.
__global__ void __launch_bounds__(512) read_floor_kernel(const uint4* __restrict__ buf, size_t words, unsigned* sink) {
  constexpr int kInFlight = 4;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  unsigned acc = 0;
  for (; i + (kInFlight - 1) * stride < words; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = __ldcs(buf + i + u * stride);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < words; i += stride) {
    const uint4 v = __ldcs(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;  // keeps the loads
}

// Fills input `index` (tensor id index + 1: A, B of lessons 01-04 are 1, 2).
void fill_uniform(const TensorSpec& spec, void* data, uint64_t seed, size_t index, cudaStream_t s) {
  const uint64_t tensor = index + 1;
  switch (spec.dtype) {
    case DType::f16:
      fill_uniform_kernel<<<1024, 256, 0, s>>>(static_cast<__half*>(data), size_t(spec.count()), seed, tensor);
      break;
    case DType::f32:
      fill_uniform_kernel<<<1024, 256, 0, s>>>(static_cast<float*>(data), size_t(spec.count()), seed, tensor);
      break;
    case DType::i32:
    case DType::u4x8:
      throw CudaError("input " + spec.name + " (" + dtype_name(spec.dtype) +
                      ") has no uniform fill: the problem must fill it (filled_by_problem)");
  }
  CUDA_CHECK_LAUNCH();
}

HostTensor to_host(const TensorSpec& spec, const void* device) {
  HostTensor t(spec);
  CUDA_CHECK(cudaMemcpy(t.data.data(), device, spec.bytes(), cudaMemcpyDeviceToHost));
  return t;
}

double median_of(std::vector<float> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (double(v[h - 1]) + v[h]);
}

// ---------------------------------------------------------------- GPU facts

GpuInfo query_gpu(int device) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  GpuInfo g;
  g.name = p.name;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.sm_count = p.multiProcessorCount;
  g.l2_bytes = p.l2CacheSize;
  g.memory_bytes = int64_t(p.totalGlobalMem);
  CUDA_CHECK(cudaDeviceGetAttribute(&g.sm_clock_khz, cudaDevAttrClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&g.mem_clock_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&g.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&g.max_smem_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return g;
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

Versions query_versions() {
  Versions v;
  int d = 0, r = 0;
  CUDA_CHECK(cudaDriverGetVersion(&d));
  CUDA_CHECK(cudaRuntimeGetVersion(&r));
  v.driver = version_string(d);
  v.runtime = version_string(r);
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  v.cublas = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  return v;
}

// Why this GPU cannot run a variant, or "" when it can. Code for sm_90a
// (wgmma, setmaxnreg) runs on compute capability 9.0 only.
std::string unsupported_reason(const Variant& v, const GpuInfo& g) {
  const int cc = g.cc_major * 10 + g.cc_minor;
  if (v.min_cc >= 90 && cc != 90)
    return "needs a Hopper GPU (sm_90a: wgmma/TMA); this GPU is sm_" + std::to_string(cc);
  if (cc < v.min_cc)
    return "needs sm_" + std::to_string(v.min_cc) + " or newer; this GPU is sm_" + std::to_string(cc);
  return "";
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  return buf;
}

std::string size_text(const ProblemSize& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// ---------------------------------------------------------------- the run

struct Selected {
  const Variant* variant;
  std::string skip_reason;
  KernelConfig config;
  std::unique_ptr<DeviceBuffer<unsigned char>> workspace;
};

class LessonRun {
 public:
  LessonRun(const Lesson& lesson, const LessonOptions& opt, std::vector<Selected> selected, std::string ncu)
      : lesson_(lesson), problem_(lesson.problem), opt_(opt), selected_(std::move(selected)), ncu_(std::move(ncu)) {
    size_.m = opt.m;
    size_.n = opt.n;
    size_.k = opt.k;
    size_.params = opt.params;
  }

  int run();

 private:
  int profile_once();
  bool measure_with_ncu();
  void measure_copy_bandwidth();
  void allocate();
  void verify(size_t i, VariantResult& out);
  void time_all(std::vector<VariantResult>& results, VariantResult& reference_row);
  void write_traces(const std::vector<VariantResult>& results);
  // The buffers a launch of variant `i` gets (SIZE_MAX: the reference), writing `outputs`.
  Buffers buffers(const std::vector<DeviceBuffer<unsigned char>>& outputs, size_t i,
                  TraceRecord* trace = nullptr) const;
  void poison(const std::vector<DeviceBuffer<unsigned char>>& outputs) const;
  void flush_l2() const;  // L2 left holding only clean lines of the flush buffer
  // One timed run: poison the outputs, flush L2, then time `prepare` + `launch`.
  void enqueue_timed(const LaunchFn& prepare, const LaunchFn& launch, const Buffers& b, cudaEvent_t start,
                     cudaEvent_t end);

  const Lesson& lesson_;
  const Problem& problem_;
  const LessonOptions& opt_;
  ProblemSize size_;
  std::vector<Selected> selected_;
  std::string ncu_;  // Nsight Compute's ncu, for --ncu
  RunHeader header_;
  double copy_gbps_ = 0;
  double read_floor_ms_ = 0;
  Stream stream_;
  std::unique_ptr<CublasHandle> cublas_;
  std::vector<TensorSpec> input_specs_, output_specs_;
  std::vector<DeviceBuffer<unsigned char>> inputs_, outputs_, reference_outputs_;
  DeviceBuffer<unsigned char> flush_;
  std::unique_ptr<DeviceBuffer<unsigned char>> reference_workspace_;
  std::vector<HostTensor> reference_host_;        // the reference's outputs
  std::vector<std::vector<int64_t>> fp64_rows_;   // per output: the sampled rows
  std::vector<std::vector<double>> fp64_values_;  // per output: rows x cols
};

Buffers LessonRun::buffers(const std::vector<DeviceBuffer<unsigned char>>& outputs, size_t i,
                           TraceRecord* trace) const {
  Buffers b;
  b.size = size_;
  for (const auto& in : inputs_) b.inputs.push_back(in.get());
  for (const auto& out : outputs) b.outputs.push_back(out.get());
  if (i < selected_.size() && selected_[i].workspace) {
    b.workspace = selected_[i].workspace->get();
    b.workspace_bytes = selected_[i].workspace->bytes();
  } else if (i == SIZE_MAX && reference_workspace_) {
    b.workspace = reference_workspace_->get();
    b.workspace_bytes = reference_workspace_->bytes();
  }
  b.trace = trace;
  b.cublas = cublas_ ? cublas_->h : nullptr;
  return b;
}

void LessonRun::poison(const std::vector<DeviceBuffer<unsigned char>>& outputs) const {
  for (const auto& out : outputs) CUDA_CHECK(cudaMemsetAsync(out.get(), 0xFF, out.bytes(), stream_.s));  // NaN
}

void LessonRun::flush_l2() const {
  read_flush_kernel<<<header_.gpu.sm_count * 4, 512, 0, stream_.s>>>(
      static_cast<const uint4*>(static_cast<const void*>(flush_.get())), flush_.bytes() / 16,
      static_cast<unsigned*>(static_cast<void*>(flush_.get())));
  CUDA_CHECK_LAUNCH();
}

void LessonRun::enqueue_timed(const LaunchFn& prepare, const LaunchFn& launch, const Buffers& b, cudaEvent_t start,
                              cudaEvent_t end) {
  poison(outputs_);
  flush_l2();
  CUDA_CHECK(cudaEventRecord(start, stream_.s));
  if (prepare) prepare(b, stream_.s);
  launch(b, stream_.s);
  CUDA_CHECK(cudaEventRecord(end, stream_.s));
}

// A device-to-device copy of the lesson's chosen size, timed like the
// variants (L2 flushed before each; median of 9 after a warm-up), counting
// bytes read and written.
void LessonRun::measure_copy_bandwidth() {
  if (!lesson_.copy_bytes) return;
  const size_t bytes = size_t(lesson_.copy_bytes(size_));
  if (bytes == 0) return;
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (2.0 * double(bytes) + double(256u << 20) > double(free_b)) return;  // no room: not measured
  DeviceBuffer<unsigned char> from(bytes), to(bytes);
  CUDA_CHECK(cudaMemsetAsync(from.get(), 0x3C, bytes, stream_.s));
  std::vector<float> ms;
  for (int r = 0; r < 10; ++r) {
    Event start, end;
    flush_l2();
    CUDA_CHECK(cudaEventRecord(start.e, stream_.s));
    CUDA_CHECK(cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice, stream_.s));
    CUDA_CHECK(cudaEventRecord(end.e, stream_.s));
    CUDA_CHECK(cudaEventSynchronize(end.e));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start.e, end.e));
    if (r > 0) ms.push_back(t);
  }
  copy_gbps_ = 2.0 * double(bytes) / (median_of(ms) * 1e-3) / 1e9;

  // The same bytes only read (the floor), rounded down to whole 16-byte words.
  ms.clear();
  const size_t words = bytes / 16;
  for (int r = 0; r < 10 && words > 0 && lesson_.read_floor; ++r) {
    Event start, end;
    flush_l2();
    CUDA_CHECK(cudaEventRecord(start.e, stream_.s));
    read_floor_kernel<<<header_.gpu.sm_count * 4, 512, 0, stream_.s>>>(
        static_cast<const uint4*>(static_cast<const void*>(from.get())), words,
        static_cast<unsigned*>(static_cast<void*>(to.get())));
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(end.e, stream_.s));
    CUDA_CHECK(cudaEventSynchronize(end.e));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start.e, end.e));
    if (r > 0) ms.push_back(t);
  }
  if (!ms.empty()) read_floor_ms_ = median_of(ms);
}

void LessonRun::allocate() {
  input_specs_ = problem_.inputs(size_);
  output_specs_ = problem_.outputs(size_);
  double operand_bytes = 0;
  for (const TensorSpec& t : input_specs_) operand_bytes += double(t.bytes());
  for (const TensorSpec& t : output_specs_) operand_bytes += 2.0 * double(t.bytes());  // variants' and reference's
  const size_t flush_bytes = std::max<size_t>(size_t(2 * header_.gpu.l2_bytes), size_t(64) << 20);
  size_t trace_bytes = 0, workspace_bytes = 0;
  for (const Selected& s : selected_) {
    if (!s.skip_reason.empty()) continue;
    if (!opt_.trace_path.empty()) trace_bytes = std::max(trace_bytes, size_t(s.config.work_units) * sizeof(TraceRecord));
    if (s.variant->workspace_bytes) workspace_bytes += s.variant->workspace_bytes(size_);
  }
  size_t reference_workspace = problem_.reference.workspace_bytes ? problem_.reference.workspace_bytes(size_) : 0;
  if (problem_.check_reference.workspace_bytes)  // the two run one after the other: one workspace serves both
    reference_workspace = std::max(reference_workspace, problem_.check_reference.workspace_bytes(size_));
  workspace_bytes += reference_workspace;
  const double need = operand_bytes + double(flush_bytes) + double(trace_bytes) + double(workspace_bytes) +
                      double(256u << 20);  // cuBLAS workspace and context headroom
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (need > double(free_b))
    throw CudaError("shape " + size_text(size_) + " needs " + gib(need) + " of device memory; " +
                    gib(double(free_b)) + " is free");

  // Inputs: uniform in [-1, 1) on the device, or the problem's own values.
  std::vector<HostTensor> by_problem(input_specs_.size());
  bool any_by_problem = false;
  for (size_t i = 0; i < input_specs_.size(); ++i) {
    inputs_.emplace_back(input_specs_[i].bytes());
    if (input_specs_[i].filled_by_problem) {
      by_problem[i] = HostTensor(input_specs_[i]);
      any_by_problem = true;
    } else {
      fill_uniform(input_specs_[i], inputs_.back().get(), opt_.seed, i, stream_.s);
    }
  }
  if (any_by_problem) {
    if (!problem_.fill) throw CudaError("the problem marks inputs filled_by_problem but has no fill()");
    problem_.fill(size_, by_problem, opt_.seed);
    for (size_t i = 0; i < input_specs_.size(); ++i)
      if (input_specs_[i].filled_by_problem)
        CUDA_CHECK(cudaMemcpy(inputs_[i].get(), by_problem[i].data.data(), input_specs_[i].bytes(),
                              cudaMemcpyHostToDevice));
  }
  for (const TensorSpec& t : output_specs_) {
    outputs_.emplace_back(t.bytes());
    reference_outputs_.emplace_back(t.bytes());
  }
  flush_ = DeviceBuffer<unsigned char>(flush_bytes);
  CUDA_CHECK(cudaMemsetAsync(flush_.get(), 0, flush_bytes, stream_.s));
  for (Selected& s : selected_) {
    if (!s.skip_reason.empty() || !s.variant->workspace_bytes) continue;
    const size_t bytes = s.variant->workspace_bytes(size_);
    if (bytes == 0) continue;
    s.workspace = std::make_unique<DeviceBuffer<unsigned char>>(bytes);
    CUDA_CHECK(cudaMemsetAsync(s.workspace->get(), 0, bytes, stream_.s));
  }

  if (reference_workspace > 0) {
    reference_workspace_ = std::make_unique<DeviceBuffer<unsigned char>>(reference_workspace);
    CUDA_CHECK(cudaMemsetAsync(reference_workspace_->get(), 0, reference_workspace, stream_.s));
  }
  cublas_ = std::make_unique<CublasHandle>();
  if (cublasSetStream(cublas_->h, stream_.s) != CUBLAS_STATUS_SUCCESS) throw CudaError("cuBLAS: cublasSetStream failed");
  poison(reference_outputs_);
  const Reference& checked_against = problem_.check_reference.launch ? problem_.check_reference : problem_.reference;
  checked_against.launch(buffers(reference_outputs_, SIZE_MAX), stream_.s);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream_.s));
  if (opt_.no_check) return;

  // What the checks compare with: the reference's outputs, and fp64 on sampled
  // rows of each output (the first, the last and up to 14 random others).
  std::vector<HostTensor> inputs_host;
  for (size_t i = 0; i < input_specs_.size(); ++i)
    inputs_host.push_back(input_specs_[i].filled_by_problem ? std::move(by_problem[i])
                                                            : to_host(input_specs_[i], inputs_[i].get()));
  for (size_t o = 0; o < output_specs_.size(); ++o) {
    reference_host_.push_back(to_host(output_specs_[o], reference_outputs_[o].get()));
    fp64_rows_.push_back(sample_rows(output_specs_[o].rows, opt_.seed + o));
    fp64_values_.push_back(problem_.fp64_rows(size_, inputs_host, o, fp64_rows_.back()));
    if (fp64_values_.back().size() != fp64_rows_.back().size() * size_t(output_specs_[o].cols))
      throw CudaError("the problem's fp64_rows returned the wrong number of values for " + output_specs_[o].name);
  }
}

void LessonRun::verify(size_t i, VariantResult& out) {
  const Variant& v = *selected_[i].variant;
  poison(outputs_);
  const Buffers b = buffers(outputs_, i);
  if (v.prepare) v.prepare(b, stream_.s);
  v.launch(b, stream_.s);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream_.s));
  if (opt_.no_check) {
    out.checked = false;
    return;
  }
  out.passed = true;
  std::vector<HostTensor> first_run;
  for (size_t o = 0; o < output_specs_.size(); ++o) {
    const HostTensor got = to_host(output_specs_[o], outputs_[o].get());
    if (lesson_.repeat_check) first_run.push_back(got);
    const OutputVerdict verdict =
        check_output(got, reference_host_[o], v.activation, fp64_rows_[o], fp64_values_[o], problem_.tolerance);
    out.outputs.push_back(verdict.check);
    out.rel_err = std::max(out.rel_err, verdict.check.rel_err);
    out.rel_err_fp64 = std::max(out.rel_err_fp64, verdict.check.rel_err_fp64);
    out.max_abs_err = std::max(out.max_abs_err, verdict.check.max_abs_err);
    if (std::isnan(verdict.check.rel_err)) out.rel_err = verdict.check.rel_err;
    if (std::isnan(verdict.check.rel_err_fp64)) out.rel_err_fp64 = verdict.check.rel_err_fp64;
    if (!verdict.check.passed) {
      out.passed = false;
      std::fprintf(stderr, "%s: variant %s FAILED on %s\n", lesson_.info.id.c_str(), v.name.c_str(),
                   describe_failure(verdict, (problem_.check_reference.launch ? problem_.check_reference
                                                                              : problem_.reference)
                                                 .label)
                       .c_str());
    }
  }
  if (lesson_.repeat_check) {
    // The same launch again, on the same inputs: does it give the same bits?
    poison(outputs_);
    if (v.prepare) v.prepare(b, stream_.s);
    v.launch(b, stream_.s);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaStreamSynchronize(stream_.s));
    out.bitwise_diffs = 0;
    for (size_t o = 0; o < output_specs_.size(); ++o) {
      const HostTensor again = to_host(output_specs_[o], outputs_[o].get());
      const size_t element = dtype_bytes(output_specs_[o].dtype);
      for (size_t e = 0; e + element <= again.data.size(); e += element)
        out.bitwise_diffs += std::memcmp(&again.data[e], &first_run[o].data[e], element) != 0;
    }
  }
}

void LessonRun::time_all(std::vector<VariantResult>& results, VariantResult& reference_row) {
  const int per_round = std::max(1, (opt_.reps + opt_.rounds - 1) / opt_.rounds);
  std::vector<Event> starts(static_cast<size_t>(per_round)), ends(static_cast<size_t>(per_round));
  const LaunchFn& reference = problem_.reference.launch;

  // Returns the round's samples (ms).
  const auto time_round = [&](const LaunchFn& prepare, const LaunchFn& launch, const Buffers& b) {
    for (int r = 0; r < per_round; ++r) enqueue_timed(prepare, launch, b, starts[r].e, ends[r].e);
    CUDA_CHECK(cudaStreamSynchronize(stream_.s));
    CUDA_CHECK_LAUNCH();
    std::vector<float> ms(static_cast<size_t>(per_round));
    for (int r = 0; r < per_round; ++r) CUDA_CHECK(cudaEventElapsedTime(&ms[r], starts[r].e, ends[r].e));
    return ms;
  };

  // Warm-up: one more untimed run of each (the verification run was the first).
  for (size_t i = 0; i < selected_.size(); ++i) {
    if (!selected_[i].skip_reason.empty()) continue;
    const Buffers b = buffers(outputs_, i);
    if (selected_[i].variant->prepare) selected_[i].variant->prepare(b, stream_.s);
    selected_[i].variant->launch(b, stream_.s);
  }
  const Buffers reference_buffers = buffers(outputs_, SIZE_MAX);
  reference(reference_buffers, stream_.s);
  CUDA_CHECK(cudaStreamSynchronize(stream_.s));

  std::vector<float> reference_all;
  std::vector<std::vector<float>> all(selected_.size());
  std::vector<std::vector<double>> ratios(selected_.size());
  // Each round takes the variants in a new random order. In a fixed order each
  // variant always follows the same neighbours, and what they leave behind
  // (the board's clock, most likely) biases it the same way every round
  // (docs/notes/measuring.md).
  std::vector<size_t> order(selected_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 shuffler(opt_.seed ^ 0x5DEECE66Dull);
  for (int round = 0; round < opt_.rounds; ++round) {
    std::shuffle(order.begin(), order.end(), shuffler);
    for (const size_t i : order) {
      if (!selected_[i].skip_reason.empty()) continue;
      const Variant& v = *selected_[i].variant;
      const auto ours = time_round(v.prepare, v.launch, buffers(outputs_, i));
      const auto theirs = time_round(LaunchFn(), reference, reference_buffers);
      all[i].insert(all[i].end(), ours.begin(), ours.end());
      reference_all.insert(reference_all.end(), theirs.begin(), theirs.end());
      ratios[i].push_back(median_of(theirs) / median_of(ours));
    }
  }
  double min_bytes = 0;
  for (const TensorSpec& t : input_specs_) min_bytes += double(t.bytes());
  for (const TensorSpec& t : output_specs_) min_bytes += double(t.bytes());
  if (problem_.bytes) min_bytes = problem_.bytes(size_);
  const double flops = problem_.flops ? problem_.flops(size_) : 0.0;
  const auto fill = [&](VariantResult& r, const std::vector<float>& samples, double work, double bytes) {
    r.median_ms = median_of(samples);
    r.min_ms = *std::min_element(samples.begin(), samples.end());
    r.max_ms = *std::max_element(samples.begin(), samples.end());
    r.samples = int(samples.size());
    r.flops = work;
    r.bytes = bytes;
    r.tflops = work / (r.median_ms * 1e-3) / 1e12;
    r.gbps = bytes / (r.median_ms * 1e-3) / 1e9;
  };
  for (size_t i = 0; i < selected_.size(); ++i) {
    if (!selected_[i].skip_reason.empty()) continue;
    const Variant& v = *selected_[i].variant;
    fill(results[i], all[i], v.flops ? v.flops(size_) : flops, v.bytes ? v.bytes(size_) : min_bytes);
    std::vector<float> rf(ratios[i].begin(), ratios[i].end());
    results[i].vs_cublas = median_of(rf);
  }
  if (!reference_all.empty()) {
    fill(reference_row, reference_all, flops, min_bytes);
    reference_row.vs_cublas = 1.0;
  }
}

void LessonRun::write_traces(const std::vector<VariantResult>& results) {
  // A variant without work units (a library call) writes no records: nothing to trace.
  auto traceable = [](const Selected& s) { return s.skip_reason.empty() && s.config.work_units > 0; };
  int traced = 0;
  for (const Selected& s : selected_) traced += traceable(s) ? 1 : 0;
  const int per_round = std::max(1, (opt_.reps + opt_.rounds - 1) / opt_.rounds);
  for (size_t i = 0; i < selected_.size(); ++i) {
    if (!selected_[i].skip_reason.empty()) continue;
    const Variant& v = *selected_[i].variant;
    if (!traceable(selected_[i])) {
      std::printf("trace: %s is a library call and records no work units; not traced\n", v.name.c_str());
      continue;
    }
    const KernelConfig& cfg = selected_[i].config;
    DeviceBuffer<TraceRecord> records(size_t(cfg.work_units));
    // Traced runs are timed like the untimed ones, so the two medians can be compared.
    std::vector<float> ms;
    for (int r = 0; r < per_round; ++r) {
      Event start, end;
      CUDA_CHECK(cudaMemsetAsync(records.get(), 0xFF, records.bytes(), stream_.s));
      enqueue_timed(v.prepare, v.launch, buffers(outputs_, i, records.get()), start.e, end.e);
      CUDA_CHECK(cudaStreamSynchronize(stream_.s));
      CUDA_CHECK_LAUNCH();
      float t = 0;
      CUDA_CHECK(cudaEventElapsedTime(&t, start.e, end.e));
      ms.push_back(t);
    }
    Trace trace;
    trace.header = header_;
    trace.variant = v.name;
    trace.kernel = cfg;
    if (problem_.trace_extras) problem_.trace_extras(size_, buffers(outputs_, i), trace.kernel);
    trace.median_ms = results[i].median_ms;
    trace.traced_ms = median_of(ms);
    trace.records.resize(size_t(cfg.work_units));
    CUDA_CHECK(cudaMemcpy(trace.records.data(), records.get(), records.bytes(), cudaMemcpyDeviceToHost));
    int64_t missing = 0;
    for (const TraceRecord& r : trace.records) missing += (r.start_ns == ~uint64_t(0)) ? 1 : 0;
    if (missing)
      throw CudaError("variant " + v.name + ": " + std::to_string(missing) + " of " + std::to_string(cfg.work_units) +
                      " work units wrote no trace record");
    trace.time_origin_ns = rebase_trace_times(trace.records);
    const std::string path = trace_path_for(opt_.trace_path, v.name, traced > 1);
    write_trace(path, trace);
    write_maybe_compressed(perfetto_path_for(path), trace_to_chrome_json(trace));
    std::printf("trace: %s (%zu records; traced %.4f ms vs untraced %.4f ms) and %s\n", path.c_str(),
                trace.records.size(), trace.traced_ms, trace.median_ms, perfetto_path_for(path).c_str());
  }
}

int LessonRun::run() {
  CUDA_CHECK(cudaSetDevice(opt_.device));
  header_.date = utc_timestamp_now();
  header_.commit = build_commit();
  header_.versions = query_versions();
  header_.gpu = query_gpu(opt_.device);
  header_.lesson = lesson_.info.id;
  header_.m = opt_.m;
  header_.n = opt_.n;
  header_.k = opt_.k;
  header_.shape_params = shape_params(problem_.params, size_.params);
  if (problem_.shape_extras)
    for (const auto& [name, value] : problem_.shape_extras(size_)) header_.shape_params[name] = value;
  header_.dtype = problem_.dtype;
  std::printf("GPU: %s\n", describe_gpu(header_).c_str());
  std::string extra;
  for (const auto& [name, value] : size_.params.all()) extra += " " + name + "=" + value;
  std::printf("shape: M=%d N=%d K=%d%s, %s\n\n", opt_.m, opt_.n, opt_.k, extra.c_str(), header_.dtype.c_str());

  for (Selected& s : selected_) {
    s.skip_reason = unsupported_reason(*s.variant, header_.gpu);
    if (s.skip_reason.empty() && s.variant->skip) s.skip_reason = s.variant->skip(size_);
    if (s.skip_reason.empty() && s.variant->config) s.config = s.variant->config(size_);
    if (s.skip_reason.empty() && s.variant->note) {
      const std::string note = s.variant->note(size_);
      if (!note.empty()) std::printf("note: %s: %s\n", s.variant->name.c_str(), note.c_str());
    }
  }
  allocate();
  if (!opt_.profile_once) measure_copy_bandwidth();
  if (opt_.profile_once) return profile_once();

  std::vector<VariantResult> results(selected_.size());
  for (size_t i = 0; i < selected_.size(); ++i) {
    results[i].name = selected_[i].variant->name;
    results[i].what = selected_[i].variant->what;
    results[i].bytes_what = selected_[i].variant->bytes_what;
    results[i].bound = selected_[i].variant->bound;
    if (!selected_[i].skip_reason.empty()) {
      results[i].skipped = true;
      results[i].skip_reason = selected_[i].skip_reason;
      continue;
    }
    verify(i, results[i]);
    if (selected_[i].variant->config) results[i].split_k = std::max(1, selected_[i].config.split_k);
  }
  VariantResult reference_row;
  reference_row.name = problem_.reference.name;
  reference_row.what = problem_.reference.what;
  reference_row.reference = true;
  reference_row.passed = true;
  time_all(results, reference_row);

  Results res;
  res.header = header_;
  res.timing.rounds = opt_.rounds;
  res.timing.reps_per_round = std::max(1, (opt_.reps + opt_.rounds - 1) / opt_.rounds);
  res.timing.warmup = 1;
  res.timing.l2_flush_bytes = int64_t(flush_.bytes());
  res.reference = problem_.reference.name;
  res.copy_gbps = copy_gbps_;
  res.read_floor_ms = read_floor_ms_;
  if (read_floor_ms_ > 0) res.read_floor_bytes = double(size_t(lesson_.copy_bytes(size_)) / 16 * 16);
  res.variants = results;
  if (reference_row.samples > 0) res.variants.push_back(reference_row);

  std::printf("%s", format_report(res).c_str());
  std::printf("times: median of %d runs per variant (%d interleaved rounds with %s, in a random order each, "
              "L2 flushed and output poisoned before each); %% %s = median over rounds of %s time / "
              "variant time\n",
              res.timing.reps_per_round * opt_.rounds, opt_.rounds, problem_.reference.label.c_str(), "cuBLAS",
              problem_.reference.label.c_str());
  std::printf("%s", gbps_line(res).c_str());
  std::printf("%s", repeat_line(res).c_str());
  std::printf("%s", disturbed_rounds_line(res).c_str());
  if (const std::string fused = fused_epilogue_lines(res); !fused.empty()) std::printf("\n%s", fused.c_str());

  bool any_model = false;
  std::map<std::string, KernelConfig> configs;
  for (size_t i = 0; i < selected_.size(); ++i) {
    const Variant& v = *selected_[i].variant;
    if (!selected_[i].skip_reason.empty()) continue;
    if (v.config) configs[v.name] = selected_[i].config;
    if (!v.model) continue;
    if (!any_model) std::printf("\nmodel predictions for this GPU, beside the measured times above:\n");
    any_model = true;
    std::printf("  %-22s %s\n", v.name.c_str(), v.model(size_, selected_[i].config, header_.gpu).c_str());
  }
  if (copy_gbps_ > 0)
    std::printf("\nmemory: a device-to-device copy of %.0f MB in this run moved %.0f GB/s (read + write)\n",
                lesson_.copy_bytes(size_) / 1e6, copy_gbps_);
  if (const std::string floor = read_floor_line(res); !floor.empty()) std::printf("%s", floor.c_str());
  if (lesson_.conclusion) {
    const std::string conclusion = lesson_.conclusion(RunSummary{size_, res, configs});
    if (!conclusion.empty()) std::printf("\n%s", conclusion.c_str());
  }
  const bool ncu_ok = opt_.ncu ? measure_with_ncu() : true;
  if (!opt_.trace_path.empty()) write_traces(results);
  if (!opt_.json_path.empty()) {
    write_results(opt_.json_path, res);
    std::printf("results: %s\n", opt_.json_path.c_str());
  }
  bool failed = false;
  for (const VariantResult& r : results) failed |= !r.skipped && r.checked && !r.passed;
  if (failed) std::printf("\nA variant FAILED verification (marked FAIL above).\n");
  return failed || !ncu_ok ? kExitFailed : kExitOk;
}

// The child of --ncu: one warm-up launch (module load, tensor maps, workspaces),
// then one launch between cudaProfilerStart and Stop, the only one ncu profiles.
int LessonRun::profile_once() {
  const Selected& s = selected_.front();
  if (!s.skip_reason.empty()) {
    std::printf("%s: skipped: %s\n", s.variant->name.c_str(), s.skip_reason.c_str());
    return kExitOk;
  }
  const Buffers b = buffers(outputs_, 0);
  for (int run = 0; run < 2; ++run) {
    if (run == 1) CUDA_CHECK(cudaProfilerStart());
    if (s.variant->prepare) s.variant->prepare(b, stream_.s);
    s.variant->launch(b, stream_.s);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaStreamSynchronize(stream_.s));
  }
  CUDA_CHECK(cudaProfilerStop());
  return kExitOk;
}

// --ncu: each variant again, as a child process under Nsight Compute. Its DRAM
// bytes and L2 hit rate, printed under the models' predictions. False when ncu
// could not measure one.
bool LessonRun::measure_with_ncu() {
  char self[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    std::printf("\n--ncu: cannot find this program's own path to run it under ncu\n");
    return false;
  }
  std::printf("\nmeasured by Nsight Compute (one launch per variant, caches flushed before it, clocks as they are):\n");
  std::fflush(stdout);
  bool ok = true;
  for (const Selected& s : selected_) {
    if (!s.skip_reason.empty()) continue;
    std::vector<std::string> argv = {
        ncu_, "--profile-from-start", "off", "--clock-control", "none", "--csv", "--page", "raw", "--print-units",
        "base", "--metrics", kNcuMetrics, self, "--variant", s.variant->name, "--m", std::to_string(opt_.m), "--n",
        std::to_string(opt_.n), "--k", std::to_string(opt_.k), "--seed", std::to_string(opt_.seed), "--device",
        std::to_string(opt_.device), "--no-check", "--profile-once"};
    for (const ParamSpec& p : problem_.params) {
      argv.push_back(p.option());
      argv.push_back(size_.params.text(p.name));
    }
    std::string output, why;
    NcuMetrics m;
    const int rc = run_capture(argv, &output);
    if (rc == 0 && parse_ncu_csv(output, &m, &why)) {
      std::printf("  %-22s %s\n", s.variant->name.c_str(), format_ncu_metrics(m).c_str());
    } else {
      if (why.empty()) why = "ncu exited with status " + std::to_string(rc);
      const std::string last = last_line(output);  // ncu's last words
      std::printf("  %-22s not measured: %s%s%s\n", s.variant->name.c_str(), why.c_str(), last.empty() ? "" : ": ",
                  last.c_str());
      ok = false;
    }
    std::fflush(stdout);
  }
  return ok;
}

}  // namespace

// ---------------------------------------------------------------- public

int run_lesson(const Lesson& lesson, int argc, char** argv) {
  const std::string& id = lesson.info.id;
  LessonOptions opt;
  opt.m = lesson.default_m;
  opt.n = lesson.default_n;
  opt.k = lesson.default_k;
  std::string message;
  switch (parse_lesson_options(id, lesson.info.title, argc, argv, opt, message, lesson.problem.params)) {
    case ParseOutcome::done: std::printf("%s", message.c_str()); return kExitOk;
    case ParseOutcome::usage_error:
      std::fprintf(stderr, "%s: %s (see %s --help)\n", id.c_str(), message.c_str(), id.c_str());
      return kExitUsage;
    case ParseOutcome::run: break;
  }
  if (opt.list) {
    for (const Variant& v : lesson.variants) std::printf("%-22s sm_%d+  %s\n", v.name.c_str(), v.min_cc, v.what.c_str());
    return kExitOk;
  }
  std::vector<Selected> selected;
  if (opt.variants.empty()) {
    for (const Variant& v : lesson.variants) selected.push_back(Selected{&v, "", {}, nullptr});
  } else {
    for (const std::string& name : opt.variants) {
      const auto it = std::find_if(lesson.variants.begin(), lesson.variants.end(),
                                   [&](const Variant& v) { return v.name == name; });
      if (it == lesson.variants.end()) {
        std::string known;
        for (const Variant& v : lesson.variants) known += (known.empty() ? "" : ", ") + v.name;
        std::fprintf(stderr, "%s: unknown variant '%s' (known: %s; see %s --list)\n", id.c_str(), name.c_str(),
                     known.c_str(), id.c_str());
        return kExitUsage;
      }
      if (std::none_of(selected.begin(), selected.end(), [&](const Selected& s) { return s.variant == &*it; }))
        selected.push_back(Selected{&*it, "", {}, nullptr});
    }
  }
  if (lesson.problem.sizes_from_params) {
    if (opt.n_given || opt.k_given) {
      std::fprintf(stderr, "%s: %s (see %s --help)\n", id.c_str(), lesson.problem.sizes_from_params_why.c_str(),
                   id.c_str());
      return kExitUsage;
    }
    lesson.problem.sizes_from_params(opt.params, opt.n, opt.k);
  }
  if (lesson.problem.validate) {
    const ProblemSize size{opt.m, opt.n, opt.k, opt.params};
    if (const std::string why = lesson.problem.validate(size); !why.empty()) {
      std::fprintf(stderr, "%s: %s (see %s --help)\n", id.c_str(), why.c_str(), id.c_str());
      return kExitUsage;
    }
  }
  // Output paths are checked before any GPU work, so a typo costs nothing.
  std::string why;
  if (!opt.json_path.empty() && !output_path_writable(opt.json_path, &why)) {
    std::fprintf(stderr, "%s: cannot write --json %s: %s\n", id.c_str(), opt.json_path.c_str(), why.c_str());
    return kExitUsage;
  }
  if (!opt.trace_path.empty()) {
    for (const Selected& s : selected) {
      const std::string p = trace_path_for(opt.trace_path, s.variant->name, selected.size() > 1);
      if (!output_path_writable(p, &why) || !output_path_writable(perfetto_path_for(p), &why)) {
        std::fprintf(stderr, "%s: cannot write --trace %s: %s\n", id.c_str(), p.c_str(), why.c_str());
        return kExitUsage;
      }
    }
  }

  std::string ncu;
  if (opt.ncu) {
    ncu = find_ncu();
    if (ncu.empty()) {
      std::fprintf(stderr, "%s: --ncu needs Nsight Compute's ncu on PATH (or in /usr/local/cuda/bin)\n", id.c_str());
      return kExitUsage;
    }
  }

  if (!opt.profile_once) std::printf("%s\n", lesson_explanation(lesson.info).c_str());
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    const std::string reason = err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice || err == cudaSuccess
                                   ? "no NVIDIA driver or CUDA device found"
                                   : cudaGetErrorString(err);
    if (!opt.json_path.empty() || !opt.trace_path.empty()) {
      std::fprintf(stderr, "%s: no CUDA GPU (%s); --json and --trace need one\n", id.c_str(), reason.c_str());
      return kExitUsage;
    }
    RecordedRequest request;
    request.m = opt.m;
    request.n = opt.n;
    request.k = opt.k;
    request.variants = opt.variants;
    request.params = shape_params(lesson.problem.params, opt.params);
    request.defaults = shape_params(lesson.problem.params, default_params(lesson.problem.params));
    std::printf("No CUDA GPU here (%s). Results recorded on a real GPU:\n\n%s", reason.c_str(),
                format_recorded_results(assets_dir(), id, request).c_str());
    return kExitOk;
  }
  if (opt.device >= count) {
    std::fprintf(stderr, "%s: --device %d: this machine has %d CUDA device(s) (see %s --help)\n", id.c_str(),
                 opt.device, count, id.c_str());
    return kExitUsage;
  }
  try {
    LessonRun run(lesson, opt, std::move(selected), ncu);
    return run.run();
  } catch (const CudaError& e) {
    std::string what = e.what();
    if (what.find("cudaErrorNoKernelImageForDevice") != std::string::npos)
      what += " (this build has no code for this GPU: rebuild with WORKBOOK_CUDA_ARCHITECTURES including it)";
    std::fprintf(stderr, "%s: %s\n", id.c_str(), what.c_str());
    return kExitFailed;
  } catch (const RecordError& e) {
    std::fprintf(stderr, "%s: %s\n", id.c_str(), e.what());
    return kExitFailed;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of host memory for this shape\n", id.c_str());
    return kExitFailed;
  }
}

}  // namespace wb
