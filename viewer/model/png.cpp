#include "model/png.hpp"

#include <png.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

namespace wb::viewer {

namespace {

struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};

}  // namespace

bool write_png(const std::string& path, const RgbImage& image, std::string* error) {
  const auto fail = [&](const std::string& why) {
    if (error) *error = "cannot write '" + path + "': " + why;
    return false;
  };
  if (image.width < 1 || image.height < 1 || image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
    return fail("image has no pixels");
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  bool written = false;
  {
    File out;
    out.f = std::fopen(tmp.c_str(), "wb");
    if (!out.f) return fail("cannot create it");
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    png.width = png_uint_32(image.width);
    png.height = png_uint_32(image.height);
    png.format = PNG_FORMAT_RGB;
    written = png_image_write_to_stdio(&png, out.f, 0, image.rgb.data(), 0, nullptr) != 0 &&
              std::fflush(out.f) == 0 && !std::ferror(out.f);
    written = std::fclose(out.f) == 0 && written;
    out.f = nullptr;
    png_image_free(&png);
  }
  if (!written) {
    std::remove(tmp.c_str());
    return fail("write failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fail("cannot rename the temporary file into place");
  }
  return true;
}

bool read_png(const std::string& path, RgbImage* image, std::string* error) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path.c_str())) {
    if (error) *error = path + ": " + png.message;
    return false;
  }
  png.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> rgb(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, rgb.data(), 0, nullptr)) {
    if (error) *error = path + ": " + png.message;
    png_image_free(&png);
    return false;
  }
  image->width = int(png.width);
  image->height = int(png.height);
  image->rgb = std::move(rgb);
  return true;
}

}  // namespace wb::viewer
