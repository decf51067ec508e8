// libFuzzer target: the results reader. Any input either parses into Results
// or raises a one-line RecordError; nothing else (no crash, no other exception,
// no sanitizer report).
#include <cstddef>
#include <cstdint>
#include <string>

#include "records/records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wb::Results r = wb::results_from_json(std::string(reinterpret_cast<const char*>(data), size));
    (void)wb::results_to_json(r);  // what was read can be written again
  } catch (const wb::RecordError&) {
  }
  return 0;
}
