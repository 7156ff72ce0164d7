// BucketedReducer: sums a (double) gradient buffer across ranks in contiguous
// buckets, on a communication thread of its own, each bucket as soon as the
// backward pass has finished every tensor in it — so communication overlaps
// the rest of the backward pass (with overlap off, everything is sent after
// the backward pass, for comparison).
//
//   reducer.BeginStep();
//   model.ForwardBackward(..., [&](size_t t) { reducer.TensorReady(t); });
//   reducer.Finish();  // every bucket reduced; rethrows a CommError
//
// Buckets are fixed at construction from the tensors' flat layout, so every
// rank issues the same collectives in the same order. The communicator is
// used only by the communication thread; other collectives go through Run().
// The thread's queue holds bucket indices (its storage is reserved at
// construction), so a step allocates nothing.
//
// Thread-safety: the methods are called from one (training) thread.
#pragma once

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

namespace muster::train {

class BucketedReducer {
 public:
  BucketedReducer(runtime::Communicator& comm, std::span<double> grads,
                  const std::vector<ParamTensor>& tensors, size_t bucket_bytes, bool overlap);
  ~BucketedReducer();
  BucketedReducer(const BucketedReducer&) = delete;
  BucketedReducer& operator=(const BucketedReducer&) = delete;

  void BeginStep();
  void TensorReady(size_t tensor);
  void Finish();
  // Runs fn on the communication thread and waits for it; rethrows.
  void Run(const std::function<void(runtime::Communicator&)>& fn);

  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    size_t offset = 0;  // in values
    size_t size = 0;
    size_t tensors = 0;  // how many tensors it holds
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
  std::span<double> grads_;
  bool overlap_;
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
  size_t running_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace muster::train
