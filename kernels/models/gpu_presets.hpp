// GPUs the models can be run for without a trace. Figures are the vendors'
// datasheet values (dense fp16 tensor rate with fp32 accumulation) and the L2
// size the device reports; the viewer also offers "custom" and a loaded trace's GPU.
#pragma once

#include <cstdint>

namespace wb {

struct GpuPreset {
  const char* name;
  int sms;
  int64_t l2_bytes;
  double fp16_tflops;  // dense, fp32 accumulate
  double dram_gbps;
};

inline constexpr GpuPreset kGpuPresets[] = {
    {"H100 SXM", 132, 50LL << 20, 989.0, 3350.0},
    {"H200", 132, 60LL << 20, 989.0, 4800.0},
    {"A100 SXM", 108, 40LL << 20, 312.0, 2039.0},
    {"RTX 4090", 128, 72LL << 20, 165.0, 1008.0},
};

}  // namespace wb
