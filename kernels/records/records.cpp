#include "records/records.hpp"

#include "schedule/tile_order.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <numeric>
#include <vector>
#include <queue>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <zlib.h>

namespace wb {

using nlohmann::json;

namespace {

// ---- reading helpers: every missing or mistyped field is a RecordError ----

// Returns a pointer, not a reference: the caller's `where` is often a temporary,
// and a reference-returning function taking one trips -Wdangling-reference.
const json* field_ptr(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) throw RecordError(where + ": expected an object");
  auto it = j.find(key);
  if (it == j.end()) throw RecordError(where + ": missing field '" + key + "'");
  return &*it;
}

std::string get_string(const json& j, const char* key, const std::string& where) {
  const json& v = *field_ptr(j, key, where);
  if (!v.is_string()) throw RecordError(where + "." + key + ": expected a string");
  return v.get<std::string>();
}

double get_number(const json& j, const char* key, const std::string& where) {
  const json& v = *field_ptr(j, key, where);
  if (!v.is_number()) throw RecordError(where + "." + key + ": expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw RecordError(where + "." + key + ": not a finite number");
  return d;
}

// An error measure: a number, or null where the output held a NaN or an
// infinity (JSON has no such numbers), read back as infinity.
double get_error(const json& j, const char* key, const std::string& where) {
  const json& v = *field_ptr(j, key, where);
  if (v.is_null()) return INFINITY;
  if (!v.is_number()) throw RecordError(where + "." + key + ": expected a number or null");
  const double d = v.get<double>();
  if (!(d >= 0)) throw RecordError(where + "." + key + ": must not be negative");
  return d;
}

// Written as get_error reads it.
json error_value(double d) { return std::isfinite(d) ? json(d) : json(nullptr); }

int64_t get_int(const json& j, const char* key, const std::string& where) {
  const json& v = *field_ptr(j, key, where);
  if (!v.is_number_integer()) throw RecordError(where + "." + key + ": expected an integer");
  return v.get<int64_t>();
}

int64_t get_nonneg(const json& j, const char* key, const std::string& where) {
  const int64_t v = get_int(j, key, where);
  if (v < 0) throw RecordError(where + "." + key + ": must not be negative");
  return v;
}

bool get_bool(const json& j, const char* key, const std::string& where) {
  const json& v = *field_ptr(j, key, where);
  if (!v.is_boolean()) throw RecordError(where + "." + key + ": expected true or false");
  return v.get<bool>();
}

json parse(const std::string& text, const char* what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double.
    throw RecordError(std::string(what) + ": not valid JSON (" + e.what() + ")");
  }
}

void check_schema(const json& j, const char* schema, const char* what) {
  if (!j.is_object()) throw RecordError(std::string(what) + ": expected a JSON object at the top");
  const std::string s = get_string(j, "schema", what);
  if (s != schema) throw RecordError(std::string(what) + ": schema is '" + s + "', expected '" + schema + "'");
  const int64_t v = get_int(j, "version", what);
  if (v != kRecordsVersion)
    throw RecordError(std::string(what) + ": version " + std::to_string(v) + " is not supported (expected " +
                      std::to_string(kRecordsVersion) + ")");
}

// The sizes a lesson takes (int, at least 1): larger ones come from no run and
// would overflow the products the readers compute.
void check_shape(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMax = 2147483647;
  if (m < 1 || n < 1 || k < 1) throw RecordError("shape: m, n and k must be at least 1");
  if (m > kMax || n > kMax || k > kMax) throw RecordError("shape: m, n and k must be at most 2^31 - 1");
}

// ---- header (shared by results and traces) ----

json gpu_to_json(const GpuInfo& g) {
  return json{{"name", g.name},
              {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
              {"cc_major", g.cc_major},
              {"cc_minor", g.cc_minor},
              {"sm_count", g.sm_count},
              {"l2_bytes", g.l2_bytes},
              {"memory_bytes", g.memory_bytes},
              {"sm_clock_khz", g.sm_clock_khz},
              {"mem_clock_khz", g.mem_clock_khz},
              {"mem_bus_bits", g.mem_bus_bits},
              {"max_smem_per_block", g.max_smem_per_block}};
}

GpuInfo gpu_from_json(const json& j) {
  const std::string w = "gpu";
  GpuInfo g;
  g.name = get_string(j, "name", w);
  g.cc_major = int(get_nonneg(j, "cc_major", w));
  g.cc_minor = int(get_nonneg(j, "cc_minor", w));
  g.sm_count = int(get_nonneg(j, "sm_count", w));
  if (g.sm_count < 1) throw RecordError("gpu.sm_count: must be at least 1");
  g.l2_bytes = get_nonneg(j, "l2_bytes", w);
  g.memory_bytes = get_nonneg(j, "memory_bytes", w);
  g.sm_clock_khz = int(get_nonneg(j, "sm_clock_khz", w));
  g.mem_clock_khz = int(get_nonneg(j, "mem_clock_khz", w));
  g.mem_bus_bits = int(get_nonneg(j, "mem_bus_bits", w));
  g.max_smem_per_block = int(get_nonneg(j, "max_smem_per_block", w));
  return g;
}

void header_to_json(const RunHeader& h, json& j) {
  j["date"] = h.date;
  j["commit"] = h.commit;
  j["versions"] = json{{"driver", h.versions.driver}, {"cuda_runtime", h.versions.runtime}, {"cublas", h.versions.cublas}};
  j["gpu"] = gpu_to_json(h.gpu);
  j["lesson"] = h.lesson;
  json shape{{"m", h.m}, {"n", h.n}, {"k", h.k}};
  for (const auto& [key, p] : h.shape_params) {
    if (p.numeric) {
      shape[key] = p.value;
    } else {
      shape[key] = p.text;
    }
  }
  j["shape"] = shape;
  j["dtype"] = h.dtype;
}

RunHeader header_from_json(const json& j, const char* what) {
  RunHeader h;
  h.date = get_string(j, "date", what);
  h.commit = get_string(j, "commit", what);
  const json& v = *field_ptr(j, "versions", what);
  h.versions.driver = get_string(v, "driver", "versions");
  h.versions.runtime = get_string(v, "cuda_runtime", "versions");
  h.versions.cublas = get_string(v, "cublas", "versions");
  h.gpu = gpu_from_json(*field_ptr(j, "gpu", what));
  h.lesson = get_string(j, "lesson", what);
  const json& s = *field_ptr(j, "shape", what);
  h.m = get_int(s, "m", "shape");
  h.n = get_int(s, "n", "shape");
  h.k = get_int(s, "k", "shape");
  check_shape(h.m, h.n, h.k);
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (it.key() == "m" || it.key() == "n" || it.key() == "k") continue;
    ShapeParam p;
    if (it.value().is_number()) {
      p.numeric = true;
      p.value = it.value().get<double>();
      if (!std::isfinite(p.value)) throw RecordError("shape." + it.key() + ": not a finite number");
      std::ostringstream text;
      text << p.value;
      p.text = text.str();
    } else if (it.value().is_string()) {
      p.text = it.value().get<std::string>();
    } else {
      throw RecordError("shape." + it.key() + ": expected a number or a string");
    }
    h.shape_params[it.key()] = p;
  }
  h.dtype = get_string(j, "dtype", what);
  return h;
}

}  // namespace

