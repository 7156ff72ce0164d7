// DeviceBucketedReducer: sums a float32 gradient buffer in device memory
// across ranks in contiguous buckets, on a communication thread of its own,
// each bucket as soon as the backward pass has queued every tensor in it —
// the GPU twin of BucketedReducer (bucketed_reducer.h), for NCCL.
//
//   reducer.BeginStep();
//   ... queue tensor t's gradient kernels on `stream` ...; reducer.TensorReady(t);
//   reducer.Finish();  // every bucket's sum is in the buffer; rethrows
//
// Ordering: the backward pass runs on `stream`, a non-blocking stream.
// When a bucket's last tensor is queued, TensorReady records a CUDA event on
// it; the communication thread waits for that event on the host, then calls
// the communicator's AllReduce, which NCCL runs on its own stream — the
// caller-synchronizes rule of communicator.h. So NCCL sums one bucket while
// `stream` goes on differentiating earlier layers. A communicator call
// returns once its result is in the buffer, so after Finish() work queued on
// `stream` sees the sums with no further wait.
//
// Buckets are fixed at construction from the tensors' flat layout (at least
// one tensor each, about bucket_bytes of floats), so every rank issues the
// same collectives in the same order. The communicator is used only by the
// communication thread; other collectives go through Run(). With overlap
// off, every bucket is sent after the backward pass (for comparison).
//
// Errors: Finish() and Run() rethrow the first error of the step: CommError
// from the communicator, DeviceError from the event wait. After an error the
// step's remaining buckets are skipped. The constructor throws DeviceError
// when the events cannot be created.
//
// Thread-safety: the methods are called from one (training) thread.
// REQUIRES: `comm` takes device memory of `device` (NCCL), and it and `grads`
// outlive the reducer.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/mlp.h"

namespace muster::train::gpu {

class DeviceBucketedReducer {
 public:
  DeviceBucketedReducer(runtime::Communicator& comm, int device, cudaStream_t stream, float* grads,
                        const std::vector<ParamTensor>& tensors, size_t bucket_bytes, bool overlap);
  ~DeviceBucketedReducer();
  DeviceBucketedReducer(const DeviceBucketedReducer&) = delete;
  DeviceBucketedReducer& operator=(const DeviceBucketedReducer&) = delete;

  void BeginStep();
  // Tensor `tensor`'s gradient kernels are queued on the stream.
  void TensorReady(size_t tensor);
  void Finish();
  // Runs fn on the communication thread and waits for it; rethrows.
  void Run(const std::function<void(runtime::Communicator&)>& fn);

  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    size_t offset = 0;  // in floats
    size_t size = 0;
    size_t tensors = 0;          // how many tensors it holds
    size_t ready = 0;            // of those, queued this step
    cudaEvent_t done = nullptr;  // recorded once the last of them is queued
  };

  // Records bucket i's event on the stream and queues its allreduce.
  void EnqueueBucket(size_t i);
  void WaitIdle();  // rethrows the first error of the step
  void Loop();
  void Execute(size_t bucket);
  void DestroyEvents();

  static constexpr size_t kRunSlot = static_cast<size_t>(-1);

  runtime::Communicator& comm_;
  const int device_;
  const cudaStream_t stream_;
  float* const grads_;
  const bool overlap_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_tensor_;

  std::mutex mutex_;
  std::condition_variable changed_;
  // Bucket indices queued this step (GUARDED_BY(mutex_)); the thread has
  // taken the first `taken_`. Cleared (capacity kept) whenever it drains.
  std::vector<size_t> queue_;
  size_t taken_ = 0;  // GUARDED_BY(mutex_)
  // Run()'s function while it waits for the thread (GUARDED_BY(mutex_)).
  const std::function<void(runtime::Communicator&)>* run_fn_ = nullptr;
  size_t running_ = 0;        // GUARDED_BY(mutex_)
  std::exception_ptr error_;  // GUARDED_BY(mutex_)
  bool stopping_ = false;     // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace muster::train::gpu
