#include "model/gpu_choice.hpp"

#include <algorithm>

namespace wb::viewer {

GpuChoice gpu_from_preset(const GpuPreset& preset) {
  GpuChoice g;
  g.name = preset.name;
  g.sms = preset.sms;
  g.l2_bytes = preset.l2_bytes;
  g.fp16_tflops = preset.fp16_tflops;
  g.dram_gbps = preset.dram_gbps;
  return g;
}

const GpuPreset* preset_for_device(const std::string& device_name) {
  for (const GpuPreset& p : kGpuPresets) {
    // The preset's first word is the chip ("H100", "A100", "RTX"...); match the model number.
    std::string key = p.name;
    if (key.rfind("RTX ", 0) == 0) key = key.substr(4);
    else key = key.substr(0, key.find(' '));
    if (device_name.find(key) != std::string::npos) return &p;
  }
  return nullptr;
}

GpuChoice gpu_from_trace(const Trace& trace) {
  GpuChoice g;
  const GpuInfo& info = trace.header.gpu;
  g.name = info.name;
  g.sms = std::max(info.sm_count, 1);
  const GpuPreset* preset = preset_for_device(info.name);
  g.l2_bytes = info.l2_bytes > 0 ? info.l2_bytes : (preset ? preset->l2_bytes : 0);
  g.dram_gbps = info.peak_dram_gbps() > 0 ? info.peak_dram_gbps() : (preset ? preset->dram_gbps : 0);
  g.fp16_tflops = preset ? preset->fp16_tflops : 0;
  g.blocks_per_sm = std::max(trace.kernel.blocks_per_sm, 1);
  return g;
}

}  // namespace wb::viewer
