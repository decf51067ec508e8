#include "model/colors.hpp"

#include <algorithm>
#include <iterator>

namespace wb::viewer {

Rgb launch_order_rgb(int64_t pid, int64_t count) {
  static constexpr Rgb kRamp[] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  constexpr int kSegments = int(std::size(kRamp)) - 1;
  const double t = count > 1 ? std::clamp(double(pid) / double(count - 1), 0.0, 1.0) : 0.0;
  const int seg = std::min(int(t * kSegments), kSegments - 1);
  const double f = t * kSegments - seg;
  const Rgb a = kRamp[seg], b = kRamp[seg + 1];
  auto mix = [f](uint8_t x, uint8_t y) { return uint8_t(double(x) + (double(y) - double(x)) * f + 0.5); };
  return Rgb{mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

Rgb category_rgb(int index) {
  static constexpr Rgb kCategories[] = {{78, 121, 167}, {242, 142, 43}, {225, 87, 89},  {118, 183, 178},
                                        {89, 161, 79},  {237, 201, 72}, {176, 122, 161}, {255, 157, 167},
                                        {156, 117, 95}, {186, 176, 172}};
  constexpr int n = int(std::size(kCategories));
  return kCategories[((index % n) + n) % n];
}

}  // namespace wb::viewer
