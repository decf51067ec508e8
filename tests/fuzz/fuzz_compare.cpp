// libFuzzer target: the reader of `workbook compare`'s file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "records/records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wb::Compare c = wb::compare_from_json(std::string(reinterpret_cast<const char*>(data), size));
    (void)wb::compare_to_json(c);
    (void)wb::compare_problems(c);  // what `workbook compare` prints a recorded file by
  } catch (const wb::RecordError&) {
  }
  return 0;
}
