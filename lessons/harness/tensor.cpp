#include "harness/tensor.hpp"

#include <cmath>
#include <cstring>

namespace wb {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f16: return "fp16";
    case DType::f32: return "fp32";
    case DType::i32: return "int32";
    case DType::u4x8: return "int4x8";
  }
  return "?";
}

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::f16: return 2;
    case DType::f32:
    case DType::i32:
    case DType::u4x8: return 4;
  }
  return 0;
}

const char* layout_name(Layout l) { return l == Layout::row_major ? "row-major" : "column-major"; }

std::string TensorSpec::describe() const {
  std::string s = name + ": " + std::to_string(rows) + " x " + std::to_string(cols) + " " + dtype_name(dtype);
  if (dtype == DType::u4x8) s += " (eight 4-bit values per int32)";
  return s + ", " + layout_name(layout);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const int exponent = (h >> 10) & 0x1F;
  const uint32_t mantissa = h & 0x3FF;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // inf, NaN (payload kept)
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;  // +-0
    } else {
      const float v = std::ldexp(float(mantissa), -24);  // subnormal: exact in float
      std::memcpy(&bits, &v, 4);
      bits |= sign;
    }
  } else {
    bits = sign | (uint32_t(exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits >= 0x7F800000u)  // inf, NaN
    return uint16_t(sign | 0x7C00 | (abs_bits > 0x7F800000u ? 0x200 : 0));
  float a;
  std::memcpy(&a, &abs_bits, 4);
  if (a >= 65520.0f) return uint16_t(sign | 0x7C00);  // rounds to infinity
  if (a < 6.103515625e-05f) {
    // Subnormal (or zero): a multiple of 2^-24, rounded to nearest even by rint.
    return uint16_t(sign | uint16_t(std::nearbyint(a * 16777216.0f)));
  }
  // Normal: drop 13 mantissa bits, rounding to nearest even (a carry into the
  // exponent is the correct result). Without a branch: the dropped bits are
  // random in the fills, so a branch on them is mispredicted half the time.
  const uint32_t exp_mant = abs_bits - (uint32_t(127 - 15) << 23);
  uint32_t h = exp_mant >> 13;
  const uint32_t rest = exp_mant & 0x1FFF;
  h += uint32_t(rest > 0x1000) | (uint32_t(rest == 0x1000) & h & 1u);
  return uint16_t(sign | h);
}

float HostTensor::value(int64_t i) const {
  const uint8_t* p = data.data() + size_t(i) * dtype_bytes(spec.dtype);
  switch (spec.dtype) {
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    }
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::i32:
    case DType::u4x8: return float(int_value(i));
  }
  return 0;
}

int32_t HostTensor::int_value(int64_t i) const {
  if (spec.dtype == DType::f16 || spec.dtype == DType::f32) return int32_t(value(i));
  int32_t v;
  std::memcpy(&v, data.data() + size_t(i) * 4, 4);
  return v;
}

void HostTensor::set(int64_t r, int64_t c, float v) {
  uint8_t* p = data.data() + size_t(spec.offset(r, c)) * dtype_bytes(spec.dtype);
  switch (spec.dtype) {
    case DType::f16: {
      const uint16_t h = float_to_half(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::f32: std::memcpy(p, &v, 4); break;
    case DType::i32:
    case DType::u4x8: set_int(r, c, int32_t(v)); break;
  }
}

void HostTensor::set_int(int64_t r, int64_t c, int32_t v) {
  if (spec.dtype == DType::f16 || spec.dtype == DType::f32) {
    set(r, c, float(v));
    return;
  }
  std::memcpy(data.data() + size_t(spec.offset(r, c)) * 4, &v, 4);
}

}  // namespace wb
