// What a work unit's colour says on the timeline, and what a unit did besides
// its tile: the part of K it reduced over (split-K, Stream-K), the product it
// belongs to (lesson 05's dX and dW in one launch), the neurons it gathered
// (lesson 08). No ImGui here: the panels and the model tests share it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/colors.hpp"
#include "records/records.hpp"

namespace wb::viewer {

enum class UnitColouring { launch_order, k_slice, product };
const char* unit_colouring_name(UnitColouring c);  // "launch order", "k slice", "product"

// Some unit reduces over part of its tile's K only (split-K, Stream-K).
bool splits_k(const Trace& t);
// The colourings that say something for this trace (launch order always; k
// slice when it splits K; product when it has two products or more), and the
// one shown first: k slice, else product, else launch order.
std::vector<UnitColouring> colourings_for(const Trace& t);
UnitColouring default_colouring(const Trace& t);

// Per record (in the trace's order), its key under a colouring: the launch
// order's band (one of `launch_bands`, for merging), its k slice, its product.
// A k slice is the rank of the unit's k_begin among its product's distinct
// starts when there are at most kMaxKSlices of them (split-K), otherwise the
// tenth of K its k_begin falls in (Stream-K's ranges start anywhere).
inline constexpr int kMaxKSlices = 10;
struct UnitColours {
  UnitColouring by = UnitColouring::launch_order;
  std::vector<uint8_t> key;         // per record
  int keys = 1;                     // how many keys there are
  std::vector<std::string> labels;  // per key, for the legend (k slices, products)
  std::string title;                // what the colour says, for the legend
};
UnitColours unit_colours(const Trace& t, UnitColouring by, int launch_bands = 32);
// The colour of record `i` (launch order: its own unit's place on the ramp).
Rgb unit_rgb(const UnitColours& c, const Trace& t, size_t i);

// "dX tile (3, 4)" for a unit of a stacked product (rows counted inside the
// product), "tile (3, 4)" otherwise.
std::string tile_label(const Trace& t, const TraceRecord& r);

// The neurons (kernel.gathered) behind a unit: "17, 301, 45, ... (64 of 2752 neurons)"
// with at most `shown` numbers; "" when it gathered none.
std::string gathered_text(const Trace& t, const TraceRecord& r, int shown = 8);

// A strip over the `of` positions gathered from (lesson 08: the d_ff neurons),
// `width` cells wide: each cell the highest state of the positions in it.
enum class GatherState : uint8_t { not_listed, listed, in_flight, hovered };
// `in_flight` and `hovered` are record indices.
std::vector<GatherState> gather_strip(const Trace& t, const std::vector<size_t>& in_flight,
                                      const std::vector<size_t>& hovered, int width);

}  // namespace wb::viewer
