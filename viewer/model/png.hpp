// Screenshots as PNG files, through libpng: 8-bit RGB, compressed, written to
// a temporary name and renamed, so a reader never sees half a picture. The
// reader takes any PNG libpng reads and gives back 8-bit RGB (the screenshot
// tests check pixels with it).
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

// Returns false and sets `error` when the file cannot be written whole; the
// file it would have replaced is then as it was.
bool write_png(const std::string& path, const RgbImage& image, std::string* error);
// False and `error` when the file is missing or not a PNG.
bool read_png(const std::string& path, RgbImage* image, std::string* error);

}  // namespace wb::viewer
