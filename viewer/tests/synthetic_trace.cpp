#include "synthetic_trace.hpp"

#include <algorithm>
#include <queue>
#include <random>
#include <utility>
#include <vector>

namespace wb::viewer::testing {

namespace {

GpuInfo synthetic_gpu(int sms) {
  GpuInfo g;
  g.name = "Synthetic H100 (not a recording)";
  g.cc_major = 9;
  g.sm_count = sms;
  g.l2_bytes = 50LL << 20;
  g.memory_bytes = 80LL << 30;
  g.sm_clock_khz = 1980000;
  g.mem_clock_khz = 2619000;
  g.mem_bus_bits = 5120;
  g.max_smem_per_block = 232448;
  return g;
}

RunHeader synthetic_header(const std::string& lesson, int sms, int64_t m, int64_t n, int64_t k) {
  RunHeader h;
  h.date = "2026-01-01T00:00:00Z";
  h.commit = "synthetic";
  h.versions = {"13.0", "13.0", "13.0"};
  h.gpu = synthetic_gpu(sms);
  h.lesson = lesson;
  h.m = m;
  h.n = n;
  h.k = k;
  return h;
}

}  // namespace

Trace synthetic_trace(const SyntheticTraceSpec& spec) {
  Trace t;
  t.header = synthetic_header(spec.lesson, spec.sms, spec.m, spec.n, spec.k);
  t.variant = spec.variant;
  KernelConfig& c = t.kernel;
  c.block_m = spec.block_m;
  c.block_n = spec.block_n;
  c.block_k = spec.block_k;
  c.threads = 256;
  c.order = tile_order_name(spec.order);
  c.group_m = spec.group_m;
  c.split_k = spec.split_k;
  c.tiles_m = int(ceil_div64(spec.m, spec.block_m));
  c.tiles_n = int(ceil_div64(spec.n, spec.block_n));
  c.blocks_per_sm = spec.blocks_per_sm;
  const int64_t tiles = int64_t(c.tiles_m) * c.tiles_n;
  c.grid_blocks = tiles * spec.split_k;
  c.work_units = c.grid_blocks;

  // Slots become free in time order; the earliest free one takes the next unit.
  using Slot = std::pair<uint64_t, int>;  // (free at, sm)
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_slots;
  for (int s = 0; s < spec.blocks_per_sm; ++s)
    for (int sm = 0; sm < spec.sms; ++sm) free_slots.push({uint64_t(s) * 64, sm});
  std::mt19937 rng(spec.seed);
  std::uniform_real_distribution<double> jitter(0.85, 1.15);
  const int k_per_split = int(ceil_div64(spec.k, spec.split_k));
  for (int64_t unit = 0; unit < c.grid_blocks; ++unit) {
    const int64_t pid = unit / spec.split_k;
    const int split = int(unit % spec.split_k);
    const TileCoord tile = tile_of(spec.order, int(pid), c.tiles_m, c.tiles_n, spec.group_m);
    auto [free_at, sm] = free_slots.top();
    free_slots.pop();
    const uint64_t start = free_at + 32;  // launch latency, one %globaltimer tick
    const uint64_t end = start + uint64_t(double(spec.block_ns) / spec.split_k * jitter(rng));
    t.records.push_back(TraceRecord{tile.m, tile.n, split * k_per_split, int(std::min<int64_t>((split + 1) * int64_t(k_per_split), spec.k)),
                                    sm, int(unit), start, end});
    free_slots.push({end, sm});
  }
  uint64_t end = 0;
  for (const auto& r : t.records) end = std::max(end, r.end_ns);
  t.traced_ms = double(end) / 1e6;
  t.median_ms = t.traced_ms * 0.98;
  return t;
}

SyntheticTraceSpec largest_lesson_trace_spec() {
  SyntheticTraceSpec s;
  s.lesson = "lesson01_naive";
  s.variant = "coalesced";
  s.block_m = s.block_n = 16;
  s.block_k = 16;
  s.order = TileOrder::row_major;
  s.blocks_per_sm = 8;
  s.block_ns = 60000;
  return s;
}

Results synthetic_results(const std::string& lesson, const std::string& gpu_name) {
  Results r;
  r.header = synthetic_header(lesson, 132, 4096, 4096, 4096);
  r.header.gpu.name = gpu_name;
  r.timing = {5, 20, 1LL << 28, 3};
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  struct Row { const char* name; double ms; double bytes; bool reference; };
  const Row rows[] = {{"cublas", 0.19, 3 * 4096.0 * 4096 * 2, true},
                      {"uncoalesced", 48.0, 4096.0 * 4096 * 4096 * 2, false},
                      {"coalesced", 9.5, 4096.0 * 4096 * 4096 * 0.25, false},
                      {"smem_16x16x32", 2.4, 4096.0 * 4096 * 4096 * 2 / 16, false},
                      {"tensor_core", 0.45, 4096.0 * 4096 * 4096 * 2 / 128, false}};
  for (const Row& row : rows) {
    // lesson01 has the naive variants, later lessons the blocked ones; both have cuBLAS.
    const bool naive = std::string(row.name).find("coalesced") != std::string::npos;
    if (!row.reference && naive != (lesson == "lesson01_naive")) continue;
    VariantResult v;
    v.name = row.name;
    v.what = row.reference ? "cublasGemmEx" : "synthetic variant";
    v.reference = row.reference;
    v.median_ms = row.ms;
    v.min_ms = row.ms * 0.98;
    v.max_ms = row.ms * 1.05;
    v.samples = 100;
    v.flops = flops;
    v.bytes = row.bytes;
    v.tflops = flops / (row.ms * 1e-3) / 1e12;
    v.gbps = row.bytes / (row.ms * 1e-3) / 1e9;
    v.rel_err = 1e-3;
    v.passed = true;
    v.vs_cublas = 0.19 / row.ms;
    r.variants.push_back(v);
  }
  return r;
}

}  // namespace wb::viewer::testing
