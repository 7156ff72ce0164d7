// Stream: an owned CUDA stream of the current device, created non-blocking
// (cudaStreamNonBlocking): its work never waits for the legacy default
// stream, nor the default stream for it, so the NCCL communicator's blocking
// stream (nccl_communicator.h) is ordered after it only where the caller
// synchronizes. Neither copyable nor movable.
//
// Thread-safety: the handle may be used from any thread, as CUDA allows.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "worker_runtime/train/gpu/cuda_check.h"

namespace muster::train::gpu {

class Stream {
 public:
  // Throws DeviceError when the stream cannot be created.
  Stream() {
    CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags(compute stream)");
  }
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  // Waits for every operation queued so far; throws DeviceError naming `why`
  // with the first error of that work.
  void Synchronize(const char* why) const {
    // Every step does this: the message is built only when it failed.
    if (cudaError_t rc = cudaStreamSynchronize(stream_); rc != cudaSuccess) {
      CheckCuda(rc, std::string("cudaStreamSynchronize(") + why + ")");
    }
  }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace muster::train::gpu
