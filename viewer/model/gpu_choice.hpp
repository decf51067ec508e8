// The GPU the models run for: a preset, custom figures, or a loaded trace's GPU.
#pragma once

#include <cstdint>
#include <string>

#include "models/gpu_presets.hpp"
#include "records/records.hpp"

namespace wb::viewer {

struct GpuChoice {
  std::string name = "H100 SXM";
  int sms = 132;
  int64_t l2_bytes = 50LL << 20;
  double fp16_tflops = 989.0;  // 0: unknown
  double dram_gbps = 3350.0;
  int blocks_per_sm = 1;       // resident blocks per SM (occupancy)
};

GpuChoice gpu_from_preset(const GpuPreset& preset);
// A trace's GPU: its SMs, L2 and bandwidth as recorded, the kernel's occupancy,
// and the peak rate of the preset its name matches (0 when none does).
GpuChoice gpu_from_trace(const Trace& trace);
// The preset whose name the device name contains ("NVIDIA H100 80GB HBM3" -> "H100 SXM"), or nullptr.
const GpuPreset* preset_for_device(const std::string& device_name);

}  // namespace wb::viewer
