#include "harness/report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "models/l2_model.hpp"
#include "models/order_model.hpp"
#include "models/wave_model.hpp"
#include "schedule/activation.hpp"
#include "schedule/stream_k.hpp"
#include "schedule/tile_order.hpp"

namespace wb {

namespace fs = std::filesystem;

std::string describe_gpu(const RunHeader& h) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.0f MiB L2, %.0f GiB), driver %s, CUDA %s, cuBLAS %s",
                h.gpu.name.c_str(), h.gpu.cc_major, h.gpu.cc_minor, h.gpu.sm_count, h.gpu.l2_bytes / 1048576.0,
                h.gpu.memory_bytes / 1073741824.0, h.versions.driver.c_str(), h.versions.runtime.c_str(),
                h.versions.cublas.c_str());
  return buf;
}

std::string format_report(const Results& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-22s %10s %9s %9s %9s %10s %10s  %s\n", "variant", "ms", "TFLOP/s", "GB/s",
                "% cuBLAS", "rel.err", "max.abs", "check");
  out += buf;
  out += std::string(98, '-') + "\n";
  for (const VariantResult& v : r.variants) {
    if (v.skipped) {
      std::snprintf(buf, sizeof buf, "%-22s %s\n", v.name.c_str(), ("skipped: " + v.skip_reason).c_str());
      out += buf;
      continue;
    }
    const char* check = v.reference ? "reference"
                        : !v.checked  ? (v.bound ? "not checked (a bound)" : "not checked")
                        : v.passed    ? (v.bound ? "pass (a bound)" : "pass")
                                      : "FAIL";
    std::snprintf(buf, sizeof buf, "%-22s %10.4f %9.2f %9.1f %8.1f%% %10.2e %10.2e  %s\n", v.name.c_str(),
                  v.median_ms, v.tflops, v.gbps, 100.0 * v.vs_cublas, v.rel_err, v.max_abs_err, check);
    out += buf;
  }
  return out;
}

std::string fused_epilogue_lines(const Results& r) {
  auto find = [&](const std::string& name) -> const VariantResult* {
    for (const VariantResult& v : r.variants)
      if (v.name == name && !v.reference && !v.skipped && v.vs_cublas > 0) return &v;
    return nullptr;
  };
  std::string out;
  char buf[256];
  for (const VariantResult& v : r.variants) {
    if (v.reference || v.skipped || v.vs_cublas <= 0) continue;
    // The longest activation suffix first: "_leaky_relu" before "_relu".
    for (const Activation act : {Activation::leaky_relu, Activation::relu, Activation::gelu, Activation::silu}) {
      const std::string suffix = std::string("_") + activation_name(act);
      if (v.name.size() <= suffix.size() || v.name.compare(v.name.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      const std::string base_name = v.name.substr(0, v.name.size() - suffix.size());
      if (const VariantResult* base = find(base_name)) {
        const double cost = 1.0 - v.vs_cublas / base->vs_cublas;
        char how[64];
        if (std::fabs(cost) < 0.0005)
          std::snprintf(how, sizeof how, "  as fast as");
        else
          std::snprintf(how, sizeof how, "%5.1f%% %s than", 100.0 * std::fabs(cost), cost > 0 ? "slower" : "faster");
        std::snprintf(buf, sizeof buf, "  %-22s %s %s (%.1f%% -> %.1f%% of cuBLAS)\n", v.name.c_str(), how,
                      base_name.c_str(), 100.0 * base->vs_cublas, 100.0 * v.vs_cublas);
        out += buf;
      }
      break;
    }
  }
  if (out.empty()) return out;
  return "fused activations, against the same kernel without (both paired with cuBLAS round by round):\n" + out;
}

std::string repeat_line(const Results& r) {
  std::string same, differ;
  for (const VariantResult& v : r.variants) {
    if (v.skipped || v.bitwise_diffs < 0) continue;
    if (v.bitwise_diffs == 0) {
      same += (same.empty() ? "" : ", ") + v.name;
    } else {
      differ += (differ.empty() ? "" : "; ") + v.name + ": " + std::to_string(v.bitwise_diffs) + " elements differ";
    }
  }
  if (same.empty() && differ.empty()) return "";
  std::string out = "run twice on the same inputs: ";
  if (!differ.empty()) out += differ + (same.empty() ? "" : "; ");
  if (!same.empty()) out += same + ": the same bits";
  return out + "\n";
}

std::string disturbed_rounds_line(const Results& r) {
  const VariantResult* ref = nullptr;
  for (const VariantResult& v : r.variants)
    if (v.reference && !v.skipped && v.median_ms > 0) ref = &v;
  // One round has nothing to disagree with (the sanitizers' runs): only the medians.
  if (ref == nullptr || r.timing.rounds < 3) return "";
  std::string list;
  char buf[256];
  for (const VariantResult& v : r.variants) {
    if (v.reference || v.skipped || !(v.median_ms > 0) || !(v.vs_cublas > 0) || !std::isfinite(v.vs_cublas)) continue;
    const double by_medians = ref->median_ms / v.median_ms;
    const double apart = v.vs_cublas / by_medians;
    if (apart > 1.2 || apart < 1.0 / 1.2) {
      std::snprintf(buf, sizeof buf, "%s%s %.2fx round by round, %.2fx by the medians", list.empty() ? "" : "; ",
                    v.name.c_str(), v.vs_cublas, by_medians);
      list += buf;
    }
  }
  if (list.empty()) return "";
  return "WARNING: rounds were disturbed (" + list + "): something slowed whole rounds; run again before trusting "
         "these ratios\n";
}

std::string gbps_line(const Results& r) {
  // Variants that count the same way share one description: "a, b: ...".
  std::vector<std::pair<std::string, std::string>> groups;  // (what, names)
  for (const VariantResult& v : r.variants) {
    if (v.skipped || v.bytes_what.empty()) continue;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == v.bytes_what; });
    if (g == groups.end()) groups.push_back({v.bytes_what, v.name});
    else g->second += ", " + v.name;
  }
  std::string own;
  for (const auto& [what, names] : groups) own += "; " + names + ": " + what;
  return "GB/s: the bytes a variant must move at least (every input read once, every output written once) over its "
         "median time" + own + "\n";
}

