// libFuzzer target: the trace reader, of plain and gzip-compressed traces, and
// what is derived from a trace it accepts (the Perfetto export, resident slots).
#include <cstddef>
#include <cstdint>
#include <string>

#include "records/records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wb::Trace t = wb::trace_from_bytes(std::string(reinterpret_cast<const char*>(data), size));
    (void)wb::trace_to_chrome_json(t);
    wb::rebase_trace_times(t.records);
    (void)wb::trace_to_json(t);
  } catch (const wb::RecordError&) {
  }
  return 0;
}
