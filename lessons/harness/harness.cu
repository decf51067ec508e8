// The harness behind every lesson: options -> GPU checks -> verification
// against cuBLAS and fp64 -> interleaved timing against cuBLAS -> report,
// results JSON and traces. See harness.cuh.
#include "harness/harness.cuh"

#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>

#include "common/device_buffer.cuh"
#include "harness/catalog.hpp"
#include "harness/ncu.hpp"
#include "harness/options.hpp"
#include "harness/report.hpp"

namespace wb {

namespace {

// ---------------------------------------------------------------- RAII

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

void cublas_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string("cuBLAS error ") + std::to_string(int(st)) + " in " + what);
}

// ---------------------------------------------------------------- data

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1), a pure function of (seed, tensor, index): reproducible, never zero-filled.
__global__ void fill_uniform_kernel(__half* out, size_t count, uint64_t seed, uint64_t tensor) {
  const uint64_t salt = splitmix64(seed * 0x100000001B3ull + tensor);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t r = splitmix64(salt ^ i);
    const float u = float(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    out[i] = __float2half(2.0f * u - 1.0f);
  }
}

void fill_uniform(__half* out, size_t count, uint64_t seed, uint64_t tensor, cudaStream_t s) {
  fill_uniform_kernel<<<1024, 256, 0, s>>>(out, count, seed, tensor);
  CUDA_CHECK_LAUNCH();
}