std::vector<std::string> recorded_results_files(const std::string& assets, const std::string& lesson_id) {
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path root = fs::path(assets) / "results";
  if (!fs::is_directory(root, ec)) return files;
  for (const auto& gpu_dir : fs::directory_iterator(root, ec)) {
    for (const auto& f : fs::directory_iterator(gpu_dir.path(), ec)) {
      const std::string name = f.path().filename().string();
      const bool mine = name == lesson_id + ".json" ||
                        (name.rfind(lesson_id + "-", 0) == 0 && f.path().extension() == ".json");
      if (mine && f.is_regular_file(ec)) files.push_back(f.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

std::string shape_text(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k);
}

int ran_variants(const Results& r) {
  int n = 0;
  for (const VariantResult& v : r.variants) n += v.skipped || v.reference ? 0 : 1;
  return n;
}

// One recording, labelled, with only the variants asked for (and the reference).
std::string format_recording(const Results& r, const std::vector<std::string>& variants) {
  Results shown = r;
  if (!variants.empty()) {
    shown.variants.clear();
    for (const VariantResult& v : r.variants)
      if (v.reference || std::find(variants.begin(), variants.end(), v.name) != variants.end())
        shown.variants.push_back(v);
  }
  std::string out = "  RECORDED on " + r.header.gpu.name + ", " + r.header.date + " (not measured on this machine)\n";
  out += "  " + describe_gpu(r.header) + "\n";
  std::string params;  // the lesson's own (model, sparsity, group size, ...): which recording this is
  for (const auto& [name, value] : r.header.shape_params)
    if (!value.text.empty()) params += " " + name + "=" + value.text;
  out += "  shape " + shape_text(r.header.m, r.header.n, r.header.k) + params + ", " + r.header.dtype + "\n\n";
  if (ran_variants(shown) == 0) return out + "  (none of the variants asked for is in this recording)\n\n";
  return out + format_report(shown) + gbps_line(shown) + repeat_line(shown) + fused_epilogue_lines(shown) +
         read_floor_line(shown) + "\n";
}

}  // namespace

std::string format_recorded_results(const std::string& assets, const std::string& lesson_id,
                                    const RecordedRequest& request) {
  const auto files = recorded_results_files(assets, lesson_id);
  if (files.empty()) return "  (no recorded results for " + lesson_id + " in " + assets + "/results)\n";
  struct Recording {
    std::string file;
    Results results;
  };
  std::vector<Recording> all;
  std::string out;
  for (const std::string& f : files) {
    try {
      all.push_back({f, read_results(f)});
    } catch (const RecordError& e) {
      out += std::string("  (unreadable recorded results: ") + e.what() + ")\n";
    }
  }
  const auto at = [&](int64_t m, int64_t n, int64_t k) {
    std::vector<const Recording*> found;
    for (const Recording& r : all)
      if (r.results.header.m == m && r.results.header.n == n && r.results.header.k == k) found.push_back(&r);
    return found;
  };
  std::vector<const Recording*> shown = at(request.m, request.n, request.k);
  if (!shown.empty() && !request.params.empty()) {
    const auto same = [](const ShapeParam& a, const ShapeParam& b) {
      if (a.numeric && b.numeric) return std::abs(a.value - b.value) <= 1e-9 * std::max(std::abs(a.value), 1.0);
      return a.text == b.text;
    };
    const auto matches = [&](const Recording* r) {
      for (const auto& [name, value] : request.params) {
        const auto it = r->results.header.shape_params.find(name);
        if (it != r->results.header.shape_params.end()) {
          if (!same(it->second, value)) return false;
        } else if (const auto d = request.defaults.find(name); d != request.defaults.end() && !same(d->second, value)) {
          return false;  // recorded before the parameter existed: it ran at the default
        }
      }
      return true;
    };
    std::vector<const Recording*> matching;
    for (const Recording* r : shown)
      if (matches(r)) matching.push_back(r);
    if (matching.empty()) {
      std::string asked, recorded;
      std::vector<std::string> seen;
      for (const auto& [name, value] : request.params)
        if (!value.text.empty()) asked += " " + name + "=" + value.text;
      for (const Recording* r : shown) {
        std::string own;
        for (const auto& [name, value] : r->results.header.shape_params)
          if (request.params.count(name) && !value.text.empty()) own += (own.empty() ? "" : " ") + name + "=" + value.text;
        if (std::find(seen.begin(), seen.end(), own) != seen.end()) continue;
        seen.push_back(own);
        recorded += (recorded.empty() ? "" : "; ") + own;
      }
      out += "  Nothing is recorded for " + lesson_id + " at " + shape_text(request.m, request.n, request.k) + " with" +
             asked + " (recorded there: " + recorded + "); here is what is:\n\n";
    } else {
      shown = matching;
    }
  }
  if (shown.empty()) {
    std::vector<std::string> shapes;
    for (const Recording& r : all) {
      const std::string s = shape_text(r.results.header.m, r.results.header.n, r.results.header.k);
      if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
    }
    std::string list;
    for (const std::string& s : shapes) list += (list.empty() ? "" : ", ") + s;
    out += "  Nothing is recorded for " + lesson_id + " at " + shape_text(request.m, request.n, request.k) +
           " (recorded: " + list + ")";
    shown = at(4096, 4096, 4096);
    if (shown.empty()) return out + ".\n";
    out += "; here is 4096 x 4096 x 4096:\n\n";
  }
  // Per GPU, the recording with the most variants; the others at this shape are named.
  std::vector<const Recording*> best;
  for (const Recording* r : shown) {
    auto same_gpu = std::find_if(best.begin(), best.end(), [&](const Recording* b) {
      return b->results.header.gpu.name == r->results.header.gpu.name;
    });
    if (same_gpu == best.end()) best.push_back(r);
    else if (ran_variants(r->results) > ran_variants((*same_gpu)->results)) *same_gpu = r;
  }
  for (const Recording* r : best) {
    out += format_recording(r->results, request.variants);
    for (const Recording* other : shown)
      if (other != r && other->results.header.gpu.name == r->results.header.gpu.name)
        out += "  also recorded at this shape on this GPU: " + fs::path(other->file).filename().string() + "\n";
  }
  return out;
}

std::string l2_model_line(int64_t m, int64_t n, int64_t k, const KernelConfig& c, const GpuInfo& gpu) {
  TileOrder order_check;
  if (!parse_tile_order(c.order.c_str(), &order_check)) return "L2 model: unknown order '" + c.order + "'";
  if (c.block_m < 1 || c.block_n < 1 || c.block_k < 1) return "L2 model: kernel has no tile sizes";
  const L2ModelInput in = l2_input_for(m, n, k, c, gpu.l2_bytes, gpu.sm_count);
  const L2ModelResult r = simulate_l2(in);
  std::string order = c.order;
  if (in.order == TileOrder::grouped) order.append(1, ' ').append(std::to_string(in.group_m));
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "L2 model (%s, %d blocks in flight): %.3f GB from DRAM, %.2fx the compulsory %.3f GB, "
                "hit rate %.1f%%, %zu waves",
                order.c_str(), in.blocks_in_flight, r.dram_bytes / 1e9,
                double(r.dram_bytes) / double(std::max<int64_t>(1, r.compulsory_bytes)), r.compulsory_bytes / 1e9,
                100.0 * r.hit_rate(), r.waves.size());
  return buf;
}

std::string stream_k_model_line(int64_t k, const KernelConfig& c) {
  if (c.block_k < 1 || c.grid_blocks < 1) return "wave model: kernel has no tile sizes";
  const int tiles = c.tiles_m * c.tiles_n, blocks = int(c.grid_blocks);
  const StreamKPlan plan = stream_k_plan(tiles, int(ceil_div64(k, c.block_k)), blocks);
  const WaveResult w = wave_quantization(WaveInput{tiles, 1, blocks, 1});
  char buf[320];
  const int used =
      std::snprintf(buf, sizeof buf, "waves: %d tiles on %d blocks = %.2f -> %lld waves of whole tiles, last %.0f%% full",
                    tiles, blocks, double(tiles) / blocks, static_cast<long long>(w.waves),
                    100.0 * w.last_wave_utilization);
  if (plan.sk_tiles > 0) {
    std::snprintf(buf + used, sizeof buf - size_t(used), "; Stream-K shares its %d tiles: %.1f k tiles per block",
                  plan.sk_tiles, double(plan.sk_tiles) * plan.k_iters / blocks);
  } else if (w.waves > 1 && w.last_wave_units < blocks) {
    std::snprintf(buf + used, sizeof buf - size_t(used), "; kept whole (shared only when at most half full)");
  }
  return buf;
}

namespace {
// How `tiles` tiles fall on `blocks` persistent blocks: "128 blocks of 4 tiles"
// or "110 blocks of 7 tiles, 5 of 6".
std::string tiles_per_block(int64_t tiles, int64_t blocks) {
  const int64_t most = ceil_div64(tiles, blocks), busy = tiles - (most - 1) * blocks;
  std::string s = std::to_string(busy) + " blocks of " + std::to_string(most) + (most == 1 ? " tile" : " tiles");
  if (busy < blocks) s += ", " + std::to_string(blocks - busy) + " of " + std::to_string(most - 1);
  return s;
}
}  // namespace

std::string balanced_grid_model_line(const KernelConfig& c, const GpuInfo& gpu) {
  const int64_t tiles = c.work_units, blocks = c.grid_blocks;
  const int64_t slots = int64_t(std::max(1, gpu.sm_count)) * std::max(1, c.blocks_per_sm);
  if (tiles < 1 || blocks < 1) return "grid: kernel has no tiles";
  const int64_t full = std::min(tiles, slots);
  std::string line = "grid: " + std::to_string(tiles) + " tiles on " + std::to_string(blocks) + " blocks, " +
                     tiles_per_block(tiles, blocks);
  if (full == blocks) return line + " (one block per SM already takes them evenly)";
  return line + "; one block per SM (" + std::to_string(full) + "): " + tiles_per_block(tiles, full) + ", " +
         std::to_string(ceil_div64(tiles, full)) + " waves either way";
}

std::string order_verdict(int64_t m, int64_t n, int64_t k, const std::vector<OrderRun>& orders, const GpuInfo& gpu,
                          double copy_gbps, const std::string& lesson_id) {
  if (orders.size() < 2 || !(copy_gbps > 0)) return "";
  const OrderRun* fastest = &orders.front();
  for (const OrderRun& o : orders)
    if (o.tflops > fastest->tflops) fastest = &o;
  if (!(fastest->tflops > 0)) return "";
  const double flops = 2.0 * double(m) * double(n) * double(k);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "does the order matter here? Each order's DRAM bytes (L2 model), moved while the math runs at "
                "%.0f TFLOP/s (%s, the fastest order here), against the %.0f GB/s a device-to-device copy moved:\n",
                fastest->tflops, fastest->name.c_str(), copy_gbps);
  std::string out = buf;
  const OrderRun *worst = nullptr, *best = nullptr;
  double worst_gbps = -1, best_gbps = 0;
  for (const OrderRun& o : orders) {
    const double bytes = double(simulate_l2(l2_input_for(m, n, k, o.config, gpu.l2_bytes, gpu.sm_count)).dram_bytes);
    const double need = needed_gbps(bytes, flops, fastest->tflops);
    std::snprintf(buf, sizeof buf, "  %-14s %8.3f GB  needs %6.0f GB/s, %4.0f%% of the copy%s\n", o.name.c_str(),
                  bytes / 1e9, need, 100.0 * need / copy_gbps,
                  need >= copy_gbps ? ": more than DRAM moves, the order decides the time" : "");
    out += buf;
    if (need > worst_gbps) worst = &o, worst_gbps = need;
    if (!best || need < best_gbps) best = &o, best_gbps = need;
  }
  if (worst_gbps >= copy_gbps) {
    out += "  -> here the order matters: " + worst->name + "'s traffic does not fit under the math, " + best->name +
           "'s does.\n";
  } else {
    std::snprintf(buf, sizeof buf,
                  "  -> here the order should not matter: every order's traffic fits under the math (the most, "
                  "%s's, needs %.0f%% of the copy's bandwidth).\n",
                  worst->name.c_str(), 100.0 * worst_gbps / copy_gbps);
    out += buf;
  }
  // Where on this GPU: row-major against a grouped order (grouped8 where it ran), at M = K = 4096 and wide N.
  const OrderRun* better = nullptr;
  for (const OrderRun& o : orders) {
    if (o.config.order == tile_order_name(TileOrder::row_major)) continue;
    const bool grouped = o.config.order == tile_order_name(TileOrder::grouped);
    if (!better || o.name == "grouped8" ||
        (grouped && better->name != "grouped8" && better->config.order != tile_order_name(TileOrder::grouped)))
      better = &o;
  }
  if (!better) return out;
  best = better;
  KernelConfig row = worst->config;
  row.order = tile_order_name(TileOrder::row_major);
  row.group_m = 1;
  const auto where =
      shape_where_order_pays(row, better->config, fastest->tflops, copy_gbps, gpu.l2_bytes, gpu.sm_count);
  const double limit = worst_order_limit_gbps(fastest->tflops, row.block_m);
  if (where) {
    std::snprintf(buf, sizeof buf,
                  "  On this GPU the order pays where row-major's traffic outgrows DRAM, e.g. %s --m %lld --n %lld --k "
                  "%lld --variant row_major,column_major,%s (modelled: row_major needs %.0f%% of the copy's "
                  "bandwidth there, %s %.0f%%).\n",
                  lesson_id.c_str(), static_cast<long long>(where->m), static_cast<long long>(where->n),
                  static_cast<long long>(where->k), best->name.c_str(), 100.0 * where->worst_gbps / copy_gbps,
                  best->name.c_str(), 100.0 * where->best_gbps / copy_gbps);
  } else if (limit >= copy_gbps) {
    std::snprintf(buf, sizeof buf,
                  "  No shape 4096 x N x 4096 up to N = 131072 makes the order decide the time here, though "
                  "row-major's worst case (1/%d byte per flop) would need about %.0f GB/s at %.0f TFLOP/s.\n",
                  row.block_m, limit, fastest->tflops);
  } else {
    std::snprintf(buf, sizeof buf,
                  "  On this GPU the order should not matter at any shape for this kernel: row-major's worst case, "
                  "all of B re-read for every row of tiles (1/%d byte per flop), needs about %.0f GB/s at %.0f "
                  "TFLOP/s, less than the %.0f GB/s DRAM moved.\n",
                  row.block_m, limit, fastest->tflops, copy_gbps);
  }
  return out + buf;
}

