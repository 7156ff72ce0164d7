// BucketedReducer: sums a flat gradient buffer across ranks in contiguous
// buckets, on a communication thread of its own, each bucket as soon as the
// backward pass has finished every tensor in it — so communication overlaps
// the rest of the backward pass (with overlap off, everything is sent after
// the backward pass, for comparison). Where the buffer lives and how a
// bucket is summed is the caller's (Hooks): host doubles over Gloo
// (CpuReplica), device floats over NCCL after a CUDA event (GpuReplica).
//
//   reducer.BeginStep();
//   model.ForwardBackward(..., [&](size_t t) { reducer.TensorReady(t); });
//   reducer.Finish();  // every bucket reduced; rethrows the first error
//
// Buckets are fixed at construction from the tensors' flat layout (at least
// one tensor each, about bucket_bytes of values), so every rank issues the
// same collectives in the same order. The communicator is used only by the
// communication thread; other collectives go through Run(). The thread's
// queue holds bucket indices (its storage is reserved at construction), so a
// step allocates nothing. After an error the step's remaining buckets are
// skipped; the destructor drops whatever is still queued.
//
// Thread-safety: the methods are called from one (training) thread.
// REQUIRES: `comm` outlives the reducer, and so does what the hooks use.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/mlp.h"

namespace muster::train {

class BucketedReducer {
 public:
  // A bucket's place in the flat buffer, in values.
  struct Bucket {
    size_t offset = 0;
    size_t size = 0;
  };
  struct Hooks {
    // Communication thread: sums bucket `index` across ranks.
    std::function<void(runtime::Communicator&, const Bucket&, size_t index)> reduce;
    // Training thread, when bucket `index` is complete, before it is queued
    // (optional; GpuReplica records its event here).
    std::function<void(size_t index)> on_complete = nullptr;
    // Communication thread, once before anything else (optional; GpuReplica
    // makes its device current). An exception fails every later call.
    std::function<void()> on_thread_start = nullptr;
  };

  BucketedReducer(runtime::Communicator& comm, const std::vector<ParamTensor>& tensors,
                  size_t value_bytes, size_t bucket_bytes, bool overlap, Hooks hooks);
  ~BucketedReducer();
  BucketedReducer(const BucketedReducer&) = delete;
  BucketedReducer& operator=(const BucketedReducer&) = delete;

  void BeginStep();
  void TensorReady(size_t tensor);
  void Finish();
  // Runs fn on the communication thread and waits for it; rethrows.
  void Run(const std::function<void(runtime::Communicator&)>& fn);

 private:
  struct Progress {
    size_t tensors = 0;  // how many tensors the bucket holds
    size_t ready = 0;    // of those, finished this step
  };

  // Queues bucket i's allreduce for the communication thread.
  void EnqueueBucket(size_t i);
  void WaitIdle();  // rethrows the first error of the step
  void Loop();
  // Runs one unit of work on the communication thread: a bucket's allreduce,
  // or the Run() function when `bucket` is kRunSlot.
  void Execute(size_t bucket);

  static constexpr size_t kRunSlot = static_cast<size_t>(-1);

  runtime::Communicator& comm_;
  const bool overlap_;
  const Hooks hooks_;
  std::vector<Bucket> buckets_;
  std::vector<Progress> progress_;
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

}  // namespace muster::train
