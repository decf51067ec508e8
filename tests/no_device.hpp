// Why a GPU test cannot run here ("" when a CUDA device is present), for
// GTEST_SKIP() << ... in every GPU test.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace wb::testing {

inline std::string no_device_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device";
  return "";
}

}  // namespace wb::testing
