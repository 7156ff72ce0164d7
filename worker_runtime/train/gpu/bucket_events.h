// BucketEvents: one owned CUDA event per gradient bucket, of the device
// current at construction, without timing (a timing event costs more to
// record and is never read). GpuReplica records bucket i's on the compute
// stream when the bucket is complete and waits for it on the communication
// thread before handing the bucket to NCCL.
//
// Thread-safety: the handles may be used from any thread, as CUDA allows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "worker_runtime/train/gpu/cuda_check.h"

namespace muster::train::gpu {

class BucketEvents {
 public:
  // Throws DeviceError when an event cannot be created.
  explicit BucketEvents(size_t count) {
    events_.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      cudaEvent_t event = nullptr;
      try {
        CheckCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                  "cudaEventCreateWithFlags(gradient bucket)");
      } catch (...) {
        Destroy();
        throw;
      }
      events_.push_back(event);
    }
  }
  ~BucketEvents() { Destroy(); }
  BucketEvents(const BucketEvents&) = delete;
  BucketEvents& operator=(const BucketEvents&) = delete;

  cudaEvent_t operator[](size_t i) const { return events_[i]; }

 private:
  void Destroy() {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
    events_.clear();
  }

  std::vector<cudaEvent_t> events_;
};

}  // namespace muster::train::gpu