// cuBLAS is column-major; a row-major C = A B is the column-major C^T = B^T A^T.
void cublas_gemm(cublasHandle_t h, const GemmArgs& g) {
  const float alpha = 1.0f, beta = 0.0f;
  cublas_check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, g.n, g.m, g.k, &alpha, g.b, CUDA_R_16F, g.n, g.a,
                            CUDA_R_16F, g.k, &beta, g.c, CUDA_R_16F, g.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

std::vector<float> to_host_float(const __half* d, size_t count) {
  std::vector<__half> h(count);
  CUDA_CHECK(cudaMemcpy(h.data(), d, count * sizeof(__half), cudaMemcpyDeviceToHost));
  std::vector<float> f(count);
  for (size_t i = 0; i < count; ++i) f[i] = __half2float(h[i]);
  return f;
}

// ---------------------------------------------------------------- verification

// fp64 rows of C = act(A B) for a sample of rows: first, last and random ones.
struct Fp64Sample {
  std::vector<int> rows;
  std::vector<double> pre_activation;  // rows.size() x n
};

Fp64Sample fp64_reference_rows(const std::vector<float>& a_rows, const std::vector<int>& rows,
                               const std::vector<float>& b, int n, int k) {
  Fp64Sample s;
  s.rows = rows;
  s.pre_activation.assign(rows.size() * size_t(n), 0.0);
  for (size_t r = 0; r < rows.size(); ++r) {
    double* out = &s.pre_activation[r * size_t(n)];
    const float* arow = &a_rows[r * size_t(k)];
    for (int kk = 0; kk < k; ++kk) {
      const double av = arow[kk];
      const float* brow = &b[size_t(kk) * n];
      for (int j = 0; j < n; ++j) out[j] += av * double(brow[j]);
    }
  }
  return s;
}

struct Comparison {
  double rel_err = 0;      // ||out - ref|| / ||ref||
  double max_abs_err = 0;
  int64_t mismatches = 0;  // elements outside the elementwise bound, or not finite
};

// Elementwise bound: |out - ref| <= 1e-2 |ref| + 1e-2 rms(ref). fp16 output is
// within one ulp (~1e-3 |ref|) of the truth, so a correct kernel is far inside;
// a single wrong or unwritten (NaN-poisoned) element is outside.
template <class RefAt>
Comparison compare(size_t count, const float* out, RefAt ref_at) {
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < count; ++i) ref2 += ref_at(i) * ref_at(i);
  const double rms = std::sqrt(ref2 / double(count ? count : 1));
  Comparison c;
  for (size_t i = 0; i < count; ++i) {
    const double r = ref_at(i), o = out[i];
    const double d = std::fabs(o - r);
    if (!std::isfinite(o) || !(d <= 1e-2 * std::fabs(r) + 1e-2 * rms)) ++c.mismatches;
    if (std::isfinite(d)) {
      diff2 += d * d;
      c.max_abs_err = std::max(c.max_abs_err, d);
    } else {
      c.max_abs_err = INFINITY;
      diff2 = INFINITY;
    }
  }
  c.rel_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return c;
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

// ---------------------------------------------------------------- the run

struct Selected {
  const Variant* variant;
  std::string skip_reason;
  KernelConfig config;
  std::shared_ptr<DeviceBuffer<unsigned char>> workspace;
};

class LessonRun {
 public:
  LessonRun(const LessonInfo& info, const LessonOptions& opt, std::vector<Selected> selected, std::string ncu)
      : info_(info), opt_(opt), selected_(std::move(selected)), ncu_(std::move(ncu)) {}

  int run();

 private:
  int profile_once();
  bool measure_with_ncu();
  void allocate();
  void verify(size_t i, VariantResult& out);
  void time_all(std::vector<VariantResult>& results, VariantResult& cublas_row);
  void write_traces(const std::vector<VariantResult>& results);
  // Variant i's arguments: its workspace too.
  GemmArgs with_workspace(GemmArgs g, size_t i) const {
    if (const auto& w = selected_[i].workspace) {
      g.workspace = w->get();
      g.workspace_bytes = w->bytes();
    }
    return g;
  }
  GemmArgs args(__half* c, TraceRecord* trace = nullptr) const {
    return GemmArgs{a_.get(), b_.get(), c, opt_.m, opt_.n, opt_.k, trace, nullptr, 0};
  }
  // One timed run: poison C, flush L2, then time only the launch.
  void enqueue_timed(const std::function<void(const GemmArgs&)>& launch, __half* c, TraceRecord* trace,
                     cudaEvent_t start, cudaEvent_t end, int salt);

  const LessonInfo& info_;
  const LessonOptions& opt_;
  std::vector<Selected> selected_;
  std::string ncu_;  // Nsight Compute's ncu, for --ncu
  RunHeader header_;
  Stream stream_;
  std::unique_ptr<CublasHandle> cublas_;
  DeviceBuffer<__half> a_, b_, c_, c_ref_;
  DeviceBuffer<unsigned char> flush_;
  std::vector<float> ref_host_;  // cuBLAS output, pre-activation
  Fp64Sample fp64_;
};

void LessonRun::enqueue_timed(const std::function<void(const GemmArgs&)>& launch, __half* c, TraceRecord* trace,
                              cudaEvent_t start, cudaEvent_t end, int salt) {
  CUDA_CHECK(cudaMemsetAsync(c, 0xFF, size_t(opt_.m) * opt_.n * sizeof(__half), stream_.s));
  CUDA_CHECK(cudaMemsetAsync(flush_.get(), salt & 0xFF, flush_.bytes(), stream_.s));
  CUDA_CHECK(cudaEventRecord(start, stream_.s));
  launch(args(c, trace));
  CUDA_CHECK(cudaEventRecord(end, stream_.s));
}

void LessonRun::allocate() {
  const size_t m = size_t(opt_.m), n = size_t(opt_.n), k = size_t(opt_.k);
  const size_t flush_bytes = std::max<size_t>(size_t(2 * header_.gpu.l2_bytes), size_t(64) << 20);
  size_t trace_bytes = 0;
  if (!opt_.trace_path.empty())
    for (const Selected& s : selected_) trace_bytes = std::max(trace_bytes, size_t(s.config.work_units) * sizeof(TraceRecord));
  const double need = double(m * k + k * n + 2 * m * n) * sizeof(__half) + double(flush_bytes) + double(trace_bytes) +
                      double(256u << 20);  // cuBLAS workspace and context headroom
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (need > double(free_b))
    throw CudaError("shape " + std::to_string(opt_.m) + "x" + std::to_string(opt_.n) + "x" + std::to_string(opt_.k) +
                    " needs " + gib(need) + " of device memory; " + gib(double(free_b)) + " is free");
  a_ = DeviceBuffer<__half>(m * k);
  b_ = DeviceBuffer<__half>(k * n);
  c_ = DeviceBuffer<__half>(m * n);
  c_ref_ = DeviceBuffer<__half>(m * n);
  flush_ = DeviceBuffer<unsigned char>(flush_bytes);
  fill_uniform(a_.get(), a_.size(), opt_.seed, 1, stream_.s);
  fill_uniform(b_.get(), b_.size(), opt_.seed, 2, stream_.s);
  cublas_ = std::make_unique<CublasHandle>();
  cublas_check(cublasSetStream(cublas_->h, stream_.s), "cublasSetStream");
  cublas_gemm(cublas_->h, args(c_ref_.get()));
  CUDA_CHECK(cudaStreamSynchronize(stream_.s));
  if (opt_.no_check) return;

  ref_host_ = to_host_float(c_ref_.get(), m * n);
  // fp64 reference on sampled rows: the first, the last and up to 14 random others.
  std::set<int> rows{0, opt_.m - 1};
  std::mt19937_64 rng(opt_.seed);
  while (int(rows.size()) < std::min(opt_.m, 16)) rows.insert(int(rng() % uint64_t(opt_.m)));
  const std::vector<int> row_list(rows.begin(), rows.end());
  std::vector<float> a_rows(row_list.size() * k);
  for (size_t r = 0; r < row_list.size(); ++r) {
    const auto part = to_host_float(a_.get() + size_t(row_list[r]) * k, k);
    std::copy(part.begin(), part.end(), a_rows.begin() + r * k);
  }
  fp64_ = fp64_reference_rows(a_rows, row_list, to_host_float(b_.get(), k * n), opt_.n, opt_.k);
}

void LessonRun::verify(size_t i, VariantResult& out) {
  const Variant& v = *selected_[i].variant;
  const size_t mn = size_t(opt_.m) * opt_.n;
  CUDA_CHECK(cudaMemsetAsync(c_.get(), 0xFF, mn * sizeof(__half), stream_.s));  // fp16 NaN
  v.launch(with_workspace(args(c_.get()), i), stream_.s);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream_.s));
  if (opt_.no_check) {
    out.checked = false;
    return;
  }
  const std::vector<float> got = to_host_float(c_.get(), mn);
  const Activation act = v.activation;
  const Comparison vs_cublas =
      compare(mn, got.data(), [&](size_t e) { return double(apply_activation(act, ref_host_[e])); });
  std::vector<float> got_rows(fp64_.rows.size() * size_t(opt_.n));
  for (size_t r = 0; r < fp64_.rows.size(); ++r)
    std::copy_n(got.begin() + size_t(fp64_.rows[r]) * opt_.n, opt_.n, got_rows.begin() + r * opt_.n);
  const Comparison vs_fp64 = compare(got_rows.size(), got_rows.data(),
                                     [&](size_t e) { return apply_activation(act, fp64_.pre_activation[e]); });
  out.rel_err = vs_cublas.rel_err;
  out.rel_err_fp64 = vs_fp64.rel_err;
  out.max_abs_err = vs_fp64.max_abs_err;
  out.passed = vs_cublas.mismatches == 0 && vs_fp64.mismatches == 0 && vs_cublas.rel_err <= 5e-3 &&
               vs_fp64.rel_err <= 5e-3;
  if (!out.passed)
    std::fprintf(stderr, "%s: variant %s FAILED: %lld of %zu elements differ from cuBLAS, %lld of %zu sampled fp64 "
                         "elements; rel. err %.3e (cuBLAS), %.3e (fp64)\n",
                 info_.id.c_str(), v.name.c_str(), (long long)vs_cublas.mismatches, mn, (long long)vs_fp64.mismatches,
                 got_rows.size(), vs_cublas.rel_err, vs_fp64.rel_err);
}