// ---------------------------------------------------------------- results

std::string results_to_json(const Results& r) {
  json j;
  j["schema"] = kResultsSchema;
  j["version"] = kRecordsVersion;
  j["units"] = json{{"time", "ms"}, {"rate", "TFLOP/s"}, {"bandwidth", "GB/s"}, {"flops", "flop"}, {"bytes", "byte"}};
  header_to_json(r.header, j);
  j["timing"] = json{{"rounds", r.timing.rounds},
                     {"reps_per_round", r.timing.reps_per_round},
                     {"warmup", r.timing.warmup},
                     {"l2_flush_bytes", r.timing.l2_flush_bytes},
                     {"statistic", "median of all timed runs; vs_cublas is the median over rounds of "
                                   "(reference round median / variant round median)"}};
  j["reference"] = r.reference;
  if (r.copy_gbps > 0) j["copy_gbps"] = r.copy_gbps;
  if (r.read_floor_ms > 0) {
    j["read_floor_ms"] = r.read_floor_ms;
    j["read_floor_bytes"] = r.read_floor_bytes;
  }
  json vs = json::array();
  for (const VariantResult& v : r.variants) {
    json e{{"name", v.name}, {"what", v.what}, {"reference", v.reference}, {"skipped", v.skipped}};
    if (v.bound) e["bound"] = true;  // absent: a variant (files written before bounds existed)
    if (v.skipped) {
      e["skip_reason"] = v.skip_reason;
    } else {
      e.update(json{{"median_ms", v.median_ms},
                    {"min_ms", v.min_ms},
                    {"max_ms", v.max_ms},
                    {"samples", v.samples},
                    {"flops", v.flops},
                    {"bytes", v.bytes},
                    {"tflops", v.tflops},
                    {"gbps", v.gbps},
                    {"rel_err", error_value(v.rel_err)},
                    {"rel_err_fp64", error_value(v.rel_err_fp64)},
                    {"max_abs_err", error_value(v.max_abs_err)},
                    {"checked", v.checked},
                    {"passed", v.passed},
                    {"vs_cublas", v.vs_cublas}});
      if (!v.bytes_what.empty()) e["bytes_what"] = v.bytes_what;
      if (v.split_k > 0) e["split_k"] = v.split_k;
      if (v.bitwise_diffs >= 0) e["bitwise_diffs"] = v.bitwise_diffs;
      if (!v.outputs.empty()) {
        json outs = json::array();
        for (const OutputCheck& o : v.outputs)
          outs.push_back(json{{"name", o.name},
                              {"rel_err", error_value(o.rel_err)},
                              {"rel_err_fp64", error_value(o.rel_err_fp64)},
                              {"max_abs_err", error_value(o.max_abs_err)},
                              {"mismatches", o.mismatches},
                              {"passed", o.passed}});
        e["outputs"] = outs;
      }
    }
    vs.push_back(std::move(e));
  }
  j["variants"] = vs;
  return j.dump(2) + "\n";
}

namespace {
Results results_from_value(const json& j);
}  // namespace

