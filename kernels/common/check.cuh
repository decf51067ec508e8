// CUDA error checking with the call, file and line: every host-side CUDA call
// in the workbook goes through CUDA_CHECK, and every launch is followed by
// CUDA_CHECK_LAUNCH. Errors become wb::CudaError, which the harness turns into
// one line and exit status 1.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace wb {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t err, const char* expr, const char* file, int line) {
  if (err != cudaSuccess) {
    throw CudaError(std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") at " +
                    file + ":" + std::to_string(line) + " in " + expr);
  }
}

}  // namespace wb

// Throws wb::CudaError naming the call, file and line.
#define CUDA_CHECK(expr) ::wb::cuda_check((expr), #expr, __FILE__, __LINE__)
// After a launch: launch-configuration errors surface here.
#define CUDA_CHECK_LAUNCH() ::wb::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
