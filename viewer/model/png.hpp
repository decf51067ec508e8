// A dependency-free PNG writer (8-bit RGB, "stored" deflate blocks: no
// compression, so no zlib) and a reader for exactly what it writes, which the
// screenshot test uses to check pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wb::viewer {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major from the top, 3 bytes a pixel
  const uint8_t* at(int x, int y) const { return &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3]; }
};

// Returns false and sets `error` when the file cannot be written.
bool write_png(const std::string& path, const RgbImage& image, std::string* error);
// Reads a PNG this writer produced (8-bit RGB, stored blocks); false and `error` otherwise.
bool read_png(const std::string& path, RgbImage* image, std::string* error);

}  // namespace wb::viewer