std::string gpu_slug(const std::string& gpu_name) {
  std::string s;
  for (char c : gpu_name) {
    if (std::isalnum(static_cast<unsigned char>(c))) s += char(std::tolower(static_cast<unsigned char>(c)));
    else if (!s.empty() && s.back() != '-') s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "unknown-gpu" : s;
}

}  // namespace wb

namespace wb {

std::string split_wave_line(const KernelConfig& c, const GpuInfo& gpu, int per_sm) {
  const int64_t tiles = int64_t(c.tiles_m) * c.tiles_n;
  const WaveResult w = wave_quantization({tiles, c.split_k, gpu.sm_count, per_sm});
  char buf[256];
  std::snprintf(buf, sizeof buf, "split %d: %lld tiles x %d = %lld units on %d SMs (%d each; %d fit): %lld wave%s, "
                "the last %.0f%% full",
                c.split_k, static_cast<long long>(tiles), c.split_k, static_cast<long long>(w.units), gpu.sm_count,
                per_sm, c.blocks_per_sm, static_cast<long long>(w.waves), w.waves == 1 ? "" : "s",
                100.0 * w.last_wave_utilization);
  return buf;
}

std::string split_clamp_note(int wanted, int used, int k_tiles) {
  if (wanted <= used) return "";
  return "split " + std::to_string(wanted) + " clamped to " + std::to_string(used) + " (K has " +
         std::to_string(k_tiles) + " k tiles: at most one per split)";
}

std::string read_floor_line(const Results& r) {
  const double bytes = r.read_floor_bytes;
  if (!(r.read_floor_ms > 0) || !(bytes > 0)) return "";
  const VariantResult* ref = nullptr;
  const VariantResult* best = nullptr;
  for (const VariantResult& v : r.variants) {
    if (v.skipped || !(v.median_ms > 0)) continue;
    if (v.reference)
      ref = &v;
    else if (v.passed && !v.bound && (!best || v.median_ms < best->median_ms))
      best = &v;
  }
  char buf[512];
  int n = std::snprintf(buf, sizeof buf,
                        "floor: a kernel that only reads those %.1f MB once takes %.4f ms here, launch included "
                        "(timed like the variants): no variant can be faster",
                        bytes / 1e6, r.read_floor_ms);
  if (ref && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "; %s takes %.2fx that, so %.2fx %s is the most any variant can reach",
                       ref->name.c_str(), ref->median_ms / r.read_floor_ms, ref->median_ms / r.read_floor_ms,
                       ref->name.c_str());
  if (best && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "; the fastest here, %s, takes %.2fx the floor",
                       best->name.c_str(), best->median_ms / r.read_floor_ms);
  return std::string(buf) + "\n";
}

std::string copy_bandwidth_lines(const Results& r) {
  if (!(r.copy_gbps > 0)) return "";
  std::string out = "bandwidth: each variant's GB/s against the copy's " + std::to_string(int(r.copy_gbps + 0.5)) +
                    " GB/s in this run\n";
  const VariantResult* best = nullptr;
  for (const VariantResult& v : r.variants) {
    if (v.skipped || !(v.gbps > 0)) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-16s %7.0f GB/s  %5.1f%% of the copy\n", v.name.c_str(), v.gbps,
                  100.0 * v.gbps / r.copy_gbps);
    out += buf;
    if (!v.reference && !v.bound && (!best || v.vs_cublas > best->vs_cublas)) best = &v;
  }
  if (best) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "fastest here: %s, %.2fx cuBLAS, at %.0f%% of the copy's bandwidth\n",
                  best->name.c_str(), best->vs_cublas, 100.0 * best->gbps / r.copy_gbps);
    out += buf;
  }
  return out;
}

}  // namespace wb
