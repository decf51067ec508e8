// Colours the viewer shares between panels and tests: a tile's colour says when
// it was launched, so the tile grid, the timeline and the screenshot test agree.
#pragma once

#include <cstdint>

namespace wb::viewer {

struct Rgb {
  uint8_t r, g, b;
  bool operator==(const Rgb&) const = default;
};

// Launch order 0 .. count-1 mapped onto a perceptually even ramp (viridis'
// control points): early tiles dark blue-purple, late tiles yellow.
Rgb launch_order_rgb(int64_t pid, int64_t count);

// Categories (k slices, products): ten hues that tell apart at a glance;
// the eleventh repeats the first.
Rgb category_rgb(int index);

// Colours for states a tile or bar can be in besides its launch colour.
inline constexpr Rgb kPendingTileRgb{52, 55, 64};     // not launched yet
inline constexpr Rgb kOperandHighlightRgb{255, 140, 60};  // A/B blocks the blocks in flight read
inline constexpr Rgb kOrderARgb{90, 170, 250};        // first order in comparisons
inline constexpr Rgb kOrderBRgb{250, 150, 70};        // second order in comparisons
inline constexpr Rgb kListedRgb{96, 102, 116};         // a gathered position nobody in flight uses
inline constexpr Rgb kHoveredRgb{255, 255, 255};       // what the hovered tile uses

}  // namespace wb::viewer
