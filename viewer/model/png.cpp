#include "model/png.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace wb::viewer {

namespace {

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  return table;
}

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = crc_table()[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

uint32_t get_u32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

void put_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put_u32(out, uint32_t(data.size()));
  const size_t type_at = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_u32(out, crc32(out.data() + type_at, data.size() + 4));
}

}  // namespace

bool write_png(const std::string& path, const RgbImage& image, std::string* error) {
  if (image.width < 1 || image.height < 1 || image.rgb.size() != size_t(image.width) * size_t(image.height) * 3) {
    if (error) *error = "image has no pixels";
    return false;
  }
  // Scanlines, each led by filter type 0 (none).
  const size_t row = size_t(image.width) * 3;
  std::vector<uint8_t> raw;
  raw.reserve((row + 1) * size_t(image.height));
  for (int y = 0; y < image.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), image.rgb.begin() + std::ptrdiff_t(row * size_t(y)),
               image.rgb.begin() + std::ptrdiff_t(row * size_t(y + 1)));
  }
  // zlib stream of stored deflate blocks (at most 65,535 bytes each) and an Adler-32.
  std::vector<uint8_t> z{0x78, 0x01};
  uint32_t a = 1, b = 0;
  for (uint8_t v : raw) {
    a = (a + v) % 65521;
    b = (b + a) % 65521;
  }
  for (size_t at = 0; at < raw.size() || at == 0;) {
    const size_t len = std::min<size_t>(65535, raw.size() - at);
    const bool last = at + len == raw.size();
    z.push_back(last ? 1 : 0);
    z.push_back(uint8_t(len));
    z.push_back(uint8_t(len >> 8));
    z.push_back(uint8_t(~len));
    z.push_back(uint8_t(~len >> 8));
    z.insert(z.end(), raw.begin() + std::ptrdiff_t(at), raw.begin() + std::ptrdiff_t(at + len));
    at += len;
    if (last) break;
  }
  put_u32(z, (b << 16) | a);

  std::vector<uint8_t> png{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> ihdr;
  put_u32(ihdr, uint32_t(image.width));
  put_u32(ihdr, uint32_t(image.height));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit, RGB, deflate, adaptive filters, no interlace
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", z);
  put_chunk(png, "IEND", {});

  // Through a temporary name, so a reader never sees half a picture.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
    if (!f) {
      if (error) *error = "cannot write '" + path + "'";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = "cannot write '" + path + "'";
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool read_png(const std::string& path, RgbImage* image, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = path + ": " + why;
    return false;
  };
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail("cannot open");
  const std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (data.size() < 8 || !std::equal(kSignature, kSignature + 8, data.begin())) return fail("not a PNG");
  std::vector<uint8_t> z;
  int width = 0, height = 0;
  for (size_t at = 8; at + 12 <= data.size();) {
    const uint32_t len = get_u32(&data[at]);
    if (at + 12 + len > data.size()) return fail("truncated chunk");
    const std::string type(reinterpret_cast<const char*>(&data[at + 4]), 4);
    const uint8_t* body = &data[at + 8];
    if (type == "IHDR") {
      if (len < 13) return fail("short IHDR");
      width = int(get_u32(body));
      height = int(get_u32(body + 4));
      if (body[8] != 8 || body[9] != 2 || body[12] != 0) return fail("not 8-bit RGB without interlace");
    } else if (type == "IDAT") {
      z.insert(z.end(), body, body + len);
    }
    at += 12 + len;
  }
  if (width < 1 || height < 1 || z.size() < 6) return fail("no image data");
  std::vector<uint8_t> raw;
  for (size_t at = 2;;) {
    if (at + 5 > z.size()) return fail("truncated deflate stream");
    const uint8_t header = z[at];
    if ((header >> 1) != 0) return fail("compressed deflate blocks are not supported");
    const size_t len = size_t(z[at + 1]) | size_t(z[at + 2]) << 8;
    if (at + 5 + len > z.size()) return fail("truncated stored block");
    raw.insert(raw.end(), z.begin() + std::ptrdiff_t(at + 5), z.begin() + std::ptrdiff_t(at + 5 + len));
    at += 5 + len;
    if (header & 1) break;
  }
  const size_t row = size_t(width) * 3;
  if (raw.size() != (row + 1) * size_t(height)) return fail("wrong amount of pixel data");
  image->width = width;
  image->height = height;
  image->rgb.resize(row * size_t(height));
  for (int y = 0; y < height; ++y) {
    if (raw[(row + 1) * size_t(y)] != 0) return fail("filtered scanlines are not supported");
    std::copy_n(raw.begin() + std::ptrdiff_t((row + 1) * size_t(y) + 1), row, image->rgb.begin() + std::ptrdiff_t(row * size_t(y)));
  }
  return true;
}

}  // namespace wb::viewer