Results results_from_json(const std::string& text) { return results_from_value(parse(text, "results")); }

namespace {

Results results_from_value(const json& j) {
  check_schema(j, kResultsSchema, "results");
  Results r;
  r.header = header_from_json(j, "results");
  const json& t = *field_ptr(j, "timing", "results");
  r.timing.rounds = int(get_nonneg(t, "rounds", "timing"));
  r.timing.reps_per_round = int(get_nonneg(t, "reps_per_round", "timing"));
  r.timing.warmup = int(get_nonneg(t, "warmup", "timing"));
  r.timing.l2_flush_bytes = get_nonneg(t, "l2_flush_bytes", "timing");
  // Files written before these were kept name no reference (it was cuBLAS) and no copy rate.
  if (j.contains("reference")) r.reference = get_string(j, "reference", "results");
  if (j.contains("copy_gbps")) {
    r.copy_gbps = get_number(j, "copy_gbps", "results");
    if (r.copy_gbps < 0) throw RecordError("results.copy_gbps: must not be negative");
  }
  if (j.contains("read_floor_ms")) {  // since lesson 06's cluster step; absent before
    r.read_floor_ms = get_number(j, "read_floor_ms", "results");
    if (!(r.read_floor_ms >= 0)) throw RecordError("results.read_floor_ms: must not be negative");
    r.read_floor_bytes = get_number(j, "read_floor_bytes", "results");
    if (!(r.read_floor_bytes >= 0)) throw RecordError("results.read_floor_bytes: must not be negative");
  }
  const json& vs = *field_ptr(j, "variants", "results");
  if (!vs.is_array()) throw RecordError("results.variants: expected an array");
  for (size_t i = 0; i < vs.size(); ++i) {
    const std::string w = "variants[" + std::to_string(i) + "]";
    const json& e = vs[i];
    VariantResult v;
    v.name = get_string(e, "name", w);
    if (v.name.empty()) throw RecordError(w + ".name: empty");
    v.what = get_string(e, "what", w);
    v.reference = get_bool(e, "reference", w);
    if (e.contains("bound")) v.bound = get_bool(e, "bound", w);
    v.skipped = get_bool(e, "skipped", w);
    if (v.skipped) {
      v.skip_reason = get_string(e, "skip_reason", w);
    } else {
      v.median_ms = get_number(e, "median_ms", w);
      v.min_ms = get_number(e, "min_ms", w);
      v.max_ms = get_number(e, "max_ms", w);
      if (!(v.median_ms > 0) || v.min_ms > v.median_ms || v.max_ms < v.median_ms)
        throw RecordError(w + ": times must satisfy 0 < min_ms <= median_ms <= max_ms");
      v.samples = int(get_nonneg(e, "samples", w));
      v.flops = get_number(e, "flops", w);
      v.bytes = get_number(e, "bytes", w);
      v.tflops = get_number(e, "tflops", w);
      v.gbps = get_number(e, "gbps", w);
      v.rel_err = get_error(e, "rel_err", w);
      v.rel_err_fp64 = get_error(e, "rel_err_fp64", w);
      v.max_abs_err = get_error(e, "max_abs_err", w);
      v.checked = get_bool(e, "checked", w);
      v.passed = get_bool(e, "passed", w);
      v.vs_cublas = get_number(e, "vs_cublas", w);
      if (e.contains("bytes_what")) v.bytes_what = get_string(e, "bytes_what", w);
      if (e.contains("split_k")) {
        const int64_t s = get_nonneg(e, "split_k", w);
        if (s < 1 || s > (int64_t(1) << 30)) throw RecordError(w + ".split_k: must be from 1 to 2^30");
        v.split_k = int(s);
      }
      if (e.contains("bitwise_diffs")) v.bitwise_diffs = get_nonneg(e, "bitwise_diffs", w);
      if (e.contains("outputs")) {
        const json& outs = e["outputs"];
        if (!outs.is_array()) throw RecordError(w + ".outputs: expected an array");
        for (size_t o = 0; o < outs.size(); ++o) {
          const std::string wo = w + ".outputs[" + std::to_string(o) + "]";
          OutputCheck c;
          c.name = get_string(outs[o], "name", wo);
          c.rel_err = get_error(outs[o], "rel_err", wo);
          c.rel_err_fp64 = get_error(outs[o], "rel_err_fp64", wo);
          c.max_abs_err = get_error(outs[o], "max_abs_err", wo);
          c.mismatches = get_nonneg(outs[o], "mismatches", wo);
          c.passed = get_bool(outs[o], "passed", wo);
          v.outputs.push_back(std::move(c));
        }
      }
    }
    r.variants.push_back(std::move(v));
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------- traces

const ProductGrid* product_of_row(const KernelConfig& c, int tile_m) {
  for (const ProductGrid& p : c.products)
    if (tile_m >= p.first_row && tile_m < p.first_row + p.tiles_m) return &p;
  return nullptr;
}

EntryRange gathered_entries(const Trace& t, const TraceRecord& r) {
  const KernelConfig& c = t.kernel;
  const ProductGrid* p = product_of_row(c, r.tile_m);
  if (!p || p->gathers.empty() || c.gathered.index.empty()) return {};
  int64_t begin = 0, end = 0;  // positions along the gathered dimension
  if (p->gathers == "n") {
    begin = int64_t(r.tile_n) * c.block_n;
    end = std::min(begin + c.block_n, p->n);
  } else {
    begin = r.k_begin;
    end = r.k_end;
  }
  const int64_t per = std::max(p->gathers_per, 1), count = int64_t(c.gathered.index.size());
  return EntryRange{std::min(begin / per, count), std::min((end + per - 1) / per, count)};
}

namespace {

// What every traced launch writes: one record per work unit, numbered 0 ..
// units - 1 once each, and for every tile k ranges that cover [0, K) exactly
// once (a split tile has several, end to end).

// The reduction length of the units in tile row `tile_m`.
int64_t reduction_of_row(const KernelConfig& c, int64_t header_k, int tile_m) {
  const ProductGrid* p = product_of_row(c, tile_m);
  return p ? p->k : header_k;
}

void check_trace_coverage(const Trace& t) {
  const int64_t units = int64_t(t.records.size());
  if (t.kernel.work_units != units)
    throw RecordError("trace: " + std::to_string(units) + " records for " + std::to_string(t.kernel.work_units) +
                      " work units");
  int64_t tiles = int64_t(t.kernel.tiles_m) * t.kernel.tiles_n;
  if (!t.kernel.products.empty()) {
    tiles = 0;
    for (const ProductGrid& p : t.kernel.products) tiles += int64_t(p.tiles_m) * p.tiles_n;
  }
  if (tiles > units) throw RecordError("trace: fewer records than tiles (every tile needs one)");
  std::vector<char> unit_seen(size_t(units), 0);
  for (const TraceRecord& r : t.records) {
    if (r.unit >= units || unit_seen[size_t(r.unit)]++)
      throw RecordError("trace: work unit " + std::to_string(r.unit) + " out of range or recorded twice");
  }
  std::vector<size_t> order(t.records.size());
  std::iota(order.begin(), order.end(), size_t(0));
  const auto tile_of_record = [&](size_t i) { return int64_t(t.records[i].tile_m) * t.kernel.tiles_n + t.records[i].tile_n; };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t ta = tile_of_record(a), tb = tile_of_record(b);
    return ta != tb ? ta < tb : t.records[a].k_begin < t.records[b].k_begin;
  });
  const auto gap = [&](int64_t tile, int64_t k) {
    return RecordError("trace: tile (" + std::to_string(tile / t.kernel.tiles_n) + ", " +
                       std::to_string(tile % t.kernel.tiles_n) + "): k ranges overlap or leave a gap at k = " +
                       std::to_string(k));
  };
  int64_t tile = -1, covered = 0, tiles_seen = 0, k_of_tile = t.header.k;
  for (const size_t i : order) {
    const TraceRecord& r = t.records[i];
    const int64_t this_tile = tile_of_record(i);
    if (this_tile != tile) {
      if (tile >= 0 && covered != k_of_tile) throw gap(tile, covered);
      k_of_tile = reduction_of_row(t.kernel, t.header.k, r.tile_m);
      tile = this_tile;
      covered = 0;
      ++tiles_seen;
    }
    if (r.k_begin != covered) throw gap(tile, covered);
    covered = r.k_end;
  }
  if (covered != k_of_tile) throw gap(tile, covered);
  if (tiles_seen != tiles) throw RecordError("trace: not every tile has a record");
}

}  // namespace

std::string trace_to_json(const Trace& t) {
  json j;
  j["schema"] = kTraceSchema;
  j["version"] = kRecordsVersion;
  header_to_json(t.header, j);
  j["variant"] = t.variant;
  const KernelConfig& c = t.kernel;
  j["kernel"] = json{{"block_m", c.block_m},         {"block_n", c.block_n},   {"block_k", c.block_k},
                     {"threads", c.threads},         {"stages", c.stages},     {"order", c.order},
                     {"group_m", c.group_m},         {"split_k", c.split_k},   {"tiles_m", c.tiles_m},
                     {"tiles_n", c.tiles_n},         {"grid_blocks", c.grid_blocks},
                     {"work_units", c.work_units},   {"blocks_per_sm", c.blocks_per_sm},
                     {"smem_bytes", c.smem_bytes},   {"persistent", c.persistent}};
  if (!c.products.empty()) {
    json products = json::array();
    for (const ProductGrid& p : c.products) {
      json pj{{"name", p.name}, {"m", p.m}, {"n", p.n}, {"k", p.k}, {"tiles_m", p.tiles_m},
              {"tiles_n", p.tiles_n}, {"first_row", p.first_row}};
      if (!p.gathers.empty()) {
        pj["gathers"] = p.gathers;
        pj["gathers_per"] = p.gathers_per;
      }
      products.push_back(pj);
    }
    j["kernel"]["products"] = products;
  }

  j["timing"] = json{{"median_ms", t.median_ms}, {"traced_ms", t.traced_ms}, {"time_origin_ns", t.time_origin_ns}};
  j["record_fields"] = json::array({"tile_m", "tile_n", "k_begin", "k_end", "sm", "unit", "start_ns", "end_ns"});
  // One record per line keeps a 65,536-record trace readable and diffable.
  std::string out = j.dump(2);
  out.erase(out.find_last_of('}'));
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  out += ",\n  \"records\": [";
  char line[256];
  for (size_t i = 0; i < t.records.size(); ++i) {
    const TraceRecord& r = t.records[i];
    std::snprintf(line, sizeof line, "%s\n    [%d,%d,%d,%d,%d,%d,%llu,%llu]", i ? "," : "", r.tile_m, r.tile_n,
                  r.k_begin, r.k_end, r.sm, r.unit, static_cast<unsigned long long>(r.start_ns),
                  static_cast<unsigned long long>(r.end_ns));
    out += line;
  }
  out += "\n  ]";
  // The gathered list (thousands of numbers, on one line) comes last, so that a
  // reader of the file's head (the viewer's asset list) finds the whole header.
  if (!c.gathered.index.empty())
    out += ",\n  \"gathered\": " +
           json{{"what", c.gathered.what}, {"of", c.gathered.of}, {"index", c.gathered.index}}.dump();
  out += "\n}\n";
  return out;
}

Trace trace_from_json(const std::string& text) {
  const json j = parse(text, "trace");
  check_schema(j, kTraceSchema, "trace");
  Trace t;
  t.header = header_from_json(j, "trace");
  t.variant = get_string(j, "variant", "trace");
  const json& c = *field_ptr(j, "kernel", "trace");
  const std::string w = "kernel";
  KernelConfig& k = t.kernel;
  k.block_m = int(get_nonneg(c, "block_m", w));
  k.block_n = int(get_nonneg(c, "block_n", w));
  k.block_k = int(get_nonneg(c, "block_k", w));
  k.threads = int(get_nonneg(c, "threads", w));
  k.stages = int(get_nonneg(c, "stages", w));
  k.order = get_string(c, "order", w);
  k.group_m = int(get_nonneg(c, "group_m", w));
  k.split_k = int(get_nonneg(c, "split_k", w));
  k.tiles_m = int(get_nonneg(c, "tiles_m", w));
  k.tiles_n = int(get_nonneg(c, "tiles_n", w));
  k.grid_blocks = get_nonneg(c, "grid_blocks", w);
  k.work_units = get_nonneg(c, "work_units", w);
  k.blocks_per_sm = int(get_nonneg(c, "blocks_per_sm", w));
  k.smem_bytes = int(get_nonneg(c, "smem_bytes", w));
  k.persistent = get_bool(c, "persistent", w);
  if (k.block_m < 1 || k.block_n < 1 || k.block_k < 1)
    throw RecordError("kernel: block_m, block_n and block_k must be at least 1");
  if (const json* ps = c.contains("products") ? &c.at("products") : nullptr) {
    if (!ps->is_array() || ps->empty()) throw RecordError("kernel.products: expected a non-empty array");
    int rows = 0, widest = 0;
    for (const json& pj : *ps) {
      ProductGrid p;
      p.name = get_string(pj, "name", "kernel.products");
      p.m = get_nonneg(pj, "m", "kernel.products");
      p.n = get_nonneg(pj, "n", "kernel.products");
      p.k = get_nonneg(pj, "k", "kernel.products");
      p.tiles_m = int(get_nonneg(pj, "tiles_m", "kernel.products"));
      p.tiles_n = int(get_nonneg(pj, "tiles_n", "kernel.products"));
      p.first_row = int(get_nonneg(pj, "first_row", "kernel.products"));
      if (pj.contains("gathers")) {
        p.gathers = get_string(pj, "gathers", "kernel.products");
        p.gathers_per = int(get_nonneg(pj, "gathers_per", "kernel.products"));
        if ((p.gathers != "n" && p.gathers != "k") || p.gathers_per < 1)
          throw RecordError("kernel.products: " + p.name + " gathers along \"" + p.gathers +
                            "\" (expected \"n\" or \"k\", gathers_per at least 1)");
      }
      if (p.m < 1 || p.n < 1 || p.k < 1 || p.tiles_m != ceil_div64(p.m, k.block_m) ||
          p.tiles_n != ceil_div64(p.n, k.block_n) || p.first_row != rows)
        throw RecordError("kernel.products: " + p.name + " is not its shape cut into tiles, stacked after the last");
      rows += p.tiles_m;
      widest = std::max(widest, p.tiles_n);
      k.products.push_back(p);
    }
    if (k.tiles_m != rows || k.tiles_n != widest)
      throw RecordError("kernel: tiles_m x tiles_n is not the products' tiles stacked");
  } else if (k.tiles_m != ceil_div64(t.header.m, k.block_m) || k.tiles_n != ceil_div64(t.header.n, k.block_n)) {
    throw RecordError("kernel: tiles_m x tiles_n is not the shape cut into block_m x block_n tiles");
  }
  if (const json* g = j.contains("gathered") ? &j.at("gathered") : nullptr) {
    const std::string gw = "gathered";
    GatheredIndex& gi = k.gathered;
    gi.what = get_string(*g, "what", gw);
    gi.of = get_nonneg(*g, "of", gw);
    if (gi.of < 1 || gi.of > (int64_t(1) << 24)) throw RecordError(gw + ".of: expected 1 to 16,777,216");
    const json& idx = *field_ptr(*g, "index", gw);
    if (!idx.is_array() || idx.empty()) throw RecordError(gw + ".index: expected a non-empty array");
    std::vector<char> seen(size_t(gi.of), 0);
    gi.index.reserve(idx.size());
    for (const json& e : idx) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= gi.of)
        throw RecordError(gw + ".index: every entry must be a whole number in [0, of)");
      const int64_t v = e.get<int64_t>();
      if (seen[size_t(v)]++) throw RecordError(gw + ".index: " + std::to_string(v) + " listed twice");
      gi.index.push_back(int32_t(v));
    }
    bool any = false;
    for (const ProductGrid& p : k.products) any |= !p.gathers.empty();
    if (!any) throw RecordError(gw + ": no product says which dimension runs over it");
  }
  const json& tm = *field_ptr(j, "timing", "trace");
  t.median_ms = get_number(tm, "median_ms", "timing");
  t.traced_ms = get_number(tm, "traced_ms", "timing");
  t.time_origin_ns = uint64_t(get_nonneg(tm, "time_origin_ns", "timing"));
  const json& recs = *field_ptr(j, "records", "trace");
  if (!recs.is_array()) throw RecordError("trace.records: expected an array");
  t.records.reserve(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    const json& e = recs[i];
    const std::string where = "trace.records[" + std::to_string(i) + "]";
    if (!e.is_array() || e.size() != 8) throw RecordError(where + ": expected an array of 8 integers");
    int64_t v[8];
    for (int f = 0; f < 8; ++f) {
      if (!e[f].is_number_integer()) throw RecordError(where + ": expected an array of 8 integers");
      v[f] = e[f].get<int64_t>();
      if (v[f] < 0) throw RecordError(where + ": negative value");
      if (f < 6 && v[f] > 2147483647) throw RecordError(where + ": value too large");
    }
    TraceRecord r{int32_t(v[0]), int32_t(v[1]), int32_t(v[2]), int32_t(v[3]), int32_t(v[4]), int32_t(v[5]),
                  uint64_t(v[6]), uint64_t(v[7])};
    if (r.tile_m >= k.tiles_m || r.tile_n >= k.tiles_n)
      throw RecordError(where + ": tile outside the kernel's tiles_m x tiles_n grid");
    if (const ProductGrid* p = product_of_row(k, r.tile_m); p && r.tile_n >= p->tiles_n)
      throw RecordError(where + ": tile outside its product's grid");
    if (r.k_end <= r.k_begin || r.k_end > reduction_of_row(k, t.header.k, r.tile_m))
      throw RecordError(where + ": k range not inside [0, K)");
    if (r.sm >= t.header.gpu.sm_count) throw RecordError(where + ": SM id not below the GPU's SM count");
    if (r.end_ns < r.start_ns) throw RecordError(where + ": end before start");
    t.records.push_back(r);
  }
  check_trace_coverage(t);
  return t;
}

