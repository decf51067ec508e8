// What a problem's operands and outputs are: shape, element type and layout,
// and their contents on the host for the fp64 check. Host only (no CUDA).
//
// A transposed operand is a layout, never a copy: a K x N matrix stored
// column-major is the same bytes as its N x K transpose stored row-major.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wb {

enum class DType {
  f16,   // IEEE half
  f32,   // float
  i32,   // int32 (indices, counts)
  u4x8,  // eight 4-bit unsigned values packed in an int32 (GPTQ-style weights)
};

enum class Layout {
  row_major,  // element (r, c) at r * cols + c
  col_major,  // element (r, c) at c * rows + r
};

const char* dtype_name(DType t);
size_t dtype_bytes(DType t);  // bytes per stored element (u4x8: the 4-byte word)
const char* layout_name(Layout l);

// One operand or output of a problem.
struct TensorSpec {
  std::string name;                   // "A", "dW", "scales", "I": named in reports and failures
  int64_t rows = 0, cols = 0;         // logical shape (u4x8: in packed words)
  DType dtype = DType::f16;
  Layout layout = Layout::row_major;
  bool filled_by_problem = false;     // inputs: the problem's fill() writes it; else uniform in [-1, 1)

  int64_t count() const { return rows * cols; }
  size_t bytes() const { return size_t(count()) * dtype_bytes(dtype); }
  int64_t leading_dim() const { return layout == Layout::row_major ? cols : rows; }
  int64_t offset(int64_t r, int64_t c) const { return layout == Layout::row_major ? r * cols + c : c * rows + r; }
  // "A: 4096 x 4096 fp16, row-major"
  std::string describe() const;
};

// IEEE half <-> float, round to nearest even (host side; the device has its own).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// A tensor's bytes as they are on the device, with typed access.
struct HostTensor {
  TensorSpec spec;
  std::vector<uint8_t> data;  // spec.bytes() bytes

  HostTensor() = default;
  explicit HostTensor(TensorSpec s) : spec(std::move(s)), data(spec.bytes(), 0) {}

  // f16, f32: the value; i32, u4x8: the stored integer, as a float.
  float at(int64_t r, int64_t c) const { return value(spec.offset(r, c)); }
  int32_t int_at(int64_t r, int64_t c) const { return int_value(spec.offset(r, c)); }
  // Element `i` in storage order.
  float value(int64_t i) const;
  int32_t int_value(int64_t i) const;
  // Writes element (r, c): f16 rounds to nearest, i32 and u4x8 take `v` as it is.
  void set(int64_t r, int64_t c, float v);
  void set_int(int64_t r, int64_t c, int32_t v);
};

}  // namespace wb
