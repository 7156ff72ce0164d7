// DeviceBuffer<T>: an owned array in device memory (cudaMalloc / cudaFree)
// of the device current when it is allocated. Move-only.
//
//   DeviceBuffer<float> grads(n, "gradients");  // throws DeviceError on failure
//   grads.Reserve(2 * n, "gradients");          // grows; old contents are lost
//
// Thread-safety: none (one owner).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

#include "worker_runtime/train/gpu/cuda_check.h"

namespace muster::train::gpu {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws DeviceError "cudaMalloc(<name>): ..." when the allocation fails.
  DeviceBuffer(size_t count, const char* name) { Reserve(count, name); }
  ~DeviceBuffer() { Release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Makes room for at least `count` elements; a buffer that grows loses its
  // contents (cudaFree waits for the device's work first).
  void Reserve(size_t count, const char* name) {
    if (count <= size_) return;
    Release();
    void* p = nullptr;
    CheckCuda(cudaMalloc(&p, count * sizeof(T)), std::string("cudaMalloc(") + name + ")");
    data_ = static_cast<T*>(p);
    size_ = count;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace muster::train::gpu