// ---------------------------------------------------------------- compare

std::string compare_to_json(const Compare& c) {
  nlohmann::ordered_json j;  // schema first, as in the other files
  j["schema"] = kCompareSchema;
  j["version"] = kRecordsVersion;
  j["date"] = c.date;
  j["gpu"] = c.gpu;
  j["shape"] = {{"m", c.m}, {"n", c.n}, {"k", c.k}};
  j["own_sizes"] = c.own_sizes;
  j["cublas_median_ms"] = c.cublas_median_ms;
  nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
  for (const RankedVariant& v : c.ranked)
    ranked.push_back({{"rank", v.rank},           {"lesson", v.lesson}, {"variant", v.variant},
                      {"median_ms", v.median_ms}, {"tflops", v.tflops}, {"vs_cublas", v.vs_cublas},
                      {"passed", v.passed},       {"checked", v.checked}, {"rel_err", error_value(v.rel_err)}});
  j["ranked"] = ranked;
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const Results& r : c.runs) runs.push_back(nlohmann::ordered_json::parse(results_to_json(r)));
  j["runs"] = runs;
  return j.dump(2) + "\n";
}

Compare compare_from_json(const std::string& text) {
  const json j = parse(text, "compare");
  check_schema(j, kCompareSchema, "compare");
  Compare c;
  c.date = get_string(j, "date", "compare");
  c.gpu = get_string(j, "gpu", "compare");
  const json& s = *field_ptr(j, "shape", "compare");
  c.m = get_int(s, "m", "shape");
  c.n = get_int(s, "n", "shape");
  c.k = get_int(s, "k", "shape");
  check_shape(c.m, c.n, c.k);
  if (j.contains("own_sizes")) {  // absent in files written before lesson 08 joined the compare
    const json& own = j["own_sizes"];
    if (!own.is_array()) throw RecordError("compare.own_sizes: expected an array of lesson names");
    for (const json& l : own) {
      if (!l.is_string() || l.get<std::string>().empty())
        throw RecordError("compare.own_sizes: expected an array of lesson names");
      c.own_sizes.push_back(l.get<std::string>());
    }
  }
  c.cublas_median_ms = get_number(j, "cublas_median_ms", "compare");
  if (c.cublas_median_ms < 0) throw RecordError("compare.cublas_median_ms: must not be negative");
  const json& ranked = *field_ptr(j, "ranked", "compare");
  if (!ranked.is_array()) throw RecordError("compare.ranked: expected an array");
  for (size_t i = 0; i < ranked.size(); ++i) {
    const std::string w = "ranked[" + std::to_string(i) + "]";
    const json& e = ranked[i];
    RankedVariant v;
    v.rank = int(get_nonneg(e, "rank", w));
    if (v.rank != int(i) + 1) throw RecordError(w + ".rank: expected " + std::to_string(i + 1));
    v.lesson = get_string(e, "lesson", w);
    v.variant = get_string(e, "variant", w);
    if (v.lesson.empty() || v.variant.empty()) throw RecordError(w + ": empty lesson or variant");
    v.median_ms = get_number(e, "median_ms", w);
    v.tflops = get_number(e, "tflops", w);
    v.vs_cublas = get_number(e, "vs_cublas", w);
    if (!(v.median_ms > 0) || v.tflops < 0 || v.vs_cublas < 0)
      throw RecordError(w + ": median_ms must be positive, tflops and vs_cublas not negative");
    v.passed = get_bool(e, "passed", w);
    v.checked = get_bool(e, "checked", w);
    v.rel_err = get_error(e, "rel_err", w);
    c.ranked.push_back(std::move(v));
  }
  const json& runs = *field_ptr(j, "runs", "compare");
  if (!runs.is_array()) throw RecordError("compare.runs: expected an array");
  for (size_t i = 0; i < runs.size(); ++i) {
    try {
      c.runs.push_back(results_from_value(runs[i]));
    } catch (const RecordError& e) {
      throw RecordError("runs[" + std::to_string(i) + "]: " + e.what());
    }
    const Results& r = c.runs.back();
    const bool own = std::find(c.own_sizes.begin(), c.own_sizes.end(), r.header.lesson) != c.own_sizes.end();
    if (r.header.m != c.m || (!own && (r.header.n != c.n || r.header.k != c.k)))
      throw RecordError("runs[" + std::to_string(i) + "]: its shape is not the compare's" +
                        (own ? std::string(" (its M differs)") : std::string()));
  }
  for (size_t i = 0; i < c.ranked.size(); ++i)
    if (std::none_of(c.runs.begin(), c.runs.end(),
                     [&](const Results& r) { return r.header.lesson == c.ranked[i].lesson; }))
      throw RecordError("ranked[" + std::to_string(i) + "].lesson: " + c.ranked[i].lesson + " has no run");
  return c;
}

