#include "model/unit_colours.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>

namespace wb::viewer {

namespace {

// The reduction length of a unit's tile: its product's K, or the trace's.
int64_t k_of(const Trace& t, const TraceRecord& r) {
  const ProductGrid* p = product_of_row(t.kernel, r.tile_m);
  return p ? p->k : t.header.k;
}

int product_index(const Trace& t, const TraceRecord& r) {
  const ProductGrid* p = product_of_row(t.kernel, r.tile_m);
  return p ? int(p - t.kernel.products.data()) : 0;
}

std::string k_text(int64_t v) {
  char b[32];
  if (v >= 1024 && v % 1024 == 0) std::snprintf(b, sizeof b, "%lldK", static_cast<long long>(v / 1024));
  else std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
  return b;
}

}  // namespace

const char* unit_colouring_name(UnitColouring c) {
  switch (c) {
    case UnitColouring::k_slice: return "k slice";
    case UnitColouring::product: return "product";
    default: return "launch order";
  }
}

bool splits_k(const Trace& t) {
  for (const TraceRecord& r : t.records)
    if (r.k_end - r.k_begin < k_of(t, r)) return true;
  return false;
}

std::vector<UnitColouring> colourings_for(const Trace& t) {
  std::vector<UnitColouring> out{UnitColouring::launch_order};
  if (splits_k(t)) out.push_back(UnitColouring::k_slice);
  if (t.kernel.products.size() >= 2) out.push_back(UnitColouring::product);
  return out;
}

UnitColouring default_colouring(const Trace& t) {
  if (splits_k(t)) return UnitColouring::k_slice;
  if (t.kernel.products.size() >= 2) return UnitColouring::product;
  return UnitColouring::launch_order;
}

UnitColours unit_colours(const Trace& t, UnitColouring by, int launch_bands) {
  UnitColours c;
  c.by = by;
  const size_t n = t.records.size();
  c.key.assign(n, 0);
  if (by == UnitColouring::launch_order) {
    const int64_t units = std::max<int64_t>(int64_t(n), 1);
    c.keys = std::clamp(launch_bands, 1, 255);
    c.title = "launch order";
    for (size_t i = 0; i < n; ++i) c.key[i] = uint8_t(int64_t(t.records[i].unit) * c.keys / units);
    return c;
  }
  if (by == UnitColouring::product) {
    c.keys = std::max<int>(int(t.kernel.products.size()), 1);
    c.title = "the product it computes";
    for (const ProductGrid& p : t.kernel.products) c.labels.push_back(p.name);
    if (c.labels.empty()) c.labels.push_back("C");
    for (size_t i = 0; i < n; ++i) c.key[i] = uint8_t(std::min(product_index(t, t.records[i]), 255));
    return c;
  }
  // k slices, per product: ranks of the distinct starts, or tenths of K.
  const int products = std::max<int>(int(t.kernel.products.size()), 1);
  std::vector<std::set<int32_t>> starts(static_cast<size_t>(products));
  for (const TraceRecord& r : t.records) starts[size_t(product_index(t, r))].insert(r.k_begin);
  bool tenths = false;
  for (const auto& s : starts) tenths |= s.size() > size_t(kMaxKSlices);
  for (size_t i = 0; i < n; ++i) {
    const TraceRecord& r = t.records[i];
    const auto& s = starts[size_t(product_index(t, r))];
    const int64_t k = std::max<int64_t>(k_of(t, r), 1);
    const int key = tenths ? int(std::min<int64_t>(int64_t(r.k_begin) * kMaxKSlices / k, kMaxKSlices - 1))
                           : int(std::distance(s.begin(), s.find(r.k_begin)));
    c.key[i] = uint8_t(key);
    c.keys = std::max(c.keys, key + 1);
  }
  c.title = "the part of K it reduced over";
  if (tenths) {
    c.keys = kMaxKSlices;
    c.title = "where its k range starts (% of K)";
    for (int i = 0; i < kMaxKSlices; ++i) c.labels.push_back(std::to_string(i * 100 / kMaxKSlices));
  } else if (products == 1) {  // the ranges themselves: "k 0 .. 1K"
    const auto& s = starts[0];
    const int64_t k = t.kernel.products.empty() ? t.header.k : t.kernel.products[0].k;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const int64_t end = std::next(it) == s.end() ? k : *std::next(it);
      c.labels.push_back("k " + k_text(*it) + " .. " + k_text(end));
    }
  } else {
    for (int i = 0; i < c.keys; ++i) c.labels.push_back("slice " + std::to_string(i + 1));
  }
  return c;
}

Rgb unit_rgb(const UnitColours& c, const Trace& t, size_t i) {
  if (c.by == UnitColouring::launch_order)
    return launch_order_rgb(t.records[i].unit, std::max<int64_t>(int64_t(t.records.size()), 1));
  return category_rgb(c.key[i]);
}

std::string tile_label(const Trace& t, const TraceRecord& r) {
  char b[160];
  if (const ProductGrid* p = product_of_row(t.kernel, r.tile_m); p && t.kernel.products.size() > 1) {
    std::snprintf(b, sizeof b, "%s tile (%d, %d)", p->name.c_str(), r.tile_m - p->first_row, r.tile_n);
    return b;
  }
  std::snprintf(b, sizeof b, "tile (%d, %d)", r.tile_m, r.tile_n);
  return b;
}

std::string gathered_text(const Trace& t, const TraceRecord& r, int shown) {
  const EntryRange e = gathered_entries(t, r);
  if (e.empty()) return {};
  const GatheredIndex& g = t.kernel.gathered;
  std::string out;
  for (int64_t j = e.first; j < e.last && j < e.first + shown; ++j) {
    if (!out.empty()) out += ", ";
    out += std::to_string(g.index[size_t(j)]);
  }
  if (e.last - e.first > shown) out += ", ...";
  char b[160];
  std::snprintf(b, sizeof b, " (%lld of the %zu %s listed, of %lld)", static_cast<long long>(e.last - e.first),
                g.index.size(), g.what.c_str(), static_cast<long long>(g.of));
  return out + b;
}

std::vector<GatherState> gather_strip(const Trace& t, const std::vector<size_t>& in_flight,
                                      const std::vector<size_t>& hovered, int width) {
  const GatheredIndex& g = t.kernel.gathered;
  std::vector<GatherState> cells(size_t(std::max(width, 0)), GatherState::not_listed);
  if (cells.empty() || g.index.empty() || g.of < 1) return cells;
  const auto cell_of = [&](int32_t position) { return size_t(int64_t(position) * width / g.of); };
  const auto mark = [&](const TraceRecord& r, GatherState s) {
    const EntryRange e = gathered_entries(t, r);
    for (int64_t j = e.first; j < e.last; ++j) {
      GatherState& c = cells[cell_of(g.index[size_t(j)])];
      c = std::max(c, s);
    }
  };
  for (int32_t position : g.index) cells[cell_of(position)] = GatherState::listed;
  for (size_t i : in_flight)
    if (i < t.records.size()) mark(t.records[i], GatherState::in_flight);
  for (size_t i : hovered)
    if (i < t.records.size()) mark(t.records[i], GatherState::hovered);
  return cells;
}

}  // namespace wb::viewer