void LessonRun::time_all(std::vector<VariantResult>& results, VariantResult& cublas_row) {
  const int per_round = std::max(1, (opt_.reps + opt_.rounds - 1) / opt_.rounds);
  std::vector<Event> starts(static_cast<size_t>(per_round)), ends(static_cast<size_t>(per_round));
  const auto cublas_launch = [&](const GemmArgs& g) { cublas_gemm(cublas_->h, g); };

  // Returns the round's samples (ms).
  const auto time_round = [&](const std::function<void(const GemmArgs&)>& launch, int salt) {
    for (int r = 0; r < per_round; ++r) enqueue_timed(launch, c_.get(), nullptr, starts[r].e, ends[r].e, salt + r);
    CUDA_CHECK(cudaStreamSynchronize(stream_.s));
    CUDA_CHECK_LAUNCH();
    std::vector<float> ms(static_cast<size_t>(per_round));
    for (int r = 0; r < per_round; ++r) CUDA_CHECK(cudaEventElapsedTime(&ms[r], starts[r].e, ends[r].e));
    return ms;
  };

  // Warm-up: one more untimed run of each (the verification run was the first).
  for (size_t i = 0; i < selected_.size(); ++i)
    if (selected_[i].skip_reason.empty()) selected_[i].variant->launch(with_workspace(args(c_.get()), i), stream_.s);
  cublas_launch(args(c_.get()));
  CUDA_CHECK(cudaStreamSynchronize(stream_.s));

  std::vector<float> cublas_all;
  std::vector<std::vector<float>> all(selected_.size());
  std::vector<std::vector<double>> ratios(selected_.size());
  // Each round takes the variants in a new random order. In a fixed order each
  // variant always follows the same neighbours, and what they leave behind
  // (the board's clock, most likely) biases it the same way every round: at
  // 2048^3 on H100, 45 rounds in a fixed order put balanced_gelu 4.0-4.4%
  // behind balanced with one list of variants and 1.5-2.1% AHEAD of it with
  // another, though it does strictly more work; shuffled, both gave 1.0-2.6%.
  std::vector<size_t> order(selected_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 shuffler(opt_.seed ^ 0x5DEECE66Dull);
  for (int round = 0; round < opt_.rounds; ++round) {
    std::shuffle(order.begin(), order.end(), shuffler);
    for (const size_t i : order) {
      if (!selected_[i].skip_reason.empty()) continue;
      const Variant& v = *selected_[i].variant;
      const auto ours =
          time_round([&](const GemmArgs& g) { v.launch(with_workspace(g, i), stream_.s); }, round * 7 + int(i));
      const auto theirs = time_round(cublas_launch, round * 7 + int(i) + 3);
      all[i].insert(all[i].end(), ours.begin(), ours.end());
      cublas_all.insert(cublas_all.end(), theirs.begin(), theirs.end());
      ratios[i].push_back(median_of(theirs) / median_of(ours));
    }
  }
  const double flops = 2.0 * opt_.m * double(opt_.n) * opt_.k;
  const GemmShape shape{opt_.m, opt_.n, opt_.k};
  const double min_bytes = 2.0 * (double(opt_.m) * opt_.k + double(opt_.k) * opt_.n + double(opt_.m) * opt_.n);
  const auto fill = [&](VariantResult& r, const std::vector<float>& samples, double bytes) {
    r.median_ms = median_of(samples);
    r.min_ms = *std::min_element(samples.begin(), samples.end());
    r.max_ms = *std::max_element(samples.begin(), samples.end());
    r.samples = int(samples.size());
    r.flops = flops;
    r.bytes = bytes;
    r.tflops = flops / (r.median_ms * 1e-3) / 1e12;
    r.gbps = bytes / (r.median_ms * 1e-3) / 1e9;
  };
  for (size_t i = 0; i < selected_.size(); ++i) {
    if (!selected_[i].skip_reason.empty()) continue;
    const Variant& v = *selected_[i].variant;
    fill(results[i], all[i], v.bytes ? v.bytes(shape) : min_bytes);
    std::vector<float> rf(ratios[i].begin(), ratios[i].end());
    results[i].vs_cublas = median_of(rf);
  }
  if (!cublas_all.empty()) {
    fill(cublas_row, cublas_all, min_bytes);
    cublas_row.vs_cublas = 1.0;
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
      enqueue_timed([&](const GemmArgs& g) { v.launch(with_workspace(g, i), stream_.s); }, c_.get(), records.get(),
                    start.e, end.e, r);
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
    write_text_file_atomic(perfetto_path_for(path), trace_to_chrome_json(trace));
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
  header_.lesson = info_.id;
  header_.m = opt_.m;
  header_.n = opt_.n;
  header_.k = opt_.k;
  std::printf("GPU: %s\n", describe_gpu(header_).c_str());
  std::printf("shape: M=%d N=%d K=%d, %s\n\n", opt_.m, opt_.n, opt_.k, header_.dtype.c_str());

  const GemmShape shape{opt_.m, opt_.n, opt_.k};
  for (Selected& s : selected_) {
    s.skip_reason = unsupported_reason(*s.variant, header_.gpu);
    if (s.skip_reason.empty() && s.variant->config) s.config = s.variant->config(shape);
    if (s.skip_reason.empty() && s.variant->note) {
      const std::string note = s.variant->note(shape);
      if (!note.empty()) std::printf("note: %s: %s\n", s.variant->name.c_str(), note.c_str());
    }
  }
  allocate();
  for (Selected& s : selected_) {
    if (!s.skip_reason.empty() || !s.variant->workspace_bytes) continue;
    const size_t bytes = s.variant->workspace_bytes(shape);
    if (bytes == 0) continue;
    s.workspace = std::make_shared<DeviceBuffer<unsigned char>>(bytes);
    CUDA_CHECK(cudaMemsetAsync(s.workspace->get(), 0, bytes, stream_.s));
  }
  if (opt_.profile_once) return profile_once();

  std::vector<VariantResult> results(selected_.size());
  for (size_t i = 0; i < selected_.size(); ++i) {
    results[i].name = selected_[i].variant->name;
    results[i].what = selected_[i].variant->what;
    if (!selected_[i].skip_reason.empty()) {
      results[i].skipped = true;
      results[i].skip_reason = selected_[i].skip_reason;
      continue;
    }
    verify(i, results[i]);
  }
  VariantResult cublas_row;
  cublas_row.name = "cublas";
  cublas_row.what = "cuBLAS cublasGemmEx, fp16 in/out, fp32 compute (the reference)";
  cublas_row.reference = true;
  cublas_row.passed = true;
  time_all(results, cublas_row);

  Results res;
  res.header = header_;
  res.timing.rounds = opt_.rounds;
  res.timing.reps_per_round = std::max(1, (opt_.reps + opt_.rounds - 1) / opt_.rounds);
  res.timing.warmup = 1;
  res.timing.l2_flush_bytes = int64_t(flush_.bytes());
  res.variants = results;
  if (cublas_row.samples > 0) res.variants.push_back(cublas_row);

  std::printf("%s", format_report(res).c_str());
  std::printf("times: median of %d runs per variant (%d interleaved rounds with cuBLAS, in a random order each, "
              "L2 flushed and output poisoned before each); %% cuBLAS = median over rounds of cuBLAS time / "
              "variant time\n",
              res.timing.reps_per_round * opt_.rounds, opt_.rounds);
  if (const std::string fused = fused_epilogue_lines(res); !fused.empty()) std::printf("\n%s", fused.c_str());

  bool any_model = false;
  for (size_t i = 0; i < selected_.size(); ++i) {
    const Variant& v = *selected_[i].variant;
    if (!selected_[i].skip_reason.empty() || !v.model) continue;
    if (!any_model) std::printf("\nmodel predictions for this GPU, beside the measured times above:\n");
    any_model = true;
    std::printf("  %-22s %s\n", v.name.c_str(), v.model(shape, selected_[i].config, header_.gpu).c_str());
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
  for (int run = 0; run < 2; ++run) {
    if (run == 1) CUDA_CHECK(cudaProfilerStart());
    s.variant->launch(with_workspace(args(c_.get()), 0), stream_.s);
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
    const std::vector<std::string> argv = {
        ncu_, "--profile-from-start", "off", "--clock-control", "none", "--csv", "--page", "raw", "--print-units",
        "base", "--metrics", kNcuMetrics, self, "--variant", s.variant->name, "--m", std::to_string(opt_.m), "--n",
        std::to_string(opt_.n), "--k", std::to_string(opt_.k), "--seed", std::to_string(opt_.seed), "--device",
        std::to_string(opt_.device), "--no-check", "--profile-once"};
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

int run_lesson(const std::string& lesson_id, const std::vector<Variant>& variants, int argc, char** argv) {
  const LessonInfo* info = find_lesson(lesson_id);
  if (!info) {
    std::fprintf(stderr, "%s: not in the lesson catalogue\n", lesson_id.c_str());
    return kExitFailed;
  }
  LessonOptions opt;
  std::string message;
  switch (parse_lesson_options(lesson_id, info->title, argc, argv, opt, message)) {
    case ParseOutcome::done: std::printf("%s", message.c_str()); return kExitOk;
    case ParseOutcome::usage_error:
      std::fprintf(stderr, "%s: %s (see %s --help)\n", lesson_id.c_str(), message.c_str(), lesson_id.c_str());
      return kExitUsage;
    case ParseOutcome::run: break;
  }
  if (opt.list) {
    for (const Variant& v : variants) std::printf("%-22s sm_%d+  %s\n", v.name.c_str(), v.min_cc, v.what.c_str());
    return kExitOk;
  }
  std::vector<Selected> selected;
  if (opt.variants.empty()) {
    for (const Variant& v : variants) selected.push_back(Selected{&v, "", {}});
  } else {
    for (const std::string& name : opt.variants) {
      const auto it = std::find_if(variants.begin(), variants.end(), [&](const Variant& v) { return v.name == name; });
      if (it == variants.end()) {
        std::string known;
        for (const Variant& v : variants) known += (known.empty() ? "" : ", ") + v.name;
        std::fprintf(stderr, "%s: unknown variant '%s' (known: %s; see %s --list)\n", lesson_id.c_str(), name.c_str(),
                     known.c_str(), lesson_id.c_str());
        return kExitUsage;
      }
      if (std::none_of(selected.begin(), selected.end(), [&](const Selected& s) { return s.variant == &*it; }))
        selected.push_back(Selected{&*it, "", {}});
    }
  }
  // Output paths are checked before any GPU work, so a typo costs nothing.
  std::string why;
  if (!opt.json_path.empty() && !output_path_writable(opt.json_path, &why)) {
    std::fprintf(stderr, "%s: cannot write --json %s: %s\n", lesson_id.c_str(), opt.json_path.c_str(), why.c_str());
    return kExitUsage;
  }
  if (!opt.trace_path.empty()) {
    for (const Selected& s : selected) {
      const std::string p = trace_path_for(opt.trace_path, s.variant->name, selected.size() > 1);
      if (!output_path_writable(p, &why) || !output_path_writable(perfetto_path_for(p), &why)) {
        std::fprintf(stderr, "%s: cannot write --trace %s: %s\n", lesson_id.c_str(), p.c_str(), why.c_str());
        return kExitUsage;
      }
    }
  }

  std::string ncu;
  if (opt.ncu) {
    ncu = find_ncu();
    if (ncu.empty()) {
      std::fprintf(stderr, "%s: --ncu needs Nsight Compute's ncu on PATH (or in /usr/local/cuda/bin)\n",
                   lesson_id.c_str());
      return kExitUsage;
    }
  }

  if (!opt.profile_once) std::printf("%s\n", lesson_explanation(*info).c_str());
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    const std::string reason = err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice || err == cudaSuccess
                                   ? "no NVIDIA driver or CUDA device found"
                                   : cudaGetErrorString(err);
    if (!opt.json_path.empty() || !opt.trace_path.empty()) {
      std::fprintf(stderr, "%s: no CUDA GPU (%s); --json and --trace need one\n", lesson_id.c_str(), reason.c_str());
      return kExitUsage;
    }
    std::printf("No CUDA GPU here (%s). Results recorded on a real GPU:\n\n%s", reason.c_str(),
                format_recorded_results(assets_dir(), lesson_id).c_str());
    return kExitOk;
  }
  if (opt.device >= count) {
    std::fprintf(stderr, "%s: --device %d: this machine has %d CUDA device(s) (see %s --help)\n", lesson_id.c_str(),
                 opt.device, count, lesson_id.c_str());
    return kExitUsage;
  }
  try {
    LessonRun run(*info, opt, std::move(selected), ncu);
    return run.run();
  } catch (const CudaError& e) {
    std::string what = e.what();
    if (what.find("cudaErrorNoKernelImageForDevice") != std::string::npos)
      what += " (this build has no code for this GPU: rebuild with WORKBOOK_CUDA_ARCHITECTURES including it)";
    std::fprintf(stderr, "%s: %s\n", lesson_id.c_str(), what.c_str());
    return kExitFailed;
  } catch (const RecordError& e) {
    std::fprintf(stderr, "%s: %s\n", lesson_id.c_str(), e.what());
    return kExitFailed;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of host memory for this shape\n", lesson_id.c_str());
    return kExitFailed;
  }
}

}  // namespace wb