std::vector<CompareProblem> compare_problems(const Compare& c) {
  std::vector<CompareProblem> problems;
  std::vector<std::vector<const VariantResult*>> refs;  // per problem, its runs' reference rows
  for (const Results& r : c.runs) {
    const VariantResult* ref = nullptr;
    for (const VariantResult& v : r.variants)
      if (v.name == r.reference && !v.skipped) ref = &v;
    const std::string what = ref ? ref->what : r.header.lesson;  // no reference row: a problem of its own
    size_t p = 0;
    while (p < problems.size() && problems[p].reference_what != what) ++p;
    if (p == problems.size()) {
      problems.push_back(CompareProblem{what, r.reference, {}, 0, 0, {}});
      refs.emplace_back();
    }
    problems[p].lessons.push_back(r.header.lesson);
    if (ref) refs[p].push_back(ref);
  }
  for (size_t p = 0; p < problems.size(); ++p) {
    std::vector<const VariantResult*>& rs = refs[p];
    std::sort(rs.begin(), rs.end(),
              [](const VariantResult* a, const VariantResult* b) { return a->median_ms < b->median_ms; });
    if (!rs.empty()) {
      problems[p].reference_ms = rs[rs.size() / 2]->median_ms;
      problems[p].reference_tflops = rs[rs.size() / 2]->tflops;
    }
    for (const RankedVariant& v : c.ranked)
      if (std::find(problems[p].lessons.begin(), problems[p].lessons.end(), v.lesson) != problems[p].lessons.end()) {
        problems[p].ranked.push_back(v);
        problems[p].ranked.back().rank = int(problems[p].ranked.size());
      }
  }
  std::stable_sort(problems.begin(), problems.end(), [](const CompareProblem& a, const CompareProblem& b) {
    return a.lessons.size() > b.lessons.size();
  });
  return problems;
}

