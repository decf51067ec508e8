// RAII owners for device memory, streams and events: freed on every path, so
// an error thrown half-way through a run leaks nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "common/check.cuh"

namespace wb {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count) CUDA_CHECK(cudaMalloc(&ptr_, count * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) {
    o.ptr_ = nullptr;
    o.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(Event&& o) noexcept : e(o.e) { o.e = nullptr; }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

}  // namespace wb