// ---------------------------------------------------------------- files

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1F && uint8_t(bytes[1]) == 0x8B;
}

std::string gzip_compress(const std::string& text) {
  z_stream z{};
  // 15 + 16: a gzip wrapper; zlib leaves its time stamp 0 unless given a header.
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw RecordError("gzip: cannot start compressing");
  std::string out(deflateBound(&z, uLong(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = uInt(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw RecordError("gzip: compression failed");
  return out;
}

std::string gzip_decompress(const std::string& bytes, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw RecordError("gzip: cannot start decompressing");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  std::string out;
  char chunk[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(chunk, sizeof chunk - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      throw RecordError("gzip: decompresses to more than " + std::to_string(max_bytes) + " bytes");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // input ended before the stream did
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw RecordError("gzip: corrupt or truncated data");
  return out;
}

Trace trace_from_bytes(const std::string& bytes) {
  return trace_from_json(is_gzip(bytes) ? gzip_decompress(bytes) : bytes);
}

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

void write_maybe_compressed(const std::string& path, const std::string& text) {
  write_text_file_atomic(path, ends_with(path, ".gz") ? gzip_compress(text) : text);
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw RecordError("cannot write '" + path + "': " + std::strerror(errno));
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw RecordError("cannot write '" + path + "': write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw RecordError("cannot write '" + path + "': " + why);
  }
}

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw RecordError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_results(const std::string& path, const Results& r) { write_text_file_atomic(path, results_to_json(r)); }

Results read_results(const std::string& path) {
  try {
    return results_from_json(read_text_file(path));
  } catch (const RecordError& e) {
    throw RecordError(path + ": " + e.what());
  }
}

void write_trace(const std::string& path, const Trace& t) { write_maybe_compressed(path, trace_to_json(t)); }

// What is written must read back: a compare its own reader rejects is never written.
void write_compare(const std::string& path, const Compare& c) {
  const std::string text = compare_to_json(c);
  (void)compare_from_json(text);
  write_text_file_atomic(path, text);
}

Compare read_compare(const std::string& path) {
  try {
    return compare_from_json(read_text_file(path));
  } catch (const RecordError& e) {
    throw RecordError(path + ": " + e.what());
  }
}

Trace read_trace(const std::string& path) {
  try {
    return trace_from_bytes(read_text_file(path));
  } catch (const RecordError& e) {
    throw RecordError(path + ": " + e.what());
  }
}

bool output_path_writable(const std::string& path, std::string* why) {
  if (path.empty()) {
    if (why) *why = "empty path";
    return false;
  }
  const std::string probe = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) {
    if (why) *why = std::strerror(errno);
    return false;
  }
  std::fclose(f);
  std::remove(probe.c_str());
  return true;
}

// ---------------------------------------------------------------- chrome trace

std::vector<int> assign_resident_slots(const std::vector<TraceRecord>& records) {
  std::vector<int> slot(records.size(), 0);
  std::map<int, std::vector<size_t>> by_sm;
  for (size_t i = 0; i < records.size(); ++i) by_sm[records[i].sm].push_back(i);
  for (auto& [sm, idx] : by_sm) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return records[a].start_ns != records[b].start_ns ? records[a].start_ns < records[b].start_ns : a < b;
    });
    // Interval partitioning: reuse the free slot with the lowest number.
    std::vector<uint64_t> slot_end;  // end time of each slot's last block
    for (size_t i : idx) {
      int chosen = -1;
      for (size_t s = 0; s < slot_end.size(); ++s) {
        if (slot_end[s] <= records[i].start_ns) { chosen = int(s); break; }
      }
      if (chosen < 0) {
        chosen = int(slot_end.size());
        slot_end.push_back(0);
      }
      // A block that starts and ends in one 32 ns tick still occupies its slot.
      slot_end[size_t(chosen)] = std::max(records[i].end_ns, records[i].start_ns + 1);
      slot[i] = chosen;
    }
  }
  return slot;
}

uint64_t rebase_trace_times(std::vector<TraceRecord>& records) {
  if (records.empty()) return 0;
  uint64_t origin = records[0].start_ns;
  for (const auto& r : records) origin = std::min(origin, r.start_ns);
  for (auto& r : records) {
    r.start_ns -= origin;
    r.end_ns -= origin;
  }
  return origin;
}

std::string trace_to_chrome_json(const Trace& t) {
  const std::vector<int> slot = assign_resident_slots(t.records);
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":";
  out += json{{"gpu", t.header.gpu.name}, {"lesson", t.header.lesson}, {"variant", t.variant},
              {"shape", std::to_string(t.header.m) + "x" + std::to_string(t.header.n) + "x" + std::to_string(t.header.k)}}
             .dump();
  out += ",\"traceEvents\":[";
  char buf[320];
  for (size_t i = 0; i < t.records.size(); ++i) {
    const TraceRecord& r = t.records[i];
    const double ts_us = double(r.start_ns) / 1000.0;
    const double dur_us = double(r.end_ns - r.start_ns) / 1000.0;
    std::snprintf(buf, sizeof buf,
                  "%s\n{\"name\":\"tile (%d,%d)\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                  "\"args\":{\"unit\":%d,\"k_begin\":%d,\"k_end\":%d}}",
                  i ? "," : "", r.tile_m, r.tile_n, r.sm, slot[i], ts_us, dur_us, r.unit, r.k_begin, r.k_end);
    out += buf;
  }
  // Name the tracks so Perfetto shows "SM 12" and "slot 1".
  std::map<int, int> slots_per_sm;
  for (size_t i = 0; i < t.records.size(); ++i)
    slots_per_sm[t.records[i].sm] = std::max(slots_per_sm[t.records[i].sm], slot[i] + 1);
  for (const auto& [sm, count] : slots_per_sm) {
    std::snprintf(buf, sizeof buf, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"SM %d\"}}",
                  sm, sm);
    out += buf;
    for (int s = 0; s < count; ++s) {
      std::snprintf(buf, sizeof buf,
                    ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"slot %d\"}}", sm,
                    s, s);
      out += buf;
    }
  }
  out += "\n]}\n";
  return out;
}

std::string utc_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace wb
